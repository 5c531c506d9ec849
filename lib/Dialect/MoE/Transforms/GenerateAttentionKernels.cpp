//===- GenerateAttentionKernels.cpp - Tensor-core flash attention ---------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-attention-kernels, the GPU back end's kernel
// generator for `moe.mla_attention`: a FlashAttention-2 style causal forward
// (ALGORITHMS.md section 3.2) built as one `gpu.func` from the op's shapes,
// and the op replaced by its launch. One block of four warps per (query
// tile, head, batch); each warp owns `query-tile / 4` query rows. Tile
// products use `mma.sync` m16n8k16 with bf16 operands and fp32
// accumulators; the online softmax (row max, row sum, rescaling), the
// division by the row sum, the sigmoid gate and the log-sum-exp are fp32.
//
// The tensor-core fragment helpers are in DeviceEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/DeviceEmitter.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

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
/// Padding (in bf16 elements) of shared-memory rows: with rows of `D + 8`
/// elements (D a multiple of 16) consecutive rows are 4 (2a + 1) words apart,
/// so the eight row groups of a fragment load fall into distinct banks.
constexpr int64_t kPad = 8;
/// Global loads in flight per thread while staging a tile.
constexpr int64_t kUnroll = 8;

/// What the generator knows about one mla_attention op.
struct AttentionPlan {
  MLAAttentionOp op;
  int64_t qkDim, valueDim;
  double scale;
  bool hasGate;
  bool writeLse;
  /// K and V are converted to bf16 once by a prep kernel (V transposed)
  /// rather than in every block that reads them.
  bool convertOnce;
};

/// Builds the kernel and the launch of one plan.
class AttentionKernelGenerator {
public:
  AttentionKernelGenerator(AttentionPlan plan, int64_t queryTile,
                           gpu::GPUModuleOp module, StringRef name)
      : plan(plan), queryTile(queryTile), module(module), name(name) {}

  void generate();

private:
  int64_t DQK() const { return plan.qkDim; }
  int64_t DV() const { return plan.valueDim; }
  int64_t qkLd() const { return DQK() + kPad; }
  int64_t vLd() const { return kKeyTile + kPad; }
  /// Query rows per warp: one row of 16-row mma.sync fragments up to query
  /// tiles of 128 (four or eight warps), two (each K and V^T fragment used
  /// twice) for 256 (eight warps).
  int64_t warpRows() const { return queryTile <= 128 ? 16 : 32; }
  int64_t mTiles() const { return warpRows() / 16; }
  int64_t threads() const { return queryTile / warpRows() * 32; }
  // Shared memory (bf16): Q [queryTile, DQK], then two stages (the key tile
  // computed on and the next one, filled by cp.async) of K [64, DQK] and
  // V^T [DV, 64]; every piece 16-byte aligned.
  int64_t qElems() const { return queryTile * qkLd(); }
  int64_t kElems() const { return kKeyTile * qkLd(); }
  int64_t vElems() const { return DV() * vLd(); }
  int64_t stageElems() const { return kElems() + vElems(); }
  int64_t sharedBytes() const { return (qElems() + 2 * stageElems()) * 2; }

  /// The forward kernel, or (convert) the prep kernel that writes K and
  /// V^T as bf16 in key tiles.
  gpu::GPUFuncOp buildKernel(TypeRange argTypes, bool convert);

  AttentionPlan plan;
  int64_t queryTile;
  gpu::GPUModuleOp module;
  std::string name;
};

/// Argument order of the forward kernel: q, k, v, [gate], out, [lse], where
/// k and v are the bf16 copies (K, V^T) with convertOnce; of the prep
/// kernel: k, v, the bf16 K and the bf16 V^T.
gpu::GPUFuncOp AttentionKernelGenerator::buildKernel(TypeRange argTypes,
                                                     bool convert) {
  const int64_t nThreads = convert ? kConvertThreads : threads();
  gpu::GPUFuncOp func =
      createKernel(module, plan.op.getLoc(), convert ? name + "_convert" : name,
                   argTypes, nThreads);
  MLIRContext *ctx = func.getContext();

  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  auto args = func.getArguments();
  unsigned next = 0;
  Value q = convert ? Value() : args[next++];
  Value k = args[next++], v = args[next++];
  Value kb, vtb, gate, out, lse;
  if (convert) {
    kb = args[next++];
    vtb = args[next++];
  } else {
    gate = plan.hasGate ? args[next++] : Value();
    out = args[next++];
    lse = plan.writeLse ? args[next++] : Value();
  }

  auto [tid, warp] = e.threadAndWarp();
  // The longest query tiles (the last ones: they see the most keys) are
  // scheduled first.
  Value numQTiles = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value blockX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value qTile = arith::SubIOp::create(
      b, arith::SubIOp::create(b, numQTiles, blockX), e.idx(1));
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value length = memref::DimOp::create(b, args[0], 1);
  Value numHeads = memref::DimOp::create(b, args[0], 2);
  Value q0 = e.mul(qTile, queryTile);
  // The bf16 copies: [B, H, Tp, DQK] and [B, H, DV, Tp], Tp = T rounded up
  // to whole key tiles (padded keys are zero).
  Value paddedLength =
      e.mul(e.div(e.add(length, kKeyTile - 1), kKeyTile), kKeyTile);
  Value batchHead = e.add(e.mul(batch, numHeads), head);

  // Shared memory.
  Value smem = convert ? Value() : e.dynamicSharedMemory();
  auto view = [&](int64_t offsetElems, int64_t count) -> Value {
    return e.sharedView(smem, offsetElems * 2, count, bf16);
  };
  Value qS, stages;
  if (!convert) {
    qS = view(0, qElems());
    stages = view(qElems(), 2 * stageElems());
  }

  Value zero = e.f32(0.0);
  auto vec4 = VectorType::get({4}, f32);
  // Four consecutive fp32 values of a [B, T, H, D] operand at row t (rows
  // past the sequence read row 0 and are zeroed by `masked`).
  auto load4 = [&](Value mem, Value t, Value d) -> Value {
    Value row = e.select(e.ult(t, length), t, e.idx(0));
    return vector::LoadOp::create(b, vec4, mem, ValueRange{batch, row, head, d},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  auto masked = [&](Value t, Value x4) -> Value {
    Value zeros = arith::ConstantOp::create(
        b, vec4, DenseElementsAttr::get(vec4, b.getF32FloatAttr(0.0)));
    return e.select(e.ult(t, length), x4, zeros);
  };
  auto element = [&](Value x4, int64_t i) -> Value {
    return vector::ExtractOp::create(b, x4, ArrayRef<int64_t>{i});
  };
  // Stores four fp32 values (times `factor`) as bf16 at mem[at .. at + 3].
  auto store4 = [&](Value x4, Value factor, Value mem, Value at) {
    SmallVector<Value> lanes;
    for (int64_t i = 0; i < 4; ++i) {
      Value x = element(x4, i);
      if (factor)
        x = e.fmul(x, factor);
      lanes.push_back(arith::TruncFOp::create(b, bf16, x));
    }
    Value packed =
        vector::FromElementsOp::create(b, VectorType::get({4}, bf16), lanes);
    vector::StoreOp::create(b, packed, mem, ValueRange{at},
                            /*nontemporal=*/false, llvm::MaybeAlign(8));
  };

  // Stages `rows` rows of a [B, T, H, DQK] operand from row t0 as bf16,
  // row-major with leading dimension qkLd(): consecutive threads read
  // consecutive float4s of a row.
  auto stageRows = [&](Value mem, Value t0, int64_t rows, Value dst,
                       Value dstBase, Value dstLd, Value factor) {
    int64_t perRow = DQK() / 4;
    auto coords = [&](Value i) {
      Value el = e.add(tid, e.mul(i, nThreads));
      return std::make_pair(e.div(el, perRow), e.mul(e.rem(el, perRow), 4));
    };
    e.forBatched(
        rows * perRow / nThreads, kUnroll,
        [&](Value i) -> SmallVector<Value> {
          auto [r, d] = coords(i);
          return {load4(mem, e.add(t0, r), d)};
        },
        [&](Value i, ArrayRef<Value> in) {
          auto [r, d] = coords(i);
          store4(masked(e.add(t0, r), in[0]), factor, dst,
                 e.add(dstBase, e.add(e.mul(r, dstLd), d)));
        });
  };
  // Stages V^T of the key tile at t0: thread (key pair p, channel group d4)
  // reads the float4s of keys 2p and 2p + 1 and writes, for each of the four
  // channels, the bf16 pair (2p, 2p + 1) into row `channel` of V^T. The 32
  // lanes of a warp take 32 key pairs of one channel group, so that their
  // 32-bit stores fall into distinct banks.
  auto stageValueT = [&](Value t0, Value dst, Value dstBase, Value dstLd) {
    auto coords = [&](Value i) {
      Value el = e.add(tid, e.mul(i, nThreads));
      return std::make_pair(e.mul(e.rem(el, kKeyTile / 2), 2),
                            e.mul(e.div(el, kKeyTile / 2), 4));
    };
    e.forBatched(
        kKeyTile / 2 * DV() / 4 / nThreads, kUnroll / 2,
        [&](Value i) -> SmallVector<Value> {
          auto [t, d] = coords(i);
          return {load4(v, e.add(t0, t), d),
                  load4(v, e.add(t0, e.add(t, 1)), d)};
        },
        [&](Value i, ArrayRef<Value> in) {
          auto [t, d] = coords(i);
          Value lo = masked(e.add(t0, t), in[0]);
          Value hi = masked(e.add(t0, e.add(t, 1)), in[1]);
          for (int64_t c = 0; c < 4; ++c)
            e.storePairBF16(
                element(lo, c), element(hi, c), dst,
                e.add(dstBase, e.add(e.mul(e.add(d, c), dstLd), t)));
        });
  };

  if (convert) {
    // Key tile blockIdx.x (in launch order) of K and V^T.
    Value t0 = e.mul(blockX, kKeyTile);
    stageRows(k, t0, kKeyTile, kb,
              e.mul(e.add(e.mul(batchHead, paddedLength), t0), DQK()),
              e.idx(DQK()), Value());
    stageValueT(t0, vtb, e.add(e.mul(e.mul(batchHead, DV()), paddedLength), t0),
                paddedLength);
    gpu::ReturnOp::create(b);
    return func;
  }

  // Copies a [rows, cols] bf16 tile at `srcBase` (leading dimension
  // `srcLd`) of a bf16 copy to `stages` at `dstBase` (leading dimension
  // dstLd) with cp.async, 16 bytes per copy (cp.async.cg: the tiles are
  // read once per block, from L2).
  auto asyncCopy = [&](Value src, Value srcBase, Value srcLd, int64_t rows,
                       int64_t cols, Value dstBase, int64_t dstLd) {
    int64_t perRow = cols / 8, pieces = rows * perRow;
    e.forLoop(
        e.idx(0), e.idx((pieces + nThreads - 1) / nThreads), 1, [&](Value i) {
          Value piece = e.add(tid, e.mul(i, nThreads));
          auto body = [&] {
            Value r = e.div(piece, perRow), c = e.mul(e.rem(piece, perRow), 8);
            nvgpu::DeviceAsyncCopyOp::create(
                b, stages,
                ValueRange{e.add(dstBase, e.add(e.mul(r, dstLd), c))}, src,
                ValueRange{e.add(srcBase, e.add(e.mul(r, srcLd), c))},
                b.getIndexAttr(8), Value(), b.getUnitAttr());
          };
          if (pieces % nThreads == 0)
            body();
          else
            e.ifThen(e.ult(piece, e.idx(pieces)), body);
        });
  };
  // Element offset of the stage that holds key tile kt.
  auto stageBase = [&](Value kt) {
    return plan.convertOnce ? e.mul(e.rem(kt, 2), stageElems()) : e.idx(0);
  };
  // Issues the copies of key tile kt's K and V^T into its stage.
  auto stageAsync = [&](Value kt) {
    Value t0 = e.mul(kt, kKeyTile), base = stageBase(kt);
    asyncCopy(k, e.mul(e.add(e.mul(batchHead, paddedLength), t0), DQK()),
              e.idx(DQK()), kKeyTile, DQK(), base, qkLd());
    asyncCopy(v, e.add(e.mul(e.mul(batchHead, DV()), paddedLength), t0),
              paddedLength, DV(), kKeyTile, e.add(base, kElems()), vLd());
  };
  Type asyncToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto commitGroup = [&]() -> Value {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, asyncToken, ValueRange())
        .getResult();
  };

  // Key tiles entirely before the query tile need no mask; the diagonal
  // ones (queryTile / 64 of them, fewer where the last ones would start
  // past the padded length) do. Tiles after the query tile are never
  // visited.
  Value firstDiagonal = e.div(q0, kKeyTile);
  Value endTile =
      arith::MinUIOp::create(b, e.add(firstDiagonal, queryTile / kKeyTile),
                             e.div(paddedLength, kKeyTile));
  // The first key tile's copies overlap the staging of Q.
  if (plan.convertOnce) {
    stageAsync(e.idx(0));
    commitGroup();
  }

  // Q, scaled by scale * log2(e) so that exp2 gives the natural softmax.
  const double log2e = 1.4426950408889634;
  stageRows(q, q0, queryTile, qS, e.idx(0), e.idx(qkLd()),
            e.f32(plan.scale * log2e));

  // Per lane: the running max m and partial row sum l of rows g and g + 8
  // of the warp's 16 rows, and the output accumulators.
  int64_t mt = mTiles(), nS = kKeyTile / 8, nO = DV() / 8;
  int64_t kSteps = DQK() / 16, pSteps = kKeyTile / 16;
  Value rowBase = e.mul(warp, warpRows());
  // Fragments as 32-bit loads at a lane offset (computed once per tile)
  // plus a constant, which folds into the load's immediate: the A fragment
  // of the 16 x 16 tile at column col0 of the rows at `at`, and the n-major
  // B fragment at (n0, k0).
  auto laneOffset = [&](int64_t ld) {
    return e.add(e.mul(e.laneGroup, ld), e.laneCol);
  };
  auto pairAt = [&](Value mem, Value at, int64_t offset) {
    return e.loadPair(mem, e.add(at, offset));
  };
  auto fragA = [&](Value mem, Value at, int64_t col0, int64_t ld) -> Frag4 {
    return {pairAt(mem, at, col0), pairAt(mem, at, col0 + 8 * ld),
            pairAt(mem, at, col0 + 8), pairAt(mem, at, col0 + 8 * ld + 8)};
  };
  auto fragB = [&](Value mem, Value at, int64_t n0, int64_t k0,
                   int64_t ld) -> std::array<Value, 2> {
    return {pairAt(mem, at, n0 * ld + k0), pairAt(mem, at, n0 * ld + k0 + 8)};
  };
  Value qAt = e.add(laneOffset(qkLd()), e.mul(rowBase, qkLd()));
  Value negInf = e.f32(-INFINITY);
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

  // One key tile: K and V^T into shared memory (with convert-once: wait
  // for this tile's cp.async group after issuing the next tile's), S = Q
  // K^T, the online softmax, O += P V.
  auto step = [&](Value kt, ValueRange carried,
                  bool diagonal) -> SmallVector<Value> {
    SmallVector<Value> state(carried);
    Value t0 = e.mul(kt, kKeyTile);
    if (plan.convertOnce) {
      // The next tile's stage was last read in the previous step, which
      // ended with a barrier.
      Value nextKt = e.add(kt, 1);
      e.ifThen(e.ult(nextKt, endTile), [&] { stageAsync(nextKt); });
      Value group = commitGroup();
      nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(1));
      e.barrier();
    } else {
      e.barrier(); // every warp is done with the previous tile
      stageRows(k, t0, kKeyTile, stages, e.idx(0), e.idx(qkLd()), Value());
      stageValueT(t0, stages, e.idx(kElems()), e.idx(vLd()));
      e.barrier();
    }
    Value base = stageBase(kt);
    Value kAt = e.add(base, laneOffset(qkLd()));
    Value vAt = e.add(e.add(base, kElems()), laneOffset(vLd()));

    // S = Q K^T, the warp's rows by the 64 keys.
    SmallVector<Frag4> s(mt * nS, e.zeroFrag());
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      SmallVector<Frag4> a;
      for (int64_t m = 0; m < mt; ++m)
        a.push_back(fragA(qS, qAt, 16 * m * qkLd() + 16 * ks, qkLd()));
      for (int64_t j = 0; j < nS; ++j) {
        auto bFrag = fragB(stages, kAt, 8 * j, 16 * ks, qkLd());
        for (int64_t m = 0; m < mt; ++m)
          s[m * nS + j] = e.mma(a[m], bFrag, s[m * nS + j]);
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

    // Online softmax per row; P as A fragments of the P V product.
    for (int64_t m = 0; m < mt; ++m) {
      Value scaleRow[2];
      for (int64_t half = 0; half < 2; ++half) {
        Value mx = negInf;
        for (int64_t j = 0; j < nS; ++j)
          for (int64_t c = 0; c < 2; ++c)
            mx = arith::MaximumFOp::create(b, mx, s[m * nS + j][2 * half + c]);
        mx = rowReduce(mx, /*isMax=*/true);
        Value mOld = state[mAt(m, half)];
        Value mNew = arith::MaximumFOp::create(b, mOld, mx);
        scaleRow[half] = math::Exp2Op::create(b, e.fsub(mOld, mNew));
        Value sum = zero;
        for (int64_t j = 0; j < nS; ++j)
          for (int64_t c = 0; c < 2; ++c) {
            Value &x = s[m * nS + j][2 * half + c];
            x = math::Exp2Op::create(b, e.fsub(x, mNew));
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
    for (int64_t ps = 0; ps < pSteps; ++ps) {
      SmallVector<Frag4> pa;
      for (int64_t m = 0; m < mt; ++m) {
        const Frag4 &lo = s[m * nS + 2 * ps], &hi = s[m * nS + 2 * ps + 1];
        pa.push_back({e.packPair(lo[0], lo[1]), e.packPair(lo[2], lo[3]),
                      e.packPair(hi[0], hi[1]), e.packPair(hi[2], hi[3])});
      }
      for (int64_t n = 0; n < nO; ++n) {
        auto bFrag = fragB(stages, vAt, 8 * n, 16 * ps, vLd());
        for (int64_t m = 0; m < mt; ++m) {
          int64_t at = oAt(m, n);
          Frag4 acc = {state[at], state[at + 1], state[at + 2], state[at + 3]};
          acc = e.mma(pa[m], bFrag, acc);
          for (int64_t i = 0; i < 4; ++i)
            state[at + i] = acc[i];
        }
      }
    }
    if (plan.convertOnce)
      e.barrier(); // every warp is done with this tile's stage
    return state;
  };

  SmallVector<Value> state = e.forLoop(
      e.idx(0), firstDiagonal, 1, init,
      [&](Value kt, ValueRange carried) { return step(kt, carried, false); });
  state = e.forLoop(
      firstDiagonal, endTile, 1, state,
      [&](Value kt, ValueRange carried) { return step(kt, carried, true); });

  // Epilogue: O / l times sigmoid(gate), and lse = ln(2) m + ln(l).
  for (int64_t m = 0; m < mt; ++m) {
    for (int64_t half = 0; half < 2; ++half) {
      Value rowInTile =
          e.add(e.add(rowBase, 16 * m), e.add(e.laneGroup, 8 * half));
      Value t = e.add(q0, rowInTile);
      Value l = rowReduce(state[2 * mt + mAt(m, half)], /*isMax=*/false);
      Value inv = arith::DivFOp::create(b, e.f32(1.0), l);
      e.ifThen(e.ult(t, length), [&] {
        auto vec2 = VectorType::get({2}, f32);
        for (int64_t n = 0; n < nO; ++n) {
          Value col = e.add(e.idx(8 * n), e.laneCol);
          int64_t at = oAt(m, n) + 2 * half;
          Value lo = e.fmul(state[at], inv), hi = e.fmul(state[at + 1], inv);
          if (gate) {
            Value g = vector::LoadOp::create(
                b, vec2, gate, ValueRange{batch, t, head, col},
                /*nontemporal=*/false, llvm::MaybeAlign(8));
            lo = e.fmul(lo, buildSigmoid(b, b.getLoc(), element(g, 0)));
            hi = e.fmul(hi, buildSigmoid(b, b.getLoc(), element(g, 1)));
          }
          Value pair =
              vector::FromElementsOp::create(b, vec2, ValueRange{lo, hi});
          vector::StoreOp::create(b, pair, out, ValueRange{batch, t, head, col},
                                  /*nontemporal=*/false, llvm::MaybeAlign(8));
        }
        if (lse) {
          e.ifThen(e.eq(e.laneCol, e.idx(0)), [&] {
            Value value =
                e.fadd(e.fmul(state[mAt(m, half)], e.f32(std::log(2.0))),
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

  if (plan.convertOnce) {
    // bf16 K [B, H, Tp, DQK] and V^T [B, H, DV, Tp] in device memory.
    Value numKTiles = e.div(e.add(length, kKeyTile - 1), kKeyTile);
    Value rows = e.mul(e.mul(e.mul(batch, heads), numKTiles), kKeyTile);
    SmallVector<Value> copies =
        allocateDeviceBuffers(b, {{e.mul(rows, DQK()), b.getBF16Type()},
                                  {e.mul(rows, DV()), b.getBF16Type()}});
    Value kb = copies[0], vtb = copies[1];
    SmallVector<Value> convertArgs = {kernelArgs[1], kernelArgs[2], kb, vtb};
    SmallVector<Type> convertTypes;
    for (Value v : convertArgs)
      convertTypes.push_back(v.getType());
    gpu::GPUFuncOp convert = buildKernel(convertTypes, /*convert=*/true);
    gpu::LaunchFuncOp::create(
        b, convert, gpu::KernelDim3{numKTiles, heads, batch},
        gpu::KernelDim3{e.idx(kConvertThreads), one, one},
        arith::ConstantIntOp::create(b, 0, 32).getResult(), convertArgs);
    kernelArgs[1] = kb;
    kernelArgs[2] = vtb;
  }

  // Results in host memory (host-shared once the GPU mapping runs).
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  Value outBuf = memref::AllocOp::create(
      b, MemRefType::get(outType.getShape(), f32),
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
  gpu::GPUFuncOp kernel = buildKernel(argTypes, /*convert=*/false);
  gpu::LaunchFuncOp::create(
      b, kernel, gpu::KernelDim3{numQTiles, heads, batch},
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
    auto isF32 = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getElementType().isF32();
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
    else if (!llvm::all_of(op->getOperands(), isF32) || !isF32(op.getOutput()))
      reason = "an operand or the output is not f32";
    if (!reason.empty()) {
      op.emitRemark() << "mla_attention left to -moe-tile-attention: "
                      << reason;
      return;
    }
    AttentionPlan plan{op,
                       qkDim,
                       valueDim,
                       op.getScaleOrDefault(),
                       static_cast<bool>(op.getGate()),
                       !op.getLse().use_empty(),
                       convertOnce};
    op.emitRemark() << "mla_attention GPU kernel: query tile "
                    << static_cast<int64_t>(queryTile) << " ("
                    << static_cast<int64_t>(queryTile) /
                           (queryTile <= 128 ? 16 : 32)
                    << " warps of " << (queryTile <= 128 ? 16 : 32)
                    << " rows), key tile " << kKeyTile << ", d_qk " << qkDim
                    << ", d_v " << valueDim << ", mma.sync m16n8k16 bf16, "
                    << (plan.hasGate ? "sigmoid gate fused" : "no gate") << ", "
                    << (plan.writeLse ? "lse written" : "lse unused") << ", "
                    << (plan.convertOnce
                            ? "bf16 K and V^T converted once, staged by "
                              "cp.async one key tile ahead"
                            : "K and V converted per block");
    plans.push_back(plan);
  });
  if (plans.empty())
    return;

  gpu::GPUModuleOp gpuModule =
      createKernelModule(module, "moe_attention_kernels");

  for (auto [n, plan] : llvm::enumerate(plans)) {
    AttentionKernelGenerator generator(
        plan, queryTile, gpuModule, llvm::formatv("mla{0}_forward", n).str());
    generator.generate();
    plan.op.erase();
    ++numGenerated;
  }
}
