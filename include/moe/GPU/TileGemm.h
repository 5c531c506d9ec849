//===- TileGemm.h - The main loop of a tensor-core block tile ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// A block tile of a tensor-core GEMM whose operands are described by where
// each 16-byte chunk of a pipeline stage comes from, so that one main loop
// serves row-major and reduction-major operands, grouped rows, split
// reductions and operands stitched from two buffers. The kernel generators
// build the grid, the per-block ranges and the epilogue around it.
//
// The tile is 128 rows by `cols` (64 or 128) columns, four warps of 64 rows
// by cols / 2 columns, 32 reduction elements per stage, mma.sync m16n8k16
// with bf16 operands and fp32 accumulators, fragments read by ldmatrix.x4
// from XOR-swizzled shared memory that cp.async.cg fills `stages - 2`
// steps ahead of use.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TILEGEMM_H
#define MOE_GPU_TILEGEMM_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>

namespace mlir::moe {

class DeviceEmitter;

/// Where one 16-byte chunk (8 bf16 elements) of a stage comes from: the
/// element `indices` of the bf16 global memref `mem` and the 7 after it,
/// or zeros where `valid` (an i1, null: always) is false.
struct ChunkSource {
  Value mem;
  SmallVector<Value> indices;
  Value valid;
};

/// One operand of a block tile in shared memory. `kMajor`: each row of the
/// stage tile is one reduction index (the tile is [32][extent]); otherwise
/// each row is one tile row of A or one tile column of B ([extent][32]).
/// `source(row, chunk, k0)` names the global chunk at that stage row and
/// 8-element chunk for the step whose reduction offset is `k0`.
struct TileOperand {
  bool kMajor;
  std::function<ChunkSource(Value row, Value chunk, Value k0)> source;
};

/// The block tile and its pipeline.
struct TileGemm {
  static constexpr int64_t kRows = 128;
  static constexpr int64_t kStep = 32;
  static constexpr int64_t kThreads = 128;

  /// Columns of the tile: 64 or 128.
  int64_t cols;
  /// Shared-memory stages (3 to 6).
  int64_t stages;

  /// m16 tiles and n8 tiles of a warp.
  static constexpr int64_t mTiles() { return 4; }
  int64_t nTiles() const { return cols / 16; }
  int64_t sharedBytes() const { return stages * stageElements() * 2; }

  /// Emits the main loop over `steps` (an index, at least 1) reduction
  /// steps of the block's threads (`tid`, `warp` from threadAndWarp) and
  /// returns the accumulators: entry (i * nTiles() + j) * 4 + v is C
  /// fragment entry v of the warp's m16 tile i and n8 tile j (DeviceEmitter.h
  /// gives the layout; accRow and accCol its coordinates).
  SmallVector<Value> emit(DeviceEmitter &e, Value tid, Value warp,
                          const TileOperand &a, const TileOperand &b,
                          Value steps) const;

  /// The tile row of accumulator entries 2 * half and 2 * half + 1 of m16
  /// tile i.
  Value accRow(DeviceEmitter &e, Value warp, int64_t i, int64_t half) const;
  /// The tile column of the first of accumulator entries (v, v + 1) of n8
  /// tile j (the second is one more).
  Value accCol(DeviceEmitter &e, Value warp, int64_t j) const;

private:
  int64_t aElements() const { return kRows * kStep; }
  int64_t stageElements() const { return aElements() + kStep * cols; }
};

} // namespace mlir::moe

#endif // MOE_GPU_TILEGEMM_H
