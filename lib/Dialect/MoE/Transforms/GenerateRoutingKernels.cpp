//===- GenerateRoutingKernels.cpp - GPU kernels for MoE route -------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-routing-kernels (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/DeviceEmitter.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEROUTINGKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEGenerateRoutingKernelsPass
    : public moe::impl::MoEGenerateRoutingKernelsBase<
          MoEGenerateRoutingKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void MoEGenerateRoutingKernelsPass::runOnOperation() {
  getOperation().walk([&](RouteOp op) {
    op.emitRemark()
        << "route left to the CPU-style lowering: not generated yet";
  });
}
