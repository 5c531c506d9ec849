//===- GenerateAttentionGradKernels.cpp - Tensor-core attention backward --===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-attention-grad-kernels, the GPU back end's kernel
// generator for `moe.mla_attention_grad`: the causal FlashAttention-2 style
// backward of ALGORITHMS.md section 3.3 as three kernels built from the op's
// shapes and element types (f32 or bf16 per operand).
//
//   prep:  per row, dO = d_output sigmoid(gate), D = rowsum(d_output output)
//          and d_gate = d_output output (1 - sigmoid(gate)); q, k, v and dO
//          as bf16 [B, H, Tp, D] copies (Tp: T rounded up to 64, the extra
//          rows zero), lse log2(e) and D as fp32 [B, H, Tp].
//   dK dV: one block per (key tile, head, batch), each warp owning 16 keys:
//          for every query tile from the diagonal on, S^T = K Q^T,
//          P^T = exp(S^T - lse), dP^T = V dO^T, dS^T = P^T o (dP^T - D),
//          dV += P^T dO and dK += dS^T Q in registers.
//   dQ:    one block per (query tile, head, batch), each warp owning 16
//          queries: for every key tile up to the diagonal, the same P and dS,
//          and dQ += dS K in registers.
//
// dQ gets its own pass over the key tiles rather than fp32 atomics from the
// dK dV blocks: it recomputes S and dP (7 tile products instead of 5), but
// every result is written by exactly one block, in one summation order, so
// the backward is deterministic (a CUDA-graph replay gives the same bits)
// and needs no zero-filled buffer or shared-memory transpose of dS.
//
// Tile products use `mma.sync` m16n8k16 with bf16 operands from `ldmatrix`
// and fp32 accumulators (the forward generator's policy); P and dS are
// rounded to bf16 as operands, the softmax recomputation, D and the gate are
// fp32. The fragment helpers are in DeviceEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"
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
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEATTENTIONGRADKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Query rows and keys per tile (both sides of the backward: one tile size
/// keeps the diagonal a single tile pair).
constexpr int64_t kTile = 64;
/// Four warps of 16 rows.
constexpr int64_t kThreads = 128;
constexpr int64_t kWarpRows = 16;
/// Padding (in bf16 elements) of shared-memory rows, as in the forward: rows
/// of `D + 8` elements fall into distinct bank groups for ldmatrix.
constexpr int64_t kPad = 8;
/// The widest head the generator takes (the forward's limit).
constexpr int64_t kMaxWidth = 256;
/// Resident A fragments of both widths are kept in registers up to this
/// sum of widths; wider ones are re-read from shared memory every step, so
/// that the accumulators (both widths for dK dV) keep the registers.
constexpr int64_t kRegisterWidths = 128;
constexpr double kLog2e = 1.4426950408889634;

/// The two main kernels: which side of the scores a block owns.
enum class Role {
  /// A block owns a key tile (K, V resident) and walks the query tiles.
  KeyValue,
  /// A block owns a query tile (Q, dO resident) and walks the key tiles.
  Query,
};

/// What the generator knows about one mla_attention_grad op.
struct GradPlan {
  MLAAttentionGradOp op;
  int64_t qkDim, valueDim;
  double scale;
  bool hasGate;
};

/// Builds the kernels and the launches of one plan.
class AttentionGradGenerator {
public:
  AttentionGradGenerator(GradPlan plan, gpu::GPUModuleOp module, StringRef name)
      : plan(plan), module(module), name(name) {}

  void generate();

  /// Dynamic shared memory of a main kernel: the resident tile pair and two
  /// stages of the streamed pair (bf16), plus for dK dV two stages of the
  /// query tile's lse and D (fp32).
  int64_t sharedBytes(Role role) const {
    return 2 * bf16Elems() + (role == Role::KeyValue ? scalarBytes() : 0);
  }
  /// Whether a warp keeps its resident A fragments in registers.
  bool residentInRegisters() const { return DQK() + DV() <= kRegisterWidths; }

private:
  int64_t DQK() const { return plan.qkDim; }
  int64_t DV() const { return plan.valueDim; }
  int64_t qkLd() const { return DQK() + kPad; }
  int64_t vLd() const { return DV() + kPad; }
  /// One tile pair: [64, D_qk] then [64, D_v], rows padded.
  int64_t pairElems() const { return kTile * (qkLd() + vLd()); }
  /// The resident pair at 0, stage s at (1 + s) pairElems().
  int64_t stageBase(int64_t s) const { return (1 + s) * pairElems(); }
  int64_t bf16Elems() const { return 3 * pairElems(); }
  /// Per stage 64 lse and 64 D values.
  int64_t scalarBytes() const { return 2 * 2 * kTile * 4; }

  gpu::GPUFuncOp buildPrepKernel(TypeRange argTypes);
  gpu::GPUFuncOp buildMainKernel(Role role, TypeRange argTypes);

  GradPlan plan;
  gpu::GPUModuleOp module;
  std::string name;
};

/// Argument order: q, k, v, [gate], output, lse, d_output (the op's
/// operands), q16, k16, v16, dO16 (bf16 [B, H, Tp, D]), lse2, delta (f32
/// [B, H, Tp]), [d_gate]. Launched over (tiles, heads, batch); each warp
/// takes 16 of the tile's rows, its lanes the columns.
gpu::GPUFuncOp AttentionGradGenerator::buildPrepKernel(TypeRange argTypes) {
  gpu::GPUFuncOp func = createKernel(module, plan.op.getLoc(), name + "_prep",
                                     argTypes, kThreads);
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type();
  auto args = func.getArguments();
  unsigned next = 0;
  Value q = args[next++], k = args[next++], v = args[next++];
  Value gate = plan.hasGate ? args[next++] : Value();
  Value output = args[next++], lse = args[next++], dOutput = args[next++];
  Value q16 = args[next++], k16 = args[next++], v16 = args[next++];
  Value dO16 = args[next++], lse2 = args[next++], delta = args[next++];
  Value dGate = plan.hasGate ? args[next++] : Value();

  auto [tid, warp] = e.threadAndWarp();
  Value tile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value length = memref::DimOp::create(b, q, 1);
  Value numHeads = memref::DimOp::create(b, q, 2);
  Value paddedLength =
      e.mul(gpu::GridDimOp::create(b, gpu::Dimension::x), kTile);
  Value headRow = e.mul(e.add(e.mul(batch, numHeads), head), paddedLength);
  auto toF32 = [&](Value x) {
    return x.getType() == f32 ? x : arith::ExtFOp::create(b, f32, x);
  };
  auto fromF32 = [&](Value x, Value mem) {
    Type type = getElementTypeOrSelf(mem.getType());
    return type == f32 ? x : arith::TruncFOp::create(b, type, x).getResult();
  };

  e.forLoop(e.idx(0), e.idx(kWarpRows), 1, [&](Value r) {
    Value t = e.add(e.add(e.mul(tile, kTile), e.mul(warp, kWarpRows)), r);
    // Rows past the sequence read row 0 and write zeros.
    Value valid = e.ult(t, length);
    Value row = e.select(valid, t, e.idx(0));
    Value zero = e.f32(0.0);
    Value rowAt = e.add(headRow, t);
    // Column c = lane + 32 m of each round m; with D % 32 != 0 the last
    // round's upper lanes read column D - 1 and store nothing.
    auto forColumns = [&](int64_t D, function_ref<void(Value, Value)> body) {
      for (int64_t m = 0; m * 32 < D; ++m) {
        Value c = e.add(e.lane, 32 * m);
        if ((m + 1) * 32 <= D) {
          body(c, Value());
          continue;
        }
        Value inRange = e.ult(c, e.idx(D));
        body(arith::MinUIOp::create(b, c, e.idx(D - 1)), inRange);
      }
    };
    auto guarded = [&](Value inRange, function_ref<void()> store) {
      if (inRange)
        e.ifThen(inRange, store);
      else
        store();
    };
    for (auto [src, dst, D] : {std::tuple<Value, Value, int64_t>{q, q16, DQK()},
                               {k, k16, DQK()},
                               {v, v16, DV()}}) {
      forColumns(D, [&, src = src, dst = dst, D = D](Value c, Value inRange) {
        Value x = toF32(e.load(src, {batch, row, head, c}));
        x = e.select(valid, x, zero);
        guarded(inRange,
                [&] { e.storeBF16(x, dst, e.add(e.mul(rowAt, D), c)); });
      });
    }
    // dO = d_output s, D = sum d_output output, d_gate = d_output output
    // (1 - s): the gated output is never divided by s.
    Value partial = zero;
    forColumns(DV(), [&](Value c, Value inRange) {
      SmallVector<Value> at = {batch, row, head, c};
      Value dy = toF32(e.load(dOutput, at));
      Value product = e.fmul(dy, toF32(e.load(output, at)));
      Value dO = dy;
      if (gate) {
        Value s = buildSigmoid(b, b.getLoc(), toF32(e.load(gate, at)));
        dO = e.fmul(dy, s);
        Value dg = e.fmul(product, e.fsub(e.f32(1.0), s));
        Value both = inRange
                         ? arith::AndIOp::create(b, valid, inRange).getResult()
                         : valid;
        e.ifThen(both, [&] {
          e.store(fromF32(dg, dGate), dGate, {batch, t, head, c});
        });
      }
      dO = e.select(valid, dO, zero);
      guarded(inRange,
              [&] { e.storeBF16(dO, dO16, e.add(e.mul(rowAt, DV()), c)); });
      Value keep = inRange
                       ? arith::AndIOp::create(b, valid, inRange).getResult()
                       : valid;
      partial = e.fadd(partial, e.select(keep, product, zero));
    });
    Value rowSum = e.warpSum(partial);
    e.ifThen(e.eq(e.lane, e.idx(0)), [&] {
      Value l = e.fmul(e.load(lse, {batch, head, row}), e.f32(kLog2e));
      e.store(e.select(valid, l, zero), lse2, {rowAt});
      e.store(rowSum, delta, {rowAt});
    });
  });
  gpu::ReturnOp::create(b);
  return func;
}

/// Argument order: q16, k16, v16, dO16, lse2, delta, then the results:
/// d_query (Query) or d_key, d_value (KeyValue). Launched over (heads x
/// batch, tiles).
gpu::GPUFuncOp AttentionGradGenerator::buildMainKernel(Role role,
                                                       TypeRange argTypes) {
  const bool keyValue = role == Role::KeyValue;
  gpu::GPUFuncOp func =
      createKernel(module, plan.op.getLoc(),
                   name + (keyValue ? "_dkdv" : "_dq"), argTypes, kThreads);
  MLIRContext *ctx = func.getContext();
  ImplicitLocOpBuilder b = ImplicitLocOpBuilder::atBlockBegin(
      plan.op.getLoc(), &func.getBody().front());
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  auto args = func.getArguments();
  Value q16 = args[0], k16 = args[1], v16 = args[2], dO16 = args[3];
  Value lse2 = args[4], delta = args[5];
  Value out1 = args[6], out2 = keyValue ? args[7] : Value();
  // The resident pair (A operands, one row of 16 per warp) and the streamed
  // one (B operands): (K, V) and (Q, dO) for dK dV, the other way for dQ.
  Value resident1 = keyValue ? k16 : q16, resident2 = keyValue ? v16 : dO16;
  Value streamed1 = keyValue ? q16 : k16, streamed2 = keyValue ? dO16 : v16;

  auto [tid, warp] = e.threadAndWarp();
  // Blocks run in the order of their index, x fastest: the tiles with the
  // most work (the first key tiles, the last query tiles) go first.
  Value length = memref::DimOp::create(b, out1, 1);
  Value numHeads = memref::DimOp::create(b, out1, 2);
  Value numTiles = gpu::GridDimOp::create(b, gpu::Dimension::y);
  Value blockY = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value own = keyValue ? blockY : e.sub(e.sub(numTiles, blockY), e.idx(1));
  Value headBatch = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value head = arith::RemUIOp::create(b, headBatch, numHeads);
  Value batch = arith::DivUIOp::create(b, headBatch, numHeads);
  Value paddedLength = e.mul(numTiles, kTile);
  // Row 0 of tile `t` of (batch, head) in the [B, H, Tp] padded buffers.
  Value headRow = e.mul(e.add(e.mul(batch, numHeads), head), paddedLength);
  auto tileRow = [&](Value t) { return e.add(headRow, e.mul(t, kTile)); };

  Value smem = e.dynamicSharedMemory();
  Value sm = e.sharedView(smem, 0, bf16Elems(), bf16);
  Value smScalars =
      keyValue ? e.sharedView(smem, 2 * bf16Elems(), scalarBytes() / 4, f32)
               : Value();
  Type asyncToken = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto commitGroup = [&]() -> Value {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, asyncToken, ValueRange())
        .getResult();
  };
  // The tile pair of tile `t` of (src1, src2) into shared memory at `base`
  // by 16-byte cp.async copies; the padded buffers need no bounds checks.
  auto copyPair = [&](Value src1, Value src2, Value t, Value base,
                      bool bypassL1) {
    Value row = tileRow(t);
    e.copyTileAsync(
        {src1, e.mul(row, DQK()), DQK(), sm, base, qkLd(), kTile, DQK()}, tid,
        kThreads, bypassL1);
    e.copyTileAsync({src2, e.mul(row, DV()), DV(), sm,
                     e.add(base, kTile * qkLd()), vLd(), kTile, DV()},
                    tid, kThreads, bypassL1);
  };
  auto stageOf = [&](Value t) { return e.rem(t, 2); };
  auto stageTile = [&](Value t) {
    Value stage = stageOf(t);
    copyPair(streamed1, streamed2, t,
             e.add(e.idx(stageBase(0)), e.mul(stage, pairElems())),
             /*bypassL1=*/true);
    if (keyValue) {
      Value at = e.mul(stage, 2 * kTile);
      e.copyTileAsync({lse2, tileRow(t), kTile, smScalars, at, kTile, 1, kTile},
                      tid, kThreads, /*bypassL1=*/true);
      e.copyTileAsync({delta, tileRow(t), kTile, smScalars, e.add(at, kTile),
                       kTile, 1, kTile},
                      tid, kThreads, /*bypassL1=*/true);
    }
  };

  // The tiles visited: for dK dV the query tiles from the diagonal on, for
  // dQ the key tiles up to it. Only the diagonal tile needs the mask.
  Value first = keyValue ? own : e.idx(0);
  Value end = keyValue ? numTiles : e.add(own, 1);

  // Prologue: the resident pair and the first streamed tile in one group.
  copyPair(resident1, resident2, own, e.idx(0), /*bypassL1=*/false);
  stageTile(first);
  Value firstGroup = commitGroup();
  nvgpu::DeviceAsyncWaitOp::create(b, firstGroup, b.getI32IntegerAttr(0));
  e.barrier();

  const int64_t nS = kTile / 8, pSteps = kTile / 16;
  const int64_t k1 = DQK() / 16, k2 = DV() / 16;
  const int64_t n1 = DQK() / 8, n2 = DV() / 8;
  Value rowBase = e.mul(warp, kWarpRows);
  auto residentFrag = [&](int64_t which, int64_t ks) {
    return which == 1
               ? e.ldmatrixA(sm, e.idx(0), rowBase, e.idx(16 * ks), qkLd())
               : e.ldmatrixA(sm, e.idx(kTile * qkLd()), rowBase, e.idx(16 * ks),
                             vLd());
  };
  SmallVector<Frag4> regs1, regs2;
  if (residentInRegisters()) {
    for (int64_t ks = 0; ks < k1; ++ks)
      regs1.push_back(residentFrag(1, ks));
    for (int64_t ks = 0; ks < k2; ++ks)
      regs2.push_back(residentFrag(2, ks));
  }
  auto frag1 = [&](int64_t ks) {
    return residentInRegisters() ? regs1[ks] : residentFrag(1, ks);
  };
  auto frag2 = [&](int64_t ks) {
    return residentInRegisters() ? regs2[ks] : residentFrag(2, ks);
  };

  // dQ: the lse (times log2 e) and D of the warp's rows g and g + 8.
  Value rowL[2], rowD[2];
  if (!keyValue) {
    for (int64_t half = 0; half < 2; ++half) {
      Value at =
          e.add(tileRow(own), e.add(rowBase, e.add(e.laneGroup, 8 * half)));
      rowL[half] = e.load(lse2, {at});
      rowD[half] = e.load(delta, {at});
    }
  }

  const Value c = e.f32(plan.scale * kLog2e), zero = e.f32(0.0);
  auto exp2 = [&](Value x) -> Value {
    return LLVM::CallIntrinsicOp::create(
               b, f32, b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
               ValueRange{x})
        .getResult(0);
  };
  // X B^T for the warp's 16 rows X (A fragments `a(ks)`, `kSteps` of them)
  // and the 64 rows of the streamed tile at `base` (its rows are the n-major
  // B operand): eight 16x8 accumulator fragments.
  auto productNT = [&](function_ref<Frag4(int64_t)> a, int64_t kSteps,
                       Value base, int64_t ld) {
    SmallVector<Frag4> acc(nS, e.zeroFrag());
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      Frag4 aFrag = a(ks);
      for (int64_t j = 0; j < nS; j += 2) {
        auto bFrags =
            e.ldmatrixB(sm, base, e.idx(16 * ks), e.idx(8 * j), ld, false);
        for (int64_t h = 0; h < 2; ++h)
          acc[j + h] = e.mma(aFrag, bFrags[h], acc[j + h]);
      }
    }
    return acc;
  };
  // state[at ..] += X T for the warp's 16 x 64 X (accumulators, rounded to
  // bf16 A fragments) and the streamed tile T at `base` (its rows are the
  // k-major B operand, read transposed), `width` columns.
  auto accumulateNN = [&](SmallVector<Value> &state, int64_t at,
                          ArrayRef<Frag4> x, Value base, int64_t ld,
                          int64_t width) {
    for (int64_t ps = 0; ps < pSteps; ++ps) {
      const Frag4 &lo = x[2 * ps], &hi = x[2 * ps + 1];
      Frag4 aFrag = {e.packPair(lo[0], lo[1]), e.packPair(lo[2], lo[3]),
                     e.packPair(hi[0], hi[1]), e.packPair(hi[2], hi[3])};
      for (int64_t n = 0; n < width / 8; n += 2) {
        auto bFrags =
            e.ldmatrixB(sm, base, e.idx(16 * ps), e.idx(8 * n), ld, true);
        for (int64_t h = 0; h < 2; ++h) {
          int64_t i0 = at + 4 * (n + h);
          Frag4 acc = {state[i0], state[i0 + 1], state[i0 + 2], state[i0 + 3]};
          acc = e.mma(aFrag, bFrags[h], acc);
          for (int64_t i = 0; i < 4; ++i)
            state[i0 + i] = acc[i];
        }
      }
    }
  };

  // One streamed tile t: S = X1 T1^T, P = exp(S - lse) (masked on the
  // diagonal), dP = X2 T2^T, dS = P o (dP - D); then dQ += dS T1, or
  // dV += P T2 and dK += dS T1 (the P and dS here are transposed: rows are
  // keys, columns queries).
  auto compute = [&](Value t, ValueRange carried,
                     bool diagonal) -> SmallVector<Value> {
    SmallVector<Value> state(carried);
    Value stage = stageOf(t);
    Value base1 = e.add(e.idx(stageBase(0)), e.mul(stage, pairElems()));
    Value base2 = e.add(base1, kTile * qkLd());
    SmallVector<Frag4> s = productNT(frag1, k1, base1, qkLd());
    SmallVector<Frag4> dp = productNT(frag2, k2, base2, vLd());
    Value scalarBase = keyValue ? e.mul(stage, 2 * kTile) : Value();
    for (int64_t j = 0; j < nS; ++j) {
      for (int64_t i = 0; i < 4; ++i) {
        Value row = e.add(rowBase, e.add(e.laneGroup, 8 * (i / 2)));
        Value col = e.add(e.laneCol, 8 * j + i % 2);
        Value l, d;
        if (keyValue) {
          Value at = e.add(scalarBase, col);
          l = e.load(smScalars, {at});
          d = e.load(smScalars, {e.add(at, kTile)});
        } else {
          l = rowL[i / 2];
          d = rowD[i / 2];
        }
        Value p = exp2(
            math::FmaOp::create(b, s[j][i], c, arith::NegFOp::create(b, l)));
        if (diagonal) {
          // Key position <= query position, tile-relative (the diagonal
          // pairs tile t with itself).
          Value keep = keyValue ? e.ule(row, col) : e.ule(col, row);
          p = e.select(keep, p, zero);
        }
        s[j][i] = p;
        dp[j][i] = e.fmul(p, e.fsub(dp[j][i], d));
      }
    }
    accumulateNN(state, 0, dp, base1, qkLd(), DQK());
    if (keyValue)
      accumulateNN(state, 4 * n1, s, base2, vLd(), DV());
    return state;
  };

  // Each step waits for its tile's group (the only one in flight) and
  // passes one barrier, after which every warp is done with the previous
  // step's stage: the next tile's copies go there.
  auto step = [&](Value t, ValueRange carried,
                  bool diagonal) -> SmallVector<Value> {
    nvgpu::DeviceAsyncWaitOp::create(b, firstGroup, b.getI32IntegerAttr(0));
    e.barrier();
    Value nextT = e.add(t, 1);
    e.ifThen(e.ult(nextT, end), [&] { stageTile(nextT); });
    commitGroup();
    return compute(t, carried, diagonal);
  };

  SmallVector<Value> state(4 * (n1 + (keyValue ? n2 : 0)), zero);
  if (keyValue) {
    state = e.forLoop(
        own, e.add(own, 1), 1, state,
        [&](Value t, ValueRange carried) { return step(t, carried, true); });
    state = e.forLoop(
        e.add(own, 1), end, 1, state,
        [&](Value t, ValueRange carried) { return step(t, carried, false); });
  } else {
    state = e.forLoop(first, own, 1, state, [&](Value t, ValueRange carried) {
      return step(t, carried, false);
    });
    state = e.forLoop(own, end, 1, state, [&](Value t, ValueRange carried) {
      return step(t, carried, true);
    });
  }

  // Epilogue: the rows inside the sequence; dQ and dK times the scale.
  auto storeRows = [&](Value out, int64_t at, int64_t width, double factor) {
    Type outType = getElementTypeOrSelf(out.getType());
    auto vec2 = VectorType::get({2}, f32);
    for (int64_t half = 0; half < 2; ++half) {
      Value t = e.add(e.mul(own, kTile),
                      e.add(rowBase, e.add(e.laneGroup, 8 * half)));
      e.ifThen(e.ult(t, length), [&] {
        for (int64_t n = 0; n < width / 8; ++n) {
          int64_t i0 = at + 4 * n + 2 * half;
          Value lo = state[i0], hi = state[i0 + 1];
          if (factor != 1.0) {
            lo = e.fmul(lo, e.f32(factor));
            hi = e.fmul(hi, e.f32(factor));
          }
          Value pair =
              vector::FromElementsOp::create(b, vec2, ValueRange{lo, hi});
          if (outType != f32)
            pair =
                arith::TruncFOp::create(b, VectorType::get({2}, outType), pair);
          vector::StoreOp::create(
              b, pair, out, ValueRange{batch, t, head, e.add(e.laneCol, 8 * n)},
              /*nontemporal=*/false,
              llvm::MaybeAlign(outType.getIntOrFloatBitWidth() / 4));
        }
      });
    }
  };
  storeRows(out1, 0, DQK(), plan.scale);
  if (keyValue)
    storeRows(out2, 4 * n1, DV(), 1.0);
  gpu::ReturnOp::create(b);
  return func;
}

void AttentionGradGenerator::generate() {
  MLAAttentionGradOp op = plan.op;
  ImplicitLocOpBuilder b(op.getLoc(), op);
  DeviceEmitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();

  SmallVector<Value> prepArgs;
  for (Value operand : op->getOperands())
    prepArgs.push_back(readOnlyBuffer(b, operand));
  Value q = prepArgs[0];
  Value batch = memref::DimOp::create(b, q, 0);
  Value length = memref::DimOp::create(b, q, 1);
  Value heads = memref::DimOp::create(b, q, 2);
  Value numTiles = e.div(e.add(length, kTile - 1), kTile);
  Value rows = e.mul(e.mul(e.mul(batch, heads), numTiles), kTile);
  Value one = e.idx(1);

  // The bf16 copies and the per-row scalars in device memory.
  SmallVector<Value> scratch =
      allocateDeviceBuffers(b, {{e.mul(rows, DQK()), bf16},
                                {e.mul(rows, DQK()), bf16},
                                {e.mul(rows, DV()), bf16},
                                {e.mul(rows, DV()), bf16},
                                {rows, f32},
                                {rows, f32}});
  prepArgs.append(scratch.begin(), scratch.end());

  // Results in host memory (host-shared once the GPU mapping runs).
  auto allocLike = [&](Value result, int64_t width) -> Value {
    auto type = cast<RankedTensorType>(result.getType());
    return memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes(type, {batch, length, heads, e.idx(width)}));
  };
  Value dqBuf = allocLike(op.getDQuery(), DQK());
  Value dkBuf = allocLike(op.getDKey(), DQK());
  Value dvBuf = allocLike(op.getDValue(), DV());
  Value dgBuf = plan.hasGate ? allocLike(op.getDGate(), DV()) : Value();
  if (dgBuf)
    prepArgs.push_back(dgBuf);

  auto typesOf = [](ArrayRef<Value> values) {
    SmallVector<Type> types;
    for (Value v : values)
      types.push_back(v.getType());
    return types;
  };
  Value noShared = arith::ConstantIntOp::create(b, 0, 32).getResult();
  gpu::LaunchFuncOp::create(b, buildPrepKernel(typesOf(prepArgs)),
                            gpu::KernelDim3{numTiles, heads, batch},
                            gpu::KernelDim3{e.idx(kThreads), one, one},
                            noShared, prepArgs);

  SmallVector<Value> mainArgs(scratch);
  for (auto [role, results] :
       {std::pair<Role, SmallVector<Value>>{Role::KeyValue, {dkBuf, dvBuf}},
        {Role::Query, {dqBuf}}}) {
    SmallVector<Value> args(mainArgs);
    args.append(results);
    gpu::LaunchFuncOp::create(
        b, buildMainKernel(role, typesOf(args)),
        gpu::KernelDim3{e.mul(heads, batch), numTiles, one},
        gpu::KernelDim3{e.idx(kThreads), one, one},
        arith::ConstantIntOp::create(b, sharedBytes(role), 32).getResult(),
        args);
  }

  SmallVector<Value> results, buffers = {dqBuf, dkBuf, dvBuf, dgBuf};
  for (auto [buf, result] : llvm::zip(buffers, op.getResults()))
    results.push_back(bufferization::ToTensorOp::create(
        b, result.getType(), buf, /*restrict=*/true, /*writable=*/true));
  op->replaceAllUsesWith(results);
}

struct MoEGenerateAttentionGradKernelsPass
    : public moe::impl::MoEGenerateAttentionGradKernelsBase<
          MoEGenerateAttentionGradKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEGenerateAttentionGradKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<GradPlan> plans;
  module.walk([&](MLAAttentionGradOp op) {
    int64_t qkDim = tensorTypeOf(op.getQuery()).getDimSize(3);
    int64_t valueDim = tensorTypeOf(op.getValue()).getDimSize(3);
    auto isF32OrBF16 = [](Value v) {
      Type type = getElementTypeOrSelf(v.getType());
      return type.isF32() || type.isBF16();
    };
    std::string reason;
    if (ShapedType::isDynamic(qkDim) || qkDim % 16 != 0 || qkDim > kMaxWidth)
      reason = llvm::formatv("the query/key width {0} is not a static "
                             "multiple of 16 up to {1}",
                             qkDim, kMaxWidth);
    else if (ShapedType::isDynamic(valueDim) || valueDim % 16 != 0 ||
             valueDim > kMaxWidth)
      reason = llvm::formatv("the value width {0} is not a static multiple "
                             "of 16 up to {1}",
                             valueDim, kMaxWidth);
    else if (!llvm::all_of(op->getOperands(), isF32OrBF16))
      reason = "an operand is neither f32 nor bf16";
    if (!reason.empty()) {
      op.emitRemark() << "mla_attention_grad left to -moe-tile-attention: "
                      << reason;
      return;
    }
    GradPlan plan{op, qkDim, valueDim, op.getScaleOrDefault(),
                  static_cast<bool>(op.getGate())};
    AttentionGradGenerator sizes(plan, {}, "");
    op.emitRemark() << "mla_attention_grad GPU kernels: tile " << kTile
                    << ", d_qk " << qkDim << ", d_v " << valueDim
                    << ", prep (bf16 copies, D, lse) then dK dV per key tile ("
                    << sizes.sharedBytes(Role::KeyValue)
                    << " bytes of shared memory) and dQ per query tile ("
                    << sizes.sharedBytes(Role::Query)
                    << "), 4 warps of 16 rows, "
                    << (sizes.residentInRegisters()
                            ? "resident fragments in registers"
                            : "resident fragments re-read from shared memory")
                    << ", mma.sync m16n8k16 bf16 on ldmatrix fragments, "
                    << (plan.hasGate ? "sigmoid gate gradient" : "no gate");
    plans.push_back(plan);
  });
  if (plans.empty())
    return;

  gpu::GPUModuleOp gpuModule =
      createKernelModule(module, "moe_attention_grad_kernels");
  for (auto [n, plan] : llvm::enumerate(plans)) {
    AttentionGradGenerator(plan, gpuModule,
                           llvm::formatv("mla{0}_backward", n).str())
        .generate();
    plan.op.erase();
    ++numGenerated;
  }
}
