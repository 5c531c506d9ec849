//===- Shard.cpp - Data-parallel sharding of the training step ------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-shard: marks each moe.model with its data-parallel degree
// (Sharding.h), which -moe-build-training-step and -moe-fuse-routing turn
// into collectives (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Sharding.h"

#include "moe/Dialect/MoE/IR/MoE.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOESHARD
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEShardPass : public moe::impl::MoEShardBase<MoEShardPass> {
  using MoEShardBase::MoEShardBase;
  void runOnOperation() override;
};
} // namespace

void MoEShardPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (dataParallel < 1) {
    module.emitError("-moe-shard: dp must be at least 1, got ")
        << static_cast<int64_t>(dataParallel);
    return signalPassFailure();
  }
  if (dataParallel == 1)
    return;
  for (ModelOp model : module.getOps<ModelOp>()) {
    auto marked = model->getAttrOfType<IntegerAttr>(kDataParallelAttrName);
    if (marked && marked.getInt() != dataParallel) {
      model.emitError("is already sharded with dp = ")
          << marked.getInt() << ", not " << static_cast<int64_t>(dataParallel);
      return signalPassFailure();
    }
    setDataParallel(model, dataParallel);
  }
}
