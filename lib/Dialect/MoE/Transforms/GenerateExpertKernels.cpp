//===- GenerateExpertKernels.cpp - GPU kernels for MoE expert_ffn
//-------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-expert-kernels (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/DeviceEmitter.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEEXPERTKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEGenerateExpertKernelsPass
    : public moe::impl::MoEGenerateExpertKernelsBase<
          MoEGenerateExpertKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void MoEGenerateExpertKernelsPass::runOnOperation() {
  getOperation().walk([&](ExpertFFNOp op) {
    op.emitRemark()
        << "expert_ffn left to the CPU-style lowering: not generated yet";
  });
}
