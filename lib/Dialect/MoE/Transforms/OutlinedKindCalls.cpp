//===- OutlinedKindCalls.cpp - Calls of -moe-outline-kinds functions ------===//
//
// Part of the moe-mlir project.
//
// The buffer view flow model of func.call that tells the deallocation
// pipeline that a call of an outlined kind returns fresh buffers.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"

#include "mlir/Dialect/Bufferization/IR/BufferViewFlowOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

bool mlir::moe::isOutlinedKindCall(Operation *op) {
  // The mark on the call, not a lookup of its callee: the deallocation
  // passes ask this of every call many times, and a symbol lookup walks the
  // module's top level (kimi-tiny's buffer-deallocation-simplification
  // spent most of its 11 s in them).
  return isa<func::CallOp>(op) && op->hasAttr(kOutlinedKindAttrName);
}

namespace {
struct CallViewFlowModel
    : public bufferization::BufferViewFlowOpInterface::ExternalModel<
          CallViewFlowModel, func::CallOp> {
  void populateDependencies(
      Operation *op,
      bufferization::RegisterDependenciesFn registerDependenciesFn) const {
    if (moe::isOutlinedKindCall(op))
      return;
    // Any other callee may return (a view of) any memref it is given.
    for (Value operand : op->getOperands()) {
      if (!isa<BaseMemRefType>(operand.getType()))
        continue;
      for (Value result : op->getResults())
        if (isa<BaseMemRefType>(result.getType()))
          registerDependenciesFn(operand, result);
    }
  }

  /// A result may be a fresh buffer (always, for an outlined kind).
  bool mayBeTerminalBuffer(Operation *op, Value value) const { return true; }
};

/// The memory effects of a call: a call of an outlined kind reads its memref
/// operands and allocates its results (local alias analysis then knows that
/// they alias nothing else); any other call reads and writes memory in
/// general, as a call without effects would be taken to.
struct CallMemoryEffectsModel
    : public MemoryEffectOpInterface::ExternalModel<CallMemoryEffectsModel,
                                                    func::CallOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    if (!moe::isOutlinedKindCall(op)) {
      effects.emplace_back(MemoryEffects::Read::get(),
                           SideEffects::DefaultResource::get());
      effects.emplace_back(MemoryEffects::Write::get(),
                           SideEffects::DefaultResource::get());
      return;
    }
    for (OpOperand &operand : op->getOpOperands())
      if (isa<BaseMemRefType>(operand.get().getType()))
        effects.emplace_back(MemoryEffects::Read::get(), &operand,
                             SideEffects::DefaultResource::get());
    for (OpResult result : op->getResults())
      if (isa<BaseMemRefType>(result.getType())) {
        effects.emplace_back(MemoryEffects::Allocate::get(), result,
                             SideEffects::DefaultResource::get());
        effects.emplace_back(MemoryEffects::Write::get(), result,
                             SideEffects::DefaultResource::get());
      }
  }
};
} // namespace

void mlir::moe::registerOutlinedKindCallModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, func::FuncDialect *) {
    func::CallOp::attachInterface<CallViewFlowModel, CallMemoryEffectsModel>(
        *ctx);
  });
}
