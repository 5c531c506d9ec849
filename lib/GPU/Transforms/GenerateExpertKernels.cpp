//===- GenerateExpertKernels.cpp - Grouped-GEMM GPU kernels for experts ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-expert-kernels, the GPU back end's kernel
// generator for the expert half of an MoE FFN (ALGORITHMS.md sections 4.4
// and 7.1): `moe.expert_ffn` (grouped over expert-sorted rows) and
// `moe.glu_ffn` (the shared expert, one group of all rows) become two
// grouped GEMMs on tensor cores, the gate/up GEMM with the activation
// (SwiGLU or SiTU-GLU) in its epilogue and the down GEMM; `moe.combine`
// becomes a weighted gather.
//
// Precision policy (`matmul-precision`): under `bf16`, f32 inputs and
// weights are rounded to bf16 by a conversion kernel before the GEMMs, the
// GEMMs accumulate in fp32 and the result is stored in the op's own type;
// under `exact`, only ops whose operands are already bf16 are taken.
//
// The GEMMs are block tiles of 128 rows by 128 columns stepping 32 along the
// reduction, four warps of 64 x 64 each, `mma.sync` m16n8k16 with bf16
// operands and fp32 accumulators, fragments read by `ldmatrix` from shared
// memory that 16-byte `cp.async` copies fill four stages ahead of use, with
// 16-byte chunks XOR-swizzled so that both the copies and the ldmatrix row
// reads are free of bank conflicts without padding.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"
#include "moe/GPU/BF16Conversion.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEEXPERTKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Rows of a block tile: two warps of 64 rows.
constexpr int64_t kRows = 128;

/// A block's tile and its shared-memory pipeline: kRows rows by `cols`
/// columns of B (the gate/up GEMM's are cols / 2 of the gate and the same
/// cols / 2 of the up projection), one warp per 64 x 64 (threads = cols),
/// `step` reduction elements per stage and `stages` buffers of
/// A [kRows][step] then B [step][cols], bf16, filled `stages - 2` steps
/// ahead of use.
struct Pipeline {
  int64_t step, stages, cols;
  int64_t threads() const { return cols; }
  int64_t aElements() const { return kRows * step; }
  int64_t stageElements() const { return aElements() + step * cols; }
  int64_t sharedBytes() const { return stages * stageElements() * 2; }
};
/// Threads of the combine kernel (eight elements per thread and step).
constexpr int64_t kCombineThreads = 256;

/// The two GEMMs of an expert FFN.
enum class GemmKind {
  /// h = act(x Wg, x Wu): output width F, reduction d.
  GateUp,
  /// y = h Wd: output width d, reduction F.
  Down
};

/// Where a block's rows come from: the tile table of a grouped GEMM
/// (`tileGroup[t] < 0` marks an unused tile), or consecutive tiles of one
/// group.
struct RowTile {
  Value group, rowStart, rowEnd;
};

/// Builds the kernels of one module's expert ops; ops of the same shapes
/// (the layers of a model) share them.
class ExpertKernelBuilder {
public:
  ExpertKernelBuilder(gpu::GPUModuleOp module, Pipeline pipeline)
      : module(module), pipeline(pipeline),
        converter(module, "expert_to_bf16",
                  [this](StringRef stem) { return uniqueName(stem); }) {}

  gpu::GPUModuleOp module;
  Pipeline pipeline;
  /// The f32 operands' rounding (matmul-precision=bf16).
  BF16Converter converter;

  /// The table of row tiles of a grouped GEMM over `experts` groups:
  /// tileGroup/tileRow [maxTiles] i32, unused tiles marked -1.
  gpu::GPUFuncOp scheduleKernel(Location loc, TypeRange argTypes,
                                int64_t experts);
  /// One of the two GEMMs; `grouped` reads the tile table. `activation` is
  /// the gate/up epilogue's (null for the down GEMM).
  gpu::GPUFuncOp gemmKernel(Location loc, TypeRange argTypes, GemmKind kind,
                            bool grouped, int64_t reduction, int64_t width,
                            ActivationAttr activation);
  /// The inverse of a dispatch's source_slot: rowOf[source_slot[m]] = m.
  gpu::GPUFuncOp inverseKernel(Location loc, TypeRange argTypes);
  /// result[n] = sum_i weights[n, i] expert_output[rowOf[n k + i]].
  gpu::GPUFuncOp combineKernel(Location loc, TypeRange argTypes, int64_t topK,
                               int64_t width);

private:
  std::string uniqueName(StringRef stem) {
    return llvm::formatv("{0}_{1}", stem, counter++).str();
  }
  /// What identifies a kernel: its stem, its argument types and the
  /// parameters that shape its body.
  static std::string keyOf(StringRef stem, TypeRange argTypes,
                           ArrayRef<int64_t> parameters,
                           Attribute attr = Attribute()) {
    std::string key;
    llvm::raw_string_ostream os(key);
    os << stem;
    for (int64_t p : parameters)
      os << ' ' << p;
    for (Type t : argTypes)
      os << ' ' << t;
    if (attr)
      os << ' ' << attr;
    return key;
  }

  int64_t counter = 0;
  llvm::StringMap<gpu::GPUFuncOp> built;
};

/// Element offset of (row, 8-element chunk) in a swizzled tile whose rows
/// hold `rowChunks` chunks of 16 bytes: the chunk index is XOR-ed with the
/// row's bits so that eight rows read at the same chunk, or a row's chunks
/// written by consecutive threads, fall into distinct bank groups.
static Value swizzled(DeviceEmitter &e, Value row, Value chunk,
                      int64_t rowChunks) {
  ImplicitLocOpBuilder &b = e.b;
  // Rows of 4 chunks (64 bytes): two rows share a 128-byte line, so the
  // pattern repeats every 8 rows with row / 2; rows of 8 or 16 chunks:
  // row % 8.
  Value bits = rowChunks == 4 ? e.rem(e.div(row, 2), 4) : e.rem(row, 8);
  Value physical = arith::XOrIOp::create(b, chunk, bits);
  return e.add(e.mul(row, rowChunks * 8), e.mul(physical, 8));
}

gpu::GPUFuncOp ExpertKernelBuilder::scheduleKernel(Location loc,
                                                   TypeRange argTypes,
                                                   int64_t experts) {
  std::string key = keyOf("expert_schedule", argTypes, {experts});
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  int64_t threads = (experts + 31) / 32 * 32;
  gpu::GPUFuncOp func = createKernel(module, loc, uniqueName("expert_schedule"),
                                     argTypes, threads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value offsets = func.getArgument(0), tileGroup = func.getArgument(1),
        tileRow = func.getArgument(2), maxTiles = func.getArgument(3);
  Type i32 = b.getI32Type();
  auto toI32 = [&](Value v) {
    return arith::IndexCastOp::create(b, i32, v).getResult();
  };
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  // Each expert's first tile; the total at [experts] (shared memory).
  Value firstTile = e.sharedView(e.dynamicSharedMemory(), 0, experts + 1, i32);
  auto toIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v).getResult();
  };
  auto offsetAt = [&](Value i) {
    return arith::IndexCastOp::create(b, b.getIndexType(), e.load(offsets, {i}))
        .getResult();
  };
  auto tilesOf = [&](Value expert) {
    Value rows = e.sub(offsetAt(e.add(expert, 1)), offsetAt(expert));
    return e.div(e.add(rows, kRows - 1), kRows);
  };
  e.ifThen(e.eq(tid, e.idx(0)), [&] {
    SmallVector<Value> total = e.forLoop(
        e.idx(0), e.idx(experts), 1, {e.idx(0)}, [&](Value j, ValueRange acc) {
          e.store(toI32(acc[0]), firstTile, {j});
          return SmallVector<Value>{e.add(acc[0], tilesOf(j))};
        });
    e.store(toI32(total[0]), firstTile, {e.idx(experts)});
  });
  e.barrier();
  e.ifThen(e.ult(tid, e.idx(experts)), [&] {
    Value start = toIndex(e.load(firstTile, {tid}));
    Value first = offsetAt(tid);
    e.forLoop(e.idx(0), tilesOf(tid), 1, [&](Value i) {
      e.store(toI32(tid), tileGroup, {e.add(start, i)});
      e.store(toI32(e.add(first, e.mul(i, kRows))), tileRow, {e.add(start, i)});
    });
  });
  // Unused tiles (the grid covers the worst case).
  Value total = toIndex(e.load(firstTile, {e.idx(experts)}));
  Value minusOne = arith::ConstantIntOp::create(b, -1, 32);
  e.forLoop(e.add(total, tid), maxTiles, threads,
            [&](Value t) { e.store(minusOne, tileGroup, {t}); });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

gpu::GPUFuncOp ExpertKernelBuilder::gemmKernel(Location loc, TypeRange argTypes,
                                               GemmKind kind, bool grouped,
                                               int64_t reduction, int64_t width,
                                               ActivationAttr activation) {
  std::string key = keyOf(
      "expert_gemm", argTypes,
      {static_cast<int64_t>(kind), grouped, reduction, width}, activation);
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  bool gateUp = kind == GemmKind::GateUp;
  gpu::GPUFuncOp func = createKernel(
      module, loc, uniqueName(gateUp ? "expert_gate_up" : "expert_down"),
      argTypes, pipeline.threads());
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  // Arguments: A [M, K] bf16; B (gate/up: Wg, Wu; down: Wd), [E,] K x
  // width bf16; output (gate/up: h [M * F] bf16; down: [M * d], f32 or
  // bf16), flat; M; grouped: tileGroup, tileRow, offsets [E + 1].
  unsigned arg = 0;
  Value a = func.getArgument(arg++);
  Value b0 = func.getArgument(arg++);
  Value b1 = gateUp ? func.getArgument(arg++) : b0;
  Value out = func.getArgument(arg++);
  Value rows = func.getArgument(arg++);
  bool batchedWeights = cast<MemRefType>(b0.getType()).getRank() == 3;

  auto [tid, warp] = e.threadAndWarp();
  Value colTile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tile = gpu::BlockIdOp::create(b, gpu::Dimension::y);

  RowTile rowTile;
  Value valid;
  if (grouped) {
    Value tileGroup = func.getArgument(arg++),
          tileRow = func.getArgument(arg++), offsets = func.getArgument(arg++);
    Value group = e.load(tileGroup, {tile});
    valid = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, group,
                                  arith::ConstantIntOp::create(b, 0, 32));
    Value groupIndex = arith::IndexCastOp::create(
        b, b.getIndexType(),
        arith::MaxSIOp::create(b, group,
                               arith::ConstantIntOp::create(b, 0, 32)));
    rowTile.group = groupIndex;
    rowTile.rowStart = arith::IndexCastOp::create(b, b.getIndexType(),
                                                  e.load(tileRow, {tile}));
    rowTile.rowEnd = arith::IndexCastOp::create(
        b, b.getIndexType(), e.load(offsets, {e.add(groupIndex, 1)}));
  } else {
    valid = arith::ConstantIntOp::create(b, 1, 1);
    rowTile.group = e.idx(0);
    rowTile.rowStart = e.mul(tile, kRows);
    rowTile.rowEnd = rows;
  }

  e.ifThen(valid, [&] {
    Value smem = e.dynamicSharedMemory();
    int64_t stages = pipeline.stages, step = pipeline.step;
    int64_t stageElements = pipeline.stageElements();
    int64_t aElements = pipeline.aElements(), aChunks = step / 8;
    Value staged =
        e.sharedView(smem, 0, stages * stageElements, b.getBF16Type());
    int64_t cols = pipeline.cols, threads = pipeline.threads();
    int64_t bChunks = cols / 8, colWarps = cols / 64;
    Value warpRow = e.mul(e.div(warp, colWarps), 64);
    Value warpCol = e.mul(e.rem(warp, colWarps), gateUp ? 32 : 64);
    Value lastRow = e.sub(rows, e.idx(1));
    Value outCol0 = e.mul(colTile, gateUp ? cols / 2 : cols);

    // Issues the cp.async copies of reduction step `at` into `stage`:
    // kRows * step / 8 16-byte chunks of A and step * cols / 8 of B, spread
    // over the threads.
    auto issue = [&](Value at, Value stage) {
      Value base = e.mul(stage, stageElements);
      Value k0 = e.mul(at, step);
      for (int64_t i = 0; i < kRows * aChunks / threads; ++i) {
        Value piece = e.add(tid, i * threads);
        // A: row piece / aChunks, chunk piece % aChunks (rows past the end
        // re-read the last row; their results are not stored).
        Value r = e.div(piece, aChunks), chunk = e.rem(piece, aChunks);
        Value srcRow =
            arith::MinUIOp::create(b, e.add(rowTile.rowStart, r), lastRow);
        nvgpu::DeviceAsyncCopyOp::create(
            b, staged, ValueRange{e.add(base, swizzled(e, r, chunk, aChunks))},
            a, ValueRange{srcRow, e.add(k0, e.mul(chunk, 8))},
            b.getIndexAttr(8), Value(), b.getUnitAttr());
      }
      for (int64_t i = 0; i < step * bChunks / threads; ++i) {
        Value piece = e.add(tid, i * threads);
        // B: reduction row piece / bChunks, chunk piece % bChunks; for
        // gate/up, the first half of the chunks come from Wg and the second
        // from Wu, both at this tile's columns.
        Value r = e.div(piece, bChunks), chunk = e.rem(piece, bChunks);
        Value col = e.mul(chunk, 8);
        Value weights = b0;
        if (gateUp) {
          Value fromUp = e.ule(e.idx(bChunks / 2), chunk);
          weights = arith::SelectOp::create(b, fromUp, b1, b0);
          col = e.select(fromUp, e.sub(col, e.idx(cols / 2)), col);
        }
        SmallVector<Value> src;
        if (batchedWeights)
          src.push_back(rowTile.group);
        src.push_back(e.add(k0, r));
        src.push_back(e.add(outCol0, col));
        nvgpu::DeviceAsyncCopyOp::create(
            b, staged,
            ValueRange{e.add(
                base, e.add(e.idx(aElements), swizzled(e, r, chunk, bChunks)))},
            weights, src, b.getIndexAttr(8), Value(), b.getUnitAttr());
      }
      Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
      return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange())
          .getResult();
    };

    // Per-lane parts of the ldmatrix addresses: lane l names row l % 8 of
    // matrix l / 8.
    Value matrix = e.div(e.lane, 8), matrixRow = e.rem(e.lane, 8);
    // A 16x16 fragment at (row0, k0) of a stage.
    auto fragA = [&](Value base, int64_t row0, int64_t k0) {
      Value r = e.add(e.add(warpRow, e.idx(row0)),
                      e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)));
      Value chunk = e.add(e.idx(k0 / 8), e.div(matrix, 2));
      SmallVector<Value> w = e.ldmatrix(
          staged, e.add(base, swizzled(e, r, chunk, aChunks)), 4, false);
      return Frag4{w[0], w[1], w[2], w[3]};
    };
    // The B fragments of tile columns col0 .. col0 + 15 at k0.
    auto fragsB = [&](Value base, Value col0, int64_t k0) {
      Value r = e.add(e.idx(k0), e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)));
      Value chunk = e.add(e.div(col0, 8), e.div(matrix, 2));
      SmallVector<Value> w = e.ldmatrix(
          staged,
          e.add(base, e.add(e.idx(aElements), swizzled(e, r, chunk, bChunks))),
          4, true);
      return std::array<std::array<Value, 2>, 2>{{{w[0], w[1]}, {w[2], w[3]}}};
    };
    // Columns of the warp's eight n8 tiles: gate/up: 32 gate columns then
    // the same 32 of up; down: 64 columns.
    auto nTileCol = [&](int64_t pair) {
      if (gateUp)
        return e.add(warpCol,
                     e.idx(pair < 2 ? 16 * pair : cols / 2 + 16 * (pair - 2)));
      return e.add(warpCol, e.idx(16 * pair));
    };

    int64_t steps = reduction / step;
    // Prologue: the first stages - 2 steps in flight.
    for (int64_t s = 0; s < stages - 2; ++s)
      issue(e.idx(s), e.idx(s));

    Value zero = e.f32(0.0);
    SmallVector<Value> init(4 * 8 * 4, zero);
    SmallVector<Value> acc = e.forLoop(
        e.idx(0), e.idx(steps), 1, init, [&](Value now, ValueRange accIn) {
          // Step now + stages - 2 goes to the stage read two steps ago,
          // which every warp left before the previous step's barrier; past
          // the end, the last step is copied again into that unused stage.
          Value ahead = e.add(now, stages - 2);
          Value clamped = arith::MinUIOp::create(b, ahead, e.idx(steps - 1));
          Value group = issue(clamped, e.rem(ahead, stages));
          nvgpu::DeviceAsyncWaitOp::create(b, group,
                                           b.getI32IntegerAttr(stages - 2));
          e.barrier();
          Value base = e.mul(e.rem(now, stages), stageElements);
          SmallVector<Value> accOut(accIn.begin(), accIn.end());
          for (int64_t kk = 0; kk < step / 16; ++kk) {
            std::array<Frag4, 4> fa;
            for (int64_t i = 0; i < 4; ++i)
              fa[i] = fragA(base, 16 * i, 16 * kk);
            std::array<std::array<Value, 2>, 8> fb;
            for (int64_t pair = 0; pair < 4; ++pair) {
              auto two = fragsB(base, nTileCol(pair), 16 * kk);
              fb[2 * pair] = two[0];
              fb[2 * pair + 1] = two[1];
            }
            for (int64_t i = 0; i < 4; ++i)
              for (int64_t j = 0; j < 8; ++j) {
                int64_t at = (i * 8 + j) * 4;
                Frag4 c{accOut[at], accOut[at + 1], accOut[at + 2],
                        accOut[at + 3]};
                Frag4 d = e.mma(fa[i], fb[j], c);
                for (int64_t v = 0; v < 4; ++v)
                  accOut[at + v] = d[v];
              }
          }
          return accOut;
        });
    nvgpu::DeviceAsyncWaitOp::create(
        b,
        nvgpu::DeviceAsyncCreateGroupOp::create(
            b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange()),
        b.getI32IntegerAttr(0));

    // Epilogue: rows below rowEnd only; pairs of adjacent columns stored
    // in the output's type.
    bool outF32 = cast<MemRefType>(out.getType()).getElementType().isF32();
    auto storePair = [&](Value lo, Value hi, Value at) {
      if (!outF32)
        return e.storePairBF16(lo, hi, out, at);
      Value pair = vector::FromElementsOp::create(
          b, VectorType::get({2}, b.getF32Type()), ValueRange{lo, hi});
      vector::StoreOp::create(b, pair, out, ValueRange{at},
                              /*nontemporal=*/false, llvm::MaybeAlign(8));
    };
    for (int64_t i = 0; i < 4; ++i) {
      Value row0 = e.add(rowTile.rowStart, e.add(warpRow, e.idx(16 * i)));
      for (int64_t half = 0; half < 2; ++half) {
        Value row = e.add(e.add(row0, e.laneGroup), e.idx(8 * half));
        e.ifThen(e.ult(row, rowTile.rowEnd), [&] {
          if (gateUp) {
            // h = act(g, u) in fp32 for the warp's 32 columns (SwiGLU or
            // SiTU-GLU, ALGORITHMS.md sections 6 and 7.1).
            std::optional<double> gateBeta = activation.getGateBetaValue(),
                                  upBeta = activation.getUpBetaValue();
            for (int64_t j = 0; j < 4; ++j) {
              int64_t g = (i * 8 + j) * 4 + 2 * half;
              int64_t u = (i * 8 + j + 4) * 4 + 2 * half;
              auto act = [&](Value gv, Value uv) {
                return buildGatedActivation(b, b.getLoc(), gv, uv, gateBeta,
                                            upBeta);
              };
              Value col = e.add(e.add(outCol0, warpCol),
                                e.add(e.idx(8 * j), e.laneCol));
              storePair(act(acc[g], acc[u]), act(acc[g + 1], acc[u + 1]),
                        e.add(e.mul(row, width), col));
            }
          } else {
            for (int64_t j = 0; j < 8; ++j) {
              int64_t c = (i * 8 + j) * 4 + 2 * half;
              Value col = e.add(e.add(outCol0, warpCol),
                                e.add(e.idx(8 * j), e.laneCol));
              storePair(acc[c], acc[c + 1], e.add(e.mul(row, width), col));
            }
          }
        });
      }
    }
  });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

gpu::GPUFuncOp ExpertKernelBuilder::inverseKernel(Location loc,
                                                  TypeRange argTypes) {
  std::string key = keyOf("expert_slot_rows", argTypes, {});
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  gpu::GPUFuncOp func =
      createKernel(module, loc, uniqueName("expert_slot_rows"), argTypes, 256);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value sourceSlot = func.getArgument(0), rowOf = func.getArgument(1),
        count = func.getArgument(2);
  Value m = e.add(e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), 256),
                  gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  e.ifThen(e.ult(m, count), [&] {
    Value slot = arith::IndexCastOp::create(b, b.getIndexType(),
                                            e.load(sourceSlot, {m}));
    e.store(arith::IndexCastOp::create(b, b.getI32Type(), m), rowOf, {slot});
  });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

gpu::GPUFuncOp ExpertKernelBuilder::combineKernel(Location loc,
                                                  TypeRange argTypes,
                                                  int64_t topK, int64_t width) {
  std::string key = keyOf("expert_combine", argTypes, {topK, width});
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  gpu::GPUFuncOp func = createKernel(module, loc, uniqueName("expert_combine"),
                                     argTypes, kCombineThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  // Arguments: expert output [M * d] flat, rowOf [N k] i32, weights [N, k]
  // f32, result [N * d] flat; then the shared expert's [N * d] when fused.
  // Rows are f32 or bf16, each buffer its own.
  Value expertOut = func.getArgument(0), rowOf = func.getArgument(1),
        weights = func.getArgument(2), result = func.getArgument(3);
  Value shared = func.getNumArguments() > 4 ? func.getArgument(4) : Value();
  Value token = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto vec8 = VectorType::get({8}, bf16);
  auto vec8f = VectorType::get({8}, f32);
  auto isF32 = [](Value mem) {
    return cast<MemRefType>(mem.getType()).getElementType().isF32();
  };
  auto load8 = [&](Value mem, Value at) {
    Value v = vector::LoadOp::create(
        b, isF32(mem) ? vec8f : vec8, mem, ValueRange{at},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
    return isF32(mem) ? v : arith::ExtFOp::create(b, vec8f, v).getResult();
  };
  SmallVector<Value> rowBase, weight;
  for (int64_t i = 0; i < topK; ++i) {
    Value slot = e.add(e.mul(token, topK), e.idx(i));
    rowBase.push_back(e.mul(
        arith::IndexCastOp::create(b, b.getIndexType(), e.load(rowOf, {slot})),
        width));
    weight.push_back(vector::BroadcastOp::create(
        b, vec8f, e.load(weights, {token, e.idx(i)})));
  }
  e.forLoop(e.mul(tid, 8), e.idx(width), kCombineThreads * 8, [&](Value col) {
    // The k slots in order from zero, then the shared expert's row
    // (ALGORITHMS.md section 7.1), all in fp32.
    Value sum = arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec8f, b.getF32FloatAttr(0.0)));
    for (int64_t i = 0; i < topK; ++i)
      sum = vector::FMAOp::create(
          b, weight[i], load8(expertOut, e.add(rowBase[i], col)), sum);
    Value at = e.add(e.mul(token, width), col);
    if (shared)
      sum = arith::AddFOp::create(b, sum, load8(shared, at));
    if (!isF32(result))
      sum = arith::TruncFOp::create(b, vec8, sum);
    vector::StoreOp::create(b, sum, result, ValueRange{at},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Whether f32 matmul operands are rounded to bf16 (matmul-precision=bf16)
/// or only bf16 ones are taken (exact).
enum class Precision { BF16, Exact };

/// Why the generator does not take an element type (empty when it does):
/// bf16 always, f32 when the policy rounds it to bf16.
static std::string unsupportedElement(Type type, Precision precision) {
  if (type.isBF16() || (type.isF32() && precision == Precision::BF16))
    return "";
  return precision == Precision::Exact ? "not bf16 (matmul-precision=exact)"
                                       : "neither f32 nor bf16";
}

/// Why the generator does not take an FFN with these operand types (empty
/// when it does).
static std::string unsupportedReason(Type input, Type wGate, Type wUp,
                                     Type wDown, Pipeline pipeline,
                                     Precision precision) {
  auto x = cast<RankedTensorType>(input);
  auto wg = cast<RankedTensorType>(wGate);
  auto wu = cast<RankedTensorType>(wUp);
  auto wd = cast<RankedTensorType>(wDown);
  if (x.getRank() != 2)
    return "the input is not [rows, d]";
  // The schedule kernel gives each expert one thread of one block.
  if (wg.getRank() == 3 && wg.getDimSize(0) > 1024)
    return "more than 1024 experts";
  for (auto [name, type] : {std::pair<StringRef, Type>{"the input", input},
                            {"w_gate", wGate},
                            {"w_up", wUp},
                            {"w_down", wDown}}) {
    std::string why = unsupportedElement(
        cast<RankedTensorType>(type).getElementType(), precision);
    if (!why.empty())
      return llvm::formatv("{0} is {1}", name, why).str();
  }
  int64_t d = x.getDimSize(1), width = wg.getShape().back();
  int64_t cols = pipeline.cols;
  if (ShapedType::isDynamic(d) || d % cols != 0)
    return llvm::formatv("the hidden size is not a static multiple of {0}",
                         cols);
  // The pipeline's prologue fills stages - 2 whole steps of either GEMM.
  int64_t least = std::max(cols / 2, (pipeline.stages - 2) * pipeline.step);
  if (!wg.hasStaticShape() || !wu.hasStaticShape() || !wd.hasStaticShape() ||
      width % (cols / 2) != 0 || width < least || d < least)
    return llvm::formatv("the expert width is not a static multiple of {0} or "
                         "the width or hidden size is below {1}",
                         cols / 2, least);
  return "";
}

/// The operands of an expert FFN: rows of `input` grouped by `offsets`
/// (null: one group of all rows).
struct FFNOperands {
  Value input, offsets, wGate, wUp, wDown;
  ActivationAttr activation;
};

/// The operands of `op` (a moe.expert_ffn or moe.glu_ffn), read when it is
/// generated: an earlier op's generation may have replaced their producer.
static FFNOperands operandsOf(Operation *op) {
  if (auto ffn = dyn_cast<ExpertFFNOp>(op))
    return {ffn.getInput(), ffn.getExpertOffsets(), ffn.getWGate(),
            ffn.getWUp(),   ffn.getWDown(),         ffn.getActivation()};
  auto glu = cast<GLUFFNOp>(op);
  return {glu.getInput(), Value(),        glu.getWGate(),
          glu.getWUp(),   glu.getWDown(), glu.getActivation()};
}

/// A gpu.alloc'ed flat device buffer viewed as [rows, width].
static Value viewAs2D(ImplicitLocOpBuilder &b, Value flat, Value rows,
                      int64_t width) {
  auto type =
      MemRefType::get({ShapedType::kDynamic, width},
                      cast<MemRefType>(flat.getType()).getElementType());
  return memref::ReinterpretCastOp::create(
      b, type, flat, OpFoldResult(b.getIndexAttr(0)),
      ArrayRef<OpFoldResult>{rows, b.getIndexAttr(width)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(width), b.getIndexAttr(1)});
}

/// `type` [..., d] as [rows, d] (rank 2 or less: itself).
static RankedTensorType rowsOf(RankedTensorType type) {
  if (type.getRank() <= 2)
    return type;
  int64_t rows = 1;
  for (int64_t dim : type.getShape().drop_back())
    rows = ShapedType::isDynamic(dim) || ShapedType::isDynamic(rows)
               ? ShapedType::kDynamic
               : rows * dim;
  return RankedTensorType::get({rows, type.getShape().back()},
                               type.getElementType());
}

/// Replaces `glu` (input [..., d]) by the same FFN on its collapsed
/// [rows, d] input, expanded back; returns the new op.
static GLUFFNOp flattenRows(GLUFFNOp glu) {
  ImplicitLocOpBuilder b(glu.getLoc(), glu);
  RankedTensorType type = glu.getInput().getType();
  RankedTensorType flatType = rowsOf(type);
  SmallVector<ReassociationIndices> groups = {
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank() - 1)),
      {type.getRank() - 1}};
  Value flat =
      tensor::CollapseShapeOp::create(b, flatType, glu.getInput(), groups);
  auto flatFFN =
      GLUFFNOp::create(b, flatType, flat, glu.getWGate(), glu.getWUp(),
                       glu.getWDown(), glu.getActivation());
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, glu.getLoc(), glu.getInput());
  Value result = tensor::ExpandShapeOp::create(b, type, flatFFN.getResult(),
                                               groups, sizes);
  glu.getResult().replaceAllUsesWith(result);
  glu.erase();
  return flatFFN;
}

/// Launches the GEMMs of `op` (expert_ffn or glu_ffn) writing into `out`
/// ([rows, d] memref of the op's type). f32 operands are rounded to bf16
/// first (matmul-precision=bf16; the weights before the row check, the
/// input after it).
static void launchFFN(ImplicitLocOpBuilder &b, ExpertKernelBuilder &kernels,
                      Operation *op, Value out) {
  FFNOperands ffn = operandsOf(op);
  DeviceEmitter e(b);
  Type i32 = b.getI32Type(), bf16 = b.getBF16Type();
  Value input = readOnlyBuffer(b, ffn.input);
  Value wg = kernels.converter.staticAsBF16(b, ffn.wGate),
        wu = kernels.converter.staticAsBF16(b, ffn.wUp),
        wd = kernels.converter.staticAsBF16(b, ffn.wDown);
  auto wgType = cast<RankedTensorType>(ffn.wGate.getType());
  int64_t d = cast<RankedTensorType>(ffn.input.getType()).getDimSize(1);
  int64_t width = wgType.getShape().back();
  Value rows = memref::DimOp::create(b, input, 0);
  Value one = e.idx(1);
  auto smem = [&](int64_t bytes) {
    return arith::ConstantIntOp::create(b, bytes, 32).getResult();
  };
  // The input as bf16 [rows, d]: in place, or a device buffer that the
  // conversion kernel fills once there are rows.
  bool convertInput =
      !cast<MemRefType>(input.getType()).getElementType().isBF16();
  Value inputBF16;
  Value x = input;
  if (convertInput) {
    inputBF16 = allocateDeviceBuffers(b, {{e.mul(rows, d), bf16}}).front();
    x = viewAs2D(b, inputBF16, rows, d);
  }

  bool grouped = static_cast<bool>(ffn.offsets);
  Value tiles, offsets;
  SmallVector<Value> table;
  if (grouped) {
    int64_t experts = wgType.getDimSize(0);
    offsets = readOnlyBuffer(b, ffn.offsets);
    // Each expert's rows round up to whole tiles: at most one partial tile
    // per expert beyond ceil(rows / kRows).
    tiles = e.add(e.div(e.add(rows, kRows - 1), kRows), e.idx(experts));
    table = allocateDeviceBuffers(b, {{tiles, i32}, {tiles, i32}});
    SmallVector<Value> args = {offsets, table[0], table[1], tiles};
    gpu::GPUFuncOp schedule = kernels.scheduleKernel(
        op->getLoc(), ValueRange(args).getTypes(), experts);
    gpu::LaunchFuncOp::create(
        b, schedule, gpu::KernelDim3{one, one, one},
        gpu::KernelDim3{e.idx((experts + 31) / 32 * 32), one, one},
        smem(4 * (experts + 1)), args);
  } else {
    tiles = e.div(e.add(rows, kRows - 1), kRows);
  }
  Value hidden = allocateDeviceBuffers(b, {{e.mul(rows, width), bf16}}).front();
  int64_t sharedBytes = kernels.pipeline.sharedBytes();

  auto launch = [&](GemmKind kind, Value a, ValueRange weights, Value output,
                    int64_t reduction, int64_t outWidth, int64_t colTiles) {
    SmallVector<Value> args = {a};
    args.append(weights.begin(), weights.end());
    args.push_back(output);
    args.push_back(rows);
    if (grouped)
      args.append({table[0], table[1], offsets});
    gpu::GPUFuncOp gemm = kernels.gemmKernel(
        op->getLoc(), ValueRange(args).getTypes(), kind, grouped, reduction,
        outWidth, kind == GemmKind::GateUp ? ffn.activation : ActivationAttr());
    gpu::LaunchFuncOp::create(
        b, gemm, gpu::KernelDim3{e.idx(colTiles), tiles, one},
        gpu::KernelDim3{e.idx(kernels.pipeline.threads()), one, one},
        smem(sharedBytes), args);
  };
  // The grid is empty without rows.
  e.ifThen(e.ult(e.idx(0), rows), [&] {
    if (convertInput)
      kernels.converter.launch(b, input, inputBF16, e.mul(rows, d));
    launch(GemmKind::GateUp, x, {wg, wu}, hidden, d, width,
           width / (kernels.pipeline.cols / 2));
    Value flatOut = memref::CollapseShapeOp::create(
        b, out, ArrayRef<ReassociationIndices>{{0, 1}});
    launch(GemmKind::Down, viewAs2D(b, hidden, rows, width), {wd}, flatOut,
           width, d, d / kernels.pipeline.cols);
  });
}

/// The element-wise `combine + addend` (either order, same types, identity
/// maps, a lone addf) that is the only use of `combine`, if any.
static linalg::GenericOp sumWithAddend(CombineOp combine) {
  // The row count of the result is the weights' (the sum's own size
  // computation reads it from the combine).
  for (Operation *user : llvm::make_early_inc_range(combine->getUsers())) {
    auto dim = dyn_cast<tensor::DimOp>(user);
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    if (!index || *index != 0)
      continue;
    OpBuilder builder(dim);
    dim.replaceAllUsesWith(
        tensor::DimOp::create(builder, dim.getLoc(), combine.getWeights(), 0)
            .getResult());
    dim.erase();
  }
  if (!combine->hasOneUse())
    return {};
  auto generic = dyn_cast<linalg::GenericOp>(*combine->user_begin());
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return {};
  Type type = combine.getType();
  if (generic.getDpsInputs()[0].getType() != type ||
      generic.getDpsInputs()[1].getType() != type ||
      generic->getResult(0).getType() != type)
    return {};
  Block &body = generic.getRegion().front();
  auto add = dyn_cast<arith::AddFOp>(body.front());
  if (body.getOperations().size() != 2 || !add ||
      !isa<BlockArgument>(add.getLhs()) || !isa<BlockArgument>(add.getRhs()) ||
      add.getLhs() == add.getRhs() ||
      cast<BlockArgument>(add.getLhs()).getArgNumber() > 1 ||
      cast<BlockArgument>(add.getRhs()).getArgNumber() > 1 ||
      body.getTerminator()->getOperand(0) != add.getResult())
    return {};
  return generic;
}

struct MoEGenerateExpertKernelsPass
    : public moe::impl::MoEGenerateExpertKernelsBase<
          MoEGenerateExpertKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEGenerateExpertKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (reductionStep != 32 && reductionStep != 64) {
    module.emitError() << "expects reduction-step 32 or 64, got "
                       << static_cast<int64_t>(reductionStep);
    return signalPassFailure();
  }
  if (stages < 3 || stages > 6) {
    module.emitError() << "expects 3 to 6 stages, got "
                       << static_cast<int64_t>(stages);
    return signalPassFailure();
  }
  if (blockCols != 128 && blockCols != 256) {
    module.emitError() << "expects block-cols 128 or 256, got "
                       << static_cast<int64_t>(blockCols);
    return signalPassFailure();
  }
  if (matmulPrecision != "bf16" && matmulPrecision != "exact") {
    module.emitError() << "expects matmul-precision bf16 or exact, got '"
                       << matmulPrecision << "'";
    return signalPassFailure();
  }
  Precision precision =
      matmulPrecision == "bf16" ? Precision::BF16 : Precision::Exact;
  Pipeline pipeline{reductionStep, stages, blockCols};
  SmallVector<Operation *> plans;
  SmallVector<CombineOp> combines;
  module.walk([&](Operation *op) {
    if (isa<ExpertFFNOp, GLUFFNOp>(op)) {
      FFNOperands ffn = operandsOf(op);
      // A dense FFN on [..., d] (a model's dense layers, on [B, T, d]) is
      // the same GEMMs on its rows.
      std::string reason =
          unsupportedReason(rowsOf(cast<RankedTensorType>(ffn.input.getType())),
                            ffn.wGate.getType(), ffn.wUp.getType(),
                            ffn.wDown.getType(), pipeline, precision);
      if (!reason.empty()) {
        op->emitRemark() << (ffn.offsets ? "expert_ffn left to "
                                           "-moe-fuse-routing: "
                                         : "glu_ffn left to "
                                           "-convert-moe-to-linalg: ")
                         << reason;
        return;
      }
      plans.push_back(op);
    } else if (auto combine = dyn_cast<CombineOp>(op)) {
      auto outType = cast<RankedTensorType>(combine.getType());
      auto inType = cast<RankedTensorType>(combine.getExpertOutput().getType());
      int64_t d = outType.getShape().back();
      std::string why = unsupportedElement(inType.getElementType(), precision);
      if (why.empty())
        why = unsupportedElement(outType.getElementType(), precision);
      if (!why.empty()) {
        combine.emitRemark() << "combine left to -moe-fuse-routing: an "
                                "element type is "
                             << why;
        return;
      }
      if (outType.getRank() != 2 || ShapedType::isDynamic(d) || d % 8 != 0 ||
          ShapedType::isDynamic(
              cast<RankedTensorType>(combine.getWeights().getType())
                  .getDimSize(1))) {
        combine.emitRemark() << "combine left to -moe-fuse-routing: not [N, d] "
                                "with d a static multiple of 8";
        return;
      }
      combines.push_back(combine);
    }
  });
  if (plans.empty() && combines.empty())
    return;

  gpu::GPUModuleOp gpuModule = createKernelModule(module, "moe_expert_kernels");
  ExpertKernelBuilder kernels(gpuModule, pipeline);

  for (Operation *op : plans) {
    if (auto glu = dyn_cast<GLUFFNOp>(op);
        glu && glu.getInput().getType().getRank() > 2)
      op = flattenRows(glu);
    ImplicitLocOpBuilder b(op->getLoc(), op);
    DeviceEmitter e(b);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value rows = tensor::DimOp::create(b, op->getOperand(0), 0);
    Value out = memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes(type, {rows, e.idx(type.getDimSize(1))}));
    launchFFN(b, kernels, op, out);
    Value result = bufferization::ToTensorOp::create(b, type, out,
                                                     /*restrict=*/true,
                                                     /*writable=*/true);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    ++numGenerated;
  }

  for (CombineOp combine : combines) {
    // A combine whose only use is an element-wise sum with another tensor of
    // its type (the shared expert's output, as -moe-decompose builds it)
    // takes that tensor as its starting value: one fp32 sum, one rounding.
    linalg::GenericOp fusedAdd = sumWithAddend(combine);
    Operation *at = fusedAdd ? fusedAdd.getOperation() : combine.getOperation();
    ImplicitLocOpBuilder b(combine.getLoc(), at);
    DeviceEmitter e(b);
    auto type = cast<RankedTensorType>(combine.getType());
    int64_t d = type.getShape().back();
    int64_t topK =
        cast<RankedTensorType>(combine.getWeights().getType()).getDimSize(1);
    Value expertOut = readOnlyBuffer(b, combine.getExpertOutput());
    Value sourceSlot = readOnlyBuffer(b, combine.getSourceSlot());
    Value weights = readOnlyBuffer(b, combine.getWeights());
    Value slots = memref::DimOp::create(b, sourceSlot, 0);
    Value tokens = memref::DimOp::create(b, weights, 0);
    Value rowOf = allocateDeviceBuffers(b, {{slots, b.getI32Type()}}).front();
    Value result = memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes(type, {tokens, e.idx(d)}));
    auto flat = [&](Value mem) {
      return memref::CollapseShapeOp::create(
                 b, mem, ArrayRef<ReassociationIndices>{{0, 1}})
          .getResult();
    };
    Value one = e.idx(1);
    e.ifThen(e.ult(e.idx(0), slots), [&] {
      SmallVector<Value> inverseArgs = {sourceSlot, rowOf, slots};
      gpu::GPUFuncOp inverse = kernels.inverseKernel(
          combine.getLoc(), ValueRange(inverseArgs).getTypes());
      gpu::LaunchFuncOp::create(
          b, inverse, gpu::KernelDim3{e.div(e.add(slots, 255), 256), one, one},
          gpu::KernelDim3{e.idx(256), one, one}, Value(), inverseArgs);
      SmallVector<Value> args = {flat(expertOut), rowOf, weights, flat(result)};
      if (fusedAdd) {
        Value addend = fusedAdd.getDpsInputs()[0] == combine.getResult()
                           ? fusedAdd.getDpsInputs()[1]
                           : fusedAdd.getDpsInputs()[0];
        args.push_back(flat(readOnlyBuffer(b, addend)));
      }
      gpu::GPUFuncOp gather = kernels.combineKernel(
          combine.getLoc(), ValueRange(args).getTypes(), topK, d);
      gpu::LaunchFuncOp::create(
          b, gather, gpu::KernelDim3{tokens, one, one},
          gpu::KernelDim3{e.idx(kCombineThreads), one, one}, Value(), args);
    });
    Value resultTensor = bufferization::ToTensorOp::create(
        b, type, result, /*restrict=*/true, /*writable=*/true);
    if (fusedAdd) {
      fusedAdd->getResult(0).replaceAllUsesWith(resultTensor);
      fusedAdd.erase();
    } else {
      combine.getResult().replaceAllUsesWith(resultTensor);
    }
    combine.erase();
    ++numGenerated;
  }
}
