//===- ReverseMode.h - Reverse-mode differentiation of a block --*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The generic reverse-mode machinery of -moe-build-training-step (see
// docs/Training.md): the straight-line tensor ops of a block are walked
// backwards; moe ops build their adjoints through DifferentiableOpInterface,
// upstream ops (linalg structured ops, tensor reshapes and slices, element-
// wise arith on tensors, constants, fills, empties) by rules of this file.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_REVERSEMODE_H
#define MOE_DIALECT_MOE_TRANSFORMS_REVERSEMODE_H

#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

#include <utility>

namespace mlir::moe {

/// What to differentiate and from where.
struct ReverseModeRequest {
  /// (value, adjoint) pairs: the adjoints of the outputs (the loss's seed).
  /// Each adjoint has the type of its value.
  SmallVector<std::pair<Value, Value>> seeds;
  /// The values whose adjoints are wanted (function arguments, usually).
  SmallVector<Value> wrt;
  /// Values that are constants even if they are computed from `wrt` (the
  /// views of buffers such as the router's selection bias): no gradient
  /// flows through them.
  SmallVector<Value> constants;
};

/// Builds, at `builder`'s insertion point, the reverse-mode derivative of
/// the ops of `block` that precede that insertion point (which must be in
/// `block`, after every op that the seeds depend on). Only ranked float
/// tensors carry adjoints. Returns one adjoint per `request.wrt` value, of
/// its type, or null where no gradient reaches it. Fails, with an error at
/// the op concerned, on an op that lies between `wrt` and a seed and that
/// cannot be differentiated (no adjoint rule, a moe op whose adjoint is not
/// built, a linalg body op without a derivative, a reduction that is not an
/// additive accumulation, a gradient through a scalar).
FailureOr<SmallVector<Value>>
buildReverseMode(OpBuilder &builder, Block &block,
                 const ReverseModeRequest &request);

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_REVERSEMODE_H
