//===- GemmEmitter.cpp - Tensor-core GEMM kernels -------------------------===//
//
// Part of the moe-mlir project.
//
// The GEMM kernel of GemmEmitter.h. A block computes 128 rows by 128 (or 64)
// columns of C = A B, stepping 32 along the reduction: four warps of 64 rows
// by half the columns, mma.sync m16n8k16 with bf16 operands and fp32
// accumulators, fragments read by ldmatrix.x4 from shared memory whose
// 16-byte chunks are XOR-swizzled by row. bf16 operands reach shared memory
// by cp.async `stages - 2` steps ahead of use; f32 operands are loaded into
// registers one step ahead, rounded to bf16 and stored after the step's MMAs.
//
// A weight gradient (GemmShape::rowSum) is the same kernel with A read
// transposed: its tile is staged k-major ([32 rows][128 columns], the way B
// is) and ldmatrix transposes A's fragments. Its reduction runs over the
// rows of a split, whose reads past the split's end are zero-filled
// (cp.async's source size 0, or a select for f32 operands), and each split
// writes a partial [m, n] that a second kernel adds up in split order.
//
//===----------------------------------------------------------------------===//

#include "moe/GPU/GemmEmitter.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

constexpr int64_t kRows = GemmEmitter::kRows;
constexpr int64_t kStep = GemmEmitter::kStep;
constexpr int64_t kThreads = GemmEmitter::kThreads;

/// The tiles of one pipeline stage: A [kRows][kStep] then B ([kStep][cols]
/// k-major, or [cols][kStep] n-major when transposed), bf16.
struct StageLayout {
  int64_t cols;
  int64_t aElements() const { return kRows * kStep; }
  int64_t elements() const { return aElements() + kStep * cols; }
};

/// One 16-byte chunk (8 elements) a thread fills each step: its element
/// offset within a stage, and its global row and column at step 0 (the
/// step's reduction offset is added to the row when `kOnRow`, else to the
/// column).
struct Piece {
  Value smem, row, col;
};

/// An operand's global memory and the chunks this thread fills.
struct StagedOperand {
  Value mem;
  bool f32, kOnRow;
  SmallVector<Piece> pieces;
};

/// Threads of the combining kernel of a weight gradient.
constexpr int64_t kCombineThreads = 256;

} // namespace

int64_t GemmEmitter::sharedBytes(const GemmShape &shape) const {
  return stages * StageLayout{shape.cols()}.elements() * 2;
}

gpu::GPUFuncOp GemmEmitter::kernel(Location loc, TypeRange argTypes,
                                   const GemmShape &shape) {
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    os << shape.k << ' ' << shape.n << ' ' << shape.aF32 << shape.bF32
       << shape.transposed << ' ' << llvm::bit_cast<uint64_t>(shape.init) << ' '
       << shape.rowSum << ' ' << shape.m;
    for (Type t : argTypes)
      os << ' ' << t;
  }
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  std::string name =
      shape.rowSum ? llvm::formatv("gemm_rowsum_{0}x{1}_{2}", shape.m, shape.n,
                                   counter++)
                         .str()
                   : llvm::formatv("gemm_{0}x{1}{2}_{3}", shape.k, shape.n,
                                   shape.transposed ? "t" : "", counter++)
                         .str();
  gpu::GPUFuncOp func = createKernel(module, loc, name, argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value aMem = func.getArgument(0), bMem = func.getArgument(1),
        cMem = func.getArgument(2), rows = func.getArgument(3);
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();

  int64_t cols = shape.cols(), n = shape.n;
  StageLayout layout{cols};
  int64_t stageElements = layout.elements(), aElements = layout.aElements();
  // Warps: 2 x 2, each 64 rows by cols / 2 columns: 4 m16 tiles by
  // cols / 16 n8 tiles.
  int64_t warpCols = cols / 2, mTiles = 4, nTiles = warpCols / 8;
  constexpr int64_t kChunks = kStep / 8;

  auto [tid, warp] = e.threadAndWarp();
  Value colTile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value rowTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value rowStart = e.mul(rowTile, kRows), colStart = e.mul(colTile, cols);
  Value warpRow = e.mul(e.div(warp, 2), 64);
  Value warpCol = e.mul(e.rem(warp, 2), warpCols);
  Value lastRow = e.sub(rows, e.idx(1));
  // rowSum: this block's split of the summed rows, [splitStart, splitEnd),
  // and its reduction steps (the last one zero-filled past splitEnd).
  Value split, splitStart, splitEnd, numSteps;
  if (shape.rowSum) {
    split = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    Value perSplit = func.getArgument(4);
    splitStart = e.mul(split, perSplit);
    splitEnd = arith::MinUIOp::create(b, e.add(splitStart, perSplit), rows);
    Value length =
        e.sub(arith::MaxUIOp::create(b, splitEnd, splitStart), splitStart);
    numSteps = e.div(e.add(length, kStep - 1), kStep);
  }

  Value smem = e.dynamicSharedMemory();
  Value staged = e.sharedView(smem, 0, stages * stageElements, bf16);

  // The chunks this thread fills each step. A: kRows rows of kChunks;
  // rows past M re-read the last row (not stored). rowSum: kStep summed rows
  // of kRows / 8 chunks (k-major, as B), columns past m re-read the last
  // ones (not stored).
  constexpr int64_t kRowChunksT = kRows / 8;
  StagedOperand a{aMem, shape.aF32, /*kOnRow=*/shape.rowSum, {}};
  for (int64_t i = 0; i < kRows * kChunks / kThreads; ++i) {
    Value piece = e.add(tid, i * kThreads);
    if (shape.rowSum) {
      Value r = e.div(piece, kRowChunksT), chunk = e.rem(piece, kRowChunksT);
      Value col = e.add(rowStart, e.mul(chunk, 8));
      if (shape.m % kRows != 0)
        col = arith::MinUIOp::create(b, col, e.idx(shape.m - 8));
      a.pieces.push_back(
          {e.swizzledOffset(r, chunk, kRowChunksT), e.add(splitStart, r), col});
      continue;
    }
    Value r = e.div(piece, kChunks), chunk = e.rem(piece, kChunks);
    a.pieces.push_back({e.swizzledOffset(r, chunk, kChunks),
                        arith::MinUIOp::create(b, e.add(rowStart, r), lastRow),
                        e.mul(chunk, 8)});
  }
  // B: kStep rows of cols / 8 chunks (k-major), or cols rows of kChunks
  // (n-major); columns past N re-read the last ones (not stored).
  StagedOperand w{bMem, shape.bF32, /*kOnRow=*/!shape.transposed, {}};
  for (int64_t i = 0; i < kStep * cols / 8 / kThreads; ++i) {
    Value piece = e.add(tid, i * kThreads);
    if (shape.transposed) {
      Value r = e.div(piece, kChunks), chunk = e.rem(piece, kChunks);
      Value col = e.add(colStart, r);
      if (n % cols != 0)
        col = arith::MinUIOp::create(b, col, e.idx(n - 1));
      w.pieces.push_back(
          {e.add(e.idx(aElements), e.swizzledOffset(r, chunk, kChunks)), col,
           e.mul(chunk, 8)});
    } else {
      int64_t rowChunks = cols / 8;
      Value r = e.div(piece, rowChunks), chunk = e.rem(piece, rowChunks);
      Value col = e.add(colStart, e.mul(chunk, 8));
      if (n % cols != 0)
        col = arith::MinUIOp::create(b, col, e.idx(n - 8));
      w.pieces.push_back(
          {e.add(e.idx(aElements), e.swizzledOffset(r, chunk, rowChunks)),
           shape.rowSum ? e.add(splitStart, r) : r, col});
    }
  }
  SmallVector<StagedOperand *> asyncOps, registerOps;
  for (StagedOperand *op : {&a, &w})
    (op->f32 ? registerOps : asyncOps).push_back(op);

  // A reduction size that is not a multiple of kStep (a multiple of 8):
  // the last step's chunks past k read nothing and are zeros.
  bool kTail = !shape.rowSum && shape.k % kStep != 0;
  auto reductionIndex = [&](const StagedOperand &op, const Piece &p, Value k0) {
    return e.add(op.kOnRow ? p.row : p.col, k0);
  };
  auto inReduction = [&](const StagedOperand &op, const Piece &p, Value k0) {
    return e.ult(reductionIndex(op, p, k0), e.idx(shape.k));
  };
  auto globalIndex = [&](const StagedOperand &op, const Piece &p, Value k0) {
    if (shape.rowSum) // Past the split: a valid row, its data unused.
      return SmallVector<Value>{
          arith::MinUIOp::create(b, e.add(p.row, k0), lastRow), p.col};
    Value k = reductionIndex(op, p, k0);
    // Past k: a valid row (k-major) or chunk, its data unused; rows and
    // chunks below k keep their own index.
    if (kTail)
      k = arith::MinUIOp::create(b, k,
                                 e.idx(op.kOnRow ? shape.k - 1 : shape.k - 8));
    return op.kOnRow ? SmallVector<Value>{k, p.col}
                     : SmallVector<Value>{p.row, k};
  };
  // rowSum: whether the piece's row at step offset k0 is in the split.
  auto inSplit = [&](const Piece &p, Value k0) {
    return e.ult(e.add(p.row, k0), splitEnd);
  };
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  // cp.async of step `at`'s bf16 operands into `stage`, as one group.
  auto issueAsync = [&](Value at, Value stage) -> Value {
    Value base = e.mul(stage, stageElements), k0 = e.mul(at, kStep);
    for (StagedOperand *op : asyncOps)
      for (const Piece &p : op->pieces) {
        // rowSum: rows past the split read nothing and fill zeros.
        Value srcElements;
        if (shape.rowSum)
          srcElements = e.select(inSplit(p, k0), e.idx(8), e.idx(0));
        else if (kTail)
          srcElements = e.select(inReduction(*op, p, k0), e.idx(8), e.idx(0));
        nvgpu::DeviceAsyncCopyOp::create(
            b, staged, ValueRange{e.add(base, p.smem)}, op->mem,
            globalIndex(*op, p, k0), b.getIndexAttr(8), srcElements,
            b.getUnitAttr());
      }
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange())
        .getResult();
  };
  // The f32 operands' chunks of step `at`, in registers.
  auto vec8 = VectorType::get({8}, f32);
  auto loadRegisters = [&](Value at) {
    SmallVector<Value> loaded;
    Value k0 = e.mul(at, kStep);
    for (StagedOperand *op : registerOps)
      for (const Piece &p : op->pieces) {
        Value v =
            vector::LoadOp::create(b, vec8, op->mem, globalIndex(*op, p, k0),
                                   /*nontemporal=*/false, llvm::MaybeAlign(16));
        if (shape.rowSum || kTail)
          v = e.select(shape.rowSum ? inSplit(p, k0) : inReduction(*op, p, k0),
                       v,
                       arith::ConstantOp::create(
                           b, vec8, DenseElementsAttr::get(vec8, 0.0f)));
        loaded.push_back(v);
      }
    return loaded;
  };
  // ... rounded to bf16 and stored into `stage`.
  auto storeRegisters = [&](ArrayRef<Value> loaded, Value stage) {
    Value base = e.mul(stage, stageElements);
    auto vec8bf16 = VectorType::get({8}, bf16);
    unsigned i = 0;
    for (StagedOperand *op : registerOps)
      for (const Piece &p : op->pieces)
        vector::StoreOp::create(
            b, arith::TruncFOp::create(b, vec8bf16, loaded[i++]), staged,
            ValueRange{e.add(base, p.smem)}, /*nontemporal=*/false,
            llvm::MaybeAlign(16));
  };

  // ldmatrix lanes: lane l gives row l % 8 of matrix l / 8.
  Value matrix = e.div(e.lane, 8), matrixRow = e.rem(e.lane, 8);
  Value matrixLow8 = e.mul(e.rem(matrix, 2), 8), matrixHigh = e.div(matrix, 2);
  // The A fragment of rows warpRow + row0 .. + 15, reduction k0 .. k0 + 15.
  auto fragA = [&](Value base, int64_t row0, int64_t k0) {
    if (shape.rowSum) {
      // Row k holds row k of A^T's columns, read transposed: matrix i is
      // row half i % 2, k half i / 2.
      Value r = e.add(e.idx(k0), e.add(matrixRow, e.mul(matrixHigh, 8)));
      Value chunk = e.add(e.div(e.add(warpRow, row0), 8), e.div(matrixLow8, 8));
      SmallVector<Value> words = e.ldmatrix(
          staged, e.add(base, e.swizzledOffset(r, chunk, kRowChunksT)), 4,
          /*transpose=*/true);
      return Frag4{words[0], words[1], words[2], words[3]};
    }
    Value r = e.add(e.add(warpRow, row0), e.add(matrixRow, matrixLow8));
    Value chunk = e.add(matrixHigh, k0 / 8);
    SmallVector<Value> words =
        e.ldmatrix(staged, e.add(base, e.swizzledOffset(r, chunk, kChunks)), 4,
                   /*transpose=*/false);
    return Frag4{words[0], words[1], words[2], words[3]};
  };
  // The B fragments of tile columns col0 .. col0 + 7 and col0 + 8 .. + 15.
  auto fragsB = [&](Value base, int64_t col0, int64_t k0) {
    Value bBase = e.add(base, e.idx(aElements));
    Value at;
    if (shape.transposed) {
      // Row n holds column n of B: matrix i is n half i / 2, k half i % 2.
      Value r =
          e.add(e.add(warpCol, col0), e.add(matrixRow, e.mul(matrixHigh, 8)));
      Value chunk = e.add(e.div(matrixLow8, 8), k0 / 8);
      at = e.swizzledOffset(r, chunk, kChunks);
    } else {
      // Row k holds row k of B, read transposed: matrix i is k half i % 2,
      // n half i / 2.
      Value r = e.add(e.idx(k0), e.add(matrixRow, matrixLow8));
      Value chunk = e.add(e.div(e.add(warpCol, col0), 8), matrixHigh);
      at = e.swizzledOffset(r, chunk, cols / 8);
    }
    SmallVector<Value> words =
        e.ldmatrix(staged, e.add(bBase, at), 4, !shape.transposed);
    return std::array<std::array<Value, 2>, 2>{
        {{words[0], words[1]}, {words[2], words[3]}}};
  };

  // Steps past the end re-read the last one (rowSum: read zeros, unused).
  int64_t steps = llvm::divideCeil(shape.k, kStep);
  auto clampStep = [&](Value s) -> Value {
    if (shape.rowSum)
      return s;
    return arith::MinUIOp::create(b, s, e.idx(steps - 1));
  };
  // Prologue: the bf16 operands of the first stages - 2 steps in flight,
  // the f32 ones of step 0 in shared memory.
  if (!asyncOps.empty())
    for (int64_t s = 0; s < stages - 2; ++s)
      issueAsync(clampStep(e.idx(s)), e.idx(s));
  if (!registerOps.empty())
    storeRegisters(loadRegisters(e.idx(0)), e.idx(0));

  // rowSum: the partial sums start at 0; init is added when combining.
  SmallVector<Value> init(mTiles * nTiles * 4,
                          e.f32(shape.rowSum ? 0.0 : shape.init));
  SmallVector<Value> acc = e.forLoop(
      e.idx(0), shape.rowSum ? numSteps : e.idx(steps), 1, init,
      [&](Value now, ValueRange accIn) {
        // Step now + stages - 2 (clamped: past the end, the last step again)
        // goes to the stage read two steps ago, which every warp left before
        // the previous step's barrier.
        if (!asyncOps.empty()) {
          Value ahead = e.add(now, stages - 2);
          Value group = issueAsync(clampStep(ahead), e.rem(ahead, stages));
          nvgpu::DeviceAsyncWaitOp::create(b, group,
                                           b.getI32IntegerAttr(stages - 2));
        }
        // Step now + 1's f32 operands, in flight during this step's MMAs.
        SmallVector<Value> loaded;
        if (!registerOps.empty())
          loaded = loadRegisters(clampStep(e.add(now, 1)));
        e.barrier();
        Value base = e.mul(e.rem(now, stages), stageElements);
        SmallVector<Value> accOut(accIn.begin(), accIn.end());
        for (int64_t kk = 0; kk < kStep / 16; ++kk) {
          SmallVector<Frag4> fa;
          for (int64_t i = 0; i < mTiles; ++i)
            fa.push_back(fragA(base, 16 * i, 16 * kk));
          SmallVector<std::array<Value, 2>> fb;
          for (int64_t pair = 0; pair < nTiles / 2; ++pair) {
            auto two = fragsB(base, 16 * pair, 16 * kk);
            fb.push_back(two[0]);
            fb.push_back(two[1]);
          }
          for (int64_t i = 0; i < mTiles; ++i)
            for (int64_t j = 0; j < nTiles; ++j) {
              int64_t at = (i * nTiles + j) * 4;
              Frag4 c{accOut[at], accOut[at + 1], accOut[at + 2],
                      accOut[at + 3]};
              Frag4 d = e.mma(fa[i], fb[j], c);
              for (int64_t v = 0; v < 4; ++v)
                accOut[at + v] = d[v];
            }
        }
        // Stage now + 1 was last read at step now + 1 - stages, before the
        // barrier of step now - 1 (stages >= 3), and no copy writes its
        // part of the stage: the next step's barrier publishes it.
        if (!registerOps.empty())
          storeRegisters(loaded, e.rem(e.add(now, 1), stages));
        return accOut;
      });
  if (!asyncOps.empty())
    nvgpu::DeviceAsyncWaitOp::create(
        b, nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange()),
        b.getI32IntegerAttr(0));

  // Epilogue: fp32 pairs of rows below M (and columns below N); rowSum:
  // rows below m, into the split's slice of the partials.
  auto vec2 = VectorType::get({2}, f32);
  Value rowLimit = shape.rowSum ? e.idx(shape.m) : rows;
  for (int64_t i = 0; i < mTiles; ++i) {
    for (int64_t half = 0; half < 2; ++half) {
      Value row = e.add(e.add(rowStart, warpRow),
                        e.add(e.laneGroup, 16 * i + 8 * half));
      e.ifThen(e.ult(row, rowLimit), [&] {
        for (int64_t j = 0; j < nTiles; ++j) {
          int64_t at = (i * nTiles + j) * 4 + 2 * half;
          Value col = e.add(e.add(colStart, warpCol), e.add(e.laneCol, 8 * j));
          auto store = [&] {
            Value pair = vector::FromElementsOp::create(
                b, vec2, ValueRange{acc[at], acc[at + 1]});
            SmallVector<Value> at2 = {row, col};
            if (shape.rowSum)
              at2 = {e.add(e.mul(e.add(e.mul(split, shape.m), row), n), col)};
            vector::StoreOp::create(b, pair, cMem, at2,
                                    /*nontemporal=*/false, llvm::MaybeAlign(8));
          };
          if (n % cols != 0)
            e.ifThen(e.ult(col, e.idx(n)), store);
          else
            store();
        }
      });
    }
  }
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

void GemmEmitter::launch(DeviceEmitter &e, gpu::GPUFuncOp func,
                         const GemmShape &shape, ValueRange args) {
  ImplicitLocOpBuilder &b = e.b;
  Value rows = args[3];
  int64_t cols = shape.cols();
  Value one = e.idx(1);
  // The grid is empty without rows.
  e.ifThen(e.ult(e.idx(0), rows), [&] {
    gpu::LaunchFuncOp::create(
        b, func,
        gpu::KernelDim3{e.idx((shape.n + cols - 1) / cols),
                        e.div(e.add(rows, kRows - 1), kRows), one},
        gpu::KernelDim3{e.idx(kThreads), one, one},
        arith::ConstantIntOp::create(b, sharedBytes(shape), 32), args);
  });
}

gpu::GPUFuncOp GemmEmitter::combineKernel(Location loc, TypeRange argTypes,
                                          const GemmShape &shape) {
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    os << "combine " << shape.m << ' ' << shape.n << ' '
       << llvm::bit_cast<uint64_t>(shape.init);
    for (Type t : argTypes)
      os << ' ' << t;
  }
  if (gpu::GPUFuncOp known = built.lookup(key))
    return known;
  std::string name = llvm::formatv("gemm_rowsum_combine_{0}x{1}_{2}", shape.m,
                                   shape.n, counter++)
                         .str();
  gpu::GPUFuncOp func =
      createKernel(module, loc, name, argTypes, kCombineThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value partials = func.getArgument(0), cMem = func.getArgument(1),
        splits = func.getArgument(2);
  int64_t outputs = shape.m * shape.n;
  // One thread per output; neighbours read neighbouring partials.
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value at = e.add(e.mul(block, kCombineThreads), thread);
  e.ifThen(e.ult(at, e.idx(outputs)), [&] {
    SmallVector<Value> sum =
        e.forLoop(e.idx(0), splits, 1, ValueRange{e.f32(shape.init)},
                  [&](Value z, ValueRange acc) -> SmallVector<Value> {
                    Value v = e.load(partials, {e.add(e.mul(z, outputs), at)});
                    return {e.fadd(acc[0], v)};
                  });
    e.store(sum[0], cMem, {e.div(at, shape.n), e.rem(at, shape.n)});
  });
  gpu::ReturnOp::create(b);
  built[key] = func;
  return func;
}

void GemmEmitter::launchRowSum(DeviceEmitter &e, const GemmShape &shape,
                               Value a, Value bMem, Value c) {
  ImplicitLocOpBuilder &b = e.b;
  Location loc = b.getLoc();
  Value one = e.idx(1);
  int64_t cols = shape.cols();
  int64_t colTiles = (shape.n + cols - 1) / cols,
          rowTiles = (shape.m + kRows - 1) / kRows;
  // Splits of at least 256 rows (a multiple of the step), as many as make
  // the tiles times the splits reach kRowSumBlocks; at least one, so that
  // the partials are written (as zeros) when there are no rows.
  Value rows = memref::DimOp::create(b, a, 0);
  int64_t wanted = std::max<int64_t>(
      1, (kRowSumBlocks + colTiles * rowTiles - 1) / (colTiles * rowTiles));
  Value perSplit = e.mul(
      e.div(e.add(e.div(e.add(rows, wanted - 1), wanted), kStep - 1), kStep),
      kStep);
  perSplit = arith::MaxUIOp::create(b, perSplit, e.idx(256));
  Value splits = arith::MaxUIOp::create(
      b, arith::DivUIOp::create(b, e.add(rows, e.sub(perSplit, one)), perSplit),
      one);
  Type f32 = b.getF32Type();
  Value partials = allocateDeviceBuffers(
      b, {{e.mul(splits, e.idx(shape.m * shape.n)), f32}})[0];
  SmallVector<Value> args = {a, bMem, partials, rows, perSplit};
  gpu::GPUFuncOp partial = kernel(loc, ValueRange(args).getTypes(), shape);
  // Without rows there is nothing to read (the f32 loads are not masked):
  // no partials, and C is init alone.
  Value hasRows = e.ult(e.idx(0), rows);
  e.ifThen(hasRows, [&] {
    gpu::LaunchFuncOp::create(
        b, partial, gpu::KernelDim3{e.idx(colTiles), e.idx(rowTiles), splits},
        gpu::KernelDim3{e.idx(kThreads), one, one},
        arith::ConstantIntOp::create(b, sharedBytes(shape), 32), args);
  });
  SmallVector<Value> combineArgs = {partials, c,
                                    e.select(hasRows, splits, e.idx(0))};
  gpu::GPUFuncOp combine =
      combineKernel(loc, ValueRange(combineArgs).getTypes(), shape);
  int64_t outputs = shape.m * shape.n;
  gpu::LaunchFuncOp::create(
      b, combine,
      gpu::KernelDim3{e.idx((outputs + kCombineThreads - 1) / kCombineThreads),
                      one, one},
      gpu::KernelDim3{e.idx(kCombineThreads), one, one},
      arith::ConstantIntOp::create(b, 0, 32), combineArgs);
}
