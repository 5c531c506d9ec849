//===- BarrierElision.h - Barriers between independent tile ops -*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// -moe-map-forall-to-gpu puts a barrier after every op of a tile program,
// so that the next op sees what its threads wrote. Where two neighbouring
// stretches of the program touch no common bytes, or only read them, the
// barrier between them only makes the block's warps wait for each other:
// these are erased, so that warps done with one op start the next (the
// contractions of a KDA gradient keep two of eight warps busy).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TRANSFORMS_BARRIERELISION_H
#define MOE_GPU_TRANSFORMS_BARRIERELISION_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::moe {

/// Erases the gpu.barrier ops directly in `launch`'s body block (not in
/// loops, whose iterations follow each other without one) whose stretches
/// of ops since the last barrier kept and up to the next barrier are
/// independent: no byte that one writes is read or written by the other.
/// Tile buffers are told apart by their constant byte ranges in a fresh
/// base (the block's shared memory or scratch); the buffers the launch
/// takes from outside may overlap each other but not a fresh base; a
/// buffer another op of the launch makes, and an op whose effects are not
/// known, depend on everything. Returns how many it erased.
int64_t elideIndependentBarriers(gpu::LaunchOp launch);

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_BARRIERELISION_H
