//===- TileLoss.cpp - The lm_head loss and its adjoints in chunks ---------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-tile-loss: lowers moe.linear_cross_entropy and
// moe.linear_cross_entropy_grad (the lm_head projection fused with the
// cross-entropy, ALGORITHMS.md section 7.2) into token tiles that walk the
// vocabulary in chunks with an online log-sum-exp, so that the
// [tokens, vocab] logits never exist, and moe.cross_entropy_grad (explicit
// logits) into linalg.generic ops.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/LossAdjoint.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_MOETILELOSS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-tile-loss"

//===----------------------------------------------------------------------===//
// Whole-tensor helpers
//===----------------------------------------------------------------------===//

/// `value: [N, ...]` (any element type, integers included) extended along
/// dimension 0 to `size` rows with zeros.
static Value padRows(ImplicitLocOpBuilder &b, TensorBuilder &tb, Value value,
                     OpFoldResult size) {
  Type elementType = tensorTypeOf(value).getElementType();
  if (isa<FloatType>(elementType))
    return tb.zeroPadded(value, 0, size, elementType);
  SmallVector<OpFoldResult> sizes = tb.sizesOf(value);
  SmallVector<OpFoldResult> paddedSizes(sizes);
  paddedSizes[0] = size;
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(elementType));
  Value empty = tensor::EmptyOp::create(b, paddedSizes, elementType);
  Value zeros = linalg::FillOp::create(b, ValueRange{zero}, ValueRange{empty})
                    .getResult(0);
  SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, value, zeros, offsets, sizes, strides)
      .getResult();
}

//===----------------------------------------------------------------------===//
// Fused projection + cross-entropy on tiles
//===----------------------------------------------------------------------===//

namespace {

/// The online log-sum-exp of a token tile over the vocabulary chunks seen so
/// far: running row maximum, running sum of `exp(z - max)`, and the label's
/// score (0 until its chunk is seen). All `[Bt]` fp32.
struct LogSumExpState {
  Value max, sum, picked;

  SmallVector<Value> values() const { return {max, sum, picked}; }
  static LogSumExpState from(ValueRange values) {
    return {values[0], values[1], values[2]};
  }
};

/// The token tile and per-token vectors of one tile of the fused ops.
struct TokenTile {
  Value x;           // [Bt, d] fp32
  Value labels;      // [Bt], the labels' type
  Value lse;         // [Bt] fp32 (backward only)
  Value coefficient; // [Bt] fp32 (backward only)
};

/// Lowers the fused projection + cross-entropy ops. The tokens are
/// flattened to `[N, d]` and padded with zero rows to `Np`, a multiple of
/// the token tile; the vocabulary is walked in `numFull` chunks of
/// `vocabChunk` rows of W and one remainder chunk of `remainder` rows.
class LossTiler {
public:
  LossTiler(ImplicitLocOpBuilder &b, int64_t tokenTile, int64_t vocabChunk,
            int64_t vocab, int64_t hidden)
      : b(b), tb(b), tokenTile(tokenTile), vocabChunk(vocabChunk),
        hidden(hidden), numFull(vocab / vocabChunk),
        remainder(vocab % vocabChunk) {}

  /// (loss, lse) of `op`, with its result types.
  std::pair<Value, Value> forward(LinearCrossEntropyOp op);
  /// (d_input, d_weight) of `op`, with its result types.
  std::pair<Value, Value> backward(LinearCrossEntropyGradOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  AffineMap identity() { return b.getMultiDimIdentityMap(2); }
  AffineMap rowMap() {
    return AffineMap::get(2, 0, {getAffineDimExpr(0, b.getContext())},
                          b.getContext());
  }

  /// Flattens and pads the token operands; sets `paddedTokens` and
  /// `numTokenTiles`.
  void prepareTokens(Value input, Value labels, Value lse = Value(),
                     Value coefficients = Value());
  /// Rows `[start, start + rows)` of `x: [R, ...]` (rank 1 or 2).
  Value rowsOf(Value x, Value start, int64_t rows);
  /// The token tile starting at `start`.
  TokenTile tokenTileAt(Value start);
  /// The fp32 chunk `[start, start + width)` of the weight's rows.
  Value weightChunk(Value start, int64_t width);
  /// The scores `[Bt, width]` of a token tile against a weight chunk.
  Value scores(Value x, Value chunk) {
    return tb.matmul(x, chunk, /*transposeLhs=*/false, /*transposeRhs=*/true);
  }
  /// `G = c (exp(S - lse) - onehot)` of a token tile and the chunk at
  /// `offset`.
  Value logitAdjoint(const TokenTile &tile, Value scores, Value offset);

  /// One online log-sum-exp step over the chunk at `offset`.
  LogSumExpState step(const TokenTile &tile, Value offset, int64_t width,
                      LogSumExpState state);

  /// Calls `body(offset, width, carried)` for each vocabulary chunk (an
  /// scf.for over the full chunks, then the remainder), threading the
  /// carried values through.
  SmallVector<Value> forEachChunk(
      ValueRange init,
      function_ref<SmallVector<Value>(Value, int64_t, ValueRange)> body);

  /// d_weight rows of the chunks `offset + i * width`, `i < numChunks`,
  /// written into `init: [V, d]` by an scf.forall that walks the token
  /// tiles.
  Value weightAdjointChunks(Value init, int64_t numChunks, int64_t width,
                            int64_t offset);

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  int64_t tokenTile, vocabChunk, hidden, numFull, remainder;

  // Set by prepareTokens.
  Value weight, tokens, paddedTokens, numTokenTiles;
  Value paddedInput, paddedLabels, paddedLse, paddedCoefficients;
};
} // namespace

void LossTiler::prepareTokens(Value input, Value labels, Value lse,
                              Value coefficients) {
  Value x = tb.flattenTokens(input);
  tokens = tensor::DimOp::create(b, x, 0);
  numTokenTiles = arith::CeilDivUIOp::create(b, tokens, idx(tokenTile));
  paddedTokens = arith::MulIOp::create(b, numTokenTiles, idx(tokenTile));
  paddedInput = tb.zeroPadded(x, 0, paddedTokens, f32());
  paddedLabels = padRows(b, tb, tb.flattenAll(labels), paddedTokens);
  if (lse)
    paddedLse = padRows(b, tb, tb.flattenAll(lse), paddedTokens);
  if (coefficients)
    paddedCoefficients =
        padRows(b, tb, tb.flattenAll(coefficients), paddedTokens);
}

Value LossTiler::rowsOf(Value x, Value start, int64_t rows) {
  RankedTensorType type = tensorTypeOf(x);
  if (type.getRank() == 1)
    return tensor::ExtractSliceOp::create(
        b, RankedTensorType::get({rows}, type.getElementType()), x,
        ArrayRef<OpFoldResult>{start}, ArrayRef<OpFoldResult>{attr(rows)},
        ArrayRef<OpFoldResult>{attr(1)});
  // Every 2-D operand here is `[rows, d]`; `d` may be dynamic in the type.
  int64_t width = hidden;
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get({rows, width}, type.getElementType()), x,
      ArrayRef<OpFoldResult>{start, attr(0)},
      ArrayRef<OpFoldResult>{attr(rows), attr(width)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
}

TokenTile LossTiler::tokenTileAt(Value start) {
  TokenTile tile;
  tile.x = rowsOf(paddedInput, start, tokenTile);
  tile.labels = rowsOf(paddedLabels, start, tokenTile);
  if (paddedLse)
    tile.lse = rowsOf(paddedLse, start, tokenTile);
  if (paddedCoefficients)
    tile.coefficient = rowsOf(paddedCoefficients, start, tokenTile);
  return tile;
}

Value LossTiler::weightChunk(Value start, int64_t width) {
  return tb.convert(rowsOf(weight, start, width), f32());
}

Value LossTiler::logitAdjoint(const TokenTile &tile, Value scores,
                              Value offset) {
  return tb.mapIndexed(
      tb.sizesOf(scores),
      ValueRange{scores, tile.lse, tile.coefficient, tile.labels},
      {identity(), rowMap(), rowMap(), rowMap()}, f32(),
      [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
        Value column = linalg::IndexOp::create(nb, loc, 1);
        return buildLogitAdjoint(nb, loc, a[0], a[1], a[2], a[3], column,
                                 offset);
      });
}

LogSumExpState LossTiler::step(const TokenTile &tile, Value offset,
                               int64_t width, LogSumExpState state) {
  Type type = f32();
  Value s = scores(tile.x, weightChunk(offset, width));

  // m' = max(m, rowmax S).
  Value rowMax =
      tb.reduceLast(s, type, -std::numeric_limits<double>::infinity(),
                    [](OpBuilder &nb, Location loc, ValueRange a) {
                      return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
                    });
  Value max = tb.map(ValueRange{state.max, rowMax}, type,
                     [](OpBuilder &nb, Location loc, ValueRange a) {
                       return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
                     });
  // rowsum exp(S - m'), and the label's score when it lies in this chunk
  // (a select, so that the other chunks leave it as it is).
  SmallVector<Value> reduced = tb.generic(
      {s, max, tile.labels}, {identity(), rowMap(), rowMap()},
      {tb.filled({attr(tokenTile)}, type, 0.0), state.picked},
      {rowMap(), rowMap()}, 2, 1,
      [&](OpBuilder &nb, Location loc, ValueRange a) -> SmallVector<Value> {
        Value shifted = arith::SubFOp::create(nb, loc, a[0], a[1]);
        Value exp = math::ExpOp::create(nb, loc, shifted);
        Value sum = arith::AddFOp::create(nb, loc, a[3], exp);
        Value column = arith::AddIOp::create(
            nb, loc, linalg::IndexOp::create(nb, loc, 1), offset);
        Value label =
            arith::IndexCastOp::create(nb, loc, nb.getIndexType(), a[2]);
        Value isLabel = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                                              column, label);
        Value picked = arith::SelectOp::create(nb, loc, isLabel, a[0], a[4]);
        return {sum, picked};
      });
  // l' = exp(m - m') l + rowsum: exp(-inf) = 0 on the first chunk.
  Value sum =
      tb.map(ValueRange{state.max, max, state.sum, reduced[0]}, type,
             [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
               Value shifted = arith::SubFOp::create(nb, loc, a[0], a[1]);
               Value correction = math::ExpOp::create(nb, loc, shifted);
               Value scaled = arith::MulFOp::create(nb, loc, correction, a[2]);
               return arith::AddFOp::create(nb, loc, scaled, a[3]);
             });
  return {max, sum, reduced[1]};
}

SmallVector<Value> LossTiler::forEachChunk(
    ValueRange init,
    function_ref<SmallVector<Value>(Value, int64_t, ValueRange)> body) {
  SmallVector<Value> carried(init);
  if (numFull > 0) {
    auto loop = scf::ForOp::create(b, idx(0), idx(numFull), idx(1), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value offset =
        arith::MulIOp::create(b, loop.getInductionVar(), idx(vocabChunk));
    scf::YieldOp::create(b, body(offset, vocabChunk, loop.getRegionIterArgs()));
    carried.assign(loop.getResults().begin(), loop.getResults().end());
  }
  if (remainder > 0)
    carried = body(idx(numFull * vocabChunk), remainder, carried);
  return carried;
}

std::pair<Value, Value> LossTiler::forward(LinearCrossEntropyOp op) {
  weight = op.getWeight();
  prepareTokens(op.getInput(), op.getLabels());
  double negInf = -std::numeric_limits<double>::infinity();

  // Per token tile: lse and the label's score, [Np] each.
  Value lseInit =
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{paddedTokens}, f32());
  Value pickedInit =
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{paddedTokens}, f32());
  auto forall =
      scf::ForallOp::create(b, ArrayRef<OpFoldResult>{numTokenTiles},
                            ValueRange{lseInit, pickedInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value start =
        arith::MulIOp::create(b, forall.getInductionVar(0), idx(tokenTile));
    TokenTile tile = tokenTileAt(start);
    LogSumExpState state = {tb.filled({attr(tokenTile)}, f32(), negInf),
                            tb.filled({attr(tokenTile)}, f32(), 0.0),
                            tb.filled({attr(tokenTile)}, f32(), 0.0)};
    state = LogSumExpState::from(forEachChunk(
        state.values(), [&](Value offset, int64_t width, ValueRange carried) {
          return step(tile, offset, width, LogSumExpState::from(carried))
              .values();
        }));
    Value lse = tb.map(ValueRange{state.max, state.sum}, f32(),
                       [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                         Value logSum = math::LogOp::create(nb, loc, a[1]);
                         return arith::AddFOp::create(nb, loc, a[0], logSum);
                       });
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    SmallVector<Value> tileResults = {lse, state.picked};
    for (auto [value, out] :
         llvm::zip_equal(tileResults, forall.getRegionIterArgs()))
      tensor::ParallelInsertSliceOp::create(
          b, value, out, ArrayRef<OpFoldResult>{start},
          ArrayRef<OpFoldResult>{attr(tokenTile)},
          ArrayRef<OpFoldResult>{attr(1)});
  }
  auto real = [&](Value padded) {
    return tensor::ExtractSliceOp::create(
        b, padded, ArrayRef<OpFoldResult>{attr(0)},
        ArrayRef<OpFoldResult>{tokens}, ArrayRef<OpFoldResult>{attr(1)});
  };
  Value lse = real(forall.getResult(0));
  Value picked = real(forall.getResult(1));
  Value labels = tb.flattenAll(op.getLabels());

  // The sum of the valid tokens' losses and their count; a select (not a
  // multiply by 0) keeps an ignored token's value out.
  int64_t ignoreIndex = op.getIgnoreIndex();
  AffineMap vector = b.getMultiDimIdentityMap(1);
  AffineMap scalarMap = AffineMap::get(1, 0, {}, b.getContext());
  SmallVector<Value> total = tb.generic(
      {lse, picked, labels}, {vector, vector, vector},
      {tb.filled({}, f32(), 0.0), tb.filled({}, f32(), 0.0)},
      {scalarMap, scalarMap}, 1, 0,
      [&](OpBuilder &nb, Location loc, ValueRange a) -> SmallVector<Value> {
        Value loss = arith::SubFOp::create(nb, loc, a[0], a[1]);
        Value valid = buildIsValid(nb, loc, a[2], ignoreIndex);
        Value zero = floatConstant(nb, loc, f32(), 0.0);
        Value one = floatConstant(nb, loc, f32(), 1.0);
        Value term = arith::SelectOp::create(nb, loc, valid, loss, zero);
        Value counted = arith::SelectOp::create(nb, loc, valid, one, zero);
        return {arith::AddFOp::create(nb, loc, a[3], term),
                arith::AddFOp::create(nb, loc, a[4], counted)};
      });
  // The mean; with no valid token it is 0 / 0 = NaN.
  AffineMap scalar = b.getMultiDimIdentityMap(0);
  Value mean =
      tb.mapIndexed({}, total, {scalar, scalar}, f32(),
                    [](OpBuilder &nb, Location loc, ValueRange a) {
                      return arith::DivFOp::create(nb, loc, a[0], a[1]);
                    });
  if (mean.getType() != op.getLoss().getType())
    mean = tensor::CastOp::create(b, op.getLoss().getType(), mean);
  return {mean, tb.unflattenAll(lse, op.getLabels(), op.getLse().getType())};
}

Value LossTiler::weightAdjointChunks(Value init, int64_t numChunks,
                                     int64_t width, int64_t offset) {
  auto forall =
      scf::ForallOp::create(b, ArrayRef<OpFoldResult>{attr(numChunks)},
                            ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value start = arith::AddIOp::create(
      b, idx(offset),
      arith::MulIOp::create(b, forall.getInductionVar(0), idx(width)));
  Value chunk = weightChunk(start, width);
  Value accInit = tb.filled({attr(width), attr(hidden)}, f32(), 0.0);

  // dW_c = sum over the token tiles of G^T x.
  auto loop =
      scf::ForOp::create(b, idx(0), numTokenTiles, idx(1), ValueRange{accInit});
  {
    OpBuilder::InsertionGuard loopGuard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value tokenStart =
        arith::MulIOp::create(b, loop.getInductionVar(), idx(tokenTile));
    TokenTile tile = tokenTileAt(tokenStart);
    Value g = logitAdjoint(tile, scores(tile.x, chunk), start);
    Value update = tb.matmul(g, tile.x, /*transposeLhs=*/true);
    scf::YieldOp::create(b, tb.add(loop.getRegionIterArgs()[0], update));
  }
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loop.getResult(0), forall.getRegionIterArgs()[0],
      ArrayRef<OpFoldResult>{start, attr(0)},
      ArrayRef<OpFoldResult>{attr(width), attr(hidden)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
  return forall.getResult(0);
}

std::pair<Value, Value> LossTiler::backward(LinearCrossEntropyGradOp op) {
  weight = op.getWeight();
  Value coefficients = buildTokenCoefficients(
      b, tb, op.getLabels(), op.getDLoss(), op.getIgnoreIndex());
  prepareTokens(op.getInput(), op.getLabels(), op.getLse(), coefficients);

  // d_input = G W: token tiles in parallel, each walking the chunks.
  Value dxInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{paddedTokens, attr(hidden)}, f32());
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{numTokenTiles},
                                      ValueRange{dxInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value start =
        arith::MulIOp::create(b, forall.getInductionVar(0), idx(tokenTile));
    TokenTile tile = tokenTileAt(start);
    Value accInit = tb.filled({attr(tokenTile), attr(hidden)}, f32(), 0.0);
    Value acc = forEachChunk(
        accInit, [&](Value offset, int64_t width, ValueRange carried) {
          Value chunk = weightChunk(offset, width);
          Value g = logitAdjoint(tile, scores(tile.x, chunk), offset);
          return SmallVector<Value>{tb.add(carried[0], tb.matmul(g, chunk))};
        })[0];
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, acc, forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{start, attr(0)},
        ArrayRef<OpFoldResult>{attr(tokenTile), attr(hidden)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
  }
  Value dx = tensor::ExtractSliceOp::create(
      b, forall.getResult(0), ArrayRef<OpFoldResult>{attr(0), attr(0)},
      ArrayRef<OpFoldResult>{tokens, attr(hidden)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
  dx = tb.convert(dx, tensorTypeOf(op.getInput()).getElementType());
  dx = tb.unflattenTokens(dx, op.getInput());
  if (dx.getType() != op.getDInput().getType())
    dx = tensor::CastOp::create(b, op.getDInput().getType(), dx);

  // d_weight = G^T x: vocabulary chunks in parallel, each walking the token
  // tiles; the remainder chunk in a forall of its own.
  int64_t vocab = numFull * vocabChunk + remainder;
  Value dw = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{attr(vocab), attr(hidden)}, f32());
  if (numFull > 0)
    dw = weightAdjointChunks(dw, numFull, vocabChunk, 0);
  if (remainder > 0)
    dw = weightAdjointChunks(dw, 1, remainder, numFull * vocabChunk);
  dw = tb.convert(dw, tensorTypeOf(op.getWeight()).getElementType());
  if (dw.getType() != op.getDWeight().getType())
    dw = tensor::CastOp::create(b, op.getDWeight().getType(), dw);
  return {dx, dw};
}

/// Checks what the tiling of a fused op needs: positive tile sizes, a
/// static vocabulary and hidden size.
static LogicalResult checkFusedOp(Operation *op, Value weight,
                                  int64_t tokenTile, int64_t vocabChunk) {
  if (tokenTile < 1 || vocabChunk < 1)
    return op->emitOpError("cannot be tiled: expects positive token-tile (")
           << tokenTile << ") and vocab-chunk (" << vocabChunk << ")";
  if (!tensorTypeOf(weight).hasStaticShape())
    return op->emitOpError("cannot be tiled: expects a static weight shape "
                           "(vocabulary and hidden size), found ")
           << weight.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Cross-entropy adjoint on explicit logits
//===----------------------------------------------------------------------===//

/// d_logits = c (softmax(z) - onehot(label)) with `c = d_loss / N_valid` on
/// the valid tokens and 0 on the others.
static Value lowerCrossEntropyGrad(ImplicitLocOpBuilder &b,
                                   CrossEntropyGradOp op) {
  TensorBuilder tb(b);
  Value logits = op.getLogits();
  int64_t rank = tensorTypeOf(logits).getRank();
  Type f32 = b.getF32Type();
  Type elementType = tensorTypeOf(logits).getElementType();
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap tokenMap = leadingDimsMap(ctx, rank);

  Value maxLogit =
      tb.reduceLast(logits, f32, -std::numeric_limits<double>::infinity(),
                    [&](OpBuilder &nb, Location loc, ValueRange a) {
                      Value z = convertScalar(nb, loc, a[0], f32);
                      return arith::MaximumFOp::create(nb, loc, z, a[1]);
                    });
  SmallVector<OpFoldResult> tokenSizes = tb.sizesOf(logits);
  tokenSizes.pop_back();
  Value sumExp = tb.generic(
      {logits, maxLogit}, {identity, tokenMap},
      {tb.filled(tokenSizes, f32, 0.0)}, {tokenMap}, rank, rank - 1,
      [&](OpBuilder &nb, Location loc, ValueRange a) -> SmallVector<Value> {
        Value z = convertScalar(nb, loc, a[0], f32);
        Value shifted = arith::SubFOp::create(nb, loc, z, a[1]);
        Value exp = math::ExpOp::create(nb, loc, shifted);
        return {arith::AddFOp::create(nb, loc, a[2], exp)};
      })[0];
  Value lse = tb.map(ValueRange{maxLogit, sumExp}, f32,
                     [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                       Value logSum = math::LogOp::create(nb, loc, a[1]);
                       return arith::AddFOp::create(nb, loc, a[0], logSum);
                     });
  Value coefficients = buildTokenCoefficients(
      b, tb, op.getLabels(), op.getDLoss(), op.getIgnoreIndex());
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value result = tb.mapIndexed(
      tb.sizesOf(logits), {logits, lse, coefficients, op.getLabels()},
      {identity, tokenMap, tokenMap, tokenMap}, elementType,
      [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
        Value z = convertScalar(nb, loc, a[0], f32);
        Value column = linalg::IndexOp::create(nb, loc, rank - 1);
        Value g = buildLogitAdjoint(nb, loc, z, a[1], a[2], a[3], column, zero);
        return convertScalar(nb, loc, g, elementType);
      });
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(b, op.getType(), result);
  return result;
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoETileLossPass : public moe::impl::MoETileLossBase<MoETileLossPass> {
  using MoETileLossBase::MoETileLossBase;
  void runOnOperation() override;
};
} // namespace

void MoETileLossPass::runOnOperation() {
  SmallVector<Operation *> ops;
  getOperation()->walk([&](Operation *op) {
    if (isa<LinearCrossEntropyOp, LinearCrossEntropyGradOp, CrossEntropyGradOp>(
            op))
      ops.push_back(op);
  });
  IRRewriter rewriter(&getContext());
  bool failed = false;
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op->getLoc(), rewriter);
    if (auto grad = dyn_cast<CrossEntropyGradOp>(op)) {
      rewriter.replaceOp(op, lowerCrossEntropyGrad(b, grad));
      ++numLowered;
      continue;
    }
    Value weight = isa<LinearCrossEntropyOp>(op)
                       ? cast<LinearCrossEntropyOp>(op).getWeight()
                       : cast<LinearCrossEntropyGradOp>(op).getWeight();
    if (mlir::failed(checkFusedOp(op, weight, tokenTile, vocabChunk))) {
      failed = true;
      continue;
    }
    ArrayRef<int64_t> shape = tensorTypeOf(weight).getShape();
    LossTiler tiler(b, tokenTile, vocabChunk, shape[0], shape[1]);
    if (auto forward = dyn_cast<LinearCrossEntropyOp>(op)) {
      auto [loss, lse] = tiler.forward(forward);
      rewriter.replaceOp(op, ValueRange{loss, lse});
    } else {
      auto [dx, dw] = tiler.backward(cast<LinearCrossEntropyGradOp>(op));
      rewriter.replaceOp(op, ValueRange{dx, dw});
    }
    ++numLowered;
  }
  if (failed)
    signalPassFailure();
}
