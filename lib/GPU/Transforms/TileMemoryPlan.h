//===- TileMemoryPlan.h - Tile buffers sharing memory by lifetime -*- C++ -*-=//
//
// Part of the moe-mlir project.
//
// Where -moe-map-forall-to-gpu places a tile program's static buffers in
// the block's memory: a buffer gets an offset of its own only for as long as
// it is live, so that buffers whose lifetimes do not overlap share bytes (a
// chunk's KDA gradient holds 162 tiles, 1 MiB in all, few at a time). A
// buffer is live from its allocation to the end of the last operation of its
// block that uses it (through views), loops included; one that a
// terminator or a loop's carried values reach is live throughout.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TRANSFORMS_TILEMEMORYPLAN_H
#define MOE_GPU_TRANSFORMS_TILEMEMORYPLAN_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::moe {

/// Byte offsets of `allocs` (static shapes, in `root`'s regions) relative to
/// a base, each 16-byte aligned.
struct TileMemoryPlan {
  SmallVector<int64_t> offsets;
  /// Whether a buffer shares bytes with another: the block must wait (a
  /// barrier) before writing it, until every thread is done with the other.
  SmallVector<bool> reused;
  /// The bytes of the whole plan.
  int64_t total = 0;
};

/// Bytes of one element of a tile buffer (an index: 8), or 0 if unknown.
int64_t tileElementBytes(Type type);

/// Bytes of a statically shaped buffer of `type`, or -1 if unknown.
int64_t tileBufferBytes(MemRefType type);

/// Plans `allocs` (each with a static shape and `bytesOf` bytes); with
/// `share` false, every buffer gets bytes of its own (the plain layout).
TileMemoryPlan planTileMemory(Operation *root, ArrayRef<memref::AllocOp> allocs,
                              function_ref<int64_t(memref::AllocOp)> bytesOf,
                              bool share);

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_TILEMEMORYPLAN_H
