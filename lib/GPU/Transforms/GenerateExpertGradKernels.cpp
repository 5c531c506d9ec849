//===- GenerateExpertGradKernels.cpp - Tensor-core expert gradients -------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-expert-grad-kernels, the GPU back end's kernel
// generator for `moe.expert_ffn_grad` (ALGORITHMS.md sections 6 and 7.1):
// the backward of the grouped expert FFN as five grouped GEMMs on tensor
// cores plus one reduction, all from one block tile (moe/GPU/TileGemm.h).
// For expert j's rows x, dy (o = expert_offsets):
//
//   1. dh = dy Wd[j]^T                              rows of j, f32 [M, F]
//   2. a, u = x Wg[j], x Wu[j]; h = act(a, u),      rows of j, epilogue:
//      da = dh dact/da, du = dh dact/du              h and [da | du] bf16
//   3. dx = [da | du] [Wg[j] | Wu[j]]^T             rows of j, the op's type
//   4. dWd[j] = h^T dy                              split over j's rows
//   5. [dWg[j] | dWu[j]] = x^T [da | du]            split over j's rows
//   6. the splits' fp32 partials summed in split order into the results
//
// A row tile's expert comes from a scan of the offsets in the kernel (no
// schedule kernel); the weight gradients split each expert's rows into
// `splits` runs of whole reduction steps, so that E x splits x tiles fill
// the GPU, and an empty run (or expert) gives zeros. The result is the same
// for every run of the same inputs: no atomics.
//
// Precision policy (`matmul-precision`): under `bf16`, f32 operands (x, dy,
// the weights) are rounded to bf16 by a conversion kernel; dh stays fp32,
// h, da and du are rounded to bf16 as the next GEMMs' operands; every GEMM
// accumulates in fp32. Under `exact` only ops whose x, dy and weights are
// already bf16 are taken.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"
#include "moe/GPU/BF16Conversion.h"
#include "moe/GPU/DeviceEmitter.h"
#include "moe/GPU/TileGemm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEEXPERTGRADKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

constexpr int64_t kRows = TileGemm::kRows;
constexpr int64_t kStep = TileGemm::kStep;
constexpr int64_t kThreads = TileGemm::kThreads;
/// Threads of the split reduction (four elements each).
constexpr int64_t kReduceThreads = 256;

/// The GEMMs over an expert's rows (one block per row tile).
enum class RowGemm {
  /// dh = dy Wd^T: width F, reduction d.
  DownAdjoint,
  /// a, u = x Wg, x Wu and the activation's adjoint: width F, reduction d.
  GateUpAdjoint,
  /// dx = [da | du] [Wg | Wu]^T: width d, reduction 2F.
  Input
};

/// The weight-gradient GEMMs (one block per tile and run of rows).
enum class WeightGemm {
  /// dWd = h^T dy: [F, d].
  Down,
  /// [dWg | dWu] = x^T [da | du]: [d, 2F].
  GateUp
};

/// What shapes the kernels of one op.
struct GradShape {
  int64_t experts, d, width;
  ActivationAttr activation;
  /// Tile columns of the row GEMMs of width F (64 or 128).
  int64_t widthCols() const { return width % 128 == 0 ? 128 : 64; }
};

/// Element type of a memref.
static Type elementOf(Value mem) {
  return cast<MemRefType>(mem.getType()).getElementType();
}

/// Builds the kernels of one module's expert_ffn_grad ops; ops of the same
/// shapes (the layers of a model) share them.
class GradKernelBuilder {
public:
  GradKernelBuilder(gpu::GPUModuleOp module, int64_t stages)
      : module(module), stages(stages),
        converter(module, "expert_grad_to_bf16",
                  [this](StringRef stem) { return uniqueName(stem); }) {}

  gpu::GPUModuleOp module;
  int64_t stages;
  BF16Converter converter;

  TileGemm tile(int64_t cols) const { return TileGemm{cols, stages}; }

  /// Arguments: DownAdjoint (dy, wd, dh, offsets, M); GateUpAdjoint (x,
  /// wg, wu, dh, h, dadu, offsets, M); Input (dadu, wg, wu, dx, offsets,
  /// M). Matrices flat, bf16 but dh (f32) and dx (f32 or bf16).
  gpu::GPUFuncOp rowKernel(Location loc, TypeRange argTypes, RowGemm kind,
                           const GradShape &shape);
  /// Arguments: Down (h, dy, partial, offsets, M); GateUp (x, dadu,
  /// partial, offsets, M). partial [E * splits, rows, cols] f32.
  gpu::GPUFuncOp weightKernel(Location loc, TypeRange argTypes, WeightGemm kind,
                              const GradShape &shape, int64_t splits);
  /// out0 [E, rows, split], out1 [E, rows, cols - split] (absent when split
  /// == cols) = the sum over the splits of partial [E, splits, rows, cols].
  gpu::GPUFuncOp reduceKernel(Location loc, TypeRange argTypes, int64_t splits,
                              int64_t rows, int64_t cols, int64_t split);

private:
  std::string uniqueName(StringRef stem) {
    return llvm::formatv("{0}_{1}", stem, counter++).str();
  }
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

/// The expert offsets entry `i` as an index.
static Value offsetAt(DeviceEmitter &e, Value offsets, Value i) {
  return arith::IndexCastOp::create(e.b, e.b.getIndexType(),
                                    e.load(offsets, {i}));
}

/// The rows of row tile `tile` of a grouped GEMM: each expert's rows are
/// whole tiles of kRows in expert order. Scans the offsets (every thread).
struct RowTile {
  Value valid, expert, rowStart, rowEnd;
};
static RowTile groupedRowTile(DeviceEmitter &e, Value offsets, int64_t experts,
                              Value tile) {
  ImplicitLocOpBuilder &b = e.b;
  Value no = arith::ConstantIntOp::create(b, 0, 1);
  SmallVector<Value> init = {no, e.idx(0), e.idx(0), e.idx(0), e.idx(0)};
  SmallVector<Value> found =
      e.forLoop(e.idx(0), e.idx(experts), 1, init, [&](Value j, ValueRange in) {
        Value first = in[4];
        Value o0 = offsetAt(e, offsets, j),
              o1 = offsetAt(e, offsets, e.add(j, 1));
        Value tiles = e.div(e.add(e.sub(o1, o0), kRows - 1), kRows);
        Value next = e.add(first, tiles);
        Value hit =
            arith::AndIOp::create(b, e.ule(first, tile), e.ult(tile, next));
        Value start = e.add(o0, e.mul(e.sub(tile, first), kRows));
        return SmallVector<Value>{
            arith::OrIOp::create(b, in[0], hit), e.select(hit, j, in[1]),
            e.select(hit, start, in[2]), e.select(hit, o1, in[3]), next};
      });
  return {found[0], found[1], found[2], found[3]};
}

gpu::GPUFuncOp GradKernelBuilder::rowKernel(Location loc, TypeRange argTypes,
                                            RowGemm kind,
                                            const GradShape &shape) {
  std::string key =
      keyOf("expert_grad_rows", argTypes,
            {static_cast<int64_t>(kind), shape.experts, shape.d, shape.width},
            kind == RowGemm::GateUpAdjoint ? Attribute(shape.activation)
                                           : Attribute());
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  StringRef stem = kind == RowGemm::DownAdjoint     ? "expert_grad_dh"
                   : kind == RowGemm::GateUpAdjoint ? "expert_grad_act"
                                                    : "expert_grad_dx";
  gpu::GPUFuncOp func =
      createKernel(module, loc, uniqueName(stem), argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  int64_t d = shape.d, F = shape.width;
  unsigned n = func.getNumArguments();
  Value offsets = func.getArgument(n - 2), rows = func.getArgument(n - 1);
  auto [tid, warp] = e.threadAndWarp();
  Value colTile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tileIndex = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  RowTile rowTile = groupedRowTile(e, offsets, shape.experts, tileIndex);
  Value lastRow = e.sub(rows, e.idx(1));
  auto rowOf = [&](Value r) {
    return arith::MinUIOp::create(b, e.add(rowTile.rowStart, r), lastRow)
        .getResult();
  };

  int64_t cols = kind == RowGemm::Input ? 128 : shape.widthCols();
  TileGemm gemm = tile(cols);
  int64_t nT = gemm.nTiles();
  int64_t reduction = kind == RowGemm::Input ? 2 * F : d;
  // A: rows of the group, reduction along the row.
  Value a = func.getArgument(0);
  TileOperand aOp{false, [&](Value r, Value chunk, Value k0) {
                    return ChunkSource{a,
                                       {e.add(e.mul(rowOf(r), reduction),
                                              e.add(k0, e.mul(chunk, 8)))},
                                       Value()};
                  }};
  TileOperand bOp;
  if (kind == RowGemm::DownAdjoint) {
    // Wd[j] [F, d] is B^T: stage row n = column n of dh.
    Value wd = func.getArgument(1);
    Value colStart = e.mul(colTile, cols);
    bOp = {false, [&, wd, colStart](Value r, Value chunk, Value k0) {
             Value at = e.add(e.mul(rowTile.expert, F * d),
                              e.add(e.mul(e.add(colStart, r), d),
                                    e.add(k0, e.mul(chunk, 8))));
             return ChunkSource{wd, {at}, Value()};
           }};
  } else if (kind == RowGemm::GateUpAdjoint) {
    // Wg[j], Wu[j] [d, F], k-major: the first half of each warp's chunks
    // from Wg, the second from Wu, at the same columns (so that one thread
    // holds a and u of each output).
    Value wg = func.getArgument(1), wu = func.getArgument(2);
    Value colStart = e.mul(colTile, cols / 2);
    bOp = {true, [&, wg, wu, colStart, nT](Value r, Value chunk, Value k0) {
             Value warpColumn = e.div(chunk, nT), j = e.rem(chunk, nT);
             Value fromUp = e.ule(e.idx(nT / 2), j);
             Value col = e.add(colStart, e.add(e.mul(warpColumn, cols / 4),
                                               e.mul(e.rem(j, nT / 2), 8)));
             Value at = e.add(e.mul(rowTile.expert, d * F),
                              e.add(e.mul(e.add(k0, r), F), col));
             return ChunkSource{
                 arith::SelectOp::create(b, fromUp, wu, wg).getResult(),
                 {at},
                 Value()};
           }};
  } else {
    // [Wg[j] | Wu[j]]^T: stage row n = column n of dx holds Wg[j][n, :]
    // then Wu[j][n, :] along the reduction.
    Value wg = func.getArgument(1), wu = func.getArgument(2);
    Value colStart = e.mul(colTile, cols);
    bOp = {false, [&, wg, wu, colStart](Value r, Value chunk, Value k0) {
             Value k = e.add(k0, e.mul(chunk, 8));
             Value fromUp = e.ule(e.idx(F), k);
             Value kk = e.select(fromUp, e.sub(k, e.idx(F)), k);
             Value at = e.add(e.mul(rowTile.expert, d * F),
                              e.add(e.mul(e.add(colStart, r), F), kk));
             return ChunkSource{
                 arith::SelectOp::create(b, fromUp, wu, wg).getResult(),
                 {at},
                 Value()};
           }};
  }

  e.ifThen(rowTile.valid, [&] {
    SmallVector<Value> acc =
        gemm.emit(e, tid, warp, aOp, bOp, e.idx(reduction / kStep));
    auto vec2 = VectorType::get({2}, b.getF32Type());
    auto storePair = [&](Value lo, Value hi, Value mem, Value at) {
      if (elementOf(mem).isBF16())
        return e.storePairBF16(lo, hi, mem, at);
      vector::StoreOp::create(
          b, vector::FromElementsOp::create(b, vec2, ValueRange{lo, hi}), mem,
          ValueRange{at}, /*nontemporal=*/false, llvm::MaybeAlign(8));
    };
    for (int64_t i = 0; i < TileGemm::mTiles(); ++i) {
      for (int64_t half = 0; half < 2; ++half) {
        Value row = e.add(rowTile.rowStart, gemm.accRow(e, warp, i, half));
        e.ifThen(e.ult(row, rowTile.rowEnd), [&] {
          if (kind == RowGemm::GateUpAdjoint) {
            Value dh = func.getArgument(3), h = func.getArgument(4),
                  dadu = func.getArgument(5);
            std::optional<double> gateBeta =
                                      shape.activation.getGateBetaValue(),
                                  upBeta = shape.activation.getUpBetaValue();
            Value warpColumn = e.rem(warp, 2);
            for (int64_t j = 0; j < nT / 2; ++j) {
              Value col = e.add(
                  e.mul(colTile, cols / 2),
                  e.add(e.mul(warpColumn, cols / 4), e.add(e.laneCol, 8 * j)));
              Value dhPair = vector::LoadOp::create(
                  b, vec2, dh, ValueRange{e.add(e.mul(row, F), col)},
                  /*nontemporal=*/false, llvm::MaybeAlign(8));
              SmallVector<Value> hv, dav, duv;
              for (int64_t v = 0; v < 2; ++v) {
                Value av = acc[(i * nT + j) * 4 + 2 * half + v];
                Value uv = acc[(i * nT + j + nT / 2) * 4 + 2 * half + v];
                Value g =
                    vector::ExtractOp::create(b, dhPair, ArrayRef<int64_t>{v});
                auto [dA, dU] = buildGatedActivationGrad(b, b.getLoc(), av, uv,
                                                         gateBeta, upBeta);
                hv.push_back(buildGatedActivation(b, b.getLoc(), av, uv,
                                                  gateBeta, upBeta));
                dav.push_back(e.fmul(g, dA));
                duv.push_back(e.fmul(g, dU));
              }
              e.storePairBF16(hv[0], hv[1], h, e.add(e.mul(row, F), col));
              Value at = e.add(e.mul(row, 2 * F), col);
              e.storePairBF16(dav[0], dav[1], dadu, at);
              e.storePairBF16(duv[0], duv[1], dadu, e.add(at, F));
            }
          } else {
            Value out = func.getArgument(kind == RowGemm::Input ? 3 : 2);
            int64_t width = kind == RowGemm::Input ? d : F;
            for (int64_t j = 0; j < nT; ++j) {
              Value col = e.add(e.mul(colTile, cols), gemm.accCol(e, warp, j));
              int64_t at = (i * nT + j) * 4 + 2 * half;
              storePair(acc[at], acc[at + 1], out,
                        e.add(e.mul(row, width), col));
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

gpu::GPUFuncOp GradKernelBuilder::weightKernel(Location loc, TypeRange argTypes,
                                               WeightGemm kind,
                                               const GradShape &shape,
                                               int64_t splits) {
  std::string key = keyOf("expert_grad_weights", argTypes,
                          {static_cast<int64_t>(kind), shape.experts, shape.d,
                           shape.width, splits});
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  gpu::GPUFuncOp func = createKernel(module, loc,
                                     uniqueName(kind == WeightGemm::Down
                                                    ? "expert_grad_dw_down"
                                                    : "expert_grad_dw_gate_up"),
                                     argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  int64_t d = shape.d, F = shape.width;
  // C [mDim, nDim] = A^T B over the run's rows; A [M, mDim], B [M, nDim].
  int64_t mDim = kind == WeightGemm::Down ? F : d;
  int64_t nDim = kind == WeightGemm::Down ? d : 2 * F;
  int64_t cols = nDim % 128 == 0 ? 128 : 64;
  TileGemm gemm = tile(cols);
  int64_t nT = gemm.nTiles();
  Value a = func.getArgument(0), bMem = func.getArgument(1),
        partial = func.getArgument(2), offsets = func.getArgument(3),
        rows = func.getArgument(4);
  auto [tid, warp] = e.threadAndWarp();
  Value colStart = e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), cols);
  Value rowStart = e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::y), kRows);
  Value run = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value expert = e.div(run, splits), part = e.rem(run, splits);
  // The run: whole reduction steps of ceil(rows / splits) rows.
  Value o0 = offsetAt(e, offsets, expert),
        o1 = offsetAt(e, offsets, e.add(expert, 1));
  Value share = e.div(e.add(e.sub(o1, o0), splits - 1), splits);
  Value per = e.mul(e.div(e.add(share, kStep - 1), kStep), kStep);
  Value kStart = e.add(o0, e.mul(part, per));
  Value kEnd = arith::MaxSIOp::create(
      b, arith::MinSIOp::create(b, e.add(kStart, per), o1), kStart);
  Value length = e.sub(kEnd, kStart);
  Value steps = e.div(e.add(length, kStep - 1), kStep);
  Value lastRow = e.sub(rows, e.idx(1));

  // Both operands k-major: stage row r is the run's row k0 + r (zeros past
  // its end; the address clamped to a real row).
  auto rowSource = [&](Value mem, int64_t width, Value colBase, int64_t limit) {
    return [&, mem, width, colBase, limit](Value r, Value chunk, Value k0) {
      Value row = e.add(kStart, e.add(k0, r));
      Value valid =
          arith::CmpIOp::create(b, arith::CmpIPredicate::slt, row, kEnd);
      Value col = e.add(colBase, e.mul(chunk, 8));
      if (limit % 128 != 0)
        col = arith::MinUIOp::create(b, col, e.idx(limit - 8));
      Value at =
          e.add(e.mul(arith::MinUIOp::create(b, row, lastRow), width), col);
      return ChunkSource{mem, {at}, valid};
    };
  };
  TileOperand aOp{true, rowSource(a, mDim, rowStart, mDim)};
  TileOperand bOp{true, rowSource(bMem, nDim, colStart, nDim)};

  // An empty run gives zeros without reading anything.
  int64_t count = TileGemm::mTiles() * nT * 4;
  SmallVector<Type> accTypes(count, b.getF32Type());
  auto ifRows = scf::IfOp::create(b, accTypes, e.ult(e.idx(0), length),
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifRows.getThenRegion().front());
    scf::YieldOp::create(b, gemm.emit(e, tid, warp, aOp, bOp, steps));
    b.setInsertionPointToStart(&ifRows.getElseRegion().front());
    scf::YieldOp::create(b, SmallVector<Value>(count, e.f32(0.0)));
  }
  auto vec2 = VectorType::get({2}, b.getF32Type());
  for (int64_t i = 0; i < TileGemm::mTiles(); ++i) {
    for (int64_t half = 0; half < 2; ++half) {
      Value m = e.add(rowStart, gemm.accRow(e, warp, i, half));
      e.ifThen(e.ult(m, e.idx(mDim)), [&] {
        for (int64_t j = 0; j < nT; ++j) {
          Value col = e.add(colStart, gemm.accCol(e, warp, j));
          int64_t at = (i * nT + j) * 4 + 2 * half;
          Value pair = vector::FromElementsOp::create(
              b, vec2,
              ValueRange{ifRows.getResult(at), ifRows.getResult(at + 1)});
          Value index = e.add(e.mul(e.add(e.mul(run, mDim), m), nDim), col);
          vector::StoreOp::create(b, pair, partial, ValueRange{index},
                                  /*nontemporal=*/false, llvm::MaybeAlign(8));
        }
      });
    }
  }
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

gpu::GPUFuncOp GradKernelBuilder::reduceKernel(Location loc, TypeRange argTypes,
                                               int64_t splits, int64_t rows,
                                               int64_t cols, int64_t split) {
  std::string key =
      keyOf("expert_grad_sum", argTypes, {splits, rows, cols, split});
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  gpu::GPUFuncOp func = createKernel(module, loc, uniqueName("expert_grad_sum"),
                                     argTypes, kReduceThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value partial = func.getArgument(0), out0 = func.getArgument(1);
  Value out1 = split < cols ? func.getArgument(2) : Value();
  Value quads = func.getArgument(func.getNumArguments() - 1);
  Value q =
      e.add(e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), kReduceThreads),
            gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  auto vec4 = VectorType::get({4}, b.getF32Type());
  int64_t slab = rows * cols;
  e.ifThen(e.ult(q, quads), [&] {
    Value expert = e.div(q, slab / 4);
    Value p = e.mul(e.rem(q, slab / 4), 4);
    Value sum = arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec4, b.getF32FloatAttr(0.0)));
    // The splits in order: the same sum on every run.
    for (int64_t s = 0; s < splits; ++s) {
      Value at = e.add(e.mul(e.add(e.mul(expert, splits), e.idx(s)), slab), p);
      sum = arith::AddFOp::create(
          b, sum,
          vector::LoadOp::create(b, vec4, partial, ValueRange{at},
                                 /*nontemporal=*/false, llvm::MaybeAlign(16)));
    }
    Value m = e.div(p, cols), n = e.rem(p, cols);
    auto store = [&](Value mem, int64_t width, Value col) {
      Value v = sum;
      if (elementOf(mem).isBF16())
        v = arith::TruncFOp::create(b, VectorType::get({4}, b.getBF16Type()),
                                    v);
      Value at = e.add(e.mul(e.add(e.mul(expert, rows), m), width), col);
      vector::StoreOp::create(b, v, mem, ValueRange{at},
                              /*nontemporal=*/false, llvm::MaybeAlign(8));
    };
    if (!out1)
      return store(out0, cols, n);
    auto ifLeft = scf::IfOp::create(b, e.ult(n, e.idx(split)),
                                    /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifLeft.getThenRegion().front());
    store(out0, split, n);
    b.setInsertionPointToStart(&ifLeft.getElseRegion().front());
    store(out1, cols - split, e.sub(n, e.idx(split)));
  });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// Why the generator does not take `op` (empty when it does).
static std::string unsupportedReason(ExpertFFNGradOp op, bool exact) {
  auto x = cast<RankedTensorType>(op.getInput().getType());
  auto wg = cast<RankedTensorType>(op.getWGate().getType());
  auto wu = cast<RankedTensorType>(op.getWUp().getType());
  auto wd = cast<RankedTensorType>(op.getWDown().getType());
  auto dy = cast<RankedTensorType>(op.getResultGrad().getType());
  if (x.getRank() != 2)
    return "the input is not [rows, d]";
  if (wg.getRank() != 3 || !wg.hasStaticShape() || !wu.hasStaticShape() ||
      !wd.hasStaticShape())
    return "the weights are not static [E, d, F] and [E, F, d]";
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"input", x},
                            {"w_gate", wg},
                            {"w_up", wu},
                            {"w_down", wd},
                            {"result_grad", dy}}) {
    Type element = type.getElementType();
    if (!element.isBF16() && (exact || !element.isF32()))
      return llvm::formatv("{0} is {1}", name,
                           exact ? "not bf16 (matmul-precision=exact)"
                                 : "neither f32 nor bf16")
          .str();
  }
  int64_t d = x.getDimSize(1), width = wg.getDimSize(2);
  if (ShapedType::isDynamic(d) || d % 128 != 0)
    return "the hidden size is not a static multiple of 128";
  if (width % 64 != 0)
    return "the expert width is not a multiple of 64";
  return "";
}

/// `mem` (identity layout) as a 1-D memref.
static Value flatten(ImplicitLocOpBuilder &b, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  if (type.getRank() == 1)
    return mem;
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return memref::CollapseShapeOp::create(b, mem,
                                         ArrayRef<ReassociationIndices>{all});
}

struct MoEGenerateExpertGradKernelsPass
    : public moe::impl::MoEGenerateExpertGradKernelsBase<
          MoEGenerateExpertGradKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
  void generate(ExpertFFNGradOp op, GradKernelBuilder &kernels);
};

void MoEGenerateExpertGradKernelsPass::generate(ExpertFFNGradOp op,
                                                GradKernelBuilder &kernels) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  DeviceEmitter e(b);
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  auto wgType = cast<RankedTensorType>(op.getWGate().getType());
  GradShape shape{wgType.getDimSize(0), wgType.getDimSize(1),
                  wgType.getDimSize(2), op.getActivation()};
  int64_t E = shape.experts, d = shape.d, F = shape.width;
  Location loc = op.getLoc();

  Value input = readOnlyBuffer(b, op.getInput());
  Value dy = readOnlyBuffer(b, op.getResultGrad());
  Value offsets = readOnlyBuffer(b, op.getExpertOffsets());
  Value rows = memref::DimOp::create(b, input, 0);
  Value wg = flatten(b, kernels.converter.staticAsBF16(b, op.getWGate()));
  Value wu = flatten(b, kernels.converter.staticAsBF16(b, op.getWUp()));
  Value wd = flatten(b, kernels.converter.staticAsBF16(b, op.getWDown()));

  // The row operands in bf16: in place, or rounded into device buffers once
  // there are rows.
  auto asBF16 = [&](Value mem, SmallVectorImpl<Value> &toConvert) {
    if (elementOf(mem).isBF16())
      return flatten(b, mem);
    Value flat = allocateDeviceBuffers(b, {{e.mul(rows, d), bf16}}).front();
    toConvert.append({mem, flat});
    return flat;
  };
  SmallVector<Value> toConvert;
  Value x = asBF16(input, toConvert), dyb = asBF16(dy, toConvert);
  SmallVector<Value> scratch =
      allocateDeviceBuffers(b, {{e.mul(rows, F), f32},
                                {e.mul(rows, F), bf16},
                                {e.mul(rows, 2 * F), bf16}});
  Value dh = scratch[0], h = scratch[1], dadu = scratch[2];

  auto allocResult = [&](Value result, ValueRange sizes) {
    auto type = cast<RankedTensorType>(result.getType());
    return memref::AllocOp::create(
               b, MemRefType::get(type.getShape(), type.getElementType()),
               dynamicSizes(type, sizes))
        .getResult();
  };
  Value dx = allocResult(op.getInputGrad(), {rows, e.idx(d)});
  Value dwg = allocResult(op.getWGateGrad(), {});
  Value dwu = allocResult(op.getWUpGrad(), {});
  Value dwd = allocResult(op.getWDownGrad(), {});

  Value one = e.idx(1);
  auto smem = [&](const TileGemm &gemm) {
    return arith::ConstantIntOp::create(b, gemm.sharedBytes(), 32).getResult();
  };
  Value tiles = e.add(e.div(e.add(rows, kRows - 1), kRows), e.idx(E));
  auto launchRows = [&](RowGemm kind, SmallVector<Value> args) {
    args.append({offsets, rows});
    int64_t cols = kind == RowGemm::Input ? 128 : shape.widthCols();
    int64_t width = kind == RowGemm::Input ? d : F;
    int64_t colTiles =
        kind == RowGemm::GateUpAdjoint ? F / (cols / 2) : width / cols;
    gpu::GPUFuncOp func =
        kernels.rowKernel(loc, ValueRange(args).getTypes(), kind, shape);
    gpu::LaunchFuncOp::create(b, func,
                              gpu::KernelDim3{e.idx(colTiles), tiles, one},
                              gpu::KernelDim3{e.idx(kThreads), one, one},
                              smem(kernels.tile(cols)), args);
  };
  // Without rows there is nothing to read (the weight gradients are zeros
  // from the empty runs below).
  e.ifThen(e.ult(e.idx(0), rows), [&] {
    for (size_t i = 0; i < toConvert.size(); i += 2)
      kernels.converter.launch(b, toConvert[i], toConvert[i + 1],
                               e.mul(rows, d));
    launchRows(RowGemm::DownAdjoint, {dyb, wd, dh});
    launchRows(RowGemm::GateUpAdjoint, {x, wg, wu, dh, h, dadu});
    launchRows(RowGemm::Input, {dadu, wg, wu, flatten(b, dx)});
  });

  auto launchWeights = [&](WeightGemm kind, Value a, Value bMem,
                           ValueRange outs) {
    int64_t mDim = kind == WeightGemm::Down ? F : d;
    int64_t nDim = kind == WeightGemm::Down ? d : 2 * F;
    int64_t cols = nDim % 128 == 0 ? 128 : 64;
    int64_t blocksPerExpert = (mDim + kRows - 1) / kRows * (nDim / cols);
    int64_t splits = std::clamp<int64_t>(
        (splitBlocks + E * blocksPerExpert - 1) / (E * blocksPerExpert), 1, 64);
    Value partial =
        allocateDeviceBuffers(b, {{e.idx(E * splits * mDim * nDim), f32}})
            .front();
    SmallVector<Value> args = {a, bMem, partial, offsets, rows};
    gpu::GPUFuncOp gemm = kernels.weightKernel(loc, ValueRange(args).getTypes(),
                                               kind, shape, splits);
    gpu::LaunchFuncOp::create(b, gemm,
                              gpu::KernelDim3{e.idx(nDim / cols),
                                              e.idx((mDim + kRows - 1) / kRows),
                                              e.idx(E * splits)},
                              gpu::KernelDim3{e.idx(kThreads), one, one},
                              smem(kernels.tile(cols)), args);
    SmallVector<Value> sumArgs = {partial};
    for (Value out : outs)
      sumArgs.push_back(flatten(b, out));
    int64_t quads = E * mDim * nDim / 4;
    sumArgs.push_back(e.idx(quads));
    gpu::GPUFuncOp sum =
        kernels.reduceKernel(loc, ValueRange(sumArgs).getTypes(), splits, mDim,
                             nDim, outs.size() == 2 ? F : nDim);
    gpu::LaunchFuncOp::create(
        b, sum,
        gpu::KernelDim3{e.idx((quads + kReduceThreads - 1) / kReduceThreads),
                        one, one},
        gpu::KernelDim3{e.idx(kReduceThreads), one, one}, Value(), sumArgs);
  };
  launchWeights(WeightGemm::Down, h, dyb, {dwd});
  launchWeights(WeightGemm::GateUp, x, dadu, {dwg, dwu});

  SmallVector<Value> results, mems = {dx, dwg, dwu, dwd};
  for (auto [result, mem] : llvm::zip(op->getResults(), mems))
    results.push_back(bufferization::ToTensorOp::create(
        b, result.getType(), mem, /*restrict=*/true, /*writable=*/true));
  op->replaceAllUsesWith(results);
  op->erase();
  ++numGenerated;
}

void MoEGenerateExpertGradKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (stages < 3 || stages > 6) {
    module.emitError() << "expects 3 to 6 stages, got "
                       << static_cast<int64_t>(stages);
    return signalPassFailure();
  }
  if (splitBlocks < 1) {
    module.emitError() << "expects split-blocks of at least 1, got "
                       << static_cast<int64_t>(splitBlocks);
    return signalPassFailure();
  }
  if (matmulPrecision != "bf16" && matmulPrecision != "exact") {
    module.emitError() << "expects matmul-precision bf16 or exact, got '"
                       << matmulPrecision << "'";
    return signalPassFailure();
  }
  bool exact = matmulPrecision == "exact";
  SmallVector<ExpertFFNGradOp> ops;
  module.walk([&](ExpertFFNGradOp op) {
    std::string reason = unsupportedReason(op, exact);
    if (!reason.empty()) {
      op.emitRemark() << "expert_ffn_grad left to -moe-lower-routing-grad: "
                      << reason;
      return;
    }
    ops.push_back(op);
  });
  if (ops.empty())
    return;
  gpu::GPUModuleOp gpuModule =
      createKernelModule(module, "moe_expert_grad_kernels");
  GradKernelBuilder kernels(gpuModule, stages);
  for (ExpertFFNGradOp op : ops)
    generate(op, kernels);
}

} // namespace
