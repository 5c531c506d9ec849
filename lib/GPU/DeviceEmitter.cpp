//===- DeviceEmitter.cpp - Builders for hand-structured GPU kernels -------===//
//
// Part of the moe-mlir project.
//
// The builders that DeviceEmitter.h declares: what the GPU back end's kernel
// generators share.
//
//===----------------------------------------------------------------------===//

#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"

#include <numeric>

using namespace mlir;
using namespace mlir::moe;

Value DeviceEmitter::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}
Value DeviceEmitter::f32(double v) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
}
Value DeviceEmitter::add(Value x, Value y) {
  return arith::AddIOp::create(b, x, y);
}
Value DeviceEmitter::add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
Value DeviceEmitter::sub(Value x, Value y) {
  return arith::SubIOp::create(b, x, y);
}
Value DeviceEmitter::mul(Value x, int64_t y) {
  return y == 1 ? x : arith::MulIOp::create(b, x, idx(y)).getResult();
}
Value DeviceEmitter::mul(Value x, Value y) {
  return arith::MulIOp::create(b, x, y);
}
Value DeviceEmitter::div(Value x, int64_t y) {
  return arith::DivUIOp::create(b, x, idx(y));
}
Value DeviceEmitter::rem(Value x, int64_t y) {
  return arith::RemUIOp::create(b, x, idx(y));
}
Value DeviceEmitter::ult(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
}
Value DeviceEmitter::ule(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ule, x, y);
}
Value DeviceEmitter::eq(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y);
}
Value DeviceEmitter::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, c, x, y);
}

Value DeviceEmitter::fadd(Value x, Value y) {
  return arith::AddFOp::create(b, x, y);
}
Value DeviceEmitter::fsub(Value x, Value y) {
  return arith::SubFOp::create(b, x, y);
}
Value DeviceEmitter::fmul(Value x, Value y) {
  return arith::MulFOp::create(b, x, y);
}
Value DeviceEmitter::exp(Value x) { return math::ExpOp::create(b, x); }

Value DeviceEmitter::load(Value mem, ValueRange indices) {
  return memref::LoadOp::create(b, mem, indices);
}
void DeviceEmitter::store(Value v, Value mem, ValueRange indices) {
  memref::StoreOp::create(b, v, mem, indices);
}
void DeviceEmitter::storeBF16(Value v, Value mem, Value i) {
  store(arith::TruncFOp::create(b, b.getBF16Type(), v), mem, i);
}
Value DeviceEmitter::loadPair(Value mem, Value i) {
  auto pairType = VectorType::get({2}, b.getBF16Type());
  Value pair =
      vector::LoadOp::create(b, pairType, mem, ValueRange{i},
                             /*nontemporal=*/false, llvm::MaybeAlign(4));
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
}
Value DeviceEmitter::packPair(Value lo, Value hi) {
  Type bf16 = b.getBF16Type();
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, bf16),
      ValueRange{arith::TruncFOp::create(b, bf16, lo),
                 arith::TruncFOp::create(b, bf16, hi)});
  Value word =
      vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
}
void DeviceEmitter::storePairBF16(Value lo, Value hi, Value mem, Value i) {
  Type bf16 = b.getBF16Type();
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, bf16),
      ValueRange{arith::TruncFOp::create(b, bf16, lo),
                 arith::TruncFOp::create(b, bf16, hi)});
  vector::StoreOp::create(b, pair, mem, ValueRange{i},
                          /*nontemporal=*/false, llvm::MaybeAlign(4));
}
std::pair<Value, Value> DeviceEmitter::loadPairF32(Value mem, Value i) {
  auto pairType = VectorType::get({2}, b.getBF16Type());
  Value pair =
      vector::LoadOp::create(b, pairType, mem, ValueRange{i},
                             /*nontemporal=*/false, llvm::MaybeAlign(4));
  Type f32 = b.getF32Type();
  Value lo = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0});
  Value hi = vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{1});
  return {arith::ExtFOp::create(b, f32, lo), arith::ExtFOp::create(b, f32, hi)};
}

void DeviceEmitter::copyTileAsync(const TileCopy &tile, Value tid,
                                  int64_t threads, bool bypassL1) {
  auto srcType = cast<MemRefType>(tile.src.getType());
  int64_t width = 128 / srcType.getElementTypeBitWidth();
  int64_t perRow = tile.cols / width, pieces = tile.rows * perRow;
  int64_t rounds = (pieces + threads - 1) / threads;
  forLoop(idx(0), idx(rounds), 1, [&](Value i) {
    Value piece = add(tid, mul(i, threads));
    auto copy = [&] {
      Value from, to;
      if (tile.rows == 1) {
        Value c = mul(piece, width);
        from = add(tile.srcBase, c);
        to = add(tile.dstBase, c);
      } else {
        Value r = div(piece, perRow);
        Value c = mul(rem(piece, perRow), width);
        from = add(tile.srcBase, add(mul(r, tile.srcLd), c));
        to = add(tile.dstBase, add(mul(r, tile.dstLd), c));
      }
      nvgpu::DeviceAsyncCopyOp::create(b, tile.dst, ValueRange{to}, tile.src,
                                       ValueRange{from}, b.getIndexAttr(width),
                                       Value(),
                                       bypassL1 ? b.getUnitAttr() : UnitAttr());
    };
    if (pieces % threads == 0)
      copy();
    else
      ifThen(ult(piece, idx(pieces)), copy);
  });
}

Value DeviceEmitter::warpSum(Value v) {
  for (int64_t offset : {16, 8, 4, 2, 1}) {
    auto shuffle = gpu::ShuffleOp::create(
        b, v, arith::ConstantIntOp::create(b, offset, 32).getResult(),
        arith::ConstantIntOp::create(b, 32, 32).getResult(),
        gpu::ShuffleMode::XOR);
    v = fadd(v, shuffle.getShuffleResult());
  }
  return v;
}

void DeviceEmitter::barrier() { gpu::BarrierOp::create(b); }

Frag4 DeviceEmitter::mma(const Frag4 &a, std::array<Value, 2> bFrag,
                         const Frag4 &acc) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  auto op = NVVM::MmaOp::create(
      b, resultType, ValueRange(a), ValueRange(bFrag), ValueRange(acc),
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  Frag4 result;
  for (int64_t i = 0; i < 4; ++i)
    result[i] = LLVM::ExtractValueOp::create(b, op.getRes(), i);
  return result;
}
Frag4 DeviceEmitter::zeroFrag() {
  Value z = f32(0.0);
  return {z, z, z, z};
}

std::pair<Value, Value> DeviceEmitter::threadAndWarp() {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  setLane(rem(tid, 32));
  return {tid, div(tid, 32)};
}

Value DeviceEmitter::dynamicSharedMemory() {
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface(), space));
}

Value DeviceEmitter::sharedView(Value smem, int64_t offset, int64_t count,
                                Type elementType) {
  auto space =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto type =
      MemRefType::get({count}, elementType, MemRefLayoutAttrInterface(), space);
  return memref::ViewOp::create(b, type, smem, idx(offset), ValueRange{});
}

void DeviceEmitter::setLane(Value laneId) {
  lane = laneId;
  laneGroup = div(lane, 4);
  laneCol = mul(rem(lane, 4), 2);
}

SmallVector<Value> DeviceEmitter::ldmatrix(Value mem, Value at, int64_t count,
                                           bool transpose) {
  auto type = VectorType::get({count, 2}, b.getBF16Type());
  Value tiles =
      nvgpu::LdMatrixOp::create(b, type, mem, ValueRange{at}, transpose, count);
  SmallVector<Value> words;
  for (int64_t i = 0; i < count; ++i) {
    Value pair = vector::ExtractOp::create(b, tiles, ArrayRef<int64_t>{i});
    Value word = vector::BitCastOp::create(
        b, VectorType::get({1}, b.getI32Type()), pair);
    words.push_back(vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0}));
  }
  return words;
}
Value DeviceEmitter::swizzledOffset(Value row, Value chunk, int64_t rowChunks) {
  Value bits = rowChunks == 4 ? rem(div(row, 2), 4) : rem(row, 8);
  Value physical = arith::XOrIOp::create(b, chunk, bits);
  return add(mul(row, rowChunks * 8), mul(physical, 8));
}

Frag4 DeviceEmitter::ldmatrixA(Value mem, Value base, Value row0, Value col0,
                               int64_t ld) {
  Value matrix = div(lane, 8);
  Value r = add(add(row0, rem(lane, 8)), mul(rem(matrix, 2), 8));
  Value c = add(col0, mul(div(matrix, 2), 8));
  SmallVector<Value> w = ldmatrix(mem, add(base, add(mul(r, ld), c)), 4,
                                  /*transpose=*/false);
  return {w[0], w[1], w[2], w[3]};
}
std::array<std::array<Value, 2>, 2>
DeviceEmitter::ldmatrixB(Value mem, Value base, Value k0, Value n0, int64_t ld,
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

Frag4 DeviceEmitter::fragA(Value mem, Value base, Value row0, Value col0,
                           int64_t ld) {
  Value r = add(row0, laneGroup), c = add(col0, laneCol);
  Value at = add(base, add(mul(r, ld), c));
  return {loadPair(mem, at), loadPair(mem, add(at, 8 * ld)),
          loadPair(mem, add(at, 8)), loadPair(mem, add(at, 8 * ld + 8))};
}
Frag4 DeviceEmitter::fragAFromF32(Value mem, Value row0, Value col0,
                                  int64_t ld) {
  Value r = add(row0, laneGroup), c = add(col0, laneCol);
  Value at = add(mul(r, ld), c);
  auto pairAt = [&](Value i) {
    return packPair(load(mem, i), load(mem, add(i, 1)));
  };
  return {pairAt(at), pairAt(add(at, 8 * ld)), pairAt(add(at, 8)),
          pairAt(add(at, 8 * ld + 8))};
}
std::array<Value, 2> DeviceEmitter::fragB(Value mem, Value base, Value n0,
                                          Value k0, int64_t ld) {
  Value at = add(base, add(mul(add(n0, laneGroup), ld), add(k0, laneCol)));
  return {loadPair(mem, at), loadPair(mem, add(at, 8))};
}

SmallVector<Value> DeviceEmitter::forLoop(
    Value lb, Value ub, int64_t step, ValueRange init,
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
void DeviceEmitter::forLoop(Value lb, Value ub, int64_t step,
                            function_ref<void(Value)> body) {
  forLoop(lb, ub, step, ValueRange{}, [&](Value iv, ValueRange) {
    body(iv);
    return SmallVector<Value>{};
  });
}
void DeviceEmitter::forBatched(int64_t count, int64_t unroll,
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

void DeviceEmitter::ifThen(Value cond, function_ref<void()> body) {
  scf::IfOp::create(b, cond, [&](OpBuilder &nested, Location loc) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
    body();
    scf::YieldOp::create(b);
  });
}

//===----------------------------------------------------------------------===//
// The host side of generated kernels
//===----------------------------------------------------------------------===//

gpu::GPUModuleOp moe::createKernelModule(ModuleOp module, StringRef name) {
  MLIRContext *ctx = module.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  auto kernels = gpu::GPUModuleOp::create(builder, module.getLoc(), name);
  SymbolTable(module).insert(kernels);
  return kernels;
}

gpu::GPUFuncOp moe::createKernel(gpu::GPUModuleOp kernels, Location loc,
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

Value moe::readOnlyBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memType = MemRefType::get(type.getShape(), type.getElementType());
  return bufferization::ToBufferOp::create(b, memType, tensor,
                                           /*readOnly=*/true);
}

SmallVector<Value>
moe::allocateDeviceBuffers(ImplicitLocOpBuilder &b,
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

SmallVector<Value> moe::dynamicSizes(ShapedType type, ValueRange sizes) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(sizes[i]);
  return dynamic;
}
