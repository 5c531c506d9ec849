//===- ColumnReduction.h - Split reductions onto few outputs ----*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The GPU mapping of a structured reduction with few outputs and many
// iterations that its inputs do not store contiguously (a norm's weight
// gradient, sum over tokens of [B, T, d] into [d]; a weight gradient of the
// tokens' [B, T, k] and [B, T, n] into [k, n]). One thread per output would
// walk every token alone; a warp per output would read down a column. Here
// the reduction is split into runs of consecutive iterations: a first
// kernel has one thread per (output, run), neighbouring threads on
// neighbouring outputs (coalesced), each folding its run into a partial in
// a scratch buffer; a second kernel has one warp per output that combines
// the output's partials with shuffles and adds them to the output. Both
// orders are fixed by the sizes alone, so the result is deterministic.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TRANSFORMS_COLUMNREDUCTION_H
#define MOE_GPU_TRANSFORMS_COLUMNREDUCTION_H

#include "WarpReduction.h"

namespace mlir::moe {

/// Whether `op` is mapped by the split column reduction: reorderable
/// reductions (hasReorderableReductions) of at least `minIterations`
/// iterations per output (or a dynamic count) whose large inputs are not
/// read contiguously along the reduction, onto fewer than `maxOutputs`
/// outputs (or a dynamic count).
bool isColumnReduction(linalg::LinalgOp op, int64_t minIterations = 1024,
                       int64_t maxOutputs = int64_t(1) << 18);

/// The run-time split of a column reduction, computed on the host.
struct ColumnSplit {
  /// Blocks of `blockSize` threads over the outputs.
  Value columnBlocks;
  /// Runs per output (at least 1, at most 65535) and iterations per run.
  Value runs, runLength;
  /// Per output of `op`, the partials: [runs * outputs] of its type.
  SmallVector<Value> partials;
};

/// Sizes the split so that about `targetThreads` threads fold runs of at
/// least 64 iterations, and allocates the partial buffers (gpu.alloc, freed
/// by the caller), at the builder's insertion point on the host.
ColumnSplit planColumnSplit(OpBuilder &b, linalg::LinalgOp op,
                            const LoopSpace &space, int64_t blockSize,
                            int64_t targetThreads);

/// The body of the first kernel, replacing nothing: thread `column` (the
/// output) of run `run` folds that run of the reduction into its partials.
void emitColumnPartials(OpBuilder &b, linalg::LinalgOp op,
                        const LoopSpace &space, const ColumnSplit &split,
                        Value column, Value run);

/// The body of the second kernel, replacing `op`: warp `warp` of `warps`
/// takes outputs warp, warp + warps, ...; `lane` is its thread's lane.
void emitColumnCombine(RewriterBase &rewriter, linalg::LinalgOp op,
                       const LoopSpace &space, const ColumnSplit &split,
                       Value warp, Value warps, Value lane,
                       ArrayRef<Value> starts = {});

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_COLUMNREDUCTION_H
