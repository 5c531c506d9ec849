//===- DeviceEmitter.h - Builders for hand-structured GPU kernels -*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// What the kernel generators of the GPU back end share: index and fp32
// arithmetic, shared and global memory accesses in bf16 pairs, warp
// reductions, loops whose loads are batched, and tensor-core fragments.
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

#ifndef MOE_DIALECT_MOE_UTILS_DEVICEEMITTER_H
#define MOE_DIALECT_MOE_UTILS_DEVICEEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

#include <array>
#include <numeric>

namespace mlir::moe {

/// The four 32-bit registers of an A fragment, or the four fp32
/// accumulators of a C fragment.
using Frag4 = std::array<Value, 4>;

/// Emits device code: index and fp32 arithmetic, shared and global memory
/// accesses, warp reductions and tensor-core fragments.
class DeviceEmitter {
public:
  explicit DeviceEmitter(ImplicitLocOpBuilder &b) : b(b) {}

  ImplicitLocOpBuilder &b;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, int64_t y) {
    return y == 1 ? x : arith::MulIOp::create(b, x, idx(y)).getResult();
  }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, idx(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, idx(y)); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  Value ule(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ule, x, y);
  }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }

  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, x); }

  Value load(Value mem, ValueRange indices) {
    return memref::LoadOp::create(b, mem, indices);
  }
  void store(Value v, Value mem, ValueRange indices) {
    memref::StoreOp::create(b, v, mem, indices);
  }
  /// An fp32 value rounded to bf16 and stored at `mem[i]`.
  void storeBF16(Value v, Value mem, Value i) {
    store(arith::TruncFOp::create(b, b.getBF16Type(), v), mem, i);
  }
  /// The 32-bit word holding the bf16 pair `mem[i], mem[i + 1]` (i even).
  Value loadPair(Value mem, Value i) {
    auto pairType = VectorType::get({2}, b.getBF16Type());
    Value pair =
        vector::LoadOp::create(b, pairType, mem, ValueRange{i},
                               /*nontemporal=*/false, llvm::MaybeAlign(4));
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
  }
  /// Two fp32 values packed as a bf16 pair in one 32-bit word.
  Value packPair(Value lo, Value hi) {
    Type bf16 = b.getBF16Type();
    Value pair = vector::FromElementsOp::create(
        b, VectorType::get({2}, bf16),
        ValueRange{arith::TruncFOp::create(b, bf16, lo),
                   arith::TruncFOp::create(b, bf16, hi)});
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
  }
  /// Stores fp32 `lo, hi` as the bf16 pair `mem[i], mem[i + 1]` (i even).
  void storePairBF16(Value lo, Value hi, Value mem, Value i) {
    Type bf16 = b.getBF16Type();
    Value pair = vector::FromElementsOp::create(
        b, VectorType::get({2}, bf16),
        ValueRange{arith::TruncFOp::create(b, bf16, lo),
                   arith::TruncFOp::create(b, bf16, hi)});
    vector::StoreOp::create(b, pair, mem, ValueRange{i},
                            /*nontemporal=*/false, llvm::MaybeAlign(4));
  }
  /// The two bf16 values `mem[i], mem[i + 1]` as fp32.
  std::pair<Value, Value> loadPairF32(Value mem, Value i) {
    auto pairType = VectorType::get({2}, b.getBF16Type());
    Value pair =
        vector::LoadOp::create(b, pairType, mem, ValueRange{i},
                               /*nontemporal=*/false, llvm::MaybeAlign(4));
    Type f32 = b.getF32Type();
    Value lo = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0});
    Value hi = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{1});
    return {arith::ExtFOp::create(b, f32, lo),
            arith::ExtFOp::create(b, f32, hi)};
  }

  /// The sum of `v` over the 32 lanes of the warp.
  Value warpSum(Value v) {
    for (int64_t offset : {16, 8, 4, 2, 1}) {
      auto shuffle = gpu::ShuffleOp::create(
          b, v, arith::ConstantIntOp::create(b, offset, 32).getResult(),
          arith::ConstantIntOp::create(b, 32, 32).getResult(),
          gpu::ShuffleMode::XOR);
      v = fadd(v, shuffle.getShuffleResult());
    }
    return v;
  }

  void barrier() { gpu::BarrierOp::create(b); }

  /// `acc + A B` on tensor cores: m16n8k16, bf16 operands, fp32 accumulator.
  Frag4 mma(const Frag4 &a, std::array<Value, 2> bFrag, const Frag4 &acc) {
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
    auto op = NVVM::MmaOp::create(
        b, resultType, ValueRange(a), ValueRange(bFrag), ValueRange(acc),
        ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    Frag4 result;
    for (int64_t i = 0; i < 4; ++i)
      result[i] = LLVM::ExtractValueOp::create(b, op.getRes(), i);
    return result;
  }
  Frag4 zeroFrag() {
    Value z = f32(0.0);
    return {z, z, z, z};
  }

  /// The thread index and its warp; sets the lane coordinates.
  std::pair<Value, Value> threadAndWarp() {
    Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    setLane(rem(tid, 32));
    return {tid, div(tid, 32)};
  }

  /// The block's dynamic shared memory, as bytes.
  Value dynamicSharedMemory() {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    return gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface(), space));
  }

  /// A typed 1-D view of `count` elements at byte `offset` of the dynamic
  /// shared memory `smem` (from dynamicSharedMemory()).
  Value sharedView(Value smem, int64_t offset, int64_t count,
                   Type elementType) {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    auto type = MemRefType::get({count}, elementType,
                                MemRefLayoutAttrInterface(), space);
    return memref::ViewOp::create(b, type, smem, idx(offset), ValueRange{});
  }

  /// Lane coordinates: g = lane / 4 and c = 2 * (lane % 4).
  void setLane(Value laneId) {
    lane = laneId;
    laneGroup = div(lane, 4);
    laneCol = mul(rem(lane, 4), 2);
  }
  Value lane, laneGroup, laneCol;

  /// `count` (1, 2 or 4) 8x8 bf16 matrices from shared memory by one
  /// ldmatrix: lane l gives in `at` the element offset in `mem` of row
  /// l % 8 of matrix l / 8; the result holds one 32-bit word per matrix,
  /// laid out as an A fragment's register (lane l: row l / 4, columns
  /// 2 (l % 4) and one more). With `transpose`, each matrix is read
  /// column-wise instead.
  SmallVector<Value> ldmatrix(Value mem, Value at, int64_t count,
                              bool transpose) {
    auto type = VectorType::get({count, 2}, b.getBF16Type());
    Value tiles = nvgpu::LdMatrixOp::create(b, type, mem, ValueRange{at},
                                            transpose, count);
    SmallVector<Value> words;
    for (int64_t i = 0; i < count; ++i) {
      Value pair = vector::ExtractOp::create(b, tiles, ArrayRef<int64_t>{i});
      Value word = vector::BitCastOp::create(
          b, VectorType::get({1}, b.getI32Type()), pair);
      words.push_back(vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0}));
    }
    return words;
  }
  /// Element offset of (row, 8-element chunk) in a bf16 tile whose rows
  /// hold `rowChunks` (4, 8 or 16) chunks of 16 bytes, with the chunk index
  /// XOR-ed by bits of the row: eight rows read at the same chunk (one
  /// ldmatrix matrix), or a row's chunks written by consecutive threads,
  /// fall into distinct 16-byte bank groups of a 128-byte line. Rows of 4
  /// chunks (64 bytes) pair up in a line, so their pattern follows row / 2;
  /// wider rows follow row % 8.
  Value swizzledOffset(Value row, Value chunk, int64_t rowChunks) {
    Value bits = rowChunks == 4 ? rem(div(row, 2), 4) : rem(row, 8);
    Value physical = arith::XOrIOp::create(b, chunk, bits);
    return add(mul(row, rowChunks * 8), mul(physical, 8));
  }

  /// fragA's result by one ldmatrix.x4 (the rows of `mem` must be 16-byte
  /// aligned: `base` and `ld` multiples of 8).
  Frag4 ldmatrixA(Value mem, Value base, Value row0, Value col0, int64_t ld) {
    Value matrix = div(lane, 8);
    Value r = add(add(row0, rem(lane, 8)), mul(rem(matrix, 2), 8));
    Value c = add(col0, mul(div(matrix, 2), 8));
    SmallVector<Value> w = ldmatrix(mem, add(base, add(mul(r, ld), c)), 4,
                                    /*transpose=*/false);
    return {w[0], w[1], w[2], w[3]};
  }
  /// The B fragments of columns n0 .. n0 + 7 and n0 + 8 .. n0 + 15 (k0 ..
  /// k0 + 15) by one ldmatrix.x4. `kMajor`: row k of `mem` holds row k of
  /// B (the weights' usual layout, read transposed); otherwise row n holds
  /// column n of B (fragB's n-major tiles).
  std::array<std::array<Value, 2>, 2> ldmatrixB(Value mem, Value base, Value k0,
                                                Value n0, int64_t ld,
                                                bool kMajor) {
    Value matrix = div(lane, 8), row = rem(lane, 8);
    // Matrix i: k half i % 2, n half i / 2 for k-major tiles; n half i / 2,
    // k half i % 2 for n-major ones: the same order of the four words.
    Value kOff = mul(rem(matrix, 2), 8), nOff = mul(div(matrix, 2), 8);
    Value at = kMajor ? add(mul(add(add(k0, kOff), row), ld), add(n0, nOff))
                      : add(mul(add(add(n0, nOff), row), ld), add(k0, kOff));
    SmallVector<Value> w = ldmatrix(mem, add(base, at), 4, kMajor);
    return {{{w[0], w[1]}, {w[2], w[3]}}};
  }

  /// A fragment of the 16x16 bf16 tile at (row0, col0) of a row-major
  /// matrix with leading dimension `ld` starting at `base` in `mem`.
  Frag4 fragA(Value mem, Value base, Value row0, Value col0, int64_t ld) {
    Value r = add(row0, laneGroup), c = add(col0, laneCol);
    Value at = add(base, add(mul(r, ld), c));
    return {loadPair(mem, at), loadPair(mem, add(at, 8 * ld)),
            loadPair(mem, add(at, 8)), loadPair(mem, add(at, 8 * ld + 8))};
  }
  /// A fragment from an fp32 row-major matrix, rounded to bf16.
  Frag4 fragAFromF32(Value mem, Value row0, Value col0, int64_t ld) {
    Value r = add(row0, laneGroup), c = add(col0, laneCol);
    Value at = add(mul(r, ld), c);
    auto pairAt = [&](Value i) {
      return packPair(load(mem, i), load(mem, add(i, 1)));
    };
    return {pairAt(at), pairAt(add(at, 8 * ld)), pairAt(add(at, 8)),
            pairAt(add(at, 8 * ld + 8))};
  }
  /// A B fragment (16 rows k, 8 columns n) from an n-major tile: column n
  /// of B is row (n0 + n) of `mem`, starting at element k0.
  std::array<Value, 2> fragB(Value mem, Value base, Value n0, Value k0,
                             int64_t ld) {
    Value at = add(base, add(mul(add(n0, laneGroup), ld), add(k0, laneCol)));
    return {loadPair(mem, at), loadPair(mem, add(at, 8))};
  }
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
          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, lb, ub, idx(step), init,
        [&](OpBuilder &nested, Location loc, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          SmallVector<Value> next = body(iv, args);
          scf::YieldOp::create(b, next);
        });
    return SmallVector<Value>(loop.getResults());
  }
  void forLoop(Value lb, Value ub, int64_t step,
               function_ref<void(Value)> body) {
    forLoop(lb, ub, step, ValueRange{}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>{};
    });
  }
  /// `count` iterations as an scf.for over groups of `unroll`: `load(i)`
  /// runs for every iteration of a group before any `use(i, loaded)`, so
  /// that a group's global loads are in flight together rather than one
  /// latency per iteration.
  void forBatched(int64_t count, int64_t unroll,
                  function_ref<SmallVector<Value>(Value)> load,
                  function_ref<void(Value, ArrayRef<Value>)> use) {
    unroll = std::gcd(unroll, count);
    forLoop(idx(0), idx(count), unroll, [&](Value base) {
      SmallVector<Value> ivs;
      SmallVector<SmallVector<Value>> loaded;
      for (int64_t u = 0; u < unroll; ++u) {
        ivs.push_back(add(base, u));
        loaded.push_back(load(ivs.back()));
      }
      for (int64_t u = 0; u < unroll; ++u)
        use(ivs[u], loaded[u]);
    });
  }

  void ifThen(Value cond, function_ref<void()> body) {
    scf::IfOp::create(b, cond, [&](OpBuilder &nested, Location loc) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(),
                          nested.getInsertionPoint());
      body();
      scf::YieldOp::create(b);
    });
  }
};

//===----------------------------------------------------------------------===//
// The host side of generated kernels
//===----------------------------------------------------------------------===//

/// A new gpu.module `name` at the end of `module` (renamed if the name is
/// taken); `module` becomes a GPU container module.
inline gpu::GPUModuleOp createKernelModule(ModuleOp module, StringRef name) {
  MLIRContext *ctx = module.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  auto kernels = gpu::GPUModuleOp::create(builder, module.getLoc(), name);
  SymbolTable(module).insert(kernels);
  return kernels;
}

/// An empty kernel `name` of `threads` threads (its known block size) at the
/// end of `kernels`.
inline gpu::GPUFuncOp createKernel(gpu::GPUModuleOp kernels, Location loc,
                                   StringRef name, TypeRange argTypes,
                                   int64_t threads) {
  MLIRContext *ctx = kernels.getContext();
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     FunctionType::get(ctx, argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {static_cast<int32_t>(threads), 1, 1}));
  return func;
}

/// `tensor` as a read-only buffer with the identity layout, for a launch.
inline Value readOnlyBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memType = MemRefType::get(type.getShape(), type.getElementType());
  return bufferization::ToBufferOp::create(b, memType, tensor,
                                           /*readOnly=*/true);
}

/// 1-D device buffers of (element count, element type) each. Device
/// allocations lower only in their asynchronous form: they are chained on
/// one token and waited for once. Buffer deallocation frees them.
inline SmallVector<Value>
allocateDeviceBuffers(ImplicitLocOpBuilder &b,
                      ArrayRef<std::pair<Value, Type>> buffers) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value token = gpu::WaitOp::create(b, tokenType, ValueRange()).getAsyncToken();
  SmallVector<Value> memrefs;
  for (auto [count, elementType] : buffers) {
    auto memType = MemRefType::get({ShapedType::kDynamic}, elementType);
    auto alloc = gpu::AllocOp::create(b, memType, tokenType, ValueRange{token},
                                      ValueRange{count}, ValueRange(),
                                      /*hostShared=*/false);
    token = alloc.getAsyncToken();
    memrefs.push_back(alloc.getMemref());
  }
  gpu::WaitOp::create(b, Type(), ValueRange{token});
  return memrefs;
}

/// The entries of `sizes` (one per dimension) at the dynamic dimensions of
/// `type`, as memref.alloc takes them.
inline SmallVector<Value> dynamicSizes(ShapedType type, ValueRange sizes) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(sizes[i]);
  return dynamic;
}

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_UTILS_DEVICEEMITTER_H
