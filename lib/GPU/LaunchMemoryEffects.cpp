//===- LaunchMemoryEffects.cpp - Memory effects of GPU launches -----------===//
//
// Part of the moe-mlir project.
//
// The kernel generators replace ops with launches before bufferization; what
// a kernel does with its arguments is not visible from the host side, so
// this model says that a launch reads and writes every memref it is given
// (and memory in general), and that a wait does too.
//
//===----------------------------------------------------------------------===//

#include "moe/GPU/LaunchMemoryEffects.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {

/// Reads and writes of every memref operand of a launch (what a kernel does
/// with its arguments is not visible from the host side), and of memory in
/// general for a launch or a wait.
template <typename OpTy>
struct StreamOpMemoryEffects
    : public MemoryEffectOpInterface::ExternalModel<StreamOpMemoryEffects<OpTy>,
                                                    OpTy> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    // A launch or wait is never dead: once lowered (pointer operands), it
    // still reads and writes memory that no operand names.
    effects.emplace_back(MemoryEffects::Read::get(),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         SideEffects::DefaultResource::get());
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<BaseMemRefType>(operand.get().getType()))
        continue;
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
    }
  }
};

} // namespace

void mlir::moe::registerGPULaunchMemoryEffects(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::LaunchFuncOp::attachInterface<
        StreamOpMemoryEffects<gpu::LaunchFuncOp>>(*ctx);
    gpu::WaitOp::attachInterface<StreamOpMemoryEffects<gpu::WaitOp>>(*ctx);
  });
}
