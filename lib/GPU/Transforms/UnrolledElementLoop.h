//===- UnrolledElementLoop.h - Several elements per thread, loads first ---===//
//
// Part of the moe-mlir project.
//
// The grid-stride loop of an element-wise kernel with each thread taking
// `unroll` elements per trip, all their loads issued before any of their
// results is used and their stores last. With one element per thread and
// trip, a thread has one 4-byte load in flight at a time, which keeps an
// H100 far from its copy bandwidth.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TRANSFORMS_UNROLLEDELEMENTLOOP_H
#define MOE_GPU_TRANSFORMS_UNROLLEDELEMENTLOOP_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {

/// Replaces `par` (no reductions) by `scf.for %base = start to N step
/// step * unroll` over its linearized iterations, whose body takes the
/// iterations base + j * step for j < unroll: first the loads and the
/// computation of all of them (an iteration past N reads iteration base's
/// elements instead), then the stores of those below N. Fails, changing
/// nothing, unless `par`'s body is straight-line code whose only memory
/// effects are memref loads and stores, no load after a store (so that
/// the iterations' loads may move ahead of the other iterations' stores:
/// each iteration reads and writes its own elements). `start` must lie in
/// [0, step). When `par`'s trip count and `step` are constants and the
/// count is a multiple of step * unroll, no iteration is past N and the
/// body has no guards.
LogicalResult emitUnrolledStridedLoop(RewriterBase &rewriter,
                                      scf::ParallelOp par, Value start,
                                      Value step, int64_t unroll);

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_UNROLLEDELEMENTLOOP_H
