//===- TileContraction.cpp - Tile programs' matmuls on tensor cores -------===//
//
// Part of the moe-mlir project.
//
// Fragments of mma.sync.m16n8k8 with tf32 operands, with g = lane / 4 and
// t = lane % 4: A (16 x 8) holds (g, t), (g + 8, t), (g, t + 4),
// (g + 8, t + 4); B (8 x 8, by columns) holds (t, g) and (t + 4, g); C
// (16 x 8) holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
//
//===----------------------------------------------------------------------===//

#include "TileContraction.h"
#include "WarpReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Unrolled up to this many k-steps (the loads of all steps are then
/// independent); longer reductions are an scf.for.
constexpr int64_t kMaxUnrolledSteps = 16;

/// The loop dimension of `map`'s results other than `k`, or none when the
/// map does not read `k` exactly once next to one other dimension.
std::optional<unsigned> otherDim(AffineMap map, unsigned k) {
  if (!map.isProjectedPermutation() || map.getNumResults() != 2)
    return std::nullopt;
  unsigned d0 = map.getDimPosition(0), d1 = map.getDimPosition(1);
  if (d0 == k && d1 != k)
    return d1;
  if (d1 == k && d0 != k)
    return d0;
  return std::nullopt;
}

/// Whether the body is `yield(out + a * b)`, either operand order of each.
bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1),
        out = body.getArgument(2);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

} // namespace

std::optional<TileContraction>
mlir::moe::matchTileContraction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
      op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
        !type.getElementType().isF32())
      return std::nullopt;
  }
  if (!isMultiplyAccumulate(op))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned k = std::distance(
      iterators.begin(), llvm::find(iterators, utils::IteratorType::reduction));
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::optional<unsigned> first = otherDim(maps[0], k),
                          second = otherDim(maps[1], k);
  AffineMap out = maps[2];
  if (!first || !second || *first == *second || !out.isProjectedPermutation() ||
      out.getNumResults() != 2 || !out.isFunctionOfDim(*first) ||
      !out.isFunctionOfDim(*second))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t depth = ranges[k];
  if (depth % 8 != 0)
    return std::nullopt;
  // m must give whole 16-row tiles, n whole 8-column ones.
  for (unsigned aInput : {0u, 1u}) {
    unsigned m = aInput == 0 ? *first : *second;
    unsigned n = aInput == 0 ? *second : *first;
    if (ranges[m] % 16 == 0 && ranges[n] % 8 == 0)
      return TileContraction{m, n, k, aInput, ranges[m], ranges[n], depth};
  }
  return std::nullopt;
}

void mlir::moe::emitTensorCoreContraction(RewriterBase &rewriter,
                                          linalg::GenericOp op,
                                          const TileContraction &contraction,
                                          Value tid, int64_t blockSize) {
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  MLIRContext *ctx = rewriter.getContext();
  Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
  auto constant = [&](int64_t v) { return indexConstant(rewriter, loc, v); };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(rewriter, loc, x, y).getResult();
  };
  auto addConst = [&](Value x, int64_t v) {
    return v == 0 ? x : add(x, constant(v));
  };
  auto mul = [&](Value x, int64_t v) {
    return arith::MulIOp::create(rewriter, loc, x, constant(v)).getResult();
  };
  auto div = [&](Value x, int64_t v) {
    return arith::DivUIOp::create(rewriter, loc, x, constant(v)).getResult();
  };
  auto rem = [&](Value x, int64_t v) {
    return arith::RemUIOp::create(rewriter, loc, x, constant(v)).getResult();
  };

  Value lane = rem(tid, 32);
  Value group = div(lane, 4), thread = rem(lane, 4);
  int64_t colTiles = contraction.cols / 8;
  int64_t tiles = contraction.rows / 16 * colTiles;
  Value a = op.getDpsInputs()[contraction.aInput];
  Value b = op.getDpsInputs()[1 - contraction.aInput];
  Value c = op.getDpsInits()[0];
  AffineMap aMap = op.getIndexingMapsArray()[contraction.aInput];
  AffineMap bMap = op.getIndexingMapsArray()[1 - contraction.aInput];
  AffineMap cMap = op.getIndexingMapsArray()[2];

  // The element of `buffer` (indexed by `map`) at loop values m, n, k.
  auto element = [&](OpBuilder &builder, Value buffer, AffineMap map, Value m,
                     Value n, Value k) {
    SmallVector<Value> indices;
    for (unsigned i = 0; i < map.getNumResults(); ++i) {
      unsigned dim = map.getDimPosition(i);
      indices.push_back(dim == contraction.m   ? m
                        : dim == contraction.n ? n
                                               : k);
    }
    return memref::LoadOp::create(builder, loc, buffer, indices).getResult();
  };
  auto tf32 = [&](OpBuilder &builder, Value x) {
    return NVVM::ConvertFloatToTF32Op::create(builder, loc, i32, x,
                                              NVVM::FPRoundingMode::RNA,
                                              NVVM::SaturationMode::NONE,
                                              /*relu=*/false)
        .getResult();
  };

  auto tileLoop = scf::ForOp::create(rewriter, loc, div(tid, 32),
                                     constant(tiles), constant(blockSize / 32));
  rewriter.setInsertionPointToStart(tileLoop.getBody());
  Value tile = tileLoop.getInductionVar();
  Value row0 = mul(div(tile, colTiles), 16), col0 = mul(rem(tile, colTiles), 8);
  Value rowLo = add(row0, group), rowHi = addConst(rowLo, 8);
  Value colLo = add(col0, mul(thread, 2)), colHi = addConst(colLo, 1);
  Value colB = add(col0, group);
  Value none;
  SmallVector<Value> acc = {element(rewriter, c, cMap, rowLo, colLo, none),
                            element(rewriter, c, cMap, rowLo, colHi, none),
                            element(rewriter, c, cMap, rowHi, colLo, none),
                            element(rewriter, c, cMap, rowHi, colHi, none)};
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  // One k-step of 8 from `k0` onto `sums`.
  auto step = [&](OpBuilder &builder, Value k0,
                  ValueRange sums) -> SmallVector<Value> {
    Value kLo = arith::AddIOp::create(builder, loc, k0, thread);
    Value kHi = arith::AddIOp::create(builder, loc, kLo,
                                      indexConstant(builder, loc, 4));
    SmallVector<Value> aFrag = {
        tf32(builder, element(builder, a, aMap, rowLo, none, kLo)),
        tf32(builder, element(builder, a, aMap, rowHi, none, kLo)),
        tf32(builder, element(builder, a, aMap, rowLo, none, kHi)),
        tf32(builder, element(builder, a, aMap, rowHi, none, kHi))};
    SmallVector<Value> bFrag = {
        tf32(builder, element(builder, b, bMap, none, colB, kLo)),
        tf32(builder, element(builder, b, bMap, none, colB, kHi))};
    auto mma = NVVM::MmaOp::create(
        builder, loc, resultType, aFrag, bFrag, sums,
        ArrayRef<int64_t>{16, 8, 8}, std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32,
                                      NVVM::MMATypes::tf32},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(
          LLVM::ExtractValueOp::create(builder, loc, mma.getRes(), i));
    return out;
  };
  int64_t steps = contraction.depth / 8;
  if (steps <= kMaxUnrolledSteps) {
    for (int64_t s = 0; s < steps; ++s)
      acc = step(rewriter, constant(8 * s), acc);
  } else {
    auto kLoop = scf::ForOp::create(
        rewriter, loc, constant(0), constant(contraction.depth), constant(8),
        acc, [&](OpBuilder &builder, Location, Value k0, ValueRange sums) {
          scf::YieldOp::create(builder, loc, step(builder, k0, sums));
        });
    acc = llvm::to_vector_of<Value>(kLoop.getResults());
  }
  auto store = [&](Value value, Value m, Value n) {
    SmallVector<Value> indices;
    for (unsigned i = 0; i < cMap.getNumResults(); ++i)
      indices.push_back(cMap.getDimPosition(i) == contraction.m ? m : n);
    memref::StoreOp::create(rewriter, loc, value, c, indices);
  };
  store(acc[0], rowLo, colLo);
  store(acc[1], rowLo, colHi);
  store(acc[2], rowHi, colLo);
  store(acc[3], rowHi, colHi);
  rewriter.setInsertionPointAfter(tileLoop);
  gpu::BarrierOp::create(rewriter, loc);
  rewriter.eraseOp(op);
}
