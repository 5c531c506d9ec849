//===- TileAttention.cpp - Causal online-softmax attention on tiles -------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-tile-attention: lowers `moe.mla_attention` into the causal
// flash-attention forward of ALGORITHMS.md section 3.2 on static fp32 tiles
// (and, through TileAttentionBackward.cpp, `moe.mla_attention_grad` into
// the backward of section 3.3).
// Query tiles run in parallel; each walks the key tiles below the diagonal
// without a mask and then the diagonal tiles with one, keeping the running
// row maximum and sum of the online softmax, and ends with the log-sum-exp
// and the sigmoid output gate.
//
//===----------------------------------------------------------------------===//

#include "AttentionTiles.h"

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Transforms.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_MOETILEATTENTION
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-tile-attention"

//===----------------------------------------------------------------------===//
// Shared tiles (AttentionTiles.h)
//===----------------------------------------------------------------------===//

attention_tiles::PaddedSequence
attention_tiles::padSequence(ImplicitLocOpBuilder &b, Value query,
                             int64_t queryTile, int64_t keyTile) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  PaddedSequence seq;
  seq.batch = tensor::DimOp::create(b, query, 0);
  seq.length = tensor::DimOp::create(b, query, 1);
  seq.heads = tensor::getMixedSize(b, b.getLoc(), query, 2);
  // A multiple of both tiles (one divides the other), so every tile read is
  // in bounds.
  Value period = idx(std::max(queryTile, keyTile));
  Value numPeriods = arith::CeilDivUIOp::create(b, seq.length, period);
  seq.padded = arith::MulIOp::create(b, numPeriods, period);
  seq.numQueryTiles = arith::CeilDivUIOp::create(b, seq.length, idx(queryTile));
  seq.numKeyTiles = arith::CeilDivUIOp::create(b, seq.length, idx(keyTile));
  return seq;
}

Value attention_tiles::headRows(ImplicitLocOpBuilder &b, Value x, Value batch,
                                Value head, Value start, int64_t rows) {
  int64_t width = tensorTypeOf(x).getDimSize(3);
  auto type = RankedTensorType::get({rows, width}, b.getF32Type());
  auto attr = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  return tensor::ExtractSliceOp::create(
      b, type, x, ArrayRef<OpFoldResult>{batch, start, head, attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(rows), attr(1), attr(width)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
}

Value attention_tiles::causalMasked(ImplicitLocOpBuilder &b, Value scores,
                                    Value queryStart, Value keyStart) {
  TensorBuilder tb(b);
  Type type = tensorTypeOf(scores).getElementType();
  double negInf = -std::numeric_limits<double>::infinity();
  return tb.map(
      scores, type, [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value row = arith::AddIOp::create(
            nested, loc, queryStart, linalg::IndexOp::create(nested, loc, 0));
        Value col = arith::AddIOp::create(
            nested, loc, keyStart, linalg::IndexOp::create(nested, loc, 1));
        Value visible = arith::CmpIOp::create(
            nested, loc, arith::CmpIPredicate::ule, col, row);
        return arith::SelectOp::create(
            nested, loc, visible, args[0],
            floatConstant(nested, loc, type, negInf));
      });
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

namespace {

/// The online-softmax state of one query tile: the running row maximum
/// (`max`, [Br], in log2 units because the scores carry the factor
/// log2(e)), the running row sum of `exp2(score - max)` (`sum`, [Br]) and
/// the unnormalised output (`acc`, [Br, Dv]).
struct SoftmaxState {
  Value max, sum, acc;

  SmallVector<Value> values() const { return {max, sum, acc}; }
  static SoftmaxState from(ValueRange values) {
    return {values[0], values[1], values[2]};
  }
};

/// Lowers one `moe.mla_attention` op. Tiles are fp32 and static:
/// `[Br, Dqk]`, `[Bc, Dqk]`, `[Bc, Dv]`, `[Br, Bc]`, `[Br, Dv]`, `[Br]`.
class AttentionTiler {
public:
  AttentionTiler(ImplicitLocOpBuilder &b, AttentionTileSizes tiles,
                 double scale, int64_t valueDim)
      : b(b), tb(b), queryTile(tiles.queryTile), keyTile(tiles.keyTile),
        scale(scale), valueDim(valueDim) {}

  /// Builds the tiled computation; returns (output, lse) with the op's
  /// result types.
  std::pair<Value, Value> build(MLAAttentionOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  AffineMap identity() { return b.getMultiDimIdentityMap(2); }
  AffineMap rowMap() {
    return AffineMap::get(2, 0, {getAffineDimExpr(0, b.getContext())},
                          b.getContext());
  }

  /// Rows `[start, start + rows)` of head `head` of batch `batch` of
  /// `x: [B, Tp, H, D]`, as a static `[rows, D]` tile.
  Value tileOf(Value x, Value batch, Value head, Value start, int64_t rows) {
    return attention_tiles::headRows(b, x, batch, head, start, rows);
  }

  /// One online-softmax step over the key tile `k: [Bc, Dqk]`,
  /// `v: [Bc, Dv]` for the pre-scaled query tile `q: [Br, Dqk]`. The causal
  /// mask is applied only when `queryStart` and `keyStart` (the sequence
  /// positions of the tiles' first rows) are given: on the diagonal tiles.
  SoftmaxState step(Value q, Value k, Value v, SoftmaxState state,
                    Value queryStart = Value(), Value keyStart = Value());

  /// Runs `step` over the key tiles `[from, to)` of `(batch, head)` in an
  /// scf.for carrying the softmax state; masked when `queryStart` is set.
  SoftmaxState keyLoop(Value from, Value to, Value q, Value keys, Value values,
                       Value batch, Value head, SoftmaxState state,
                       Value queryStart = Value());

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  int64_t queryTile, keyTile;
  double scale;
  int64_t valueDim;
};
} // namespace

SoftmaxState AttentionTiler::step(Value q, Value k, Value v, SoftmaxState state,
                                  Value queryStart, Value keyStart) {
  Type type = f32();
  double negInf = -std::numeric_limits<double>::infinity();

  // S = Q K^T, already in log2 units (the query carries scale * log2 e).
  Value scores = tb.matmul(q, k, /*transposeLhs=*/false, /*transposeRhs=*/true);
  // Diagonal tile: key position > query position is masked.
  if (queryStart)
    scores = attention_tiles::causalMasked(b, scores, queryStart, keyStart);

  // m' = max(m, rowmax S).
  Value rowMax = tb.reduceLast(
      scores, type, negInf, [](OpBuilder &nested, Location loc, ValueRange a) {
        return arith::MaximumFOp::create(nested, loc, a[0], a[1]);
      });
  Value max =
      tb.map(ValueRange{state.max, rowMax}, type,
             [](OpBuilder &nested, Location loc, ValueRange a) {
               return arith::MaximumFOp::create(nested, loc, a[0], a[1]);
             });
  // P = exp2(S - m'); a masked score gives exp2(-inf) = 0.
  Value probs = tb.mapIndexed(
      tb.sizesOf(scores), ValueRange{scores, max}, {identity(), rowMap()}, type,
      [](OpBuilder &nested, Location loc, ValueRange a) -> Value {
        Value shifted = arith::SubFOp::create(nested, loc, a[0], a[1]);
        return math::Exp2Op::create(nested, loc, shifted);
      });
  // c = exp2(m - m'): 0 on the first step (m = -inf, m' finite).
  Value correction =
      tb.map(ValueRange{state.max, max}, type,
             [](OpBuilder &nested, Location loc, ValueRange a) -> Value {
               Value shifted = arith::SubFOp::create(nested, loc, a[0], a[1]);
               return math::Exp2Op::create(nested, loc, shifted);
             });
  // l' = c l + rowsum P.
  Value rowSum = tb.reduceLast(
      probs, type, 0.0, [](OpBuilder &nested, Location loc, ValueRange a) {
        return arith::AddFOp::create(nested, loc, a[0], a[1]);
      });
  Value sum =
      tb.map(ValueRange{correction, state.sum, rowSum}, type,
             [](OpBuilder &nested, Location loc, ValueRange a) -> Value {
               Value scaled = arith::MulFOp::create(nested, loc, a[0], a[1]);
               return arith::AddFOp::create(nested, loc, scaled, a[2]);
             });
  // Acc' = c Acc + P V.
  Value update = tb.matmul(probs, v);
  Value acc = tb.mapIndexed(
      tb.sizesOf(state.acc), ValueRange{state.acc, correction, update},
      {identity(), rowMap(), identity()}, type,
      [](OpBuilder &nested, Location loc, ValueRange a) -> Value {
        Value scaled = arith::MulFOp::create(nested, loc, a[1], a[0]);
        return arith::AddFOp::create(nested, loc, scaled, a[2]);
      });
  return {max, sum, acc};
}

SoftmaxState AttentionTiler::keyLoop(Value from, Value to, Value q, Value keys,
                                     Value values, Value batch, Value head,
                                     SoftmaxState state, Value queryStart) {
  auto loop = scf::ForOp::create(b, from, to, idx(1), state.values());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value j = loop.getInductionVar();
  Value keyStart = arith::MulIOp::create(b, j, idx(keyTile));
  Value k = tileOf(keys, batch, head, keyStart, keyTile);
  Value v = tileOf(values, batch, head, keyStart, keyTile);
  SoftmaxState next =
      step(q, k, v, SoftmaxState::from(loop.getRegionIterArgs()), queryStart,
           queryStart ? keyStart : Value());
  scf::YieldOp::create(b, next.values());
  return SoftmaxState::from(loop.getResults());
}

std::pair<Value, Value> AttentionTiler::build(MLAAttentionOp op) {
  Type elementOut = tensorTypeOf(op.getOutput()).getElementType();
  // Pad the sequence with zeros to a multiple of both tiles.
  attention_tiles::PaddedSequence seq =
      attention_tiles::padSequence(b, op.getQuery(), queryTile, keyTile);
  Value batch = seq.batch, length = seq.length, padded = seq.padded,
        numQueryTiles = seq.numQueryTiles;
  OpFoldResult heads = seq.heads;
  auto pad = [&](Value x) { return tb.zeroPadded(x, 1, padded, f32()); };
  Value q = pad(op.getQuery()), k = pad(op.getKey()), v = pad(op.getValue());
  Value gate = op.getGate() ? pad(op.getGate()) : Value();

  Value outInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{batch, padded, heads, attr(valueDim)}, f32());
  Value lseInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{batch, heads, padded}, f32());
  auto forall = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{batch, heads, numQueryTiles},
      ValueRange{outInit, lseInit}, std::nullopt);
  Value bi = forall.getInductionVar(0), hi = forall.getInductionVar(1),
        qi = forall.getInductionVar(2);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value queryStart = arith::MulIOp::create(b, qi, idx(queryTile));

    // Q = (scale * log2 e) q, so that exp2 of a score difference is the
    // natural-base softmax factor.
    double log2Scale = scale * llvm::numbers::log2e;
    Value query = tb.map(tileOf(q, bi, hi, queryStart, queryTile), f32(),
                         [&](OpBuilder &nested, Location loc, ValueRange args) {
                           return arith::MulFOp::create(
                               nested, loc, args[0],
                               floatConstant(nested, loc, f32(), log2Scale));
                         });
    SoftmaxState state = {
        tb.filled({attr(queryTile)}, f32(),
                  -std::numeric_limits<double>::infinity()),
        tb.filled({attr(queryTile)}, f32(), 0.0),
        tb.filled({attr(queryTile), attr(valueDim)}, f32(), 0.0)};

    // Key tiles [0, below) end before the query tile starts: no mask. Then
    // the diagonal tiles, which overlap the query rows: masked. Tiles after
    // them lie fully above the diagonal and are skipped.
    Value below = arith::DivUIOp::create(b, queryStart, idx(keyTile));
    state = keyLoop(idx(0), below, query, k, v, bi, hi, state);
    int64_t numDiagonal = std::max<int64_t>(1, queryTile / keyTile);
    if (numDiagonal == 1) {
      Value keyStart = arith::MulIOp::create(b, below, idx(keyTile));
      Value kTile = tileOf(k, bi, hi, keyStart, keyTile);
      Value vTile = tileOf(v, bi, hi, keyStart, keyTile);
      state = step(query, kTile, vTile, state, queryStart, keyStart);
    } else {
      Value end = arith::AddIOp::create(b, below, idx(numDiagonal));
      state = keyLoop(below, end, query, k, v, bi, hi, state, queryStart);
    }

    // Epilogue: O = Acc / l (times sigmoid(gate)); lse = ln 2 * m + ln l.
    SmallVector<Value> inputs = {state.acc, state.sum};
    SmallVector<AffineMap> maps = {identity(), rowMap()};
    if (gate) {
      inputs.push_back(tileOf(gate, bi, hi, queryStart, queryTile));
      maps.push_back(identity());
    }
    Value out = tb.mapIndexed(
        tb.sizesOf(state.acc), inputs, maps, f32(),
        [](OpBuilder &nested, Location loc, ValueRange a) -> Value {
          Value o = arith::DivFOp::create(nested, loc, a[0], a[1]);
          if (a.size() > 2)
            o = arith::MulFOp::create(nested, loc, o,
                                      buildSigmoid(nested, loc, a[2]));
          return o;
        });
    Value lse =
        tb.map(ValueRange{state.max, state.sum}, f32(),
               [&](OpBuilder &nested, Location loc, ValueRange a) -> Value {
                 Value ln2 =
                     floatConstant(nested, loc, f32(), llvm::numbers::ln2);
                 Value natural = arith::MulFOp::create(nested, loc, a[0], ln2);
                 Value logSum = math::LogOp::create(nested, loc, a[1]);
                 return arith::AddFOp::create(nested, loc, natural, logSum);
               });

    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, out, forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{bi, queryStart, hi, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(queryTile), attr(1),
                               attr(valueDim)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, lse, forall.getRegionIterArgs()[1],
        ArrayRef<OpFoldResult>{bi, hi, queryStart},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(queryTile)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
  }

  // Drop the padding and restore the element type of the output.
  Value output = tensor::ExtractSliceOp::create(
      b, forall.getResult(0),
      ArrayRef<OpFoldResult>{attr(0), attr(0), attr(0), attr(0)},
      ArrayRef<OpFoldResult>{batch, length, heads, attr(valueDim)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  output = tb.convert(output, elementOut);
  if (output.getType() != op.getOutput().getType())
    output = tensor::CastOp::create(b, op.getOutput().getType(), output);
  Value lse = tensor::ExtractSliceOp::create(
      b, forall.getResult(1), ArrayRef<OpFoldResult>{attr(0), attr(0), attr(0)},
      ArrayRef<OpFoldResult>{batch, heads, length},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
  if (lse.getType() != op.getLse().getType())
    lse = tensor::CastOp::create(b, op.getLse().getType(), lse);
  return {output, lse};
}

LogicalResult mlir::moe::tileAttention(RewriterBase &rewriter,
                                       MLAAttentionOp op,
                                       const AttentionTileSizes &tiles) {
  int64_t br = tiles.queryTile, bc = tiles.keyTile;
  if (br < 1 || bc < 1)
    return op.emitOpError("cannot be tiled: expects positive query-tile (")
           << br << ") and key-tile (" << bc << ")";
  if (br % bc != 0 && bc % br != 0)
    return op.emitOpError("cannot be tiled: expects one of query-tile (")
           << br << ") and key-tile (" << bc << ") to divide the other";
  int64_t valueDim = tensorTypeOf(op.getValue()).getDimSize(3);
  if (ShapedType::isDynamic(valueDim))
    return op.emitOpError("cannot be tiled: expects a static value head "
                          "dimension, found ")
           << op.getValue().getType();

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  AttentionTiler tiler(b, tiles, op.getScaleOrDefault(), valueDim);
  auto [output, lse] = tiler.build(op);
  rewriter.replaceOp(op, ValueRange{output, lse});
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoETileAttentionPass
    : public moe::impl::MoETileAttentionBase<MoETileAttentionPass> {
  using MoETileAttentionBase::MoETileAttentionBase;
  void runOnOperation() override;
};
} // namespace

void MoETileAttentionPass::runOnOperation() {
  // The forward ops and their adjoints (TileAttentionBackward.cpp).
  SmallVector<Operation *> ops;
  getOperation()->walk([&](Operation *op) {
    if (isa<MLAAttentionOp, MLAAttentionGradOp>(op))
      ops.push_back(op);
  });
  IRRewriter rewriter(&getContext());
  AttentionTileSizes tiles{queryTile, keyTile};
  bool failed = false;
  for (Operation *op : ops) {
    LogicalResult tiled =
        isa<MLAAttentionOp>(op)
            ? tileAttention(rewriter, cast<MLAAttentionOp>(op), tiles)
            : tileAttentionGrad(rewriter, cast<MLAAttentionGradOp>(op), tiles);
    if (mlir::failed(tiled)) {
      failed = true;
      continue;
    }
    ++numTiled;
  }
  if (failed)
    signalPassFailure();
}
