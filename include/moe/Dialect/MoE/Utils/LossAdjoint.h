//===- LossAdjoint.h - Pieces of the cross-entropy's adjoint ----*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The scalar and per-token pieces of the cross-entropy's adjoint
// (ALGORITHMS.md section 7.2), G[t, v] = c[t] (exp(z[t, v] - lse[t]) -
// [v = label[t]]) with c = d_loss / N_valid on the valid tokens and 0 on the
// ignored ones, shared by the loss lowerings (-moe-tile-loss on token
// tiles, -moe-chunk-loss on whole-batch vocabulary chunks).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_UTILS_LOSSADJOINT_H
#define MOE_DIALECT_MOE_UTILS_LOSSADJOINT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::moe {

class TensorBuilder;

/// `label != ignoreIndex` on the scalar `label`.
Value buildIsValid(OpBuilder &b, Location loc, Value label,
                   int64_t ignoreIndex);

/// The per-token coefficient of the loss adjoint, `[...]` like `labels`:
/// `d_loss / N_valid` where the label is valid, 0 where it is ignored.
Value buildTokenCoefficients(ImplicitLocOpBuilder &b, TensorBuilder &tb,
                             Value labels, Value dLoss, int64_t ignoreIndex);

/// `c (exp(z - lse) - [column + offset == label])` on a scalar score `z` of
/// column `column` of its chunk.
Value buildLogitAdjoint(OpBuilder &b, Location loc, Value z, Value lse,
                        Value coefficient, Value label, Value column,
                        Value offset);

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_UTILS_LOSSADJOINT_H
