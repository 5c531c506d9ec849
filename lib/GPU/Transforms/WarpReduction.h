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

/// The product of `values` (1 when empty).
Value product(OpBuilder &b, Location loc, ArrayRef<Value> values);

/// The loop indices `lb + i * step` of the linear index `linear` over
/// `counts` (row major: the last dimension varies fastest).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<Value> counts, ArrayRef<Value> lbs,
                               ArrayRef<Value> steps);

/// Whether `op` (with buffer semantics) is a reduction whose iterations may
/// be combined in any order: it has reduction loops with at least
/// `minExtent` iterations in all (or a dynamic count), its outputs are
/// indexed by parallel dimensions only, each is updated by one commutative
/// combiner with a neutral element (add, mul, max, min, and, or, xor) on a
/// 32-bit value and read nowhere else in the body, and the body writes no
/// memory.
bool hasReorderableReductions(linalg::LinalgOp op, int64_t minExtent = 32);

/// Whether every large input of `op` that the reductions walk has a
/// reduction dimension innermost, so that neighbouring lanes of a warp
/// striding over the reduction read neighbouring elements.
bool readsReductionContiguously(linalg::LinalgOp op);

/// Whether `op` can be mapped by emitWarpReduction: reorderable reductions
/// read contiguously.
bool isWarpReduction(linalg::LinalgOp op, int64_t minExtent = 32);

/// The combiner that updates output `i` of `op`, or null when there is not
/// exactly one such commutative combiner (see hasReorderableReductions).
Operation *reductionCombiner(linalg::LinalgOp op, unsigned i);

/// `combiner` applied to `lhs` and `rhs` (a copy of it, attributes kept).
Value combineWith(OpBuilder &b, Operation *combiner, Value lhs, Value rhs);

/// `value` combined over the 32 lanes of the warp by xor shuffles (every
/// lane gets the total); the warp's control flow must be uniform.
Value warpCombine(OpBuilder &b, Location loc, Value value, Operation *combiner);

/// Combines each of the warp's `partials` (one per output of `op`) over its
/// lanes and lets lane `lane` 0 combine the totals into the outputs at the
/// parallel loop values `ivs`.
/// `starts[i]`, when given and not null, is the value output i starts from
/// (see fillsOfReductionOutputs) instead of the value it holds.
void addWarpTotals(OpBuilder &b, linalg::LinalgOp op, ValueRange partials,
                   ArrayRef<Value> ivs, Value lane,
                   ArrayRef<Value> starts = {});

/// The linalg.fill ops just before the reduction `op` (with only ops free
/// of memory effects between them) that fill whole outputs of `op`, one
/// whose outputs are indexed by all its parallel loops, so that it writes
/// every output element: `starts[i]` becomes the value output `i` was
/// filled with (null if none). A kernel that starts each output from that
/// value makes the fill needless: one kernel less per such fill (a norm's
/// zeroed sum, a loss's zeroed total).
SmallVector<linalg::FillOp>
fillsOfReductionOutputs(linalg::LinalgOp op, SmallVectorImpl<Value> &starts);

/// A structured op's loop space: its ranges and, per kind of dimension, the
/// dimensions and their trip counts, with the products of those counts.
struct LoopSpace {
  SmallVector<Range> ranges;
  SmallVector<unsigned> parallelDims, reductionDims;
  SmallVector<Value> parallelCounts, reductionCounts;
  /// Parallel iterations (outputs) and reduction iterations per output.
  Value outputs, iterations;
};
LoopSpace loopSpaceOf(OpBuilder &b, linalg::LinalgOp op);

/// Sets `ivs[dims[k]]` to the loop values of the linear index `linear` in
/// the row-major space of `counts` (the last fastest): offset + i * stride.
void delinearizeInto(OpBuilder &b, Location loc, Value linear,
                     ArrayRef<unsigned> dims, ArrayRef<Value> counts,
                     ArrayRef<Range> ranges, SmallVectorImpl<Value> &ivs);

/// The indices of `operand` of `op` at the loop values `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                             OpOperand &operand, ArrayRef<Value> ivs);

/// One iteration of `op`'s body at the loop values `ivs`: its memref inputs
/// loaded there, `outputs` standing for the output block arguments; returns
/// the values it yields.
SmallVector<Value> cloneBodyAt(OpBuilder &b, Location loc, linalg::LinalgOp op,
                               ArrayRef<Value> ivs, ValueRange outputs);

/// Replaces `op` by its warp mapping at the same place (inside a kernel):
/// warp `warp` of `warps` takes the parallel iterations warp, warp + warps,
/// ...; `lane` is the thread's index in its warp. `op` must satisfy
/// isWarpReduction.
void emitWarpReduction(RewriterBase &rewriter, linalg::LinalgOp op, Value warp,
                       Value warps, Value lane, ArrayRef<Value> starts = {});

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_WARPREDUCTION_H
