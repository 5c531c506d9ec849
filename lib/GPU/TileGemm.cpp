//===- TileGemm.cpp - The main loop of a tensor-core block tile -----------===//
//
// Part of the moe-mlir project.
//
// The block tile of TileGemm.h. Stage layout: A then B, bf16, each in rows
// of 16-byte chunks XOR-swizzled by row (DeviceEmitter::swizzledOffset).
// Fragments: an A fragment is four 8x8 matrices (m half, k half), read
// directly from rows of A or transposed from rows of k; a pair of B
// fragments is four matrices (k half, n half), read directly from rows of n
// or transposed from rows of k.
//
//===----------------------------------------------------------------------===//

#include "moe/GPU/TileGemm.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

/// One chunk this thread copies each step: its stage row and chunk, and its
/// element offset within a stage.
struct Piece {
  Value row, chunk, offset;
};

} // namespace

Value TileGemm::accRow(DeviceEmitter &e, Value warp, int64_t i,
                       int64_t half) const {
  Value warpRow = e.mul(e.div(warp, 2), 64);
  return e.add(warpRow, e.add(e.laneGroup, 16 * i + 8 * half));
}

Value TileGemm::accCol(DeviceEmitter &e, Value warp, int64_t j) const {
  Value warpCol = e.mul(e.rem(warp, 2), cols / 2);
  return e.add(warpCol, e.add(e.laneCol, 8 * j));
}

SmallVector<Value> TileGemm::emit(DeviceEmitter &e, Value tid, Value warp,
                                  const TileOperand &a, const TileOperand &b,
                                  Value steps) const {
  ImplicitLocOpBuilder &builder = e.b;
  MLIRContext *ctx = builder.getContext();
  constexpr int64_t kChunks = kStep / 8;
  // Chunks per stage row of each operand.
  int64_t aRowChunks = a.kMajor ? kRows / 8 : kChunks;
  int64_t bRowChunks = b.kMajor ? cols / 8 : kChunks;
  Value warpRow = e.mul(e.div(warp, 2), 64);
  Value warpCol = e.mul(e.rem(warp, 2), cols / 2);

  Value staged = e.sharedView(e.dynamicSharedMemory(), 0,
                              stages * stageElements(), builder.getBF16Type());
  auto pieces = [&](int64_t rowChunks, int64_t base) {
    SmallVector<Piece> out;
    int64_t count = (base == 0 ? aElements() : kStep * cols) / 8;
    for (int64_t i = 0; i < count / kThreads; ++i) {
      Value p = e.add(tid, i * kThreads);
      Value row = e.div(p, rowChunks), chunk = e.rem(p, rowChunks);
      out.push_back(
          {row, chunk,
           e.add(e.idx(base), e.swizzledOffset(row, chunk, rowChunks))});
    }
    return out;
  };
  SmallVector<Piece> aPieces = pieces(aRowChunks, 0);
  SmallVector<Piece> bPieces = pieces(bRowChunks, aElements());

  Type tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value eight = e.idx(8), none = e.idx(0);
  // The copies of reduction step `at` into `stage`, as one group.
  auto issue = [&](Value at, Value stage) -> Value {
    Value base = e.mul(stage, stageElements()), k0 = e.mul(at, kStep);
    for (auto [operand, list] :
         {std::pair{&a, &aPieces}, std::pair{&b, &bPieces}}) {
      for (const Piece &p : *list) {
        ChunkSource src = operand->source(p.row, p.chunk, k0);
        Value count = src.valid ? e.select(src.valid, eight, none) : Value();
        nvgpu::DeviceAsyncCopyOp::create(
            builder, staged, ValueRange{e.add(base, p.offset)}, src.mem,
            src.indices, builder.getIndexAttr(8), count, builder.getUnitAttr());
      }
    }
    return nvgpu::DeviceAsyncCreateGroupOp::create(builder, tokenType,
                                                   ValueRange())
        .getResult();
  };

  // ldmatrix lanes: lane l gives row l % 8 of matrix l / 8.
  Value matrix = e.div(e.lane, 8), matrixRow = e.rem(e.lane, 8);
  Value low = e.rem(matrix, 2), high = e.div(matrix, 2);
  // The A fragment of rows warpRow + row0 .. + 15 at reduction k0 .. + 15:
  // matrix q is m half q % 2, k half q / 2.
  auto fragA = [&](Value base, int64_t row0, int64_t k0) {
    Value row, chunk;
    if (a.kMajor) {
      row = e.add(e.idx(k0), e.add(matrixRow, e.mul(high, 8)));
      chunk = e.add(e.div(e.add(warpRow, row0), 8), low);
    } else {
      row = e.add(e.add(warpRow, row0), e.add(matrixRow, e.mul(low, 8)));
      chunk = e.add(high, k0 / 8);
    }
    SmallVector<Value> w = e.ldmatrix(
        staged, e.add(base, e.swizzledOffset(row, chunk, aRowChunks)), 4,
        /*transpose=*/a.kMajor);
    return Frag4{w[0], w[1], w[2], w[3]};
  };
  // The B fragments of tile columns warpCol + col0 .. + 7 and + 8 .. + 15:
  // matrix q is k half q % 2, n half q / 2.
  auto fragsB = [&](Value base, int64_t col0, int64_t k0) {
    Value row, chunk;
    if (b.kMajor) {
      row = e.add(e.idx(k0), e.add(matrixRow, e.mul(low, 8)));
      chunk = e.add(e.div(e.add(warpCol, col0), 8), high);
    } else {
      row = e.add(e.add(warpCol, col0), e.add(matrixRow, e.mul(high, 8)));
      chunk = e.add(low, k0 / 8);
    }
    SmallVector<Value> w =
        e.ldmatrix(staged,
                   e.add(base, e.add(e.idx(aElements()),
                                     e.swizzledOffset(row, chunk, bRowChunks))),
                   4, /*transpose=*/b.kMajor);
    return std::array<std::array<Value, 2>, 2>{{{w[0], w[1]}, {w[2], w[3]}}};
  };

  Value lastStep = e.sub(steps, e.idx(1));
  auto clamp = [&](Value s) {
    return arith::MinUIOp::create(builder, s, lastStep).getResult();
  };
  // Prologue: the first stages - 2 steps in flight (past the end, the last
  // step again).
  for (int64_t s = 0; s < stages - 2; ++s)
    issue(clamp(e.idx(s)), e.idx(s));

  int64_t nT = nTiles();
  SmallVector<Value> init(mTiles() * nT * 4, e.f32(0.0));
  SmallVector<Value> acc =
      e.forLoop(e.idx(0), steps, 1, init, [&](Value now, ValueRange accIn) {
        // Step now + stages - 2 goes to the stage read two steps ago, which
        // every warp left before the previous step's barrier.
        Value ahead = e.add(now, stages - 2);
        Value group = issue(clamp(ahead), e.rem(ahead, stages));
        nvgpu::DeviceAsyncWaitOp::create(builder, group,
                                         builder.getI32IntegerAttr(stages - 2));
        e.barrier();
        Value base = e.mul(e.rem(now, stages), stageElements());
        SmallVector<Value> accOut(accIn.begin(), accIn.end());
        for (int64_t kk = 0; kk < kStep / 16; ++kk) {
          SmallVector<Frag4> fa;
          for (int64_t i = 0; i < mTiles(); ++i)
            fa.push_back(fragA(base, 16 * i, 16 * kk));
          SmallVector<std::array<Value, 2>> fb;
          for (int64_t pair = 0; pair < nT / 2; ++pair) {
            auto two = fragsB(base, 16 * pair, 16 * kk);
            fb.push_back(two[0]);
            fb.push_back(two[1]);
          }
          for (int64_t i = 0; i < mTiles(); ++i)
            for (int64_t j = 0; j < nT; ++j) {
              int64_t at = (i * nT + j) * 4;
              Frag4 c{accOut[at], accOut[at + 1], accOut[at + 2],
                      accOut[at + 3]};
              Frag4 d = e.mma(fa[i], fb[j], c);
              for (int64_t v = 0; v < 4; ++v)
                accOut[at + v] = d[v];
            }
        }
        return accOut;
      });
  // No copy may be in flight when the block leaves (or reuses) the stages.
  nvgpu::DeviceAsyncWaitOp::create(
      builder,
      nvgpu::DeviceAsyncCreateGroupOp::create(builder, tokenType, ValueRange()),
      builder.getI32IntegerAttr(0));
  return acc;
}
