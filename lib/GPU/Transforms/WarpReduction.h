//===- WarpReduction.h - Structured reductions, one warp per output -------===//
//
// Part of the moe-mlir project.
//
// The GPU mapping of a structured op whose outputs are reductions (a norm's
// sum of squares, a narrow projection, a softmax's maximum, a loss's sum):
// each output element is one warp's, whose 32 lanes stride over the
// reduction iterations (neighbouring lanes reading neighbouring elements)
// and combine their partial results with shuffles.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_WARPREDUCTION_H
#define MOE_DIALECT_MOE_TRANSFORMS_WARPREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {

/// An `index` constant.
Value indexConstant(OpBuilder &b, Location loc, int64_t value);

/// The iterations of a loop from `lb` to `ub` by `step` (0 when empty).
Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step);

/// Whether `op` (with buffer semantics) can be mapped by
/// emitWarpReduction: it has a reduction loop with at least `minExtent`
/// iterations (or a dynamic count), and every output is updated by one
/// commutative combiner with a neutral element (add, mul, max, min, and,
/// or, xor) on a 32-bit value, the output read nowhere else in the body.
bool isWarpReduction(linalg::LinalgOp op, int64_t minExtent = 32);

/// Replaces `op` by its warp mapping at the same place (inside a kernel):
/// warp `warp` of `warps` takes the parallel iterations warp, warp + warps,
/// ...; `lane` is the thread's index in its warp. `op` must satisfy
/// isWarpReduction.
void emitWarpReduction(RewriterBase &rewriter, linalg::LinalgOp op, Value warp,
                       Value warps, Value lane);

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_WARPREDUCTION_H
