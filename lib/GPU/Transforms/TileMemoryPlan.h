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

/// Bytes of `alloc` that its users touch, through views: a load or store
/// an element, any other op the view it is given, times the static trip
/// counts of the loops around it (in `alloc`'s block).
int64_t tileAccessBytes(memref::AllocOp alloc);

/// `allocs` split between a fast memory of `fastCapacity` bytes and a slow
/// one of any size: the fast one takes the buffers with the most accessed
/// bytes (`accessBytesOf`) per byte first, each that still fits (with
/// `share`, at the lowest offset clear of the buffers whose lifetimes
/// overlap its own); the rest go to the slow one.
struct TileMemorySplit {
  /// Per buffer, whether it is in the fast memory.
  SmallVector<bool> fast;
  /// Offsets in each memory; those of the other memory's buffers are 0.
  TileMemoryPlan fastPlan, slowPlan;
};

TileMemorySplit
splitTileMemory(Operation *root, ArrayRef<memref::AllocOp> allocs,
                function_ref<int64_t(memref::AllocOp)> bytesOf,
                function_ref<int64_t(memref::AllocOp)> accessBytesOf,
                bool share, int64_t fastCapacity);

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_TILEMEMORYPLAN_H
