//===- GenerateRoutingKernels.cpp - GPU kernels for moe.route -------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-routing-kernels, the GPU back end's kernel
// generator for the routing half of an MoE FFN (ALGORITHMS.md sections
// 4.1-4.5): each eligible `moe.route`, with the `moe.dispatch` ops of its
// indices, becomes the algorithm of -moe-fuse-routing as hand-structured
// kernels:
//
//   route:    one block per tile of 64 tokens: the router GEMM on tensor
//             cores (bf16 operands staged by cp.async, fp32 accumulators),
//             sigmoid, biased top-k with ties to the lower expert, weights,
//             per-tile expert counts and each slot's position in its tile's
//             run of its expert (the tile half of a stable counting sort),
//             and r = cut - s expert-major (exact QB) or its histogram;
//   scan:     one block: the counts -> load, each tile's first row per
//             expert and expert_offsets;
//   quantile: one block per expert: exact QB by an MSD radix select of the
//             q-th and (q+1)-th smallest r (order-preserving integer keys),
//             or the histogram form's crossing bin;
//   bias:     one block: the centred next bias (or the sign-bias step);
//   scatter:  per dispatch, one warp per token: 16-byte copies of its row to
//             its k rows in expert order, and source_slot.
//
// No [N, E] tensor reaches memory except exact QB's r.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Sharding.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEROUTINGKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-generate-routing-kernels"

namespace {

/// Tokens per block of the routing kernel: four warps of 16 rows each.
constexpr int64_t kTokenTile = 64;
constexpr int64_t kRouteThreads = 128;
/// Padding (bf16 elements) of the staged rows: conflict-free ldmatrix.
constexpr int64_t kPad = 8;
/// cp.async pipeline depth of the router GEMM: two chunks in flight while
/// one is multiplied.
constexpr int64_t kStages = 3;
/// Columns of x and w_router staged per step of the fp32 router GEMM.
constexpr int64_t kF32Chunk = 32;
/// Threads of the scan kernel, of a quantile block, of a scatter block
/// (one warp per token).
constexpr int64_t kScanThreads = 1024;
constexpr int64_t kQuantileThreads = 256;
constexpr int64_t kScatterThreads = 256;
constexpr int64_t kScatterTokens = kScatterThreads / 32;
/// The largest expert count taken (shared tables: 64 tokens' scores and
/// positions fit in 227 KiB with an i16 position table up to 512 experts).
constexpr int64_t kMaxExperts = 512;
/// The largest expert count of the tensor-core router (its accumulators
/// and staged w_router rows) and of a pass of the fp32 router, whose
/// register tile holds 8 tokens x 8 experts per thread.
constexpr int64_t kMaxTileExperts = 128;
constexpr int64_t kMaxTopK = 32;

enum class Balance { Exact, Histogram, Sign };

/// What the generator knows about one route and its fused dispatches.
struct RoutePlan {
  RouteOp op;
  SmallVector<DispatchOp> dispatches;
  int64_t experts, topK, hidden;
  Balance balance;
  int64_t bins = 0;
  double rate = 0.0;
  /// bf16 input and router weights with d % 16 == 0: tensor cores.
  bool tensorCores;
};

/// DeviceEmitter plus the integer and float helpers of these kernels.
struct Emitter : DeviceEmitter {
  using DeviceEmitter::DeviceEmitter;

  Type i32() { return b.getI32Type(); }
  Type i64() { return b.getI64Type(); }
  Type f32t() { return b.getF32Type(); }
  Value i32c(int64_t v) { return arith::ConstantIntOp::create(b, i32(), v); }
  Value i64c(int64_t v) { return arith::ConstantIntOp::create(b, i64(), v); }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, i32(), index);
  }
  Value toI64(Value index) {
    return arith::IndexCastOp::create(b, i64(), index);
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  Value minU(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value maxU(Value x, Value y) { return arith::MaxUIOp::create(b, x, y); }
  Value ceilDiv(Value x, int64_t y) { return div(add(x, y - 1), y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, p, x, y);
  }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value orI(Value x, Value y) { return arith::OrIOp::create(b, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  Value constantBool(bool v) {
    return arith::ConstantIntOp::create(b, b.getI1Type(), v);
  }
  Value sitofp(Value v) { return arith::SIToFPOp::create(b, f32t(), v); }
  Value uitofp(Value v) { return arith::UIToFPOp::create(b, f32t(), v); }
  /// 1 / (1 + exp(-x)), as -moe-fuse-routing computes it.
  Value sigmoid(Value x) {
    Value one = f32(1.0);
    return fdiv(one, fadd(one, exp(arith::NegFOp::create(b, x))));
  }
  Value atomicAdd(Value v, Value mem, ValueRange indices) {
    return memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi, v, mem,
                                       indices);
  }
  /// `mem[0 .. threads)` (an i32 shared view; threads a multiple of 32) is
  /// replaced by its inclusive prefix sums: each warp scans its 32 values
  /// by shuffles, then adds the totals of the warps before it (`totals`:
  /// threads / 32 i32 of scratch). Ends with a barrier.
  void blockScan(Value mem, Value totals, Value tid) {
    Value laneId = rem(tid, 32), warpId = div(tid, 32);
    Value v = load(mem, tid);
    for (int64_t offset = 1; offset < 32; offset *= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, v, i32c(offset), i32c(32),
                                            gpu::ShuffleMode::UP);
      Value sum = arith::AddIOp::create(b, v, shuffle.getShuffleResult());
      v = select(ult(laneId, idx(offset)), v, sum);
    }
    ifThen(eq(laneId, idx(31)), [&] { store(v, totals, warpId); });
    barrier();
    Value before = forLoop(
        idx(0), warpId, 1, ValueRange{i32c(0)}, [&](Value w, ValueRange it) {
          return SmallVector<Value>{
              arith::AddIOp::create(b, it[0], load(totals, w))};
        })[0];
    store(arith::AddIOp::create(b, v, before).getResult(), mem, tid);
    barrier();
  }
};

/// Builds the kernels and launches of one plan.
class RoutingKernelGenerator {
public:
  RoutingKernelGenerator(RoutePlan &plan, gpu::GPUModuleOp module,
                         StringRef prefix)
      : plan(plan), module(module), prefix(prefix) {}

  void generate();

private:
  int64_t E() const { return plan.experts; }
  int64_t K() const { return plan.topK; }
  int64_t D() const { return plan.hidden; }
  /// Columns of the hidden dimension staged per step (tensor cores).
  int64_t kChunk() const {
    for (int64_t c : {128, 64, 32, 16})
      if (D() % c == 0)
        return c;
    return 16;
  }
  int64_t stagedLd() const { return kChunk() + kPad; }
  int64_t stageElements() const { return (kTokenTile + E()) * stagedLd(); }
  /// More experts than one router tile takes: the fp32 router runs in
  /// passes of kMaxTileExperts, its staging sits beside the score tables
  /// (not over them: a pass writes scores while the next one stages), and
  /// the position table is i16.
  bool wide() const { return E() > kMaxTileExperts; }
  /// Sixteen-expert groups of the fp32 router tile (experts per thread) in
  /// a pass.
  int64_t expertSlots() const {
    return (std::min(E(), kMaxTileExperts) + 15) / 16;
  }
  int64_t stagingBytes() const {
    if (plan.tensorCores)
      return kStages * stageElements() * 2;
    return (kTokenTile + 16 * expertSlots()) * (kF32Chunk + 1) * 4;
  }
  /// s [64][E + 1] f32 and the selection / position table [64][E] i32,
  /// over the staging buffers once the GEMM is done.
  int64_t scoreLd() const { return E() + 1; }
  int64_t tableElementBytes() const { return wide() ? 2 : 4; }
  int64_t tableBytes() const {
    return kTokenTile * scoreLd() * 4 + kTokenTile * E() * tableElementBytes();
  }
  /// The bias [E] f32 after the tables (and after the staging it overlays
  /// when not wide); a wide route's staging after the bias, 16-aligned.
  int64_t biasOffset() const {
    return wide() ? tableBytes() : std::max(stagingBytes(), tableBytes());
  }
  int64_t wideStagingOffset() const {
    return (biasOffset() + E() * 4 + 15) / 16 * 16;
  }
  int64_t routeSharedBytes() const {
    return wide() ? wideStagingOffset() + stagingBytes()
                  : biasOffset() + E() * 4;
  }

  /// A new kernel `<prefix><suffix>` of `threads` threads, and a builder at
  /// its start.
  std::pair<gpu::GPUFuncOp, ImplicitLocOpBuilder>
  startKernel(StringRef suffix, TypeRange types, int64_t threads) {
    Location loc = plan.op.getLoc();
    gpu::GPUFuncOp func =
        createKernel(module, loc, prefix + suffix.str(), types, threads);
    return {func,
            ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front())};
  }

  gpu::GPUFuncOp buildRouteKernel(TypeRange types);
  gpu::GPUFuncOp buildScanKernel(TypeRange types, int64_t numOffsets);
  gpu::GPUFuncOp buildQuantileKernel(TypeRange types);
  gpu::GPUFuncOp buildBiasKernel(TypeRange types);
  gpu::GPUFuncOp buildZeroKernel(TypeRange types);
  gpu::GPUFuncOp buildScatterKernel(TypeRange types, StringRef name,
                                    Type elementType, int64_t width);

  /// min(bias) - 1 and (max(bias) + 1 - low) / bins, from `biasMem[0..E)`.
  std::pair<Value, Value> histogramGeometry(Emitter &e, Value biasMem);

  RoutePlan &plan;
  gpu::GPUModuleOp module;
  std::string prefix;
};

/// The order-preserving unsigned key of an f32 (as i32 bits): flip every
/// bit of a negative float, only the sign bit of a positive one.
static Value orderKey(Emitter &e, Value value) {
  ImplicitLocOpBuilder &b = e.b;
  Value bits = arith::BitcastOp::create(b, e.i32(), value);
  Value negative = arith::ShRSIOp::create(b, bits, e.i32c(31));
  Value mask = e.orI(negative, e.i32c(std::numeric_limits<int32_t>::min()));
  return arith::XOrIOp::create(b, bits, mask);
}

/// The f32 of an order-preserving key.
static Value fromOrderKey(Emitter &e, Value key) {
  ImplicitLocOpBuilder &b = e.b;
  Value signBit = e.i32c(std::numeric_limits<int32_t>::min());
  Value positive = e.cmpi(arith::CmpIPredicate::slt, key, e.i32c(0));
  Value bits = e.select(positive, arith::XOrIOp::create(b, key, signBit),
                        arith::XOrIOp::create(b, key, e.i32c(-1)));
  return arith::BitcastOp::create(b, e.f32t(), bits);
}

std::pair<Value, Value>
RoutingKernelGenerator::histogramGeometry(Emitter &e, Value biasMem) {
  double inf = std::numeric_limits<double>::infinity();
  SmallVector<Value> range = e.forLoop(
      e.idx(0), e.idx(E()), 1, ValueRange{e.f32(inf), e.f32(-inf)},
      [&](Value j, ValueRange it) {
        Value v = e.load(biasMem, j);
        return SmallVector<Value>{arith::MinimumFOp::create(e.b, it[0], v),
                                  arith::MaximumFOp::create(e.b, it[1], v)};
      });
  Value low = e.fsub(range[0], e.f32(1.0));
  Value high = e.fadd(range[1], e.f32(1.0));
  Value width =
      e.fdiv(e.fsub(high, low), e.f32(static_cast<double>(plan.bins)));
  return {low, width};
}

/// Arguments: x [N, d], w_router [E, d], bias [E], weights [N, k] (out),
/// indices [N, k] (out), counts [T * E] i32 (out), slot positions [N k] i32
/// (out), then r [E * N] f32 (exact) or the histogram [E * bins] i32.
gpu::GPUFuncOp RoutingKernelGenerator::buildRouteKernel(TypeRange types) {
  auto [func, b] = startKernel("_route", types, kRouteThreads);
  Emitter e(b);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type(), i32 = b.getI32Type();
  auto args = func.getArguments();
  Value x = args[0], w = args[1], bias = args[2], weights = args[3],
        indices = args[4], counts = args[5], slotPos = args[6];
  Value stats = plan.balance == Balance::Sign ? Value() : args[7];
  Type indexType = cast<MemRefType>(indices.getType()).getElementType();

  auto [tid, warp] = e.threadAndWarp();
  Value tile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tokens = memref::DimOp::create(b, x, 0);
  Value t0 = e.mul(tile, kTokenTile);

  Value smem = e.dynamicSharedMemory();
  Value biasS = e.sharedView(smem, biasOffset(), E(), f32);
  Value scores = e.sharedView(smem, 0, kTokenTile * scoreLd(), f32);
  Type tableType = wide() ? b.getI16Type() : i32;
  Value table = e.sharedView(smem, kTokenTile * scoreLd() * 4, kTokenTile * E(),
                             tableType);
  // The position table's entries as i32.
  auto loadTable = [&](Value at) {
    Value v = e.load(table, at);
    return wide() ? arith::ExtUIOp::create(b, i32, v).getResult() : v;
  };
  auto storeTable = [&](Value v, Value at) {
    e.store(wide() ? arith::TruncIOp::create(b, tableType, v).getResult() : v,
            table, at);
  };
  e.forLoop(tid, e.idx(E()), kRouteThreads,
            [&](Value j) { e.store(e.load(bias, j), biasS, j); });

  // Router GEMM: s[t, j] = sigmoid(x[t0 + t] . w_router[j]).
  if (plan.tensorCores) {
    int64_t chunk = kChunk(), ld = stagedLd();
    int64_t numChunks = D() / chunk;
    Value staged = e.sharedView(smem, 0, kStages * stageElements(), bf16);
    Value lastRow = e.sub(tokens, e.idx(1));
    // Chunk c of the x tile (rows past N repeat row N - 1) and of w_router
    // into buffer `buffer`, in 16-byte cp.async pieces.
    auto stage = [&](Value c, Value buffer) {
      Value base = e.mul(buffer, stageElements());
      Value col0 = e.mul(c, chunk);
      int64_t perRow = chunk / 8;
      int64_t pieces = (kTokenTile + E()) * perRow;
      for (int64_t it = 0; it * kRouteThreads < pieces; ++it) {
        auto copy = [&] {
          Value piece = e.add(tid, it * kRouteThreads);
          Value row = e.div(piece, perRow);
          Value col = e.mul(e.rem(piece, perRow), 8);
          Value to = e.add(base, e.add(e.mul(row, ld), col));
          bool isX = (it + 1) * kRouteThreads <= kTokenTile * perRow;
          bool isW = it * kRouteThreads >= kTokenTile * perRow;
          auto fromX = [&] {
            Value srcRow = e.minU(e.add(t0, row), lastRow);
            nvgpu::DeviceAsyncCopyOp::create(
                b, staged, ValueRange{to}, x,
                ValueRange{srcRow, e.add(col0, col)}, b.getIndexAttr(8),
                Value(), /*bypassL1=*/b.getUnitAttr());
          };
          auto fromW = [&] {
            Value expert = e.sub(row, e.idx(kTokenTile));
            nvgpu::DeviceAsyncCopyOp::create(
                b, staged, ValueRange{to}, w,
                ValueRange{expert, e.add(col0, col)}, b.getIndexAttr(8),
                Value(), /*bypassL1=*/b.getUnitAttr());
          };
          if (isX)
            fromX();
          else if (isW)
            fromW();
          else {
            Value inX = e.ult(row, e.idx(kTokenTile));
            e.ifThen(inX, fromX);
            e.ifThen(e.ule(e.idx(kTokenTile), row), fromW);
          }
        };
        if ((it + 1) * kRouteThreads <= pieces)
          copy();
        else
          e.ifThen(e.ult(e.add(tid, it * kRouteThreads), e.idx(pieces)), copy);
      }
    };

    int64_t nTiles = E() / 8;
    Value row0 = e.mul(warp, 16);
    Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    auto commit = [&] {
      return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange())
          .getResult();
    };
    // Prologue: chunks 0 .. kStages - 2, one group each (empty past the
    // end, so that every step waits for the same number of groups). The
    // wait op's token is only an SSA dependency: cp.async.wait_group counts
    // the thread's groups.
    Value group;
    for (int64_t c = 0; c + 1 < kStages; ++c) {
      if (c < numChunks)
        stage(e.idx(c), e.idx(c));
      group = commit();
    }
    SmallVector<Value> init(nTiles * 4, e.f32(0.0));
    SmallVector<Value> acc = e.forLoop(
        e.idx(0), e.idx(numChunks), 1, init, [&](Value c, ValueRange it) {
          // Wait for chunk c; after the barrier every warp is also done
          // with chunk c - 1, whose buffer receives chunk c + kStages - 1.
          nvgpu::DeviceAsyncWaitOp::create(b, group,
                                           b.getI32IntegerAttr(kStages - 2));
          e.barrier();
          Value ahead = e.add(c, kStages - 1);
          e.ifThen(e.ult(ahead, e.idx(numChunks)),
                   [&] { stage(ahead, e.rem(ahead, kStages)); });
          commit();
          Value base = e.mul(e.rem(c, kStages), stageElements());
          Value wBase = e.add(base, kTokenTile * ld);
          SmallVector<Frag4> frags;
          for (int64_t j = 0; j < nTiles; ++j)
            frags.push_back(
                {it[4 * j], it[4 * j + 1], it[4 * j + 2], it[4 * j + 3]});
          for (int64_t ks = 0; ks < chunk / 16; ++ks) {
            Frag4 a = e.ldmatrixA(staged, base, row0, e.idx(16 * ks), ld);
            for (int64_t j = 0; j + 1 < nTiles; j += 2) {
              auto pair = e.ldmatrixB(staged, wBase, e.idx(16 * ks),
                                      e.idx(8 * j), ld, /*kMajor=*/false);
              frags[j] = e.mma(a, pair[0], frags[j]);
              frags[j + 1] = e.mma(a, pair[1], frags[j + 1]);
            }
            if (nTiles % 2) {
              auto single = e.fragB(staged, wBase, e.idx(8 * (nTiles - 1)),
                                    e.idx(16 * ks), ld);
              frags[nTiles - 1] = e.mma(a, single, frags[nTiles - 1]);
            }
          }
          SmallVector<Value> next4;
          for (const Frag4 &f : frags)
            next4.append(f.begin(), f.end());
          return next4;
        });
    // Every copy has landed (the last groups are empty); after the barrier
    // no warp reads the staging buffers, which become the score tables.
    nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(0));
    e.barrier();
    for (int64_t j = 0; j < nTiles; ++j)
      e.forEachAcc(row0, e.idx(8 * j), [&](int64_t n4, Value row, Value col) {
        e.store(e.sigmoid(acc[4 * j + n4]), scores,
                e.add(e.mul(row, scoreLd()), col));
      });
  } else {
    // fp32 CUDA cores, register-tiled: thread (tr, tc) = (tid / 16, tid %
    // 16) accumulates tokens tr + 8 i (i < 8) against experts tc + 16 j
    // (j < expertSlots()), over chunks of kF32Chunk columns of x and
    // w_router staged in shared memory (rows padded by one float: the
    // sixteen expert rows a warp reads fall in different banks).
    int64_t ld = kF32Chunk + 1, maxSlots = expertSlots();
    int64_t numChunks = (D() + kF32Chunk - 1) / kF32Chunk;
    bool ragged = D() % kF32Chunk != 0;
    int64_t staging = wide() ? wideStagingOffset() : 0;
    Value xs = e.sharedView(smem, staging, kTokenTile * ld, f32);
    Value ws = e.sharedView(smem, staging + kTokenTile * ld * 4,
                            16 * maxSlots * ld, f32);
    Value lastRow = e.sub(tokens, e.idx(1));
    Value tr = e.div(tid, 16), tc = e.rem(tid, 16);
    auto asF32 = [&](Value v) {
      return v.getType() == f32 ? v : arith::ExtFOp::create(b, f32, v);
    };
    // Rows [0, rows) of `src` (row r read from rowOf(r)), columns
    // [col0, col0 + kF32Chunk), into `to`: consecutive threads read
    // consecutive columns.
    auto stage = [&](Value src, Value to, int64_t rows, Value col0,
                     function_ref<Value(Value)> rowOf) {
      for (int64_t it = 0; it * kRouteThreads < rows * kF32Chunk; ++it) {
        Value piece = e.add(tid, it * kRouteThreads);
        Value row = e.div(piece, kF32Chunk), col = e.rem(piece, kF32Chunk);
        Value column = e.add(col0, col);
        Value v;
        if (ragged) {
          Value inside = e.ult(column, e.idx(D()));
          Value safe = e.select(inside, column, e.idx(0));
          v = e.select(inside, asF32(e.load(src, {rowOf(row), safe})),
                       e.f32(0.0));
        } else {
          v = asF32(e.load(src, {rowOf(row), column}));
        }
        e.store(v, to, e.add(e.mul(row, ld), col));
      }
    };
    // One pass per kMaxTileExperts experts (one pass unless wide).
    for (int64_t e0 = 0; e0 < E(); e0 += kMaxTileExperts) {
      int64_t passExperts = std::min(kMaxTileExperts, E() - e0);
      int64_t slots = (passExperts + 15) / 16;
      SmallVector<Value> init(8 * slots, e.f32(0.0));
      SmallVector<Value> acc = e.forLoop(
          e.idx(0), e.idx(numChunks), 1, init, [&](Value c, ValueRange it) {
            Value col0 = e.mul(c, kF32Chunk);
            // Every thread is done with the previous chunk.
            e.barrier();
            stage(x, xs, kTokenTile, col0,
                  [&](Value r) { return e.minU(e.add(t0, r), lastRow); });
            // Expert rows past E repeat row E - 1; their sums are dropped.
            stage(w, ws, 16 * slots, col0, [&](Value r) {
              return e.minU(e.add(r, e0), e.idx(E() - 1));
            });
            e.barrier();
            SmallVector<Value> next(it);
            for (int64_t k = 0; k < kF32Chunk; ++k) {
              SmallVector<Value> xv, wv;
              for (int64_t i = 0; i < 8; ++i)
                xv.push_back(e.load(xs, e.add(e.mul(e.add(tr, 8 * i), ld), k)));
              for (int64_t j = 0; j < slots; ++j)
                wv.push_back(
                    e.load(ws, e.add(e.mul(e.add(tc, 16 * j), ld), k)));
              for (int64_t i = 0; i < 8; ++i)
                for (int64_t j = 0; j < slots; ++j)
                  next[i * slots + j] =
                      math::FmaOp::create(b, xv[i], wv[j], next[i * slots + j]);
            }
            return next;
          });
      // Unless wide, the score table overlays the staging buffers.
      if (!wide())
        e.barrier();
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t j = 0; j < slots; ++j) {
          Value expert = e.add(tc, e0 + 16 * j);
          auto write = [&] {
            e.store(e.sigmoid(acc[i * slots + j]), scores,
                    e.add(e.mul(e.add(tr, 8 * i), scoreLd()), expert));
          };
          if (e0 + 16 * (j + 1) <= E())
            write();
          else
            e.ifThen(e.ult(expert, e.idx(E())), write);
        }
    }
  }
  e.forLoop(tid, e.idx(kTokenTile * E()), kRouteThreads,
            [&](Value i) { storeTable(e.i32c(0), i); });
  e.barrier();

  // Every thread ranks the experts of token tid % 64 (threads 64..127
  // repeat the work of 0..63 and write nothing): a list of the k + 1
  // largest z kept in decreasing order, where an equal z never displaces
  // an earlier (lower) expert and a NaN counts as -inf.
  Value t = e.rem(tid, kTokenTile);
  Value n = e.add(t0, t);
  Value writer = e.andI(e.ult(tid, e.idx(kTokenTile)), e.ult(n, tokens));
  double inf = std::numeric_limits<double>::infinity();
  SmallVector<Value> listInit;
  for (int64_t p = 0; p <= K(); ++p)
    listInit.push_back(e.f32(-inf));
  for (int64_t p = 0; p <= K(); ++p)
    listInit.push_back(e.i32c(E()));
  SmallVector<Value> list =
      e.forLoop(e.idx(0), e.idx(E()), 1, listInit, [&](Value j, ValueRange it) {
        Value s = e.load(scores, e.add(e.mul(t, scoreLd()), j));
        Value z = e.fadd(s, e.load(biasS, j));
        z = e.select(e.cmpf(arith::CmpFPredicate::UNO, z, z), e.f32(-inf), z);
        Value j32 = e.toI32(j);
        SmallVector<Value> vals(it.take_front(K() + 1)),
            ids(it.drop_front(K() + 1));
        SmallVector<Value> beats;
        for (int64_t p = 0; p <= K(); ++p)
          beats.push_back(
              e.orI(e.cmpf(arith::CmpFPredicate::OGT, z, vals[p]),
                    e.cmpi(arith::CmpIPredicate::eq, ids[p], e.i32c(E()))));
        SmallVector<Value> nextVals, nextIds;
        for (int64_t p = 0; p <= K(); ++p) {
          Value v = z, id = j32;
          if (p > 0) {
            v = e.select(beats[p - 1], vals[p - 1], z);
            id = e.select(beats[p - 1], ids[p - 1], j32);
          }
          nextVals.push_back(e.select(beats[p], v, vals[p]));
          nextIds.push_back(e.select(beats[p], id, ids[p]));
        }
        nextVals.append(nextIds);
        return nextVals;
      });
  SmallVector<Value> ids;
  for (int64_t p = 0; p < K(); ++p)
    ids.push_back(e.toIndex(list[K() + 1 + p]));
  Value cut = list[K()];

  // Weights from the unbiased scores, in slot order.
  SmallVector<Value> selected;
  Value sum = e.f32(0.0);
  for (int64_t i = 0; i < K(); ++i) {
    selected.push_back(e.load(scores, e.add(e.mul(t, scoreLd()), ids[i])));
    sum = e.fadd(sum, selected.back());
  }
  Value denominator = e.fadd(sum, e.f32(1e-20));
  e.ifThen(writer, [&] {
    for (int64_t i = 0; i < K(); ++i) {
      Value weight = e.fmul(e.fdiv(selected[i], denominator),
                            e.f32(plan.op.getRouting().getScalingValue()));
      e.store(weight, weights, {n, e.idx(i)});
      Value id = list[K() + 1 + i];
      if (indexType.getIntOrFloatBitWidth() > 32)
        id = arith::ExtSIOp::create(b, indexType, id);
      else if (indexType.getIntOrFloatBitWidth() < 32)
        id = arith::TruncIOp::create(b, indexType, id);
      e.store(id, indices, {n, e.idx(i)});
      storeTable(e.i32c(1), e.add(e.mul(t, E()), ids[i]));
    }
  });
  e.barrier();

  // Per expert: the tile's count, and each selecting token's position in
  // the tile's run of the expert (tokens in order: a stable sort).
  e.forLoop(tid, e.idx(E()), kRouteThreads, [&](Value j) {
    Value count =
        e.forLoop(e.idx(0), e.idx(kTokenTile), 1, ValueRange{e.i32c(0)},
                  [&](Value tt, ValueRange it) {
                    Value at = e.add(e.mul(tt, E()), j);
                    Value hit = loadTable(at);
                    storeTable(it[0], at);
                    return SmallVector<Value>{
                        arith::AddIOp::create(b, it[0], hit).getResult()};
                  })[0];
    e.store(count, counts, e.add(e.mul(tile, E()), j));
  });
  e.barrier();
  e.ifThen(writer, [&] {
    for (int64_t i = 0; i < K(); ++i)
      e.store(loadTable(e.add(e.mul(t, E()), ids[i])), slotPos,
              e.add(e.mul(n, K()), i));
  });

  // The QB statistics of r = cut - s: thread tid covers token tid % 64 and
  // the experts of its parity, so that a warp writes 32 consecutive tokens.
  if (plan.balance != Balance::Sign) {
    Value real = e.ult(n, tokens);
    Value parity = e.div(tid, kTokenTile);
    Value low, width;
    if (plan.balance == Balance::Histogram)
      std::tie(low, width) = histogramGeometry(e, biasS);
    e.forLoop(e.idx(0), e.idx(E()), 2, [&](Value j0) {
      Value j = e.add(j0, parity);
      e.ifThen(e.andI(real, e.ult(j, e.idx(E()))), [&] {
        Value r = e.fsub(cut, e.load(scores, e.add(e.mul(t, scoreLd()), j)));
        if (plan.balance == Balance::Exact) {
          e.store(r, stats, e.add(e.mul(j, tokens), n));
          return;
        }
        Value position =
            math::FloorOp::create(b, e.fdiv(e.fsub(r, low), width));
        // One statement per op: the IR must not depend on the host
        // compiler's order of argument evaluation.
        Value last = e.f32(static_cast<double>(plan.bins - 1));
        Value zero = e.f32(0.0);
        Value floored = arith::MaxNumFOp::create(b, position, zero);
        position = arith::MinNumFOp::create(b, floored, last);
        Value bin = e.toIndex(arith::FPToSIOp::create(b, e.i64(), position));
        e.atomicAdd(e.i32c(1), stats, e.add(e.mul(j, plan.bins), bin));
      });
    });
  }
  gpu::ReturnOp::create(b);
  return func;
}

/// Arguments: x [N, d] (for N), counts [T * E] i32, load [E] i64 (out),
/// tile starts [T * E] i32 (out), then each fused dispatch's
/// expert_offsets [E + 1] i64 (out).
gpu::GPUFuncOp RoutingKernelGenerator::buildScanKernel(TypeRange types,
                                                       int64_t numOffsets) {
  auto [func, b] = startKernel("_scan", types, kScanThreads);
  Emitter e(b);
  Type i32 = b.getI32Type();
  auto args = func.getArguments();
  Value x = args[0], counts = args[1], load = args[2], tileStart = args[3];
  SmallVector<Value> offsets(args.drop_front(4));
  (void)numOffsets;

  // P threads per expert, each over a run of consecutive tiles.
  int64_t per = kScanThreads / E();
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value tokens = memref::DimOp::create(b, x, 0);
  Value numTiles = e.ceilDiv(tokens, kTokenTile);
  Value j = e.div(tid, per), p = e.rem(tid, per);
  Value active = e.ult(j, e.idx(E()));
  Value run = e.ceilDiv(numTiles, per);
  Value lo = e.minU(e.mul(p, run), numTiles);
  Value hi = e.minU(e.add(lo, run), numTiles);

  Value smem = e.dynamicSharedMemory();
  Value partial = e.sharedView(smem, 0, kScanThreads, i32);
  Value loads = e.sharedView(smem, kScanThreads * 4, E(), i32);

  // Sixteen loads in flight per step; `use(tile, count, valid)` in order.
  constexpr int64_t kUnroll = 16;
  auto overRun =
      [&](ValueRange init,
          function_ref<SmallVector<Value>(Value, Value, Value, ValueRange)>
              use) {
        return e.forLoop(lo, hi, kUnroll, init, [&](Value base, ValueRange it) {
          SmallVector<Value> tilesAt, valid, values;
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value tl = e.add(base, u);
            valid.push_back(e.ult(tl, hi));
            tilesAt.push_back(e.select(valid.back(), tl, base));
            values.push_back(
                e.load(counts, e.add(e.mul(tilesAt.back(), E()), j)));
          }
          SmallVector<Value> state(it);
          for (int64_t u = 0; u < kUnroll; ++u)
            state = use(tilesAt[u], values[u], valid[u], state);
          return state;
        });
      };

  e.ifThen(active, [&] {
    Value total =
        overRun(ValueRange{e.i32c(0)},
                [&](Value, Value count, Value valid, ValueRange it) {
                  Value add = arith::AddIOp::create(b, it[0], count);
                  return SmallVector<Value>{e.select(valid, add, it[0])};
                })[0];
    e.store(total, partial, tid);
  });
  e.barrier();
  e.ifThen(e.andI(active, e.eq(p, e.idx(0))), [&] {
    Value total =
        e.forLoop(e.idx(0), e.idx(per), 1, ValueRange{e.i32c(0)},
                  [&](Value q, ValueRange it) {
                    return SmallVector<Value>{arith::AddIOp::create(
                        b, it[0], e.load(partial, e.add(e.mul(j, per), q)))};
                  })[0];
    e.store(total, loads, j);
    e.store(arith::ExtSIOp::create(b, e.i64(), total), load, j);
  });
  e.barrier();
  e.ifThen(active, [&] {
    auto sumOf = [&](Value mem, Value from, Value to) {
      return e.forLoop(from, to, 1, ValueRange{e.i32c(0)},
                       [&](Value q, ValueRange it) {
                         return SmallVector<Value>{
                             arith::AddIOp::create(b, it[0], e.load(mem, q))};
                       })[0];
    };
    Value first = sumOf(loads, e.idx(0), j);
    Value start = arith::AddIOp::create(
        b, first, sumOf(partial, e.mul(j, per), e.add(e.mul(j, per), p)));
    e.ifThen(e.eq(p, e.idx(0)), [&] {
      Value first64 = arith::ExtSIOp::create(b, e.i64(), first);
      for (Value off : offsets)
        e.store(first64, off, j);
      e.ifThen(e.eq(j, e.idx(E() - 1)), [&] {
        Value end = arith::ExtSIOp::create(
            b, e.i64(),
            arith::AddIOp::create(b, first, e.load(loads, j)).getResult());
        for (Value off : offsets)
          e.store(end, off, e.idx(E()));
      });
    });
    overRun(ValueRange{start},
            [&](Value tl, Value count, Value valid, ValueRange it) {
              e.ifThen(valid, [&] {
                e.store(it[0], tileStart, e.add(e.mul(tl, E()), j));
              });
              Value add = arith::AddIOp::create(b, it[0], count);
              return SmallVector<Value>{e.select(valid, add, it[0])};
            });
  });
  gpu::ReturnOp::create(b);
  return func;
}

/// One block per expert. Exact: x (for N), r [E * N] f32, quantiles [E]
/// (out). Histogram: x, the histogram [E * bins] i32, bias [E], quantiles.
gpu::GPUFuncOp RoutingKernelGenerator::buildQuantileKernel(TypeRange types) {
  auto [func, b] = startKernel("_quantile", types, kQuantileThreads);
  Emitter e(b);
  Type i32 = b.getI32Type();
  auto args = func.getArguments();
  Value x = args[0], data = args[1];
  Value quantiles = args.back();
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value expert = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tokens = memref::DimOp::create(b, x, 0);
  Value smem = e.dynamicSharedMemory();
  Value hist = e.sharedView(smem, 0, kQuantileThreads, i32);
  Value histHigh =
      e.sharedView(smem, kQuantileThreads * 4, kQuantileThreads, i32);
  Value found = e.sharedView(smem, 2 * kQuantileThreads * 4, 4, i32);
  Value totals = e.sharedView(smem, (2 * kQuantileThreads + 4) * 4,
                              kQuantileThreads / 32, i32);
  int64_t T = kQuantileThreads;

  e.ifThen(e.ult(e.idx(0), tokens), [&] {
    if (plan.balance == Balance::Exact) {
      // q = round(N k / E), halves up; ranks max(q, 1) and min(q + 1, N).
      Value q = e.div(e.add(e.mul(tokens, 2 * K()), e.idx(E())), 2 * E());
      Value lowRank = e.maxU(q, e.idx(1));
      Value highRank = e.minU(e.add(q, 1), tokens);
      Value row = e.mul(expert, tokens);
      // The rank-th smallest (1-based) r of this expert: four passes of 8
      // bits, most significant first; each histograms the keys that share
      // the digits found so far and keeps the digit whose bucket holds the
      // rank.
      // The lowRank-th and highRank-th smallest (1-based) r of this expert,
      // together: four passes of 8 bits, most significant first; each
      // histograms the keys that share the digits found so far and keeps
      // the digit whose bucket holds the rank. While both ranks have the
      // same prefix (adjacent ranks usually do until the last pass), one
      // histogram serves both.
      Value prefix[2] = {e.i32c(0), e.i32c(0)};
      Value remaining[2] = {e.toI32(lowRank), e.toI32(highRank)};
      Value hists[2] = {hist, histHigh};
      for (int64_t pass = 0; pass < 4; ++pass) {
        int64_t shift = 24 - 8 * pass;
        Value shared = e.cmpi(arith::CmpIPredicate::eq, prefix[0], prefix[1]);
        e.store(e.i32c(0), hist, tid);
        e.store(e.i32c(0), histHigh, tid);
        e.barrier();
        constexpr int64_t kUnroll = 16;
        e.forLoop(e.idx(0), tokens, T * kUnroll, [&](Value base) {
          SmallVector<Value> keys, valid;
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value at = e.add(base, e.add(tid, u * T));
            valid.push_back(e.ult(at, tokens));
            at = e.select(valid.back(), at, e.idx(0));
            keys.push_back(orderKey(e, e.load(data, e.add(row, at))));
          }
          for (int64_t u = 0; u < kUnroll; ++u) {
            Value digit = e.toIndex(
                e.andI(arith::ShRUIOp::create(b, keys[u], e.i32c(shift)),
                       e.i32c(255)));
            for (int64_t s = 0; s < 2; ++s) {
              Value take = valid[u];
              if (s == 1)
                take = e.andI(take, arith::XOrIOp::create(
                                        b, shared, e.constantBool(true)));
              if (pass > 0) {
                Value high = e.i32c(shift + 8);
                take = e.andI(
                    take, e.cmpi(arith::CmpIPredicate::eq,
                                 arith::ShRUIOp::create(b, keys[u], high),
                                 arith::ShRUIOp::create(b, prefix[s], high)));
              }
              // Plain shared atomics: match.any aggregation of equal
              // digits measured slower on the H200 (0.060 vs 0.040 ms).
              e.ifThen(take, [&] { e.atomicAdd(e.i32c(1), hists[s], digit); });
            }
          }
        });
        e.barrier();
        e.blockScan(hist, totals, tid);
        e.blockScan(histHigh, totals, tid);
        for (int64_t s = 0; s < 2; ++s) {
          Value from = s == 0 ? hist : histHigh;
          Value previous =
              e.select(e.eq(tid, e.idx(0)), tid, e.sub(tid, e.idx(1)));
          Value inclusive = e.load(from, tid);
          Value exclusive =
              e.select(e.eq(tid, e.idx(0)), e.i32c(0), e.load(from, previous));
          if (s == 1) {
            Value lowInclusive = e.load(hist, tid);
            Value lowExclusive = e.select(e.eq(tid, e.idx(0)), e.i32c(0),
                                          e.load(hist, previous));
            inclusive = e.select(shared, lowInclusive, inclusive);
            exclusive = e.select(shared, lowExclusive, exclusive);
          }
          Value hit = e.andI(
              e.cmpi(arith::CmpIPredicate::slt, exclusive, remaining[s]),
              e.cmpi(arith::CmpIPredicate::sle, remaining[s], inclusive));
          e.ifThen(hit, [&] {
            e.store(e.toI32(tid), found, e.idx(2 * s));
            e.store(exclusive, found, e.idx(2 * s + 1));
          });
        }
        e.barrier();
        for (int64_t s = 0; s < 2; ++s) {
          Value digit = e.load(found, e.idx(2 * s));
          prefix[s] =
              e.orI(prefix[s], arith::ShLIOp::create(b, digit, e.i32c(shift)));
          remaining[s] = arith::SubIOp::create(b, remaining[s],
                                               e.load(found, e.idx(2 * s + 1)));
        }
        e.barrier();
      }
      Value low = fromOrderKey(e, prefix[0]);
      Value high = fromOrderKey(e, prefix[1]);
      e.ifThen(e.eq(tid, e.idx(0)), [&] {
        e.store(e.fmul(e.fadd(low, high), e.f32(0.5)), quantiles, expert);
      });
      return;
    }

    // Histogram: the first bin whose running count reaches N k / E (the
    // last bin at the latest), interpolated linearly inside it.
    Value bias = args[2];
    Value target = e.fdiv(
        e.fmul(e.uitofp(e.toI64(tokens)), e.f32(static_cast<double>(K()))),
        e.f32(static_cast<double>(E())));
    Value running = e.i32c(0);
    for (int64_t c = 0; c * T < plan.bins; ++c) {
      Value m = e.add(tid, c * T);
      Value inRange = e.ult(m, e.idx(plan.bins));
      Value at =
          e.add(e.mul(expert, plan.bins), e.select(inRange, m, e.idx(0)));
      Value count = e.select(inRange, e.load(data, at), e.i32c(0));
      e.store(count, hist, tid);
      e.barrier();
      e.blockScan(hist, totals, tid);
      Value inclusive =
          arith::AddIOp::create(b, running, e.load(hist, tid)).getResult();
      Value exclusive = arith::SubIOp::create(b, inclusive, count);
      Value reached =
          e.orI(e.cmpf(arith::CmpFPredicate::OGE, e.sitofp(inclusive), target),
                e.eq(m, e.idx(plan.bins - 1)));
      Value hit = e.andI(inRange, e.andI(e.cmpf(arith::CmpFPredicate::OLT,
                                                e.sitofp(exclusive), target),
                                         reached));
      e.ifThen(hit, [&] {
        e.store(e.toI32(m), found, e.idx(0));
        e.store(exclusive, found, e.idx(1));
        e.store(count, found, e.idx(2));
      });
      running = arith::AddIOp::create(b, running, e.load(hist, e.idx(T - 1)));
      e.barrier();
    }
    e.ifThen(e.eq(tid, e.idx(0)), [&] {
      auto [low, width] = histogramGeometry(e, bias);
      Value bin = e.sitofp(e.load(found, e.idx(0)));
      Value below = e.sitofp(e.load(found, e.idx(1)));
      Value count = e.sitofp(e.load(found, e.idx(2)));
      Value position = e.fadd(bin, e.fdiv(e.fsub(target, below), count));
      e.store(e.fadd(low, e.fmul(position, width)), quantiles, expert);
    });
  });
  gpu::ReturnOp::create(b);
  return func;
}

/// Arguments: x (for N), bias [E], then quantiles [E] f32 (QB) or load [E]
/// i64 (sign bias), next_bias [E] (out).
gpu::GPUFuncOp RoutingKernelGenerator::buildBiasKernel(TypeRange types) {
  auto [func, b] = startKernel("_bias", types, (E() + 31) / 32 * 32);
  Emitter e(b);
  Type f32 = b.getF32Type();
  auto args = func.getArguments();
  Value x = args[0], bias = args[1], stats = args[2], next = args[3];
  Value j = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value tokens = memref::DimOp::create(b, x, 0);
  Value active = e.ult(j, e.idx(E()));
  Value tokensF32 = e.uitofp(e.toI64(tokens));

  if (plan.balance == Balance::Sign) {
    Value target = e.fdiv(e.fmul(tokensF32, e.f32(static_cast<double>(K()))),
                          e.f32(static_cast<double>(E())));
    e.ifThen(active, [&] {
      Value gap = e.fsub(target, e.sitofp(e.load(stats, j)));
      Value sign = e.select(
          e.cmpf(arith::CmpFPredicate::OGT, gap, e.f32(0.0)), e.f32(1.0),
          e.select(e.cmpf(arith::CmpFPredicate::OLT, gap, e.f32(0.0)),
                   e.f32(-1.0), e.f32(0.0)));
      e.store(e.fadd(e.load(bias, j), e.fmul(sign, e.f32(plan.rate))), next, j);
    });
    gpu::ReturnOp::create(b);
    return func;
  }

  // Centre; an empty batch keeps the centred current bias.
  Value smem = e.dynamicSharedMemory();
  Value values = e.sharedView(smem, 0, E() + 1, f32);
  Value empty = e.eq(tokens, e.idx(0));
  e.ifThen(active, [&] {
    Value v = e.select(empty, e.load(bias, j),
                       e.load(stats, e.select(empty, e.idx(0), j)));
    e.store(v, values, j);
  });
  e.barrier();
  e.ifThen(e.eq(j, e.idx(0)), [&] {
    Value sum =
        e.forLoop(e.idx(0), e.idx(E()), 1, ValueRange{e.f32(0.0)},
                  [&](Value i, ValueRange it) {
                    return SmallVector<Value>{e.fadd(it[0], e.load(values, i))};
                  })[0];
    e.store(e.fdiv(sum, e.f32(static_cast<double>(E()))), values, e.idx(E()));
  });
  e.barrier();
  e.ifThen(active, [&] {
    e.store(e.fsub(e.load(values, j), e.load(values, e.idx(E()))), next, j);
  });
  gpu::ReturnOp::create(b);
  return func;
}

/// Zeroes the histogram [E * bins] i32.
gpu::GPUFuncOp RoutingKernelGenerator::buildZeroKernel(TypeRange types) {
  auto [func, b] = startKernel("_zero", types, kQuantileThreads);
  Emitter e(b);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value i = e.add(e.mul(block, kQuantileThreads), tid);
  e.ifThen(e.ult(i, e.idx(E() * plan.bins)),
           [&] { e.store(e.i32c(0), func.getArgument(0), i); });
  gpu::ReturnOp::create(b);
  return func;
}

/// Arguments: input [N, w], indices [N, k], slot positions [N k] i32, tile
/// starts [T * E] i32, permuted [N k, w] (out), source_slot [N k] i64 (out).
/// One warp per token; `vector` elements per copy.
gpu::GPUFuncOp RoutingKernelGenerator::buildScatterKernel(TypeRange types,
                                                          StringRef name,
                                                          Type elementType,
                                                          int64_t width) {
  auto [func, b] = startKernel(name, types, kScatterThreads);
  Emitter e(b);
  auto args = func.getArguments();
  Value input = args[0], indices = args[1], slotPos = args[2],
        tileStart = args[3], permuted = args[4], sourceSlot = args[5];
  auto [tid, warp] = e.threadAndWarp();
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value n = e.add(e.mul(block, kScatterTokens), warp);
  Value tokens = memref::DimOp::create(b, input, 0);

  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  int64_t vectorBytes = 16;
  while (vectorBytes > elementBytes && (width * elementBytes) % vectorBytes)
    vectorBytes /= 2;
  int64_t lanesElems = vectorBytes / elementBytes;
  int64_t vectors = width / lanesElems;
  int64_t perLane = (vectors + 31) / 32;
  int64_t unroll = std::min<int64_t>(perLane, 8);
  auto vectorType = VectorType::get({lanesElems}, elementType);

  e.ifThen(e.ult(n, tokens), [&] {
    Value tileRow = e.mul(e.div(n, kTokenTile), E());
    SmallVector<Value> rows;
    for (int64_t i = 0; i < K(); ++i) {
      Value expert = e.load(indices, {n, e.idx(i)});
      expert = arith::IndexCastOp::create(b, b.getIndexType(), expert);
      Value slot = e.add(e.mul(n, K()), i);
      Value start = e.load(tileStart, e.add(tileRow, expert));
      Value row = arith::AddIOp::create(b, start, e.load(slotPos, slot));
      rows.push_back(e.toIndex(row));
      e.ifThen(e.eq(e.lane, e.idx(0)),
               [&] { e.store(e.toI64(slot), sourceSlot, rows.back()); });
    }
    e.forLoop(
        e.idx(0), e.idx((perLane + unroll - 1) / unroll), 1, [&](Value group) {
          SmallVector<Value> cols, valid, data;
          for (int64_t u = 0; u < unroll; ++u) {
            Value v = e.add(e.lane, e.mul(e.add(e.mul(group, unroll), u), 32));
            valid.push_back(e.ult(v, e.idx(vectors)));
            v = e.select(valid.back(), v, e.idx(0));
            cols.push_back(e.mul(v, lanesElems));
            data.push_back(vector::LoadOp::create(
                b, vectorType, input, ValueRange{n, cols.back()},
                /*nontemporal=*/false, llvm::MaybeAlign(vectorBytes)));
          }
          for (int64_t u = 0; u < unroll; ++u) {
            auto storeAll = [&] {
              for (Value row : rows)
                vector::StoreOp::create(
                    b, data[u], permuted, ValueRange{row, cols[u]},
                    /*nontemporal=*/false, llvm::MaybeAlign(vectorBytes));
            };
            if (vectors % (32 * unroll) == 0)
              storeAll();
            else
              e.ifThen(valid[u], storeAll);
          }
        });
  });
  gpu::ReturnOp::create(b);
  return func;
}

void RoutingKernelGenerator::generate() {
  RouteOp op = plan.op;
  ImplicitLocOpBuilder b(op.getLoc(), op);
  Emitter e(b);
  Type f32 = b.getF32Type(), i32 = b.getI32Type();

  Value x = readOnlyBuffer(b, op.getInput());
  Value w = readOnlyBuffer(b, op.getWRouter());
  Value bias = readOnlyBuffer(b, op.getBias());
  Value tokens = memref::DimOp::create(b, x, 0);
  Value numTiles = e.ceilDiv(tokens, kTokenTile);
  Value tileCounts = e.mul(numTiles, E());
  Value slots = e.mul(tokens, K());
  auto atLeastOne = [&](Value v) { return e.maxU(v, e.idx(1)); };

  SmallVector<std::pair<Value, Type>> deviceBuffers = {
      {atLeastOne(tileCounts), i32}, // per-tile counts
      {atLeastOne(tileCounts), i32}, // per-tile first rows
      {atLeastOne(slots), i32}};     // slot positions
  if (plan.balance == Balance::Exact)
    deviceBuffers.push_back({atLeastOne(e.mul(tokens, E())), f32});
  if (plan.balance == Balance::Histogram)
    deviceBuffers.push_back({e.idx(E() * plan.bins), i32});
  if (plan.balance != Balance::Sign)
    deviceBuffers.push_back({e.idx(E()), f32});
  SmallVector<Value> device = allocateDeviceBuffers(b, deviceBuffers);
  Value counts = device[0], tileStart = device[1], slotPos = device[2];
  Value stats = plan.balance == Balance::Sign ? Value() : device[3];
  Value quantiles = plan.balance == Balance::Sign ? Value() : device[4];

  // Results in host memory (host-shared once the GPU mapping runs).
  auto alloc = [&](Value result, ArrayRef<Value> sizes) {
    auto type = cast<RankedTensorType>(result.getType());
    return memref::AllocOp::create(
               b, MemRefType::get(type.getShape(), type.getElementType()),
               dynamicSizes(type, sizes))
        .getResult();
  };
  Value weights = alloc(op.getWeights(), {tokens, e.idx(K())});
  Value indices = alloc(op.getIndices(), {tokens, e.idx(K())});
  Value load = alloc(op.getLoad(), {e.idx(E())});
  Value nextBias = alloc(op.getNextBias(), {e.idx(E())});
  SmallVector<Value> offsets;
  for (DispatchOp dispatch : plan.dispatches)
    offsets.push_back(alloc(dispatch.getExpertOffsets(), {e.idx(E() + 1)}));

  auto typesOf = [](ValueRange values) {
    return SmallVector<Type>(values.getTypes());
  };
  Value one = e.idx(1);
  auto smemSize = [&](int64_t bytes) {
    return arith::ConstantIntOp::create(b, bytes, 32).getResult();
  };
  auto launch = [&](gpu::GPUFuncOp kernel, Value grid, int64_t threads,
                    int64_t bytes, ValueRange launchArgs) {
    gpu::LaunchFuncOp::create(b, kernel, gpu::KernelDim3{grid, one, one},
                              gpu::KernelDim3{e.idx(threads), one, one},
                              smemSize(bytes), launchArgs);
  };

  if (plan.balance == Balance::Histogram) {
    SmallVector<Value> zeroArgs = {stats};
    launch(buildZeroKernel(typesOf(zeroArgs)),
           e.idx((E() * plan.bins + kQuantileThreads - 1) / kQuantileThreads),
           kQuantileThreads, 0, zeroArgs);
  }
  SmallVector<Value> routeArgs = {x,       w,      bias,   weights,
                                  indices, counts, slotPos};
  if (stats)
    routeArgs.push_back(stats);
  launch(buildRouteKernel(typesOf(routeArgs)), numTiles, kRouteThreads,
         routeSharedBytes(), routeArgs);

  SmallVector<Value> scanArgs = {x, counts, load, tileStart};
  scanArgs.append(offsets);
  launch(buildScanKernel(typesOf(scanArgs), offsets.size()), one, kScanThreads,
         (kScanThreads + E()) * 4, scanArgs);

  if (plan.balance != Balance::Sign) {
    SmallVector<Value> quantileArgs = {x, stats};
    if (plan.balance == Balance::Histogram)
      quantileArgs.push_back(bias);
    quantileArgs.push_back(quantiles);
    launch(buildQuantileKernel(typesOf(quantileArgs)), e.idx(E()),
           kQuantileThreads,
           (2 * kQuantileThreads + 4 + kQuantileThreads / 32) * 4,
           quantileArgs);
  }
  SmallVector<Value> biasArgs = {
      x, bias, plan.balance == Balance::Sign ? load : quantiles, nextBias};
  launch(buildBiasKernel(typesOf(biasArgs)), one, (E() + 31) / 32 * 32,
         (E() + 1) * 4, biasArgs);

  auto toTensor = [&](Value result, Value buffer) {
    return bufferization::ToTensorOp::create(b, result.getType(), buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true)
        .getResult();
  };
  Value weightsTensor = toTensor(op.getWeights(), weights);
  Value indicesTensor = toTensor(op.getIndices(), indices);
  Value loadTensor = toTensor(op.getLoad(), load);
  Value nextBiasTensor = toTensor(op.getNextBias(), nextBias);

  // Each dispatch: the scatter where the dispatch was (its input may be
  // defined after the route).
  for (auto [d, dispatch] : llvm::enumerate(plan.dispatches)) {
    ImplicitLocOpBuilder db(dispatch.getLoc(), dispatch);
    Emitter de(db);
    Value input = readOnlyBuffer(db, dispatch.getInput());
    auto inputType = cast<RankedTensorType>(dispatch.getInput().getType());
    Value dTokens = memref::DimOp::create(db, input, 0);
    auto allocAt = [&](Value result, ArrayRef<Value> sizes) {
      auto type = cast<RankedTensorType>(result.getType());
      return memref::AllocOp::create(
                 db, MemRefType::get(type.getShape(), type.getElementType()),
                 dynamicSizes(type, sizes))
          .getResult();
    };
    Value dSlots = de.mul(dTokens, K());
    Value permuted = allocAt(dispatch.getPermuted(),
                             {dSlots, de.idx(inputType.getDimSize(1))});
    Value sourceSlot = allocAt(dispatch.getSourceSlot(), {dSlots});
    SmallVector<Value> scatterArgs = {input,     indices,  slotPos,
                                      tileStart, permuted, sourceSlot};
    gpu::GPUFuncOp kernel = buildScatterKernel(
        typesOf(scatterArgs), llvm::formatv("_scatter{0}", d).str(),
        inputType.getElementType(), inputType.getDimSize(1));
    gpu::LaunchFuncOp::create(
        db, kernel,
        gpu::KernelDim3{de.ceilDiv(dTokens, kScatterTokens), de.idx(1),
                        de.idx(1)},
        gpu::KernelDim3{de.idx(kScatterThreads), de.idx(1), de.idx(1)},
        arith::ConstantIntOp::create(db, 0, 32).getResult(), scatterArgs);
    auto toTensorAt = [&](Value result, Value buffer) {
      return bufferization::ToTensorOp::create(db, result.getType(), buffer,
                                               /*restrict=*/true,
                                               /*writable=*/true)
          .getResult();
    };
    dispatch.getPermuted().replaceAllUsesWith(
        toTensorAt(dispatch.getPermuted(), permuted));
    dispatch.getExpertOffsets().replaceAllUsesWith(
        toTensorAt(dispatch.getExpertOffsets(), offsets[d]));
    dispatch.getSourceSlot().replaceAllUsesWith(
        toTensorAt(dispatch.getSourceSlot(), sourceSlot));
    dispatch.erase();
  }

  op.getWeights().replaceAllUsesWith(weightsTensor);
  op.getIndices().replaceAllUsesWith(indicesTensor);
  op.getLoad().replaceAllUsesWith(loadTensor);
  op.getNextBias().replaceAllUsesWith(nextBiasTensor);
  op.erase();
}

struct MoEGenerateRoutingKernelsPass
    : public moe::impl::MoEGenerateRoutingKernelsBase<
          MoEGenerateRoutingKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

/// Why `op` is left to -moe-fuse-routing, or an empty string.
static std::string declineReason(RouteOp op, RoutePlan &plan) {
  if (getDataParallel(op) > 1)
    return "it balances over data-parallel ranks (the kernel's statistics "
           "are one rank's)";
  auto xType = cast<RankedTensorType>(op.getInput().getType());
  auto wType = cast<RankedTensorType>(op.getWRouter().getType());
  RoutingAttr routing = op.getRouting();
  plan.experts = routing.getNumExperts();
  plan.topK = routing.getTopK();
  plan.hidden = xType.getDimSize(1);
  auto isFloat = [](Type t) { return t.isF32() || t.isBF16(); };
  if (ShapedType::isDynamic(plan.hidden))
    return "the hidden size is dynamic";
  if (wType.isDynamicDim(0) || wType.isDynamicDim(1))
    return "the router weights have a dynamic shape";
  if (!isFloat(xType.getElementType()) || !isFloat(wType.getElementType()))
    return llvm::formatv("the input ({0}) or router weights ({1}) are not f32 "
                         "or bf16",
                         xType.getElementType(), wType.getElementType())
        .str();
  if (plan.experts > kMaxExperts)
    return llvm::formatv("{0} experts, more than {1}", plan.experts,
                         kMaxExperts)
        .str();
  if (plan.topK >= plan.experts || plan.topK > kMaxTopK)
    return llvm::formatv("top_k {0} is not below the expert count {1} and at "
                         "most {2}",
                         plan.topK, plan.experts, kMaxTopK)
        .str();
  if (auto quantile = dyn_cast<QuantileBalanceAttr>(routing.getBalance())) {
    plan.balance = quantile.getMethod() == QuantileMethod::Exact
                       ? Balance::Exact
                       : Balance::Histogram;
    if (plan.balance == Balance::Histogram)
      plan.bins = quantile.getBins().value_or(0);
    if (plan.balance == Balance::Histogram && plan.bins < 1)
      return "the histogram has no bins";
  } else if (auto sign = dyn_cast<SignBiasBalanceAttr>(routing.getBalance())) {
    plan.balance = Balance::Sign;
    plan.rate = sign.getRate().convertToDouble();
  } else {
    return "unknown balance";
  }
  plan.tensorCores = xType.getElementType().isBF16() &&
                     wType.getElementType().isBF16() && plan.hidden % 16 == 0 &&
                     plan.experts % 8 == 0 && plan.experts <= kMaxTileExperts;
  return "";
}

void MoEGenerateRoutingKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<RoutePlan> plans;
  module.walk([&](RouteOp op) {
    RoutePlan plan;
    plan.op = op;
    std::string reason = declineReason(op, plan);
    if (!reason.empty()) {
      op.emitRemark() << "route left to -moe-fuse-routing: " << reason;
      return;
    }
    // Dispatches of these indices reuse the counts and positions.
    for (Operation *user : op.getIndices().getUsers()) {
      auto dispatch = dyn_cast<DispatchOp>(user);
      if (!dispatch || llvm::is_contained(plan.dispatches, dispatch))
        continue;
      auto inputType = cast<RankedTensorType>(dispatch.getInput().getType());
      Type element = inputType.getElementType();
      std::string why;
      if (static_cast<int64_t>(dispatch.getNumExperts()) != plan.experts)
        why = "its expert count differs from the route's";
      else if (inputType.isDynamicDim(1))
        why = "its row width is dynamic";
      else if (!element.isIntOrFloat() ||
               (element.getIntOrFloatBitWidth() != 16 &&
                element.getIntOrFloatBitWidth() != 32))
        why = "its element type is not 16 or 32 bits wide";
      if (!why.empty()) {
        dispatch.emitRemark() << "dispatch left to -moe-fuse-routing: " << why;
        continue;
      }
      plan.dispatches.push_back(dispatch);
    }
    // Dispatches in block order, so that numbering follows the IR.
    if (llvm::all_of(plan.dispatches, [&](DispatchOp d) {
          return d->getBlock() == op->getBlock();
        }))
      llvm::sort(plan.dispatches, [](DispatchOp a, DispatchOp b) {
        return a->isBeforeInBlock(b);
      });
    op.emitRemark() << "route GPU kernels: tiles of " << kTokenTile
                    << " tokens, router GEMM on "
                    << (plan.tensorCores ? "tensor cores (bf16 mma.sync, fp32 "
                                           "accumulators)"
                                         : "fp32 CUDA cores")
                    << (plan.tensorCores || plan.experts <= kMaxTileExperts
                            ? ""
                            : llvm::formatv(" in passes of {0} experts",
                                            kMaxTileExperts)
                                  .str())
                    << ", "
                    << (plan.balance == Balance::Exact       ? "exact QB"
                        : plan.balance == Balance::Histogram ? "histogram QB"
                                                             : "sign bias")
                    << ", " << plan.dispatches.size() << " fused dispatch"
                    << (plan.dispatches.size() == 1 ? "" : "es");
    plans.push_back(plan);
  });
  if (plans.empty())
    return;

  gpu::GPUModuleOp gpuModule =
      createKernelModule(module, "moe_routing_kernels");
  for (auto [n, plan] : llvm::enumerate(plans)) {
    RoutingKernelGenerator generator(plan, gpuModule,
                                     llvm::formatv("route{0}", n).str());
    generator.generate();
    ++numGenerated;
    numFusedDispatches += plan.dispatches.size();
  }
}
