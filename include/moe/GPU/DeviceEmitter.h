//===- DeviceEmitter.h - Builders of hand-written GPU kernels ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What the kernel generators of the GPU back end share: index and fp32
// arithmetic, shared and global memory accesses in bf16 pairs, cp.async
// staging of tiles, warp reductions, loops whose loads are batched, and
// tensor-core fragments. The builders are defined in lib/GPU/DeviceEmitter.cpp.
//
// Tensor-core tiles use `mma.sync` m16n8k16 with bf16 operands and fp32
// accumulators (NVVM's op: MLIR 22's nvgpu.mma.sync lowering does not
// accept bf16). Fragment layouts (PTX ISA, "Matrix fragments for
// mma.m16n8k16 with floating point type"), with g = lane / 4 and
// c = 2 * (lane % 4):
//   A (16x16, row major): (g, c), (g + 8, c), (g, c + 8), (g + 8, c + 8),
//                         each a pair of adjacent columns in one 32-bit word;
//   B (16x8):             (k = c, n = g), (k = c + 8, n = g), pairs along k;
//   C (16x8, fp32):       (g, c), (g, c + 1), (g + 8, c), (g + 8, c + 1).
// B tiles are kept "n-major" (row n holds column n of B) so that both A and
// B fragments are 32-bit loads of adjacent elements.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_DEVICEEMITTER_H
#define MOE_GPU_DEVICEEMITTER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>

namespace mlir::moe {

/// The four 32-bit registers of an A fragment, or the four fp32
/// accumulators of a C fragment.
using Frag4 = std::array<Value, 4>;

/// A [rows x cols] tile for DeviceEmitter::copyTileAsync: element (r, c) is
/// `src[srcBase + r * srcLd + c]` of a 1-D global memref (bf16 or f32) and
/// goes to `dst[dstBase + r * dstLd + c]` of a 1-D shared view of the same
/// element type (padded rows: dstLd >= cols). `cols`, both strides and both
/// bases are multiples of a 16-byte piece (8 bf16 or 4 f32 elements).
struct TileCopy {
  Value src, srcBase;
  int64_t srcLd;
  Value dst, dstBase;
  int64_t dstLd;
  int64_t rows, cols;
};

/// Emits device code: index and fp32 arithmetic, shared and global memory
/// accesses, warp reductions and tensor-core fragments.
class DeviceEmitter {
public:
  explicit DeviceEmitter(ImplicitLocOpBuilder &b) : b(b) {}

  ImplicitLocOpBuilder &b;

  Value idx(int64_t v);
  Value f32(double v);
  Value add(Value x, Value y);
  Value add(Value x, int64_t y);
  Value sub(Value x, Value y);
  Value mul(Value x, int64_t y);
  Value mul(Value x, Value y);
  Value div(Value x, int64_t y);
  Value rem(Value x, int64_t y);
  Value ult(Value x, Value y);
  Value ule(Value x, Value y);
  Value eq(Value x, Value y);
  Value select(Value c, Value x, Value y);

  Value fadd(Value x, Value y);
  Value fsub(Value x, Value y);
  Value fmul(Value x, Value y);
  Value exp(Value x);

  Value load(Value mem, ValueRange indices);
  void store(Value v, Value mem, ValueRange indices);
  /// An fp32 value rounded to bf16 and stored at `mem[i]`.
  void storeBF16(Value v, Value mem, Value i);
  /// The 32-bit word holding the bf16 pair `mem[i], mem[i + 1]` (i even).
  Value loadPair(Value mem, Value i);
  /// Two fp32 values packed as a bf16 pair in one 32-bit word.
  Value packPair(Value lo, Value hi);
  /// Stores fp32 `lo, hi` as the bf16 pair `mem[i], mem[i + 1]` (i even).
  void storePairBF16(Value lo, Value hi, Value mem, Value i);
  /// The two bf16 values `mem[i], mem[i + 1]` as fp32.
  std::pair<Value, Value> loadPairF32(Value mem, Value i);

  /// Copies `tile` into shared memory by 16-byte cp.async pieces, spread
  /// over the `threads` threads of the block (this one is `tid`): piece p
  /// (row p / (cols / piece), the row's pieces in order) is copied by thread
  /// p % threads in round p / threads of an scf.for; the last round is
  /// guarded when the pieces do not fill it. `bypassL1`: .cg, cached in L2
  /// only. Commits no group: the caller groups the copies it issued.
  void copyTileAsync(const TileCopy &tile, Value tid, int64_t threads,
                     bool bypassL1 = false);

  /// The sum of `v` over the 32 lanes of the warp.
  Value warpSum(Value v);

  void barrier();

  /// `acc + A B` on tensor cores: m16n8k16, bf16 operands, fp32 accumulator.
  Frag4 mma(const Frag4 &a, std::array<Value, 2> bFrag, const Frag4 &acc);
  Frag4 zeroFrag();

  /// The thread index and its warp; sets the lane coordinates.
  std::pair<Value, Value> threadAndWarp();

  /// The block's dynamic shared memory, as bytes.
  Value dynamicSharedMemory();

  /// A typed 1-D view of `count` elements at byte `offset` of the dynamic
  /// shared memory `smem` (from dynamicSharedMemory()).
  Value sharedView(Value smem, int64_t offset, int64_t count, Type elementType);

  /// Lane coordinates: g = lane / 4 and c = 2 * (lane % 4).
  void setLane(Value laneId);
  Value lane, laneGroup, laneCol;

  /// `count` (1, 2 or 4) 8x8 bf16 matrices from shared memory by one
  /// ldmatrix: lane l gives in `at` the element offset in `mem` of row
  /// l % 8 of matrix l / 8; the result holds one 32-bit word per matrix,
  /// laid out as an A fragment's register (lane l: row l / 4, columns
  /// 2 (l % 4) and one more). With `transpose`, each matrix is read
  /// column-wise instead.
  SmallVector<Value> ldmatrix(Value mem, Value at, int64_t count,
                              bool transpose);
  /// Element offset of (row, 8-element chunk) in a bf16 tile whose rows
  /// hold `rowChunks` (4, 8 or 16) chunks of 16 bytes, with the chunk index
  /// XOR-ed by bits of the row: eight rows read at the same chunk (one
  /// ldmatrix matrix), or a row's chunks written by consecutive threads,
  /// fall into distinct 16-byte bank groups of a 128-byte line. Rows of 4
  /// chunks (64 bytes) pair up in a line, so their pattern follows row / 2;
  /// wider rows follow row % 8.
  Value swizzledOffset(Value row, Value chunk, int64_t rowChunks);

  /// fragA's result by one ldmatrix.x4 (the rows of `mem` must be 16-byte
  /// aligned: `base` and `ld` multiples of 8).
  Frag4 ldmatrixA(Value mem, Value base, Value row0, Value col0, int64_t ld);
  /// The B fragments of columns n0 .. n0 + 7 and n0 + 8 .. n0 + 15 (k0 ..
  /// k0 + 15) by one ldmatrix.x4. `kMajor`: row k of `mem` holds row k of
  /// B (the weights' usual layout, read transposed); otherwise row n holds
  /// column n of B (fragB's n-major tiles).
  std::array<std::array<Value, 2>, 2>
  ldmatrixB(Value mem, Value base, Value k0, Value n0, int64_t ld, bool kMajor);

  /// A fragment of the 16x16 bf16 tile at (row0, col0) of a row-major
  /// matrix with leading dimension `ld` starting at `base` in `mem`.
  Frag4 fragA(Value mem, Value base, Value row0, Value col0, int64_t ld);
  /// A fragment from an fp32 row-major matrix, rounded to bf16.
  Frag4 fragAFromF32(Value mem, Value row0, Value col0, int64_t ld);
  /// A B fragment (16 rows k, 8 columns n) from an n-major tile: column n
  /// of B is row (n0 + n) of `mem`, starting at element k0.
  std::array<Value, 2> fragB(Value mem, Value base, Value n0, Value k0,
                             int64_t ld);
  /// Calls f(e, row, col) for the four accumulator entries of a 16x8 tile
  /// at (row0, col0).
  template <typename F>
  void forEachAcc(Value row0, Value col0, F f) {
    Value r = add(row0, laneGroup), c = add(col0, laneCol);
    f(0, r, c);
    f(1, r, add(c, 1));
    f(2, add(r, 8), c);
    f(3, add(r, 8), add(c, 1));
  }

  /// scf.for over [lb, ub) with `step`; the body gets the induction
  /// variable and the iteration values and returns the next ones.
  SmallVector<Value>
  forLoop(Value lb, Value ub, int64_t step, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  void forLoop(Value lb, Value ub, int64_t step,
               function_ref<void(Value)> body);
  /// `count` iterations as an scf.for over groups of `unroll`: `load(i)`
  /// runs for every iteration of a group before any `use(i, loaded)`, so
  /// that a group's global loads are in flight together rather than one
  /// latency per iteration.
  void forBatched(int64_t count, int64_t unroll,
                  function_ref<SmallVector<Value>(Value)> load,
                  function_ref<void(Value, ArrayRef<Value>)> use);

  void ifThen(Value cond, function_ref<void()> body);
};

//===----------------------------------------------------------------------===//
// The host side of generated kernels
//===----------------------------------------------------------------------===//

/// A new gpu.module `name` at the end of `module` (renamed if the name is
/// taken); `module` becomes a GPU container module.
gpu::GPUModuleOp createKernelModule(ModuleOp module, StringRef name);

/// An empty kernel `name` of `threads` threads (its known block size) at the
/// end of `kernels`.
gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kernels, Location loc,
                            StringRef name, TypeRange argTypes,
                            int64_t threads);

/// `tensor` as a read-only buffer with the identity layout, for a launch.
Value readOnlyBuffer(ImplicitLocOpBuilder &b, Value tensor);

/// 1-D device buffers of (element count, element type) each. Device
/// allocations lower only in their asynchronous form: they are chained on
/// one token and waited for once. Buffer deallocation frees them.
SmallVector<Value>
allocateDeviceBuffers(ImplicitLocOpBuilder &b,
                      ArrayRef<std::pair<Value, Type>> buffers);

/// The entries of `sizes` (one per dimension) at the dynamic dimensions of
/// `type`, as memref.alloc takes them.
SmallVector<Value> dynamicSizes(ShapedType type, ValueRange sizes);

} // namespace mlir::moe

#endif // MOE_GPU_DEVICEEMITTER_H
