//===- GenerateAttentionKernels.cpp - Tensor-core flash attention ---------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-attention-kernels, the GPU back end's kernel
// generator for `moe.mla_attention`: a FlashAttention-2 style causal forward
// (ALGORITHMS.md section 3.2) built as one `gpu.func` from the op's shapes
// and element types (f32 or bf16 per operand), and the op replaced by its
// launch (after a prep kernel that converts fp32 K and V to bf16). One
// block of four or eight warps per (query tile, head, batch); each warp owns
// 16 or 32 query rows. Tile products use `mma.sync` m16n8k16 with bf16
// operands from `ldmatrix` and fp32 accumulators; the online softmax (row
// max, row sum, rescaling), the division by the row sum, the sigmoid gate
// and the log-sum-exp are fp32.
//
// The tensor-core fragment helpers are in DeviceEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEATTENTIONKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Keys per key tile.
constexpr int64_t kKeyTile = 64;
/// Threads per block of the prep kernel (four warps).
constexpr int64_t kConvertThreads = 128;
/// Padding (in bf16 elements) of shared-memory rows: rows of `D + 8`
/// elements (D a multiple of 16) start 16 bytes apart modulo 128, so the
/// eight rows of an 8x8 ldmatrix tile fall into distinct bank groups.
constexpr int64_t kPad = 8;
/// Global loads in flight per thread while converting rows.
constexpr int64_t kUnroll = 8;
/// The most dynamic shared memory a block may opt in to on sm_90.
constexpr int64_t kMaxSharedBytes = 227 * 1024;

bool isBF16(Value v) { return getElementTypeOrSelf(v.getType()).isBF16(); }

/// What the generator knows about one mla_attention op.
struct AttentionPlan {
  MLAAttentionOp op;
  int64_t qkDim, valueDim;
  double scale;
  bool hasGate;
  bool writeLse;
  /// fp32 K and V are converted to bf16 once by a prep kernel rather than
  /// in every block that reads them.
  bool convertOnce;
  /// K and V are both bf16: read in place.
  bool kvBF16;
  /// Query rows per block: the pass's query-tile, halved while the
  /// kernel's shared memory would not fit.
  int64_t queryTile;
};

/// Copies rows of the [B, T, H, D] operands of one (batch, head) as bf16,
/// for both kernels. An operand is a 4-D memref (f32 or bf16) or a 1-D bf16
/// copy holding it as [B, Tp, H, D] (Tp: T rounded up to whole key tiles,
/// the extra rows zero).
class RowCopier {
public:
  RowCopier(DeviceEmitter &e, Value tid, int64_t nThreads, Value batch,
            Value head, Value length, Value numHeads, Value paddedLength)
      : e(e), tid(tid), nThreads(nThreads), batch(batch), head(head),
        length(length), numHeads(numHeads), paddedLength(paddedLength) {}

  /// The indices of element (t, d) of `mem`, whose rows have D elements.
  SmallVector<Value> at(Value mem, int64_t D, Value t, Value d) {
    if (cast<MemRefType>(mem.getType()).getRank() == 4)
      return {batch, t, head, d};
    return {e.add(rowOffset(D, t), d)};
  }
  /// The offset of row t in a 1-D copy.
  Value rowOffset(int64_t D, Value t) {
    return e.mul(
        e.add(e.mul(e.add(e.mul(batch, paddedLength), t), numHeads), head), D);
  }

  /// Rows t0 .. t0 + rows - 1 of `mem` (f32, rounded, or bf16) to the bf16
  /// buffer `dst` at dstBase + r dstLd + d by 16-byte loads and stores;
  /// rows past the sequence are written as zeros.
  void copy(Value mem, int64_t D, Value t0, int64_t rows, Value dst,
            Value dstBase, Value dstLd) {
    ImplicitLocOpBuilder &b = e.b;
    Type elem = getElementTypeOrSelf(mem.getType());
    int64_t width = elem.isF32() ? 4 : 8, perRow = D / width;
    int64_t total = rows * perRow;
    auto vecType = VectorType::get({width}, elem);
    auto coords = [&](Value i) {
      Value el = e.add(tid, e.mul(i, nThreads));
      if (total % nThreads != 0) // the last round's extra threads reload
        el = arith::MinUIOp::create(b, el, e.idx(total - 1));
      return std::make_pair(e.div(el, perRow), e.mul(e.rem(el, perRow), width));
    };
    e.forBatched(
        (total + nThreads - 1) / nThreads, kUnroll,
        [&](Value i) -> SmallVector<Value> {
          auto [r, d] = coords(i);
          Value t = e.add(t0, r);
          Value row = e.select(e.ult(t, length), t, e.idx(0));
          return {vector::LoadOp::create(b, vecType, mem, at(mem, D, row, d),
                                         /*nontemporal=*/false,
                                         llvm::MaybeAlign(16))};
        },
        [&](Value i, ArrayRef<Value> in) {
          auto [r, d] = coords(i);
          Value zeros = arith::ConstantOp::create(
              b, vecType,
              DenseElementsAttr::get(vecType, b.getFloatAttr(elem, 0.0)));
          Value x = e.select(e.ult(e.add(t0, r), length), in[0], zeros);
          if (elem.isF32())
            x = arith::TruncFOp::create(
                b, VectorType::get({width}, b.getBF16Type()), x);
          vector::StoreOp::create(
              b, x, dst, ValueRange{e.add(dstBase, e.add(e.mul(r, dstLd), d))},
              /*nontemporal=*/false, llvm::MaybeAlign(2 * width));
        });
  }

  /// The same rows of a bf16 `mem` into shared memory `dst` by 16-byte
  /// cp.async copies (.cg: read once per block, from L2), unrolled. A few
  /// consecutive threads share a row (at most 8: 128 bytes), so that a
  /// thread's copies are one base address plus constants and row strides.
  /// With `checked`, rows past the sequence are zero-filled.
  void copyAsync(Value mem, int64_t D, Value t0, int64_t rows, Value dst,
                 Value dstBase, int64_t dstLd, bool checked) {
    ImplicitLocOpBuilder &b = e.b;
    int64_t perRow = D / 8, lanes = std::gcd(perRow, int64_t(8));
    int64_t rowsPerRound = nThreads / lanes;
    Value r0 = e.div(tid, lanes), c0 = e.mul(e.rem(tid, lanes), 8);
    for (int64_t i = 0; i * rowsPerRound < rows; ++i) {
      Value r = e.add(r0, i * rowsPerRound);
      auto body = [&] {
        Value t = e.add(t0, r), srcElements;
        if (checked) {
          Value valid = e.ult(t, length);
          t = e.select(valid, t, e.idx(0));
          srcElements = e.select(valid, e.idx(8), e.idx(0));
        }
        Value dstRow = e.add(dstBase, e.mul(r, dstLd));
        for (int64_t j = 0; j < perRow / lanes; ++j) {
          Value c = e.add(c0, 8 * lanes * j);
          nvgpu::DeviceAsyncCopyOp::create(
              b, dst, ValueRange{e.add(dstRow, c)}, mem, at(mem, D, t, c),
              b.getIndexAttr(8), srcElements, b.getUnitAttr());
        }
      };
      if ((i + 1) * rowsPerRound <= rows)
        body();
      else
        e.ifThen(e.ult(r, e.idx(rows)), body);
    }
  }

private:
  DeviceEmitter &e;
  Value tid;
  int64_t nThreads;
  Value batch, head, length, numHeads, paddedLength;
};

/// Builds the kernels and the launches of one plan.
class AttentionKernelGenerator {
public:
  AttentionKernelGenerator(AttentionPlan plan, gpu::GPUModuleOp module,
                           StringRef name)
      : plan(plan), queryTile(plan.queryTile), module(module), name(name) {}

  void generate();
  int64_t sharedBytes() const { return sharedElems() * 2; }

private:
  int64_t DQK() const { return plan.qkDim; }
  int64_t DV() const { return plan.valueDim; }
  int64_t qkLd() const { return DQK() + kPad; }
  int64_t vLd() const { return DV() + kPad; }
  /// Query rows per warp: one row of 16-row mma.sync fragments up to query
  /// tiles of 128 (four or eight warps), two (each K and V fragment used
  /// twice) for 256 (eight warps).
  int64_t warpRows() const { return queryTile <= 128 ? 16 : 32; }
  int64_t mTiles() const { return warpRows() / 16; }
  int64_t threads() const { return queryTile / warpRows() * 32; }
  /// The Q fragments stay in registers for the whole key loop (16-row
  /// warps); with 32-row warps they are reloaded from shared memory.
  bool qInRegisters() const { return mTiles() == 1; }
  /// K and V reach shared memory by cp.async from bf16 (the operands or
  /// their converted copies), double-buffered; otherwise every block
  /// converts its fp32 tiles synchronously into one stage.
  bool asyncKV() const { return plan.convertOnce || plan.kvBF16; }
  // Shared memory (bf16): stages of K [64, DQK] and V [64, DV] (row-major,
  // rows padded), the first at 0; the query tile Q [queryTile, DQK] after
  // the first stage. With Q in registers it overlaps the second stage
  // (Q's fragments are read before the first step's barrier, after which
  // the first prefetch into that stage is issued);
  // otherwise it follows the stages.
  int64_t qElems() const { return queryTile * qkLd(); }
  int64_t kElems() const { return kKeyTile * qkLd(); }
  int64_t vElems() const { return kKeyTile * vLd(); }
  int64_t stageElems() const { return kElems() + vElems(); }
  /// cp.async stages: the tile computed on and the next one.
  int64_t numStages() const { return asyncKV() ? 2 : 1; }
  int64_t qOffset() const {
    return qInRegisters() ? stageElems() : numStages() * stageElems();
  }
  int64_t sharedElems() const {
    return std::max(qOffset() + qElems(), numStages() * stageElems());
  }

  /// The prep kernel: the fp32 operands among K and V as bf16 copies.
  gpu::GPUFuncOp buildConvertKernel(TypeRange argTypes,
                                    ArrayRef<int64_t> widths);
  /// The forward kernel.
  gpu::GPUFuncOp buildForwardKernel(TypeRange argTypes);

  AttentionPlan plan;
  int64_t queryTile;
  gpu::GPUModuleOp module;
  std::string name;
};

/// Launched over (key tiles, heads, batch): pairs (source, bf16 copy) of
/// rows `widths[i]` wide.
gpu::GPUFuncOp
AttentionKernelGenerator::buildConvertKernel(TypeRange argTypes,
                                             ArrayRef<int64_t> widths) {
  gpu::GPUFuncOp func = createKernel(
      module, plan.op.getLoc(), name + "_convert", argTypes, kConvertThreads);
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  auto args = func.getArguments();
  Value tid = e.threadAndWarp().first;
  Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value length = memref::DimOp::create(b, args[0], 1);
  Value numHeads = memref::DimOp::create(b, args[0], 2);
  Value paddedLength =
      e.mul(e.div(e.add(length, kKeyTile - 1), kKeyTile), kKeyTile);
  RowCopier rows(e, tid, kConvertThreads, batch, head, length, numHeads,
                 paddedLength);
  Value t0 = e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), kKeyTile);
  for (auto [i, D] : llvm::enumerate(widths))
    rows.copy(args[2 * i], D, t0, kKeyTile, args[2 * i + 1],
              rows.rowOffset(D, t0), e.mul(numHeads, D));
  gpu::ReturnOp::create(b);
  return func;
}

/// Argument order: q, k, v, [gate], out, [lse], where k and v are the bf16
/// copies of fp32 operands with convertOnce.
gpu::GPUFuncOp
AttentionKernelGenerator::buildForwardKernel(TypeRange argTypes) {
  const int64_t nThreads = threads();
  gpu::GPUFuncOp func =
      createKernel(module, plan.op.getLoc(), name, argTypes, nThreads);
  MLIRContext *ctx = func.getContext();
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  auto args = func.getArguments();
  unsigned next = 0;
  Value q = args[next++], k = args[next++], v = args[next++];
  Value gate = plan.hasGate ? args[next++] : Value();
  Value out = args[next++];
  Value lse = plan.writeLse ? args[next++] : Value();

  auto [tid, warp] = e.threadAndWarp();
  // Blocks run in the order of their index, x fastest: the grid is
  // (heads x batch, query tiles), so that the longest query tiles (the last
  // ones: they see the most keys) of every head and batch go first and the
  // shortest last, which keeps the SMs busy to the end.
  Value length = memref::DimOp::create(b, q, 1);
  Value numHeads = memref::DimOp::create(b, q, 2);
  Value numQTiles = gpu::GridDimOp::create(b, gpu::Dimension::y);
  Value blockY = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value qTile = e.sub(e.sub(numQTiles, blockY), e.idx(1));
  Value headBatch = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = arith::RemUIOp::create(b, headBatch, numHeads);
  Value batch = arith::DivUIOp::create(b, headBatch, numHeads);
  Value q0 = e.mul(qTile, queryTile);
  Value paddedLength =
      e.mul(e.div(e.add(length, kKeyTile - 1), kKeyTile), kKeyTile);
  RowCopier rows(e, tid, nThreads, batch, head, length, numHeads, paddedLength);

  Value sm = e.sharedView(e.dynamicSharedMemory(), 0, sharedElems(), bf16);
  Type asyncToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto commitGroup = [&]() -> Value {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, asyncToken, ValueRange())
        .getResult();
  };
  // Element offset of the stage that holds key tile kt.
  auto stageBase = [&](Value kt) {
    return asyncKV() ? e.mul(e.rem(kt, numStages()), stageElems()) : e.idx(0);
  };
  // Copies key tile kt's K and V into `base` (cp.async, or converted by
  // this block). The last tile may run past the sequence: its rows are
  // zero-filled (V's must be finite: their P entries are zero).
  auto stageTile = [&](Value kt, Value base) {
    Value t0 = e.mul(kt, kKeyTile);
    Value vBase = e.add(base, kElems());
    if (!asyncKV()) {
      rows.copy(k, DQK(), t0, kKeyTile, sm, base, e.idx(qkLd()));
      rows.copy(v, DV(), t0, kKeyTile, sm, vBase, e.idx(vLd()));
      return;
    }
    // The whole tile's copies, or (checked) the zero-filling ones.
    auto copies = [&](bool checked) {
      return [&, checked](OpBuilder &nested, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        rows.copyAsync(k, DQK(), t0, kKeyTile, sm, base, qkLd(), checked);
        rows.copyAsync(v, DV(), t0, kKeyTile, sm, vBase, vLd(), checked);
        scf::YieldOp::create(b);
      };
    };
    scf::IfOp::create(b, e.ule(e.add(t0, kKeyTile), length), copies(false),
                      copies(true));
  };

  // Key tiles entirely before the query tile need no mask; the diagonal
  // ones (queryTile / 64 of them, fewer where the last ones would start
  // past the sequence) do. Tiles after the query tile are never visited.
  Value firstDiagonal = e.div(q0, kKeyTile);
  Value endTile =
      arith::MinUIOp::create(b, e.add(firstDiagonal, queryTile / kKeyTile),
                             e.div(paddedLength, kKeyTile));

  // Prologue: the first key tile (cp.async) and Q: bf16 by cp.async, fp32
  // converted by the block; then, for 16-row warps, the Q fragments into
  // registers.
  Value qBase = e.idx(qOffset());
  bool anyAsync = asyncKV() || isBF16(q);
  if (asyncKV())
    stageTile(e.idx(0), e.idx(0));
  if (isBF16(q))
    rows.copyAsync(q, DQK(), q0, queryTile, sm, qBase, qkLd(),
                   /*checked=*/true);
  else
    rows.copy(q, DQK(), q0, queryTile, sm, qBase, e.idx(qkLd()));
  // (The steps' waits name this group too: the lowering waits by count,
  // and each step's copies are the only group in flight at its wait.)
  Value firstGroup = anyAsync ? commitGroup() : Value();
  if (anyAsync)
    nvgpu::DeviceAsyncWaitOp::create(b, firstGroup, b.getI32IntegerAttr(0));
  e.barrier();

  int64_t mt = mTiles(), nS = kKeyTile / 8, nO = DV() / 8;
  int64_t kSteps = DQK() / 16, pSteps = kKeyTile / 16;
  Value rowBase = e.mul(warp, warpRows());
  auto qFrag = [&](int64_t m, int64_t ks) {
    return e.ldmatrixA(sm, qBase, e.add(rowBase, 16 * m), e.idx(16 * ks),
                       qkLd());
  };
  SmallVector<Frag4> qRegs;
  if (qInRegisters()) {
    for (int64_t ks = 0; ks < kSteps; ++ks)
      qRegs.push_back(qFrag(0, ks));
  }

  // Per lane: the running max m (in units of the raw scores q.k) and the
  // partial row sum l of rows g and g + 8 of each 16-row fragment, and the
  // output accumulators.
  Value negInf = e.f32(-INFINITY), zero = e.f32(0.0);
  SmallVector<Value> init;
  for (int64_t i = 0; i < 2 * mt; ++i)
    init.push_back(negInf); // m
  for (int64_t i = 0; i < 2 * mt; ++i)
    init.push_back(zero); // l
  for (int64_t i = 0; i < mt * nO * 4; ++i)
    init.push_back(zero); // O
  auto mAt = [&](int64_t m, int64_t half) { return 2 * m + half; };
  auto oAt = [&](int64_t m, int64_t n) { return 4 * mt + (m * nO + n) * 4; };

  auto rowReduce = [&](Value x, bool isMax) {
    for (int64_t offset : {1, 2}) {
      auto shuffle = gpu::ShuffleOp::create(
          b, x, arith::ConstantIntOp::create(b, offset, 32).getResult(),
          arith::ConstantIntOp::create(b, 32, 32).getResult(),
          gpu::ShuffleMode::XOR);
      Value y = shuffle.getShuffleResult();
      x = isMax ? arith::MaximumFOp::create(b, x, y).getResult() : e.fadd(x, y);
    }
    return x;
  };
  // exp(scale s) = exp2(s c): the softmax in base 2 on the raw scores, by
  // ex2.approx.ftz (math.exp2 lowers to the non-ftz form, which handles
  // subnormal results with extra instructions; flushed, they are zeros).
  const double log2e = 1.4426950408889634;
  Value c = e.f32(plan.scale * log2e);
  auto exp2 = [&](Value x) -> Value {
    return LLVM::CallIntrinsicOp::create(
               b, f32, b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
               ValueRange{x})
        .getResult(0);
  };

  // S = Q K^T, the online softmax and O += P V on key tile kt's stage.
  auto compute = [&](Value kt, ArrayRef<Value> carried,
                     bool diagonal) -> SmallVector<Value> {
    SmallVector<Value> state(carried);
    Value t0 = e.mul(kt, kKeyTile);
    Value kBase = stageBase(kt);
    Value vBase = e.add(kBase, kElems());

    // S = Q K^T, the warp's rows by the 64 keys: K's rows are the n-major
    // B operand, two 8-key fragments per ldmatrix.x4.
    SmallVector<Frag4> s(mt * nS, e.zeroFrag());
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      SmallVector<Frag4> a;
      for (int64_t m = 0; m < mt; ++m)
        a.push_back(qInRegisters() ? qRegs[ks] : qFrag(m, ks));
      for (int64_t j = 0; j < nS; j += 2) {
        auto bFrags = e.ldmatrixB(sm, kBase, e.idx(16 * ks), e.idx(8 * j),
                                  qkLd(), /*kMajor=*/false);
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t m = 0; m < mt; ++m)
            s[m * nS + j + h] = e.mma(a[m], bFrags[h], s[m * nS + j + h]);
      }
    }
    if (diagonal) {
      // Keep key t0 + col for query q0 + row when key <= query.
      for (int64_t m = 0; m < mt; ++m)
        for (int64_t j = 0; j < nS; ++j)
          e.forEachAcc(e.add(rowBase, 16 * m), e.idx(8 * j),
                       [&](int64_t n4, Value row, Value col) {
                         Value keep = e.ule(e.add(t0, col), e.add(q0, row));
                         Value &x = s[m * nS + j][n4];
                         x = e.select(keep, x, negInf);
                       });
    }

    // Online softmax per row: p = exp2(s c - m c); P as A fragments of the
    // P V product.
    for (int64_t m = 0; m < mt; ++m) {
      Value scaleRow[2];
      for (int64_t half = 0; half < 2; ++half) {
        Value mx = negInf;
        for (int64_t j = 0; j < nS; ++j)
          for (int64_t i = 0; i < 2; ++i)
            mx = arith::MaximumFOp::create(b, mx, s[m * nS + j][2 * half + i]);
        mx = rowReduce(mx, /*isMax=*/true);
        Value mOld = state[mAt(m, half)];
        Value mNew = arith::MaximumFOp::create(b, mOld, mx);
        scaleRow[half] = exp2(e.fmul(e.fsub(mOld, mNew), c));
        Value offset = arith::NegFOp::create(b, e.fmul(mNew, c));
        Value sum = zero;
        for (int64_t j = 0; j < nS; ++j)
          for (int64_t i = 0; i < 2; ++i) {
            Value &x = s[m * nS + j][2 * half + i];
            x = exp2(math::FmaOp::create(b, x, c, offset));
            sum = e.fadd(sum, x);
          }
        state[mAt(m, half)] = mNew;
        Value &l = state[2 * mt + mAt(m, half)];
        l = e.fadd(e.fmul(l, scaleRow[half]), sum);
      }
      for (int64_t n = 0; n < nO; ++n)
        for (int64_t i = 0; i < 4; ++i) {
          Value &o = state[oAt(m, n) + i];
          o = e.fmul(o, scaleRow[i / 2]);
        }
    }
    // O += P V: V's rows (keys) are the k-major B operand, read transposed,
    // two 8-column fragments per ldmatrix.x4.
    for (int64_t ps = 0; ps < pSteps; ++ps) {
      SmallVector<Frag4> pa;
      for (int64_t m = 0; m < mt; ++m) {
        const Frag4 &lo = s[m * nS + 2 * ps], &hi = s[m * nS + 2 * ps + 1];
        pa.push_back({e.packPair(lo[0], lo[1]), e.packPair(lo[2], lo[3]),
                      e.packPair(hi[0], hi[1]), e.packPair(hi[2], hi[3])});
      }
      for (int64_t n = 0; n < nO; n += 2) {
        auto bFrags = e.ldmatrixB(sm, vBase, e.idx(16 * ps), e.idx(8 * n),
                                  vLd(), /*kMajor=*/true);
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t m = 0; m < mt; ++m) {
            int64_t at = oAt(m, n + h);
            Frag4 acc = {state[at], state[at + 1], state[at + 2],
                         state[at + 3]};
            acc = e.mma(pa[m], bFrags[h], acc);
            for (int64_t i = 0; i < 4; ++i)
              state[at + i] = acc[i];
          }
      }
    }
    return state;
  };

  // One key tile: (cp.async) wait for this tile's copies, then issue the
  // next tile's into the other stage; or stage this tile; S = Q K^T, the
  // online softmax, O += P V.
  auto step = [&](Value kt, ValueRange carried,
                  bool diagonal) -> SmallVector<Value> {
    SmallVector<Value> state(carried);
    if (asyncKV()) {
      // This tile's group is the only one in flight. After the barrier,
      // every warp is done with the previous step, which read the stage
      // that the next tile's copies fill: one barrier per step.
      nvgpu::DeviceAsyncWaitOp::create(b, firstGroup, b.getI32IntegerAttr(0));
      e.barrier();
      Value nextKt = e.add(kt, 1);
      e.ifThen(e.ult(nextKt, endTile),
               [&] { stageTile(nextKt, stageBase(nextKt)); });
      commitGroup();
    } else {
      e.barrier(); // every warp is done with the previous tile
      stageTile(kt, e.idx(0));
      e.barrier();
    }
    return compute(kt, state, diagonal);
  };

  SmallVector<Value> state = e.forLoop(
      e.idx(0), firstDiagonal, 1, init,
      [&](Value kt, ValueRange carried) { return step(kt, carried, false); });
  state = e.forLoop(
      firstDiagonal, endTile, 1, state,
      [&](Value kt, ValueRange carried) { return step(kt, carried, true); });

  // Epilogue: O / l times sigmoid(gate), and lse = scale m + ln(l).
  auto vec2 = VectorType::get({2}, f32);
  Type outType = getElementTypeOrSelf(out.getType());
  for (int64_t m = 0; m < mt; ++m) {
    for (int64_t half = 0; half < 2; ++half) {
      Value rowInTile =
          e.add(e.add(rowBase, 16 * m), e.add(e.laneGroup, 8 * half));
      Value t = e.add(q0, rowInTile);
      Value l = rowReduce(state[2 * mt + mAt(m, half)], /*isMax=*/false);
      Value inv = arith::DivFOp::create(b, e.f32(1.0), l);
      e.ifThen(e.ult(t, length), [&] {
        for (int64_t n = 0; n < nO; ++n) {
          Value col = e.add(e.idx(8 * n), e.laneCol);
          SmallVector<Value, 4> where = {batch, t, head, col};
          int64_t at = oAt(m, n) + 2 * half;
          Value lo = e.fmul(state[at], inv), hi = e.fmul(state[at + 1], inv);
          if (gate) {
            Type gateType = getElementTypeOrSelf(gate.getType());
            Value g = vector::LoadOp::create(
                b, VectorType::get({2}, gateType), gate, where,
                /*nontemporal=*/false,
                llvm::MaybeAlign(gateType.getIntOrFloatBitWidth() / 4));
            if (gateType != f32)
              g = arith::ExtFOp::create(b, vec2, g);
            auto gateAt = [&](int64_t i) {
              return buildSigmoid(
                  b, b.getLoc(),
                  vector::ExtractOp::create(b, g, ArrayRef<int64_t>{i}));
            };
            lo = e.fmul(lo, gateAt(0));
            hi = e.fmul(hi, gateAt(1));
          }
          Value pair =
              vector::FromElementsOp::create(b, vec2, ValueRange{lo, hi});
          if (outType != f32)
            pair =
                arith::TruncFOp::create(b, VectorType::get({2}, outType), pair);
          vector::StoreOp::create(
              b, pair, out, where, /*nontemporal=*/false,
              llvm::MaybeAlign(outType.getIntOrFloatBitWidth() / 4));
        }
        if (lse) {
          e.ifThen(e.eq(e.laneCol, e.idx(0)), [&] {
            Value value = e.fadd(e.fmul(state[mAt(m, half)], e.f32(plan.scale)),
                                 math::LogOp::create(b, l));
            e.store(value, lse, {batch, head, t});
          });
        }
      });
    }
  }
  gpu::ReturnOp::create(b);
  return func;
}

void AttentionKernelGenerator::generate() {
  MLAAttentionOp op = plan.op;
  ImplicitLocOpBuilder b(op.getLoc(), op);
  DeviceEmitter e(b);
  Type f32 = b.getF32Type();

  auto toBuffer = [&](Value tensor) { return readOnlyBuffer(b, tensor); };
  SmallVector<Value> kernelArgs = {
      toBuffer(op.getQuery()), toBuffer(op.getKey()), toBuffer(op.getValue())};
  if (plan.hasGate)
    kernelArgs.push_back(toBuffer(op.getGate()));
  Value q = kernelArgs[0];
  Value batch = memref::DimOp::create(b, q, 0);
  Value length = memref::DimOp::create(b, q, 1);
  Value heads = memref::DimOp::create(b, q, 2);
  Value numQTiles = e.div(e.add(length, queryTile - 1), queryTile);
  Value one = e.idx(1);

  // fp32 K and V as bf16 [B, Tp, H, D] in device memory.
  SmallVector<unsigned> toConvert;
  SmallVector<int64_t> widths;
  if (plan.convertOnce)
    for (auto [i, D] : {std::pair<unsigned, int64_t>{1, DQK()}, {2, DV()}})
      if (!isBF16(kernelArgs[i])) {
        toConvert.push_back(i);
        widths.push_back(D);
      }
  if (!toConvert.empty()) {
    Value numKTiles = e.div(e.add(length, kKeyTile - 1), kKeyTile);
    Value rows = e.mul(e.mul(e.mul(batch, heads), numKTiles), kKeyTile);
    SmallVector<std::pair<Value, Type>> sizes;
    for (int64_t D : widths)
      sizes.push_back({e.mul(rows, D), b.getBF16Type()});
    SmallVector<Value> copies = allocateDeviceBuffers(b, sizes);
    SmallVector<Value> convertArgs;
    SmallVector<Type> convertTypes;
    for (auto [i, copy] : llvm::zip(toConvert, copies)) {
      convertArgs.append({kernelArgs[i], copy});
      kernelArgs[i] = copy;
    }
    for (Value v : convertArgs)
      convertTypes.push_back(v.getType());
    gpu::GPUFuncOp convert = buildConvertKernel(convertTypes, widths);
    gpu::LaunchFuncOp::create(
        b, convert, gpu::KernelDim3{numKTiles, heads, batch},
        gpu::KernelDim3{e.idx(kConvertThreads), one, one},
        arith::ConstantIntOp::create(b, 0, 32).getResult(), convertArgs);
  }

  // Results in host memory (host-shared once the GPU mapping runs).
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  Value outBuf = memref::AllocOp::create(
      b, MemRefType::get(outType.getShape(), outType.getElementType()),
      dynamicSizes(outType, {batch, length, heads, e.idx(DV())}));
  kernelArgs.push_back(outBuf);
  auto lseType = cast<RankedTensorType>(op.getLse().getType());
  Value lseBuf;
  if (plan.writeLse) {
    lseBuf =
        memref::AllocOp::create(b, MemRefType::get(lseType.getShape(), f32),
                                dynamicSizes(lseType, {batch, heads, length}));
    kernelArgs.push_back(lseBuf);
  }

  SmallVector<Type> argTypes;
  for (Value v : kernelArgs)
    argTypes.push_back(v.getType());
  gpu::GPUFuncOp kernel = buildForwardKernel(argTypes);
  gpu::LaunchFuncOp::create(
      b, kernel, gpu::KernelDim3{e.mul(heads, batch), numQTiles, one},
      gpu::KernelDim3{e.idx(threads()), one, one},
      arith::ConstantIntOp::create(b, sharedBytes(), 32).getResult(),
      kernelArgs);

  Value outTensor = bufferization::ToTensorOp::create(
      b, outType, outBuf, /*restrict=*/true, /*writable=*/true);
  op.getOutput().replaceAllUsesWith(outTensor);
  if (plan.writeLse) {
    Value lseTensor = bufferization::ToTensorOp::create(
        b, lseType, lseBuf, /*restrict=*/true, /*writable=*/true);
    op.getLse().replaceAllUsesWith(lseTensor);
  }
}

struct MoEGenerateAttentionKernelsPass
    : public moe::impl::MoEGenerateAttentionKernelsBase<
          MoEGenerateAttentionKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEGenerateAttentionKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (queryTile != 64 && queryTile != 128 && queryTile != 256) {
    module.emitError() << "expects query-tile 64, 128 or 256, got "
                       << static_cast<int64_t>(queryTile);
    return signalPassFailure();
  }

  SmallVector<AttentionPlan> plans;
  module.walk([&](MLAAttentionOp op) {
    auto qType = cast<RankedTensorType>(op.getQuery().getType());
    auto vType = cast<RankedTensorType>(op.getValue().getType());
    int64_t qkDim = qType.getDimSize(3), valueDim = vType.getDimSize(3);
    auto isF32OrBF16 = [](Value v) {
      Type type = getElementTypeOrSelf(v.getType());
      return type.isF32() || type.isBF16();
    };
    std::string reason;
    if (ShapedType::isDynamic(qkDim) || qkDim % 16 != 0 || qkDim > 256)
      reason = llvm::formatv("the query/key width {0} is not a static "
                             "multiple of 16 up to 256",
                             qkDim);
    else if (ShapedType::isDynamic(valueDim) || valueDim % 16 != 0 ||
             valueDim > 256)
      reason = llvm::formatv("the value width {0} is not a static multiple "
                             "of 16 up to 256",
                             valueDim);
    else if (!llvm::all_of(op->getOperands(), isF32OrBF16))
      reason = "an operand is neither f32 nor bf16";
    if (!reason.empty()) {
      op.emitRemark() << "mla_attention left to -moe-tile-attention: "
                      << reason;
      return;
    }
    bool kvBF16 = isBF16(op.getKey()) && isBF16(op.getValue());
    AttentionPlan plan{op,
                       qkDim,
                       valueDim,
                       op.getScaleOrDefault(),
                       static_cast<bool>(op.getGate()),
                       !op.getLse().use_empty(),
                       convertOnce,
                       kvBF16,
                       queryTile};
    while (plan.queryTile > 64 &&
           AttentionKernelGenerator(plan, {}, "").sharedBytes() >
               kMaxSharedBytes)
      plan.queryTile /= 2;
    int64_t warpRows = plan.queryTile <= 128 ? 16 : 32;
    InFlightDiagnostic remark = op.emitRemark();
    remark << "mla_attention GPU kernel: query tile " << plan.queryTile;
    if (plan.queryTile != queryTile)
      remark << " (" << static_cast<int64_t>(queryTile)
             << " would exceed the shared memory)";
    remark << " (" << plan.queryTile / warpRows << " warps of " << warpRows
           << " rows" << (warpRows == 16 ? ", Q fragments in registers" : "")
           << "), key tile " << kKeyTile << ", d_qk " << qkDim << ", d_v "
           << valueDim << ", mma.sync m16n8k16 bf16 on ldmatrix fragments, "
           << (plan.hasGate ? "sigmoid gate fused" : "no gate") << ", "
           << (plan.writeLse ? "lse written" : "lse unused") << ", "
           << (isBF16(op.getOutput()) ? "bf16" : "f32") << " output, "
           << (kvBF16        ? "bf16 K and V read in place"
               : convertOnce ? "fp32 K and V converted to bf16 once"
                             : "K and V converted per block")
           << (kvBF16 || convertOnce ? ", staged by cp.async one key tile ahead"
                                     : "");
    plans.push_back(plan);
  });
  if (plans.empty())
    return;

  gpu::GPUModuleOp gpuModule =
      createKernelModule(module, "moe_attention_kernels");

  for (auto [n, plan] : llvm::enumerate(plans)) {
    AttentionKernelGenerator generator(
        plan, gpuModule, llvm::formatv("mla{0}_forward", n).str());
    generator.generate();
    plan.op.erase();
    ++numGenerated;
  }
}
