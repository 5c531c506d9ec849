//===- Shard.cpp - Data-parallel sharding of the training step ------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-shard: marks each moe.model with its number of ranks and
// its expert-parallel degree (Sharding.h), which -moe-build-training-step
// and -moe-fuse-routing turn into collectives (docs/Distributed.md).
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
  for (auto [name, degree] : {std::pair<StringRef, int64_t>{"dp", dataParallel},
                              {"ep", expertParallel}})
    if (degree < 1) {
      module.emitError("-moe-shard: ")
          << name << " must be at least 1, got " << degree;
      return signalPassFailure();
    }
  int64_t world = dataParallel * expertParallel;
  if (world == 1)
    return;
  for (ModelOp model : module.getOps<ModelOp>()) {
    if (getDataParallel(model) != 1 &&
        (getDataParallel(model) != world ||
         getExpertParallel(model) != expertParallel)) {
      model.emitError("is already sharded over ")
          << getDataParallel(model)
          << " ranks with ep = " << getExpertParallel(model) << ", not over "
          << world << " with ep = " << static_cast<int64_t>(expertParallel);
      return signalPassFailure();
    }
    setDataParallel(model, world);
    if (expertParallel > 1)
      model->setAttr(kExpertParallelAttrName,
                     Builder(model).getI64IntegerAttr(expertParallel));
  }
}
