//===- TileAttentionBackward.cpp - Flash-attention backward on tiles ------===//
//
// Part of the moe-mlir project.
//
// The moe.mla_attention_grad half of -moe-tile-attention: the causal
// flash-attention backward of ALGORITHMS.md section 3.3 on static fp32
// tiles. The probabilities are recomputed from the saved log-sum-exp,
// D = rowsum(dO o O) is computed once from the gated output, and two
// parallel loops produce dK, dV (key tiles walking their query tiles) and
// dQ (query tiles walking their key tiles), so that no tile is written by
// two iterations.
//
//===----------------------------------------------------------------------===//

#include "AttentionTiles.h"

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Transforms.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::attention_tiles;

namespace {

/// The tiles of one query tile that the backward reads: the scaled query
/// `lambda q` ([Br, Dqk]), the ungated output adjoint dO ([Br, Dv]), the
/// log-sum-exp and D ([Br]).
struct QueryTile {
  Value query, dOut, lse, delta;
};

/// Lowers one `moe.mla_attention_grad` op.
class AttentionGradTiler {
public:
  AttentionGradTiler(ImplicitLocOpBuilder &b, AttentionTileSizes tiles,
                     double scale, int64_t keyDim, int64_t valueDim)
      : b(b), tb(b), queryTile(tiles.queryTile), keyTile(tiles.keyTile),
        scale(scale), keyDim(keyDim), valueDim(valueDim) {}

  /// The adjoints (d_query, d_key, d_value[, d_gate]) with the op's result
  /// types.
  SmallVector<Value> build(MLAAttentionGradOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  AffineMap identity() { return b.getMultiDimIdentityMap(2); }
  AffineMap rowMap() {
    return AffineMap::get(2, 0, {getAffineDimExpr(0, b.getContext())},
                          b.getContext());
  }

  /// The `[Br]` slice from `start` of `x: [B, H, Tp]` at (batch, head).
  Value rowVector(Value x, Value batch, Value head, Value start);
  /// The query tile from `start` of (batch, head).
  QueryTile queryTileAt(Value batch, Value head, Value start);

  /// P = exp(S - lse) and dS = P o (dO V^T - D) of a query tile against the
  /// key tile `k: [Bc, Dqk]`, `v: [Bc, Dv]`, causally masked by the
  /// tiles' first positions.
  std::pair<Value, Value> probabilitiesAndScoreAdjoint(const QueryTile &tile,
                                                       Value k, Value v,
                                                       Value queryStart,
                                                       Value keyStart);

  /// Runs `body(index)` over `[from, to)` in an scf.for carrying `init`.
  SmallVector<Value>
  loop(Value from, Value to, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body);

  /// Inserts `tile: [rows, width]` at (batch, start, head) of the forall's
  /// shared output `into: [B, Tp, H, width]`.
  void insertRows(Value tile, Value into, Value batch, Value head, Value start);

  /// The first `length` rows of `x: [B, Tp, H, D]` in `elementType`, with
  /// `type`.
  Value unpadded(Value x, Type type);

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  int64_t queryTile, keyTile;
  double scale;
  int64_t keyDim, valueDim;

  // The padded fp32 operands and sizes.
  PaddedSequence seq;
  Value q, k, v, dOut, lse, delta;
};
} // namespace

Value AttentionGradTiler::rowVector(Value x, Value batch, Value head,
                                    Value start) {
  return tensor::ExtractSliceOp::create(
      b, RankedTensorType::get({queryTile}, f32()), x,
      ArrayRef<OpFoldResult>{batch, head, start},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(queryTile)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
}

QueryTile AttentionGradTiler::queryTileAt(Value batch, Value head,
                                          Value start) {
  Value query =
      tb.map(headRows(b, q, batch, head, start, queryTile), f32(),
             [&](OpBuilder &nb, Location loc, ValueRange a) {
               return arith::MulFOp::create(
                   nb, loc, a[0], floatConstant(nb, loc, f32(), scale));
             });
  return {query, headRows(b, dOut, batch, head, start, queryTile),
          rowVector(lse, batch, head, start),
          rowVector(delta, batch, head, start)};
}

std::pair<Value, Value> AttentionGradTiler::probabilitiesAndScoreAdjoint(
    const QueryTile &tile, Value kTile, Value vTile, Value queryStart,
    Value keyStart) {
  Value scores = tb.matmul(tile.query, kTile, /*transposeLhs=*/false,
                           /*transposeRhs=*/true);
  scores = causalMasked(b, scores, queryStart, keyStart);
  // P = exp(S - lse): a masked score gives exp(-inf) = 0.
  Value probs = tb.mapIndexed(
      tb.sizesOf(scores), ValueRange{scores, tile.lse}, {identity(), rowMap()},
      f32(), [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
        Value shifted = arith::SubFOp::create(nb, loc, a[0], a[1]);
        return math::ExpOp::create(nb, loc, shifted);
      });
  // dS = P o (dO V^T - D).
  Value dProbs = tb.matmul(tile.dOut, vTile, /*transposeLhs=*/false,
                           /*transposeRhs=*/true);
  Value dScores =
      tb.mapIndexed(tb.sizesOf(scores), ValueRange{probs, dProbs, tile.delta},
                    {identity(), identity(), rowMap()}, f32(),
                    [](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                      Value centred =
                          arith::SubFOp::create(nb, loc, a[1], a[2]);
                      return arith::MulFOp::create(nb, loc, a[0], centred);
                    });
  return {probs, dScores};
}

SmallVector<Value> AttentionGradTiler::loop(
    Value from, Value to, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, from, to, idx(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  scf::YieldOp::create(
      b, body(forOp.getInductionVar(), forOp.getRegionIterArgs()));
  return SmallVector<Value>(forOp.getResults().begin(),
                            forOp.getResults().end());
}

void AttentionGradTiler::insertRows(Value tile, Value into, Value batch,
                                    Value head, Value start) {
  ArrayRef<int64_t> shape = tensorTypeOf(tile).getShape();
  tensor::ParallelInsertSliceOp::create(
      b, tile, into, ArrayRef<OpFoldResult>{batch, start, head, attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(shape[0]), attr(1), attr(shape[1])},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
}

Value AttentionGradTiler::unpadded(Value x, Type type) {
  int64_t width = tensorTypeOf(x).getDimSize(3);
  Value slice = tensor::ExtractSliceOp::create(
      b, x, ArrayRef<OpFoldResult>{attr(0), attr(0), attr(0), attr(0)},
      ArrayRef<OpFoldResult>{seq.batch, seq.length, seq.heads, attr(width)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  slice = tb.convert(slice, cast<RankedTensorType>(type).getElementType());
  if (slice.getType() != type)
    slice = tensor::CastOp::create(b, type, slice);
  return slice;
}

SmallVector<Value> AttentionGradTiler::build(MLAAttentionGradOp op) {
  MLIRContext *ctx = b.getContext();
  seq = padSequence(b, op.getQuery(), queryTile, keyTile);
  auto pad = [&](Value x, unsigned dim) {
    return tb.zeroPadded(x, dim, seq.padded, f32());
  };
  q = pad(op.getQuery(), 1);
  k = pad(op.getKey(), 1);
  v = pad(op.getValue(), 1);

  // Whole-tensor prologue, with s = sigmoid(gate): dO = d_output s,
  // d_gate = d_output output (1 - s), and D[b, h, t] =
  // sum_j d_output output (= sum_j dO o, as output = o s).
  Value dOutput = tb.convert(op.getDOutput(), f32());
  Value output = tb.convert(op.getOutput(), f32());
  Value gateSigmoid;
  if (op.getGate())
    gateSigmoid = tb.sigmoid(tb.convert(op.getGate(), f32()));
  Value dUngated = gateSigmoid ? tb.multiply(dOutput, gateSigmoid) : dOutput;
  dOut = pad(dUngated, 1);
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  // Loops (b, h, t, j); [B, T, H, Dv] is read at (b, t, h, j).
  AffineMap btHj = AffineMap::get(4, 0, {d0, d2, d1, d3}, ctx);
  AffineMap bht = AffineMap::get(4, 0, {d0, d1, d2}, ctx);
  Value deltaInit = tb.filled({seq.batch, seq.heads, seq.length}, f32(), 0.0);
  Value rowDelta = tb.generic(
      {dOutput, output}, {btHj, btHj}, {deltaInit}, {bht}, 4, 3,
      [](OpBuilder &nb, Location loc, ValueRange a) -> SmallVector<Value> {
        Value product = arith::MulFOp::create(nb, loc, a[0], a[1]);
        return {arith::AddFOp::create(nb, loc, a[2], product)};
      })[0];
  delta = pad(rowDelta, 2);
  lse = pad(op.getLse(), 2);

  // dK, dV: per (batch, head, key tile), the query tiles that see it.
  Value dkInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{seq.batch, seq.padded, seq.heads, attr(keyDim)},
      f32());
  Value dvInit = tensor::EmptyOp::create(
      b,
      ArrayRef<OpFoldResult>{seq.batch, seq.padded, seq.heads, attr(valueDim)},
      f32());
  auto keyForall = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{seq.batch, seq.heads, seq.numKeyTiles},
      ValueRange{dkInit, dvInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(keyForall.getTerminator());
    Value bi = keyForall.getInductionVar(0), hi = keyForall.getInductionVar(1);
    Value keyStart =
        arith::MulIOp::create(b, keyForall.getInductionVar(2), idx(keyTile));
    Value kTile = headRows(b, k, bi, hi, keyStart, keyTile);
    Value vTile = headRows(b, v, bi, hi, keyStart, keyTile);
    // dK and dV side by side in one [Bc, Dqk + Dv] accumulator, updated in
    // place: a loop that carries one tile gives bufferization one buffer
    // whose ownership it knows, where two need run-time alias checks (a
    // helper call that a GPU tile program cannot make).
    auto columns = [&](Value x, int64_t from, int64_t width) -> Value {
      return tensor::ExtractSliceOp::create(
          b, x, ArrayRef<OpFoldResult>{attr(0), attr(from)},
          ArrayRef<OpFoldResult>{attr(keyTile), attr(width)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
    };
    auto intoColumns = [&](Value part, Value into, int64_t from) -> Value {
      int64_t width = tensorTypeOf(part).getDimSize(1);
      return tensor::InsertSliceOp::create(
          b, part, into, ArrayRef<OpFoldResult>{attr(0), attr(from)},
          ArrayRef<OpFoldResult>{attr(keyTile), attr(width)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
    };
    Value accInit =
        tb.filled({attr(keyTile), attr(keyDim + valueDim)}, f32(), 0.0);

    // The query tiles from `first` on see the key tile; tiles before it end
    // before it starts. One loop, every tile masked: the mask keeps every
    // score of the tiles past the diagonal (bit-identical to leaving them
    // unmasked), and one loop needs no ownership checks between loops.
    Value first = arith::DivUIOp::create(b, keyStart, idx(queryTile));
    Value acc = loop(first, seq.numQueryTiles, accInit,
                     [&](Value i, ValueRange carried) -> SmallVector<Value> {
                       Value queryStart =
                           arith::MulIOp::create(b, i, idx(queryTile));
                       QueryTile tile = queryTileAt(bi, hi, queryStart);
                       auto [probs, dScores] = probabilitiesAndScoreAdjoint(
                           tile, kTile, vTile, queryStart, keyStart);
                       // dK += dS^T (lambda q); dV += P^T dO.
                       Value dk = tb.add(columns(carried[0], 0, keyDim),
                                         tb.matmul(dScores, tile.query,
                                                   /*transposeLhs=*/true));
                       Value dv = tb.add(columns(carried[0], keyDim, valueDim),
                                         tb.matmul(probs, tile.dOut,
                                                   /*transposeLhs=*/true));
                       Value both = intoColumns(dk, carried[0], 0);
                       return {intoColumns(dv, both, keyDim)};
                     })[0];
    Value dKey = columns(acc, 0, keyDim),
          dValue = columns(acc, keyDim, valueDim);

    b.setInsertionPointToEnd(keyForall.getTerminator().getBody());
    insertRows(dKey, keyForall.getRegionIterArgs()[0], bi, hi, keyStart);
    insertRows(dValue, keyForall.getRegionIterArgs()[1], bi, hi, keyStart);
  }

  // dQ: per (batch, head, query tile), the key tiles it sees, as in the
  // forward.
  Value dqInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{seq.batch, seq.padded, seq.heads, attr(keyDim)},
      f32());
  auto queryForall = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{seq.batch, seq.heads, seq.numQueryTiles},
      ValueRange{dqInit}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(queryForall.getTerminator());
    Value bi = queryForall.getInductionVar(0),
          hi = queryForall.getInductionVar(1);
    Value queryStart = arith::MulIOp::create(b, queryForall.getInductionVar(2),
                                             idx(queryTile));
    QueryTile tile = queryTileAt(bi, hi, queryStart);
    SmallVector<Value> acc = {
        tb.filled({attr(queryTile), attr(keyDim)}, f32(), 0.0)};
    // The key tiles up to the diagonal ones, in one masked loop (as for
    // dK and dV above).
    Value below = arith::DivUIOp::create(b, queryStart, idx(keyTile));
    int64_t numDiagonal = std::max<int64_t>(1, queryTile / keyTile);
    Value diagonalEnd = arith::AddIOp::create(b, below, idx(numDiagonal));
    acc = loop(idx(0), diagonalEnd, acc,
               [&](Value j, ValueRange carried) -> SmallVector<Value> {
                 Value keyStart = arith::MulIOp::create(b, j, idx(keyTile));
                 Value kTile = headRows(b, k, bi, hi, keyStart, keyTile);
                 Value vTile = headRows(b, v, bi, hi, keyStart, keyTile);
                 Value dScores = probabilitiesAndScoreAdjoint(
                                     tile, kTile, vTile, queryStart, keyStart)
                                     .second;
                 // In place (the sum is the generic's init): the loop
                 // carries one buffer, with no run-time ownership checks.
                 Value term = tb.matmul(dScores, kTile);
                 return tb.generic(
                     {term}, {identity()}, {carried[0]}, {identity()}, 2, 2,
                     [](OpBuilder &nb, Location loc,
                        ValueRange a) -> SmallVector<Value> {
                       return {arith::AddFOp::create(nb, loc, a[1], a[0])};
                     });
               });
    // dQ = lambda sum_j dS K_j.
    Value dq =
        tb.map(acc[0], f32(), [&](OpBuilder &nb, Location loc, ValueRange a) {
          return arith::MulFOp::create(nb, loc, a[0],
                                       floatConstant(nb, loc, f32(), scale));
        });

    b.setInsertionPointToEnd(queryForall.getTerminator().getBody());
    insertRows(dq, queryForall.getRegionIterArgs()[0], bi, hi, queryStart);
  }

  SmallVector<Value> results = {
      unpadded(queryForall.getResult(0), op.getDQuery().getType()),
      unpadded(keyForall.getResult(0), op.getDKey().getType()),
      unpadded(keyForall.getResult(1), op.getDValue().getType())};
  if (gateSigmoid) {
    Type gateType = op.getDGate().getType();
    Value dGate = tb.map(
        ValueRange{dOutput, output, gateSigmoid},
        cast<RankedTensorType>(gateType).getElementType(),
        [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
          Value one = floatConstant(nb, loc, f32(), 1.0);
          Value complement = arith::SubFOp::create(nb, loc, one, a[2]);
          Value product = arith::MulFOp::create(nb, loc, a[0], a[1]);
          Value g = arith::MulFOp::create(nb, loc, product, complement);
          return convertScalar(
              nb, loc, g, cast<RankedTensorType>(gateType).getElementType());
        });
    if (dGate.getType() != gateType)
      dGate = tensor::CastOp::create(b, gateType, dGate);
    results.push_back(dGate);
  }
  return results;
}

LogicalResult mlir::moe::tileAttentionGrad(RewriterBase &rewriter,
                                           MLAAttentionGradOp op,
                                           const AttentionTileSizes &tiles) {
  int64_t br = tiles.queryTile, bc = tiles.keyTile;
  if (br < 1 || bc < 1)
    return op.emitOpError("cannot be tiled: expects positive query-tile (")
           << br << ") and key-tile (" << bc << ")";
  if (br % bc != 0 && bc % br != 0)
    return op.emitOpError("cannot be tiled: expects one of query-tile (")
           << br << ") and key-tile (" << bc << ") to divide the other";
  int64_t keyDim = tensorTypeOf(op.getQuery()).getDimSize(3);
  int64_t valueDim = tensorTypeOf(op.getValue()).getDimSize(3);
  if (ShapedType::isDynamic(valueDim))
    return op.emitOpError("cannot be tiled: expects a static value head "
                          "dimension, found ")
           << op.getValue().getType();

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  AttentionGradTiler tiler(b, tiles, op.getScaleOrDefault(), keyDim, valueDim);
  rewriter.replaceOp(op, tiler.build(op));
  return success();
}
