//===- GenerateKDAKernels.cpp - Tensor-core GPU kernels for moe.kda -------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-kda-kernels, the GPU back end's kernel generator
// for `moe.kda`: it builds two `gpu.func`s from the op's shapes, its fused
// producers (`moe.l2_norm`, `moe.decay_gate`) and the decay-bound verdict,
// and replaces the op with their launches (ALGORITHMS.md sections 1.4-1.5,
// 2.2). Tensor-core tiles use `mma.sync` m16n8k16 with bf16 operands and
// fp32 accumulators; the cumulative decay, the inverse `(I + L)^-1` and the
// state stay in fp32.
//
// The tensor-core fragment helpers are in DeviceEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/DecayBound.h"
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
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEKDAKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Tokens per chunk and rows per diagonal tile: the shapes FLA uses.
constexpr int64_t kChunk = 64;
constexpr int64_t kSub = 16;
/// Threads per block of the state kernel (four warps) and of the prep
/// kernel (eight warps: twice the loads in flight per SM).
constexpr int64_t kThreads = 128;
constexpr int64_t kPrepThreads = 256;
constexpr int64_t kPrepWarps = kPrepThreads / 32;
/// Padding (in bf16 elements) of shared-memory rows, so that the eight row
/// groups of a fragment load fall into distinct banks.
constexpr int64_t kPad = 8;

/// What the generator knows about one kda op.
struct KDAPlan {
  KDAOp op;
  int64_t keyDim, valueDim;
  int64_t heads; // ShapedType::kDynamic when dynamic
  bool dense;
  double scale;
  bool keyMajor;
  // Fused producers: raw q/k to normalise (null when q/k are used as they
  // are), and the decay gate.
  L2NormOp queryNorm, keyNorm;
  DecayGateOp gate;
};

/// Builds the kernels and the launches of one plan.
class KDAKernelGenerator {
public:
  KDAKernelGenerator(KDAPlan plan, int64_t valueTile, gpu::GPUModuleOp module,
                     StringRef prefix)
      : plan(plan), valueTile(valueTile), module(module), prefix(prefix) {}

  /// Replaces plan.op by the launches; returns failure on a malformed op.
  void generate();

private:
  int64_t K() const { return plan.keyDim; }
  int64_t V() const { return plan.valueDim; }
  int64_t tileLd() const { return K() + kPad; }
  int64_t tokenLd() const { return kChunk + kPad; }
  /// Row stride of the fp32 inverse in shared memory (conflict-free halves
  /// of a warp for 64-bit fragment loads).
  static constexpr int64_t kInverseLd = kChunk + 8;

  // Shared-memory layout of kda_prep, in bytes.
  int64_t gammaBytes() const { return kChunk * K() * 4; }
  int64_t rowBytes() const { return 3 * kChunk * 4; }
  int64_t lBytes() const { return kChunk * kChunk * 4; }
  int64_t inverseBytes() const { return kChunk * kInverseLd * 4; }
  int64_t tileBytes() const {
    int64_t intra = (5 * kSub + (kChunk - kSub)) * tileLd() * 2;
    int64_t wu = (K() + V()) * tokenLd() * 2;
    int64_t staged = 2 * kChunk * tileLd() * 2; // per-position q and k
    return std::max({intra, wu, staged});
  }
  int64_t prepSharedBytes() const {
    return gammaBytes() + rowBytes() + lBytes() + inverseBytes() + tileBytes();
  }
  /// Element offsets (bf16 units) of one staged chunk in the state
  /// kernel's shared memory: W and Qd ([64][K + pad]), Kd^T ([K][64 + pad]),
  /// Aqk ([64][64 + pad]), U's value-tile columns ([64][value-tile]) and
  /// exp(Gamma_last) (K fp32); every piece 16-byte aligned.
  struct StagedChunk {
    int64_t w, qd, kdt, aqk, u, egl, elements;
  };
  StagedChunk stagedChunkLayout() const {
    StagedChunk l;
    int64_t at = 0;
    auto place = [&](int64_t count) {
      int64_t here = at;
      at += (count + 7) / 8 * 8;
      return here;
    };
    l.w = place(kChunk * tileLd());
    l.qd = place(kChunk * tileLd());
    l.kdt = place(K() * tokenLd());
    l.aqk = place(kChunk * tokenLd());
    l.u = place(kChunk * valueTile);
    l.egl = place(2 * K());
    l.elements = at;
    return l;
  }
  int64_t stateSharedBytes() const {
    return (valueTile * (K() + kPad) + valueTile * tokenLd()) * 2 +
           2 * stagedChunkLayout().elements * 2;
  }

  gpu::GPUFuncOp buildPrepKernel(TypeRange argTypes);
  gpu::GPUFuncOp buildStateKernel(TypeRange argTypes);

  KDAPlan plan;
  int64_t valueTile;
  gpu::GPUModuleOp module;
  std::string prefix;
};

/// Argument order of kda_prep: q, k, v, beta, then either (raw gate,
/// dt_bias[, A_log]) or the log-decay, then W, U, Qd, KdT, Aqk, egl.
gpu::GPUFuncOp KDAKernelGenerator::buildPrepKernel(TypeRange argTypes) {
  gpu::GPUFuncOp func = createKernel(module, plan.op.getLoc(), prefix + "_prep",
                                     argTypes, kPrepThreads);
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();

  auto args = func.getArguments();
  Value q = args[0], k = args[1], v = args[2], beta = args[3];
  unsigned next = 4;
  Value raw, dtBias, aLog, logDecay;
  if (plan.gate) {
    raw = args[next++];
    dtBias = args[next++];
    if (plan.gate.getALog())
      aLog = args[next++];
  } else {
    logDecay = args[next++];
  }
  Value wOut = args[next++], uOut = args[next++], qdOut = args[next++],
        kdtOut = args[next++], aqkOut = args[next++], eglOut = args[next++];

  auto [tid, warp] = e.threadAndWarp();
  Value chunk = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value numChunks = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value numHeads = gpu::GridDimOp::create(b, gpu::Dimension::y);
  Value length = memref::DimOp::create(b, q, 1);
  Value t0 = e.mul(chunk, kChunk);
  Value chunkId =
      e.add(e.mul(e.add(e.mul(batch, numHeads), head), numChunks), chunk);

  // Shared memory.
  Value smem = e.dynamicSharedMemory();
  int64_t off = 0;
  Value gamma = e.sharedView(smem, off, kChunk * K(), f32);
  off += gammaBytes();
  Value rq = e.sharedView(smem, off, kChunk, f32);
  Value rk = e.sharedView(smem, off + kChunk * 4, kChunk, f32);
  Value betaS = e.sharedView(smem, off + 2 * kChunk * 4, kChunk, f32);
  off += rowBytes();
  Value lS = e.sharedView(smem, off, kChunk * kChunk, f32);
  off += lBytes();
  Value inv = e.sharedView(smem, off, kChunk * kInverseLd, f32);
  off += inverseBytes();
  Value tiles = e.sharedView(smem, off, tileBytes() / 2, bf16);

  // Masked input reads: rows past the sequence read as zero.
  auto validRow = [&](Value t) { return e.ult(e.add(t0, t), length); };
  auto clampRow = [&](Value t) {
    Value row = e.add(t0, t);
    return e.select(e.ult(row, length), row, e.idx(0));
  };
  Value zero = e.f32(0.0);
  // Global reads are split into the load (rawInput, from a clamped row) and
  // the mask, so that batched loops issue their loads first.
  auto rawInput = [&](Value mem, Value t, Value d) {
    return e.load(mem, {batch, clampRow(t), head, d});
  };
  auto masked = [&](Value t, Value x) {
    return e.select(validRow(t), x, zero);
  };
  double scale = plan.scale;
  auto qScaled = [&](Value t, Value raw) {
    Value x = e.fmul(masked(t, raw), e.f32(scale));
    return plan.queryNorm ? e.fmul(x, e.load(rq, t)) : x;
  };
  auto kScaled = [&](Value t, Value raw) {
    Value x = masked(t, raw);
    return plan.keyNorm ? e.fmul(x, e.load(rk, t)) : x;
  };
  // Element i of a thread's share of a [rows, width] tile: (row, column).
  auto elementOf = [&](Value i, int64_t width) {
    Value el = e.add(tid, e.mul(i, kPrepThreads));
    return std::make_pair(e.div(el, width), e.rem(el, width));
  };
  constexpr int64_t kUnroll = 16;
  auto gammaAt = [&](Value t, Value d) {
    return e.load(gamma, e.add(e.mul(t, K()), d));
  };

  // 0. L and M start at zero: the solve below reads whole groups of 8.
  e.forLoop(e.idx(0), e.idx(kChunk * kInverseLd / kPrepThreads), 1,
            [&](Value i) {
              Value el = e.add(tid, e.mul(i, kPrepThreads));
              e.store(zero, inv, el);
              e.ifThen(e.ult(el, e.idx(kChunk * kChunk)),
                       [&] { e.store(zero, lS, el); });
            });

  // 1. The decay gate per (token, channel), beta per token.
  int64_t perThread = kChunk * K() / kPrepThreads;
  Value rate = aLog ? e.exp(e.load(aLog, head)) : Value();
  e.forBatched(
      perThread, kUnroll,
      [&](Value i) -> SmallVector<Value> {
        auto [t, d] = elementOf(i, K());
        if (!plan.gate)
          return {rawInput(logDecay, t, d)};
        return {rawInput(raw, t, d), e.load(dtBias, {head, d})};
      },
      [&](Value i, ArrayRef<Value> in) {
        auto [t, d] = elementOf(i, K());
        Value g = in[0];
        if (plan.gate) {
          DecayGateAttr attr = plan.gate.getGate();
          Value x = e.fadd(in[0], in[1]);
          if (attr.isBounded()) {
            Value p = rate ? e.fmul(rate, x) : x;
            g = e.fmul(e.f32(attr.getGMinValue()),
                       buildSigmoid(b, b.getLoc(), p));
          } else {
            g = arith::NegFOp::create(
                b, e.fmul(rate, buildSoftplus(b, b.getLoc(), x)));
          }
        }
        e.store(masked(t, g), gamma, e.add(e.mul(t, K()), d));
      });
  e.ifThen(e.ult(tid, e.idx(kChunk)), [&] {
    Value x = e.load(beta, {batch, clampRow(tid), head});
    e.store(e.select(validRow(tid), x, zero), betaS, tid);
  });

  // 2. Reciprocal L2 norms of the fused query and key rows: warp w owns 16
  // rows; each lane sums K / 32 squares, then the warp reduces.
  // All 16 rows' loads first (straight-line code), then the sums.
  auto rowNorms = [&](L2NormOp norm, Value mem, Value out) {
    if (!norm)
      return;
    double eps = norm.getEpsilon().convertToDouble();
    int64_t rows = kChunk / kPrepWarps, perLane = K() / 32;
    SmallVector<Value> ts, xs;
    for (int64_t r = 0; r < rows; ++r) {
      ts.push_back(e.add(e.mul(warp, rows), r));
      for (int64_t j = 0; j < perLane; ++j)
        xs.push_back(rawInput(mem, ts.back(), e.add(e.rem(tid, 32), 32 * j)));
    }
    Value isLaneZero = e.eq(e.rem(tid, 32), e.idx(0));
    for (int64_t r = 0; r < rows; ++r) {
      Value sum = zero;
      for (int64_t j = 0; j < perLane; ++j) {
        Value x = masked(ts[r], xs[r * perLane + j]);
        sum = e.fadd(sum, e.fmul(x, x));
      }
      sum = e.warpSum(sum);
      Value r2 = math::RsqrtOp::create(b, e.fadd(sum, e.f32(eps)));
      e.ifThen(isLaneZero, [&] { e.store(r2, out, ts[r]); });
    }
  };
  rowNorms(plan.queryNorm, q, rq);
  rowNorms(plan.keyNorm, k, rk);
  e.barrier();

  // In-chunk inclusive cumulative sum of the gate, one thread per channel.
  e.ifThen(e.ult(tid, e.idx(K())), [&] {
    e.forLoop(e.idx(0), e.idx(kChunk), 1, ValueRange{zero},
              [&](Value t, ValueRange run) {
                Value at = e.add(e.mul(t, K()), tid);
                Value next = e.fadd(run[0], e.load(gamma, at));
                e.store(next, gamma, at);
                return SmallVector<Value>{next};
              });
  });
  e.barrier();

  // 3. Aqk and L, one row block of 16 tokens at a time. Tiles (bf16,
  // leading dimension K + pad): XQ, XK = rows of the block scaled by
  // exp(Gamma - Gamma_first); DQ, DK, DB = the same rows scaled through the
  // middle row (dense diagonal); YB = earlier rows scaled by
  // exp(Gamma_first - Gamma_j).
  int64_t ld = tileLd();
  int64_t tileElems = kSub * ld;
  Value xq = e.idx(0), xk = e.idx(tileElems), dq = e.idx(2 * tileElems),
        dk = e.idx(3 * tileElems), db = e.idx(4 * tileElems),
        yb = e.idx(5 * tileElems);
  Value aqkBase = e.mul(chunkId, kChunk * kChunk);
  for (int64_t a = 0; a < kChunk / kSub; ++a) {
    Value first = e.idx(a * kSub), mid = e.idx(a * kSub + kSub / 2);
    e.forBatched(
        kSub * K() / kPrepThreads, kUnroll,
        [&](Value i) -> SmallVector<Value> {
          auto [r, d] = elementOf(i, K());
          Value t = e.add(r, a * kSub);
          return {rawInput(q, t, d), rawInput(k, t, d)};
        },
        [&](Value i, ArrayRef<Value> in) {
          auto [r, d] = elementOf(i, K());
          Value t = e.add(r, a * kSub);
          Value gt = gammaAt(t, d);
          Value qv = qScaled(t, in[0]), kv = kScaled(t, in[1]);
          Value toFirst = e.exp(e.fsub(gt, gammaAt(first, d)));
          Value at = e.add(e.mul(r, ld), d);
          e.storeBF16(e.fmul(qv, toFirst), tiles, e.add(xq, at));
          e.storeBF16(e.fmul(kv, toFirst), tiles, e.add(xk, at));
          if (plan.dense) {
            Value gm = gammaAt(mid, d);
            Value down = e.exp(e.fsub(gt, gm)), up = e.exp(e.fsub(gm, gt));
            e.storeBF16(e.fmul(qv, down), tiles, e.add(dq, at));
            e.storeBF16(e.fmul(kv, down), tiles, e.add(dk, at));
            e.storeBF16(e.fmul(kv, up), tiles, e.add(db, at));
          }
        });
    if (a > 0) {
      e.forBatched(
          a * kSub * K() / kPrepThreads, kUnroll,
          [&](Value i) -> SmallVector<Value> {
            auto [j, d] = elementOf(i, K());
            return {rawInput(k, j, d)};
          },
          [&](Value i, ArrayRef<Value> in) {
            auto [j, d] = elementOf(i, K());
            Value up = e.exp(e.fsub(gammaAt(first, d), gammaAt(j, d)));
            e.storeBF16(e.fmul(kScaled(j, in[0]), up), tiles,
                        e.add(yb, e.add(e.mul(j, ld), d)));
          });
    }
    e.barrier();

    // The output tiles of this row block, spread over the warps.
    struct Block {
      bool isAqk;
      Value aTile, bTile;
      int64_t bRow, col;
      bool diagonal;
    };
    SmallVector<Block> blocks;
    for (int64_t bb = 0; bb < a; ++bb) {
      blocks.push_back({true, xq, yb, bb * kSub, bb * kSub, false});
      blocks.push_back({false, xk, yb, bb * kSub, bb * kSub, false});
    }
    if (plan.dense) {
      blocks.push_back({true, dq, db, 0, a * kSub, true});
      blocks.push_back({false, dk, db, 0, a * kSub, true});
    }
    for (auto [n, blk] : llvm::enumerate(blocks)) {
      e.ifThen(e.eq(warp, e.idx(n % kPrepWarps)), [&] {
        Frag4 acc[2] = {e.zeroFrag(), e.zeroFrag()};
        for (int64_t ks = 0; ks < K() / 16; ++ks) {
          Frag4 fa = e.fragA(tiles, blk.aTile, e.idx(0), e.idx(ks * 16), ld);
          for (int64_t j = 0; j < 2; ++j)
            acc[j] = e.mma(fa,
                           e.fragB(tiles, blk.bTile, e.idx(blk.bRow + 8 * j),
                                   e.idx(ks * 16), ld),
                           acc[j]);
        }
        for (int64_t j = 0; j < 2; ++j) {
          Value vals[4];
          Value rows[4], cols[4];
          e.forEachAcc(e.idx(a * kSub), e.idx(blk.col + 8 * j),
                       [&](int64_t n4, Value row, Value col) {
                         Value x = acc[j][n4];
                         if (blk.diagonal) {
                           Value keep =
                               blk.isAqk ? e.ule(col, row) : e.ult(col, row);
                           x = e.select(keep, x, zero);
                         }
                         if (!blk.isAqk)
                           x = e.fmul(x, e.load(betaS, row));
                         vals[n4] = x;
                         rows[n4] = row;
                         cols[n4] = col;
                       });
          for (int64_t half = 0; half < 2; ++half) {
            Value at = e.add(e.mul(rows[2 * half], kChunk), cols[2 * half]);
            if (blk.isAqk) {
              e.storePairBF16(vals[2 * half], vals[2 * half + 1], aqkOut,
                              e.add(aqkBase, at));
            } else {
              e.store(vals[2 * half], lS, at);
              e.store(vals[2 * half + 1], lS, e.add(at, 1));
            }
          }
        }
      });
    }
    e.barrier();
  }

  // 3'. Per-position diagonal tiles: warps w and w + 4 compute the two
  // halves of the rows of tile w entry by entry,
  // with exponents of differences Gamma_i - Gamma_j (j <= i) only.
  if (!plan.dense) {
    // Scaled queries and keys of the chunk, bf16 [token][channel].
    Value qn = e.idx(0), kn = e.idx(kChunk * ld);
    e.forBatched(
        perThread, kUnroll,
        [&](Value i) -> SmallVector<Value> {
          auto [t, d] = elementOf(i, K());
          return {rawInput(q, t, d), rawInput(k, t, d)};
        },
        [&](Value i, ArrayRef<Value> in) {
          auto [t, d] = elementOf(i, K());
          Value at = e.add(e.mul(t, ld), d);
          e.storeBF16(qScaled(t, in[0]), tiles, e.add(qn, at));
          e.storeBF16(kScaled(t, in[1]), tiles, e.add(kn, at));
        });
    e.barrier();
    auto staged = [&](Value base, Value t, Value d) -> Value {
      return arith::ExtFOp::create(
          b, f32, e.load(tiles, e.add(base, e.add(e.mul(t, ld), d))));
    };
    Value lane = e.rem(tid, 32);
    Value tile = e.rem(warp, kChunk / kSub);
    Value firstRow = e.mul(e.div(warp, kChunk / kSub), kSub / 2);
    e.forLoop(e.idx(0), e.idx(kSub / 2), 1, [&](Value r) {
      Value i = e.add(firstRow, r);
      e.forLoop(e.idx(0), e.idx(kSub), 1, [&](Value j) {
        Value ti = e.add(e.mul(tile, kSub), i);
        Value tj = e.add(e.mul(tile, kSub), j);
        Value at = e.add(e.mul(ti, kChunk), tj);
        Value lower = e.ule(j, i);
        auto sums = scf::IfOp::create(
            b, lower,
            [&](OpBuilder &nested, Location) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(nested.getInsertionBlock(),
                                  nested.getInsertionPoint());
              Value sa = zero, sl = zero;
              for (int64_t jj = 0; jj < K() / 32; ++jj) {
                Value d = e.add(lane, 32 * jj);
                Value decay = e.exp(e.fsub(gammaAt(ti, d), gammaAt(tj, d)));
                Value kj = e.fmul(staged(kn, tj, d), decay);
                sa = e.fadd(sa, e.fmul(staged(qn, ti, d), kj));
                sl = e.fadd(sl, e.fmul(staged(kn, ti, d), kj));
              }
              scf::YieldOp::create(b, ValueRange{e.warpSum(sa), e.warpSum(sl)});
            },
            [&](OpBuilder &nested, Location) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(nested.getInsertionBlock(),
                                  nested.getInsertionPoint());
              scf::YieldOp::create(b, ValueRange{zero, zero});
            });
        e.ifThen(e.eq(lane, e.idx(0)), [&] {
          e.storeBF16(sums.getResult(0), aqkOut, e.add(aqkBase, at));
          Value l = e.select(
              e.ult(j, i), e.fmul(sums.getResult(1), e.load(betaS, ti)), zero);
          e.store(l, lS, at);
        });
      });
    });
    e.barrier();
  }

  // 4. M = (I + L)^-1 by forward substitution, one column per thread, fp32.
  e.ifThen(e.ult(tid, e.idx(kChunk)), [&] {
    e.forLoop(e.idx(0), e.idx(kChunk), 1, [&](Value i) {
      Value init = e.select(e.eq(i, tid), e.f32(1.0), zero);
      // Sums over m < i in groups of 8 (loads first): L[i][m] is zero for
      // m >= i and rows m >= i of M are still zero, so the group that
      // straddles i adds nothing wrong.
      Value end = e.mul(e.div(e.add(i, 7), 8), 8);
      SmallVector<Value> x = e.forLoop(
          e.idx(0), end, 8, ValueRange{init}, [&](Value m0, ValueRange acc) {
            SmallVector<Value> ls, ms;
            for (int64_t u = 0; u < 8; ++u) {
              Value m = e.add(m0, u);
              ls.push_back(e.load(lS, e.add(e.mul(i, kChunk), m)));
              ms.push_back(e.load(inv, e.add(e.mul(m, kInverseLd), tid)));
            }
            Value sum = acc[0];
            for (int64_t u = 0; u < 8; ++u)
              sum = e.fsub(sum, e.fmul(ls[u], ms[u]));
            return SmallVector<Value>{sum};
          });
      e.store(x[0], inv, e.add(e.mul(i, kInverseLd), tid));
    });
  });

  // 5. W = M (beta K exp(Gamma)), U = M (beta V): B operands n-major
  // [channel][token]; the decayed queries Qd and exp(Gamma_last) go out
  // directly.
  int64_t tld = tokenLd();
  Value bw = e.idx(0), bu = e.idx(K() * tld);
  Value kBase = e.mul(chunkId, kChunk * K());
  Value vBase = e.mul(chunkId, kChunk * V());
  e.forBatched(
      perThread, kUnroll,
      [&](Value i) -> SmallVector<Value> {
        auto [t, d] = elementOf(i, K());
        return {rawInput(q, t, d), rawInput(k, t, d)};
      },
      [&](Value i, ArrayRef<Value> in) {
        auto [t, d] = elementOf(i, K());
        Value decay = e.exp(gammaAt(t, d));
        Value bt = e.load(betaS, t);
        e.storeBF16(e.fmul(e.fmul(bt, kScaled(t, in[1])), decay), tiles,
                    e.add(bw, e.add(e.mul(d, tld), t)));
        e.storeBF16(e.fmul(qScaled(t, in[0]), decay), qdOut,
                    e.add(kBase, e.add(e.mul(t, K()), d)));
      });
  e.forBatched(
      kChunk * V() / kPrepThreads, kUnroll,
      [&](Value i) -> SmallVector<Value> {
        auto [t, d] = elementOf(i, V());
        return {rawInput(v, t, d)};
      },
      [&](Value i, ArrayRef<Value> in) {
        auto [t, d] = elementOf(i, V());
        e.storeBF16(e.fmul(e.load(betaS, t), masked(t, in[0])), tiles,
                    e.add(bu, e.add(e.mul(d, tld), t)));
      });
  e.ifThen(e.ult(tid, e.idx(K())), [&] {
    e.store(e.exp(gammaAt(e.idx(kChunk - 1), tid)), eglOut,
            e.add(e.mul(chunkId, K()), tid));
  });
  e.barrier();
  {
    // Warps 0-3 compute rows [16w, 16w + 16) of W, warps 4-7 those of U.
    Value row0 = e.mul(e.rem(warp, 4), 16);
    Frag4 fa[kChunk / 16];
    for (int64_t ks = 0; ks < kChunk / 16; ++ks)
      fa[ks] = e.fragAFromF32(inv, row0, e.idx(ks * 16), kInverseLd);
    auto product = [&](Value bTile, int64_t width, Value out, Value base) {
      for (int64_t nt = 0; nt < width / 8; ++nt) {
        Frag4 acc = e.zeroFrag();
        for (int64_t ks = 0; ks < kChunk / 16; ++ks)
          acc = e.mma(fa[ks],
                      e.fragB(tiles, bTile, e.idx(nt * 8), e.idx(ks * 16), tld),
                      acc);
        Value r = e.add(row0, e.laneGroup), c = e.add(e.idx(nt * 8), e.laneCol);
        Value at = e.add(base, e.add(e.mul(r, width), c));
        e.storePairBF16(acc[0], acc[1], out, at);
        e.storePairBF16(acc[2], acc[3], out, e.add(at, 8 * width));
      }
    };
    Value computesW = e.ult(warp, e.idx(4));
    e.ifThen(computesW, [&] { product(bw, K(), wOut, kBase); });
    e.ifThen(arith::XOrIOp::create(b, computesW,
                                   arith::ConstantIntOp::create(b, 1, 1)),
             [&] { product(bu, V(), uOut, vBase); });
  }
  e.barrier();

  // 6. Kd^T = (K exp(Gamma_last - Gamma))^T, staged transposed in shared
  // memory, then copied out in rows of 64 tokens.
  e.forBatched(
      perThread, kUnroll,
      [&](Value i) -> SmallVector<Value> {
        auto [t, d] = elementOf(i, K());
        return {rawInput(k, t, d)};
      },
      [&](Value i, ArrayRef<Value> in) {
        auto [t, d] = elementOf(i, K());
        Value decay =
            e.exp(e.fsub(gammaAt(e.idx(kChunk - 1), d), gammaAt(t, d)));
        e.storeBF16(e.fmul(kScaled(t, in[0]), decay), tiles,
                    e.add(e.mul(d, tld), t));
      });
  e.barrier();
  e.forLoop(e.idx(0), e.idx(perThread / 2), 1, [&](Value i) {
    Value el = e.mul(e.add(tid, e.mul(i, kPrepThreads)), 2);
    Value d = e.div(el, kChunk), t = e.rem(el, kChunk);
    auto [lo, hi] = e.loadPairF32(tiles, e.add(e.mul(d, tld), t));
    e.storePairBF16(lo, hi, kdtOut, e.add(kBase, el));
  });
  gpu::ReturnOp::create(b);
  return func;
}

/// Argument order of kda_state: W, U, Qd, KdT, Aqk, egl, O, final state.
gpu::GPUFuncOp KDAKernelGenerator::buildStateKernel(TypeRange argTypes) {
  gpu::GPUFuncOp func = createKernel(module, plan.op.getLoc(),
                                     prefix + "_state", argTypes, kThreads);
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  auto args = func.getArguments();
  Value w = args[0], u = args[1], qd = args[2], kdt = args[3], aqk = args[4],
        egl = args[5], out = args[6], state = args[7];

  auto [tid, warp] = e.threadAndWarp();
  Value vTile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value numHeads = gpu::GridDimOp::create(b, gpu::Dimension::y);
  Value length = memref::DimOp::create(b, out, 1);
  Value numChunks = e.div(e.add(length, kChunk - 1), kChunk);
  Value v0 = e.mul(vTile, valueTile);

  // Shared memory: the bf16 state S^T and Vn^T (B operands), then two
  // buffers of one chunk's inputs each, filled by cp.async one chunk ahead.
  Value smem = e.dynamicSharedMemory();
  int64_t hLd = K() + kPad, vLd = tokenLd();
  StagedChunk layout = stagedChunkLayout();
  Value hT = e.sharedView(smem, 0, valueTile * hLd, bf16);
  Value vnT = e.sharedView(smem, valueTile * hLd * 2, valueTile * vLd, bf16);
  int64_t stagedOffset = (valueTile * hLd + valueTile * vLd) * 2;
  Value staged = e.sharedView(smem, stagedOffset, 2 * layout.elements, bf16);
  Value stagedF32 = e.sharedView(smem, stagedOffset, layout.elements, f32);
  Value zero = e.f32(0.0);

  e.forLoop(e.idx(0), e.idx(valueTile * hLd / kThreads + 1), 1, [&](Value i) {
    Value el = e.add(tid, e.mul(i, kThreads));
    e.ifThen(e.ult(el, e.idx(valueTile * hLd)),
             [&] { e.storeBF16(zero, hT, el); });
  });

  auto chunkIdOf = [&](Value n) {
    return e.add(e.mul(e.add(e.mul(batch, numHeads), head), numChunks), n);
  };
  // Copies chunk n's W, Qd, Kd^T, Aqk, this block's columns of U and
  // exp(Gamma_last) into buffer `buffer` in 16-byte cp.async pieces, as one
  // group.
  auto stageChunk = [&](Value n, Value buffer) {
    Value chunkId = chunkIdOf(n);
    Value base = e.mul(buffer, layout.elements);
    SmallVector<Value> tokens;
    // rows x cols bf16 from `src` (leading dimension srcLd, starting at
    // srcBase) to rows of `ld` at element `dst` of the buffer.
    auto copy = [&](Value src, Value srcBase, int64_t rows, int64_t cols,
                    int64_t srcLd, int64_t dst, int64_t ld) {
      e.copyTileAsync({src, srcBase, srcLd, staged, e.add(base, e.idx(dst)), ld,
                       rows, cols},
                      tid, kThreads);
    };
    Value kBase = e.mul(chunkId, kChunk * K());
    copy(w, kBase, kChunk, K(), K(), layout.w, hLd);
    copy(qd, kBase, kChunk, K(), K(), layout.qd, hLd);
    copy(kdt, kBase, K(), kChunk, kChunk, layout.kdt, vLd);
    copy(aqk, e.mul(chunkId, kChunk * kChunk), kChunk, kChunk, kChunk,
         layout.aqk, vLd);
    copy(u, e.add(e.mul(chunkId, kChunk * V()), v0), kChunk, valueTile, V(),
         layout.u, valueTile);
    // exp(Gamma_last): one row of K fp32.
    e.copyTileAsync({egl, e.mul(chunkId, K()), K(), stagedF32,
                     e.add(e.div(base, 2), e.idx(layout.egl / 2)), K(), 1, K()},
                    tid, kThreads);
    Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange())
        .getResult();
  };

  // Warp w owns state rows [w K/4, (w + 1) K/4): mTiles tiles of 16 rows by
  // nTiles tiles of 8 columns, 4 fp32 values per lane each; and rows
  // [16w, 16w + 16) of the chunk for Vn and O.
  int64_t mTiles = K() / 64, nTiles = valueTile / 8;
  int64_t stateRows = K() / 4;
  int64_t kSteps = K() / 16, tSteps = kChunk / 16;
  Value row0 = e.mul(warp, 16);

  e.ifThen(e.ult(e.idx(0), numChunks), [&] { stageChunk(e.idx(0), e.idx(0)); });

  SmallVector<Value> init(mTiles * nTiles * 4, zero);
  SmallVector<Value> finalState =
      e.forLoop(e.idx(0), numChunks, 1, init, [&](Value n, ValueRange h) {
        // Stage the next chunk (the last step copies its own chunk again)
        // into the other buffer, which every warp finished reading before the
        // barrier that ended the previous step; then wait for this chunk's
        // group.
        Value buffer = e.rem(n, 2);
        Value nextN = e.add(n, 1);
        nextN = e.select(e.ult(nextN, numChunks), nextN, n);
        Value group = stageChunk(nextN, e.rem(e.add(n, 1), 2));
        nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(1));
        e.barrier();
        Value base = e.mul(buffer, layout.elements);
        auto at = [&](int64_t offset) { return e.add(base, e.idx(offset)); };

        // Vn = U - W S and the first half of O = Qd S, rows [16w, 16w + 16).
        SmallVector<Frag4> vn(nTiles, e.zeroFrag()), o(nTiles, e.zeroFrag());
        for (int64_t ks = 0; ks < kSteps; ++ks) {
          Frag4 aw = e.fragA(staged, at(layout.w), row0, e.idx(ks * 16), hLd);
          Frag4 aq = e.fragA(staged, at(layout.qd), row0, e.idx(ks * 16), hLd);
          for (int64_t j = 0; j < nTiles; ++j) {
            auto bh = e.fragB(hT, e.idx(0), e.idx(8 * j), e.idx(ks * 16), hLd);
            vn[j] = e.mma(aw, bh, vn[j]);
            o[j] = e.mma(aq, bh, o[j]);
          }
        }
        for (int64_t j = 0; j < nTiles; ++j) {
          e.forEachAcc(
              row0, e.idx(8 * j), [&](int64_t n4, Value row, Value col) {
                Value uAt =
                    e.add(at(layout.u), e.add(e.mul(row, valueTile), col));
                Value uv = arith::ExtFOp::create(b, f32, e.load(staged, uAt));
                e.storeBF16(e.fsub(uv, vn[j][n4]), vnT,
                            e.add(e.mul(col, vLd), row));
              });
        }
        e.barrier();

        // O += Aqk Vn over the key blocks at or below the diagonal.
        for (int64_t ks = 0; ks < tSteps; ++ks) {
          Value below = e.ule(e.idx(ks), warp);
          Frag4 fa = e.fragA(staged, at(layout.aqk), row0, e.idx(ks * 16), vLd);
          for (int64_t j = 0; j < nTiles; ++j) {
            Frag4 r = e.mma(
                fa, e.fragB(vnT, e.idx(0), e.idx(8 * j), e.idx(ks * 16), vLd),
                o[j]);
            for (int64_t i = 0; i < 4; ++i)
              o[j][i] = e.select(below, r[i], o[j][i]);
          }
        }
        for (int64_t j = 0; j < nTiles; ++j) {
          for (int64_t half = 0; half < 2; ++half) {
            Value row = e.add(e.add(row0, e.laneGroup), 8 * half);
            Value t = e.add(e.mul(n, kChunk), row);
            Value col = e.add(v0, e.add(e.idx(8 * j), e.laneCol));
            Value lo = o[j][2 * half], hi = o[j][2 * half + 1];
            e.ifThen(e.ult(t, length), [&] {
              Value pair = vector::FromElementsOp::create(
                  b, VectorType::get({2}, f32), ValueRange{lo, hi});
              vector::StoreOp::create(
                  b, pair, out, ValueRange{batch, t, head, col},
                  /*nontemporal=*/false, llvm::MaybeAlign(8));
            });
          }
        }

        // S <- exp(Gamma_last) S + Kd^T Vn.
        SmallVector<Value> next;
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          Value sRow0 = e.add(e.mul(warp, stateRows), 16 * mt);
          Value r = e.add(sRow0, e.laneGroup);
          Value eglAt = e.add(e.div(base, 2), e.idx(layout.egl / 2));
          Value decayLo = e.load(stagedF32, e.add(eglAt, r));
          Value decayHi = e.load(stagedF32, e.add(eglAt, e.add(r, 8)));
          Frag4 fa[kChunk / 16];
          for (int64_t ks = 0; ks < tSteps; ++ks)
            fa[ks] =
                e.fragA(staged, at(layout.kdt), sRow0, e.idx(ks * 16), vLd);
          for (int64_t j = 0; j < nTiles; ++j) {
            int64_t acc = (mt * nTiles + j) * 4;
            Frag4 c = {e.fmul(h[acc], decayLo), e.fmul(h[acc + 1], decayLo),
                       e.fmul(h[acc + 2], decayHi),
                       e.fmul(h[acc + 3], decayHi)};
            for (int64_t ks = 0; ks < tSteps; ++ks)
              c = e.mma(
                  fa[ks],
                  e.fragB(vnT, e.idx(0), e.idx(8 * j), e.idx(ks * 16), vLd), c);
            next.append(c.begin(), c.end());
          }
        }
        // Every warp read S^T before the barrier above: write the new one.
        for (int64_t mt = 0; mt < mTiles; ++mt) {
          Value sRow0 = e.add(e.mul(warp, stateRows), 16 * mt);
          for (int64_t j = 0; j < nTiles; ++j) {
            int64_t acc = (mt * nTiles + j) * 4;
            e.forEachAcc(
                sRow0, e.idx(8 * j), [&](int64_t n4, Value row, Value col) {
                  e.storeBF16(next[acc + n4], hT, e.add(e.mul(col, hLd), row));
                });
          }
        }
        e.barrier();
        return next;
      });

  for (int64_t mt = 0; mt < mTiles; ++mt) {
    Value sRow0 = e.add(e.mul(warp, stateRows), 16 * mt);
    for (int64_t j = 0; j < nTiles; ++j) {
      int64_t acc = (mt * nTiles + j) * 4;
      e.forEachAcc(sRow0, e.idx(8 * j), [&](int64_t n4, Value row, Value col) {
        Value c = e.add(v0, col);
        if (plan.keyMajor)
          e.store(finalState[acc + n4], state, {batch, head, row, c});
        else
          e.store(finalState[acc + n4], state, {batch, head, c, row});
      });
    }
  }
  gpu::ReturnOp::create(b);
  return func;
}

void KDAKernelGenerator::generate() {
  KDAOp op = plan.op;
  ImplicitLocOpBuilder b(op.getLoc(), op);
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();

  auto toBuffer = [&](Value tensor) { return readOnlyBuffer(b, tensor); };
  Value rawQ = plan.queryNorm ? plan.queryNorm.getInput() : op.getQuery();
  Value rawK = plan.keyNorm ? plan.keyNorm.getInput() : op.getKey();
  SmallVector<Value> prepArgs = {toBuffer(rawQ), toBuffer(rawK),
                                 toBuffer(op.getValue()),
                                 toBuffer(op.getBeta())};
  if (plan.gate) {
    prepArgs.push_back(toBuffer(plan.gate.getRaw()));
    prepArgs.push_back(toBuffer(plan.gate.getDtBias()));
    if (plan.gate.getALog())
      prepArgs.push_back(toBuffer(plan.gate.getALog()));
  } else {
    prepArgs.push_back(toBuffer(op.getLogDecay()));
  }

  Value q = prepArgs[0];
  Value batch = memref::DimOp::create(b, q, 0);
  Value length = memref::DimOp::create(b, q, 1);
  Value heads = memref::DimOp::create(b, q, 2);
  Value numChunks = e.div(e.add(length, kChunk - 1), kChunk);
  Value chunks = e.mul(e.mul(batch, heads), numChunks);

  // Device buffers between the two kernels.
  SmallVector<Value> intermediates =
      allocateDeviceBuffers(b, {{e.mul(chunks, kChunk * K()), bf16},    // W
                                {e.mul(chunks, kChunk * V()), bf16},    // U
                                {e.mul(chunks, kChunk * K()), bf16},    // Qd
                                {e.mul(chunks, kChunk * K()), bf16},    // Kd^T
                                {e.mul(chunks, kChunk * kChunk), bf16}, // Aqk
                                {e.mul(chunks, K()), f32}}); // exp(Gamma_last)
  prepArgs.append(intermediates);

  // Results in host memory (host-shared once the GPU mapping runs).
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
  Value outBuf = memref::AllocOp::create(
      b, MemRefType::get(outType.getShape(), f32),
      dynamicSizes(outType, {batch, length, heads, e.idx(V())}));
  Value stateBuf = memref::AllocOp::create(
      b, MemRefType::get(stateType.getShape(), f32),
      dynamicSizes(stateType, {batch, heads, e.idx(0), e.idx(0)}));

  SmallVector<Type> prepTypes, stateTypes;
  for (Value v : prepArgs)
    prepTypes.push_back(v.getType());
  SmallVector<Value> stateArgs(intermediates);
  stateArgs.push_back(outBuf);
  stateArgs.push_back(stateBuf);
  for (Value v : stateArgs)
    stateTypes.push_back(v.getType());
  gpu::GPUFuncOp prep = buildPrepKernel(prepTypes);
  gpu::GPUFuncOp stateKernel = buildStateKernel(stateTypes);

  Value one = e.idx(1), threads = e.idx(kThreads);
  auto smemSize = [&](int64_t bytes) {
    return arith::ConstantIntOp::create(b, bytes, 32).getResult();
  };
  gpu::LaunchFuncOp::create(b, prep, gpu::KernelDim3{numChunks, heads, batch},
                            gpu::KernelDim3{e.idx(kPrepThreads), one, one},
                            smemSize(prepSharedBytes()), prepArgs);
  gpu::LaunchFuncOp::create(
      b, stateKernel, gpu::KernelDim3{e.idx(V() / valueTile), heads, batch},
      gpu::KernelDim3{threads, one, one}, smemSize(stateSharedBytes()),
      stateArgs);
  // Buffer deallocation frees the intermediates (gpu.alloc results) once
  // the launches are done.

  Value outTensor = bufferization::ToTensorOp::create(
      b, outType, outBuf, /*restrict=*/true, /*writable=*/true);
  Value stateTensor = bufferization::ToTensorOp::create(
      b, stateType, stateBuf, /*restrict=*/true, /*writable=*/true);
  op.getOutput().replaceAllUsesWith(outTensor);
  op.getFinalState().replaceAllUsesWith(stateTensor);
}

struct MoEGenerateKDAKernelsPass
    : public moe::impl::MoEGenerateKDAKernelsBase<MoEGenerateKDAKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEGenerateKDAKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  if (diagonal != "auto" && diagonal != "dense" && diagonal != "per-position") {
    module.emitError() << "unknown diagonal '" << diagonal
                       << "', expected auto, dense or per-position";
    return signalPassFailure();
  }
  if (valueTile != 8 && valueTile != 16 && valueTile != 32) {
    module.emitError() << "expects value-tile 8, 16 or 32, got "
                       << static_cast<int64_t>(valueTile);
    return signalPassFailure();
  }

  DecayBounds bounds(module);
  SmallVector<KDAPlan> plans;
  module.walk([&](KDAOp op) {
    auto qType = cast<RankedTensorType>(op.getQuery().getType());
    auto vType = cast<RankedTensorType>(op.getValue().getType());
    int64_t keyDim = qType.getDimSize(3), valueDim = vType.getDimSize(3);
    auto allF32 = llvm::all_of(op->getOperands(), [](Value v) {
      return cast<RankedTensorType>(v.getType()).getElementType().isF32();
    });
    std::string reason;
    if (keyDim != 64 && keyDim != 128)
      reason = llvm::formatv("key width {0} is not 64 or 128", keyDim);
    else if (ShapedType::isDynamic(valueDim) || valueDim % valueTile != 0 ||
             valueDim % 16 != 0)
      reason = "the value width is not a static multiple of value-tile and 16";
    else if (!allF32)
      reason = "an operand is not f32";
    else if (op.getInitialState())
      reason = "an initial state is given";
    else if (!cast<RankedTensorType>(op.getOutput().getType())
                  .getElementType()
                  .isF32())
      reason = "the output is not f32";
    if (!reason.empty()) {
      op.emitRemark() << "kda left to -moe-tile-linear-attention: " << reason;
      return;
    }
    TileSafetyVerdict verdict = bounds.checkTile(
        op.getLogDecay(), kSub, TileReference::Mid, BFloat16Type::get(ctx));
    bool dense = diagonal == "dense" || (diagonal == "auto" && verdict.proven);
    std::string boundText =
        verdict.lowerBound ? llvm::formatv("{0}", *verdict.lowerBound).str()
                           : std::string("none");
    std::string why =
        diagonal != "auto"
            ? llvm::formatv("forced by diagonal={0}", diagonal.getValue()).str()
            : std::string(verdict.proven ? "proven safe" : "not proven");
    op.emitRemark() << "kda GPU kernels with chunk " << kChunk << ", sub-chunk "
                    << kSub << ": "
                    << (dense ? "dense tensor-core diagonal tiles"
                              : "per-position diagonal tiles")
                    << ", " << why << " (bound " << boundText
                    << ", mid reference over " << kSub << " rows: exponent "
                    << verdict.exponent << " vs limit " << verdict.limit
                    << " for bf16, margin " << verdict.margin << ")";
    KDAPlan plan{op,
                 keyDim,
                 valueDim,
                 qType.getDimSize(2),
                 dense,
                 op.getScaleOrDefault(),
                 op.getStateLayout() == StateLayout::KeyMajor,
                 op.getQuery().getDefiningOp<L2NormOp>(),
                 op.getKey().getDefiningOp<L2NormOp>(),
                 op.getLogDecay().getDefiningOp<DecayGateOp>()};
    if (plan.gate && !cast<RankedTensorType>(plan.gate.getRaw().getType())
                          .getElementType()
                          .isF32())
      plan.gate = {};
    plans.push_back(plan);
  });
  if (plans.empty())
    return;

  gpu::GPUModuleOp gpuModule = createKernelModule(module, "moe_kda_kernels");

  for (auto [n, plan] : llvm::enumerate(plans)) {
    KDAKernelGenerator generator(plan, valueTile, gpuModule,
                                 llvm::formatv("kda{0}", n).str());
    generator.generate();
    llvm::SetVector<Operation *> producers;
    for (Operation *producer :
         {plan.queryNorm.getOperation(), plan.keyNorm.getOperation(),
          plan.gate.getOperation()})
      if (producer)
        producers.insert(producer);
    plan.op.erase();
    for (Operation *producer : producers)
      if (producer->use_empty())
        producer->erase();
  }
}
