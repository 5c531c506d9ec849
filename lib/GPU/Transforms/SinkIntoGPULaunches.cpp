//===- SinkIntoGPULaunches.cpp - Constants into launch bodies -------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-sink-into-gpu-launches: each gpu.launch gets its own
// copies of the constants and memref.dim ops its body uses, so that kernel
// outlining keeps them in the kernel (static divisors, sizes and trip
// counts) instead of passing them as arguments.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOESINKINTOGPULAUNCHES
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoESinkIntoGPULaunchesPass
    : public moe::impl::MoESinkIntoGPULaunchesBase<MoESinkIntoGPULaunchesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk(
        [&](gpu::LaunchOp launch) { launches.push_back(launch); });
    auto beneficial = [](Operation *op) {
      return op->hasTrait<OpTrait::ConstantLike>() || isa<memref::DimOp>(op);
    };
    for (gpu::LaunchOp launch : launches)
      if (failed(sinkOperationsIntoLaunchOp(launch, beneficial)))
        return signalPassFailure();
  }
};
} // namespace
