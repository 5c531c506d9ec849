//===- TileLinearAttention.cpp - Chunk KDA with proven-safe dense tiles ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-tile-linear-attention: lowers `moe.kda` into the chunked
// WY/UT algorithm of ALGORITHMS.md sections 1.4-1.6 on tensors. Each
// diagonal sub-chunk tile of the intra-chunk matrices takes the dense path
// (factored exponentials, two matmuls) only where the decay-bound analysis
// proves the hard condition of section 2.2; otherwise it takes the
// per-position path of section 2.4 or, for gates that cannot be proven, the
// exact runtime guard that picks a path per tile.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/DecayBound.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOETILELINEARATTENTION
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-tile-linear-attention"

namespace {

/// How the diagonal sub-chunk tiles of one kda op are computed.
enum class DiagonalPath { Dense, PerPosition, Guarded };

/// Lowers one `moe.kda` op. All tile math is fp32 on static shapes:
/// `[C, K]`, `[C, V]`, `[c, c]`, `[K, V]`.
class KDATiler {
public:
  KDATiler(ImplicitLocOpBuilder &b, int64_t chunk, int64_t subChunk,
           TileReference reference, DiagonalPath path, double exponentLimit,
           double scale, int64_t keyDim, int64_t valueDim)
      : b(b), tb(b), chunk(chunk), subChunk(subChunk), reference(reference),
        path(path), exponentLimit(exponentLimit), scale(scale), keyDim(keyDim),
        valueDim(valueDim) {}

  /// Builds the tiled computation; returns (output, final state) with the
  /// op's result types.
  std::pair<Value, Value> build(KDAOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value cst(double v) { return floatConstant(b, b.getLoc(), f32(), v); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }

  /// Row `row` of a static 2-D tensor, as a 1-D tensor.
  Value rowOf(Value matrix, OpFoldResult row);
  /// Rows `[offset, offset + size)` of a static 2-D tensor.
  Value rowsOf(Value matrix, int64_t offset, int64_t size);
  /// `x * exp(sign * (gamma - row))`, `row` broadcast over rows of `x`.
  Value scaleByDecay(Value x, Value gamma, Value row, double sign);
  /// Element-wise `a - b` on 1-D tensors.
  Value subtract(Value lhs, Value rhs);

  /// The diagonal tile (Aqk, L) of rows `q, k, gamma` ([c, K]) and `beta`.
  std::pair<Value, Value> diagonalDense(Value q, Value k, Value gamma, Value g,
                                        Value beta);
  std::pair<Value, Value> diagonalPerPosition(Value q, Value k, Value gamma,
                                              Value beta);
  std::pair<Value, Value> diagonalGuarded(Value q, Value k, Value gamma,
                                          Value g, Value beta);
  /// Masks a raw [c, c] tile: Aqk keeps j <= i; L keeps j < i, times beta_i.
  std::pair<Value, Value> maskTile(Value rawAqk, Value rawL, Value beta);
  /// The reference row of a tile for the dense path.
  Value referenceRow(Value gamma, Value g);

  /// One chunk: returns (output rows [C, V], next state [K, V]).
  std::pair<Value, Value> chunkStep(Value q, Value k, Value v, Value g,
                                    Value beta, Value state);

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  int64_t chunk, subChunk;
  TileReference reference;
  DiagonalPath path;
  double exponentLimit;
  double scale;
  int64_t keyDim, valueDim;
};
} // namespace

Value KDATiler::rowOf(Value matrix, OpFoldResult row) {
  int64_t width = tensorTypeOf(matrix).getDimSize(1);
  auto type = RankedTensorType::get({width}, f32());
  return tensor::ExtractSliceOp::create(
      b, type, matrix, ArrayRef<OpFoldResult>{row, attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(width)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
}

Value KDATiler::rowsOf(Value matrix, int64_t offset, int64_t size) {
  int64_t width = tensorTypeOf(matrix).getDimSize(1);
  return tensor::ExtractSliceOp::create(
      b, matrix, ArrayRef<OpFoldResult>{attr(offset), attr(0)},
      ArrayRef<OpFoldResult>{attr(size), attr(width)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
}

Value KDATiler::scaleByDecay(Value x, Value gamma, Value row, double sign) {
  ArrayRef<int64_t> shape = tensorTypeOf(x).getShape();
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap column = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  return tb.mapIndexed(
      {attr(shape[0]), attr(shape[1])}, ValueRange{x, gamma, row},
      {identity, identity, column}, f32(),
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value diff = sign > 0
                         ? arith::SubFOp::create(nested, loc, args[1], args[2])
                         : arith::SubFOp::create(nested, loc, args[2], args[1]);
        Value factor = math::ExpOp::create(nested, loc, diff);
        return arith::MulFOp::create(nested, loc, args[0], factor);
      });
}

Value KDATiler::subtract(Value lhs, Value rhs) {
  return tb.map(ValueRange{lhs, rhs}, f32(),
                [](OpBuilder &nested, Location loc, ValueRange args) {
                  return arith::SubFOp::create(nested, loc, args[0], args[1]);
                });
}

std::pair<Value, Value> KDATiler::maskTile(Value rawAqk, Value rawL,
                                           Value beta) {
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  SmallVector<OpFoldResult> sizes = {attr(subChunk), attr(subChunk)};
  // Masking is a select, never a multiply by zero: masked entries of the
  // dense GEMM may be infinite (section 1.6).
  auto mask = [&](arith::CmpIPredicate keep, bool withBeta) {
    return [&, keep, withBeta](OpBuilder &nested, Location loc,
                               ValueRange args) -> Value {
      Value i = linalg::IndexOp::create(nested, loc, 0);
      Value j = linalg::IndexOp::create(nested, loc, 1);
      Value inside = arith::CmpIOp::create(nested, loc, keep, j, i);
      Value value = args[0];
      if (withBeta)
        value = arith::MulFOp::create(nested, loc, args[1], value);
      Value zero = floatConstant(nested, loc, nested.getF32Type(), 0.0);
      return arith::SelectOp::create(nested, loc, inside, value, zero);
    };
  };
  Value aqk = tb.mapIndexed(sizes, ValueRange{rawAqk}, {identity}, f32(),
                            mask(arith::CmpIPredicate::ule, false));
  Value l = tb.mapIndexed(sizes, ValueRange{rawL, beta}, {identity, rowMap},
                          f32(), mask(arith::CmpIPredicate::ult, true));
  return {aqk, l};
}

Value KDATiler::referenceRow(Value gamma, Value g) {
  switch (reference) {
  case TileReference::Start:
    return rowOf(gamma, attr(0));
  case TileReference::Mid:
    return rowOf(gamma, attr(subChunk / 2));
  case TileReference::Pre:
    // The cumulative decay before the tile: Gamma_0 - g_0.
    return subtract(rowOf(gamma, attr(0)), rowOf(g, attr(0)));
  }
  llvm_unreachable("unknown tile reference");
}

std::pair<Value, Value> KDATiler::diagonalDense(Value q, Value k, Value gamma,
                                                Value g, Value beta) {
  // exp(G_i - G_j) = exp(G_i - G_r) * exp(G_r - G_j): two GEMMs.
  Value ref = referenceRow(gamma, g);
  Value qFactored = scaleByDecay(q, gamma, ref, +1.0);
  Value kFactored = scaleByDecay(k, gamma, ref, +1.0);
  Value kInverse = scaleByDecay(k, gamma, ref, -1.0);
  Value rawAqk = tb.matmul(qFactored, kInverse, false, true);
  Value rawL = tb.matmul(kFactored, kInverse, false, true);
  return maskTile(rawAqk, rawL, beta);
}

std::pair<Value, Value> KDATiler::diagonalPerPosition(Value q, Value k,
                                                      Value gamma, Value beta) {
  // For j <= i only, exp(G_i - G_j) <= 1 element-wise; never a reciprocal.
  MLIRContext *ctx = b.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx),
             d = getAffineDimExpr(2, ctx);
  auto map = [&](AffineExpr row) {
    return AffineMap::get(3, 0, {row, d}, ctx);
  };
  AffineMap out = AffineMap::get(3, 0, {i, j}, ctx);
  SmallVector<OpFoldResult> sizes = {attr(subChunk), attr(subChunk)};
  Value initAqk = tb.filled(sizes, f32(), 0.0);
  Value initL = tb.filled(sizes, f32(), 0.0);
  auto generic = linalg::GenericOp::create(
      b, TypeRange{initAqk.getType(), initL.getType()},
      ValueRange{q, k, k, gamma, gamma}, ValueRange{initAqk, initL},
      {map(i), map(j), map(i), map(i), map(j), out, out},
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value row = linalg::IndexOp::create(nested, loc, 0);
        Value col = linalg::IndexOp::create(nested, loc, 1);
        Value causal = arith::CmpIOp::create(
            nested, loc, arith::CmpIPredicate::ule, col, row);
        Value diff = arith::SubFOp::create(nested, loc, args[3], args[4]);
        Value zero = floatConstant(nested, loc, nested.getF32Type(), 0.0);
        // Mask before the exponential: j > i is never evaluated.
        Value exponent =
            arith::SelectOp::create(nested, loc, causal, diff, zero);
        Value decay = math::ExpOp::create(nested, loc, exponent);
        Value qk = arith::MulFOp::create(nested, loc, args[0], args[1]);
        Value kk = arith::MulFOp::create(nested, loc, args[2], args[1]);
        Value aqk = arith::AddFOp::create(
            nested, loc, args[5],
            arith::MulFOp::create(nested, loc, qk, decay));
        Value l = arith::AddFOp::create(
            nested, loc, args[6],
            arith::MulFOp::create(nested, loc, kk, decay));
        linalg::YieldOp::create(nested, loc, ValueRange{aqk, l});
      });
  return maskTile(generic.getResult(0), generic.getResult(1), beta);
}

std::pair<Value, Value> KDATiler::diagonalGuarded(Value q, Value k, Value gamma,
                                                  Value g, Value beta) {
  // The largest operand exponent of the dense path, exactly (section 2.4):
  // Gamma is non-increasing inside the tile.
  Value first = rowOf(gamma, attr(0));
  Value last = rowOf(gamma, attr(subChunk - 1));
  Value ref = referenceRow(gamma, g);
  Value queryRange = subtract(first, ref); // largest G_i - G_r
  Value keyRange = subtract(ref, last);    // largest G_r - G_j
  Value widest =
      tb.map(ValueRange{queryRange, keyRange}, f32(),
             [](OpBuilder &nested, Location loc, ValueRange args) {
               return arith::MaximumFOp::create(nested, loc, args[0], args[1]);
             });
  Value maxTensor = tb.reduceLast(
      widest, f32(), -std::numeric_limits<double>::infinity(),
      [](OpBuilder &nested, Location loc, ValueRange args) {
        return arith::MaximumFOp::create(nested, loc, args[0], args[1]);
      });
  Value maxExponent = tensor::ExtractOp::create(b, maxTensor, ValueRange{});
  // NaN compares false, so a NaN range takes the per-position path.
  Value safe = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, maxExponent,
                                     cst(exponentLimit));
  auto tileType = RankedTensorType::get({subChunk, subChunk}, f32());
  auto ifOp = scf::IfOp::create(b, TypeRange{tileType, tileType}, safe,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto [aqk, l] = diagonalDense(q, k, gamma, g, beta);
    scf::YieldOp::create(b, ValueRange{aqk, l});
    b.setInsertionPointToStart(ifOp.elseBlock());
    auto [aqkSlow, lSlow] = diagonalPerPosition(q, k, gamma, beta);
    scf::YieldOp::create(b, ValueRange{aqkSlow, lSlow});
  }
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

std::pair<Value, Value> KDATiler::chunkStep(Value q, Value k, Value v, Value g,
                                            Value beta, Value state) {
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);

  // Q = s q; Gamma = in-chunk inclusive cumsum of g, as Tril(1) . g.
  q = tb.map(q, f32(), [&](OpBuilder &nested, Location loc, ValueRange args) {
    return arith::MulFOp::create(nested, loc, args[0],
                                 floatConstant(nested, loc, f32(), scale));
  });
  Value lowerOnes =
      tb.mapIndexed({attr(chunk), attr(chunk)}, ValueRange{}, {}, f32(),
                    [](OpBuilder &nested, Location loc, ValueRange) -> Value {
                      Value i = linalg::IndexOp::create(nested, loc, 0);
                      Value j = linalg::IndexOp::create(nested, loc, 1);
                      Value keep = arith::CmpIOp::create(
                          nested, loc, arith::CmpIPredicate::ule, j, i);
                      return arith::SelectOp::create(
                          nested, loc, keep,
                          floatConstant(nested, loc, nested.getF32Type(), 1),
                          floatConstant(nested, loc, nested.getF32Type(), 0));
                    });
  Value gamma = tb.matmul(lowerOnes, g, false, false);

  // The intra-chunk matrices Aqk and L from a grid of c x c tiles.
  Value aqk = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
  Value l = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
  int64_t numTiles = chunk / subChunk;
  auto insertTile = [&](Value tile, Value into, int64_t row, int64_t col) {
    return tensor::InsertSliceOp::create(
        b, tile, into,
        ArrayRef<OpFoldResult>{attr(row * subChunk), attr(col * subChunk)},
        ArrayRef<OpFoldResult>{attr(subChunk), attr(subChunk)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
  };
  for (int64_t a = 0; a < numTiles; ++a) {
    Value qa = rowsOf(q, a * subChunk, subChunk);
    Value ka = rowsOf(k, a * subChunk, subChunk);
    Value ga = rowsOf(gamma, a * subChunk, subChunk);
    Value betaA = tensor::ExtractSliceOp::create(
        b, beta, ArrayRef<OpFoldResult>{attr(a * subChunk)},
        ArrayRef<OpFoldResult>{attr(subChunk)},
        ArrayRef<OpFoldResult>{attr(1)});
    // Off-diagonal tiles (a > b), referenced at the first row of tile a:
    // both factors are <= 1 for any gate.
    Value first = rowOf(ga, attr(0));
    Value qaRef = scaleByDecay(qa, ga, first, +1.0);
    Value kaRef = scaleByDecay(ka, ga, first, +1.0);
    for (int64_t c = 0; c < a; ++c) {
      Value kc = rowsOf(k, c * subChunk, subChunk);
      Value gc = rowsOf(gamma, c * subChunk, subChunk);
      Value kcRef = scaleByDecay(kc, gc, first, -1.0);
      Value tileAqk = tb.matmul(qaRef, kcRef, false, true);
      Value tileL = tb.matmul(kaRef, kcRef, false, true);
      tileL = tb.mapIndexed(
          {attr(subChunk), attr(subChunk)}, ValueRange{tileL, betaA},
          {identity, rowMap}, f32(),
          [](OpBuilder &nested, Location loc, ValueRange args) -> Value {
            return arith::MulFOp::create(nested, loc, args[0], args[1]);
          });
      aqk = insertTile(tileAqk, aqk, a, c);
      l = insertTile(tileL, l, a, c);
    }
    Value gRows = rowsOf(g, a * subChunk, subChunk);
    std::pair<Value, Value> diagonal;
    switch (path) {
    case DiagonalPath::Dense:
      diagonal = diagonalDense(qa, ka, ga, gRows, betaA);
      break;
    case DiagonalPath::PerPosition:
      diagonal = diagonalPerPosition(qa, ka, ga, betaA);
      break;
    case DiagonalPath::Guarded:
      diagonal = diagonalGuarded(qa, ka, ga, gRows, betaA);
      break;
    }
    aqk = insertTile(diagonal.first, aqk, a, a);
    l = insertTile(diagonal.second, l, a, a);
  }

  // M = (I + L)^-1 by forward substitution: row i = e_i - L[i, :] M, which
  // only reads the finished rows m < i (L is strictly lower triangular).
  Value mInit = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
  auto substitution = scf::ForOp::create(
      b, b.getLoc(), idx(0), idx(chunk), idx(1), ValueRange{mInit},
      [&](OpBuilder &nested, Location loc, Value i, ValueRange args) {
        ImplicitLocOpBuilder nb(loc, nested);
        Value lRow = tensor::ExtractSliceOp::create(
            nb, l, ArrayRef<OpFoldResult>{i, nb.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(chunk)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
        TensorBuilder ntb(nb);
        Value product = ntb.matmul(lRow, args[0]);
        Value row = ntb.map(
            product, nb.getF32Type(),
            [&](OpBuilder &body, Location bodyLoc, ValueRange vals) -> Value {
              Value col = linalg::IndexOp::create(body, bodyLoc, 1);
              Value diagonal = arith::CmpIOp::create(
                  body, bodyLoc, arith::CmpIPredicate::eq, col, i);
              Value unit = arith::SelectOp::create(
                  body, bodyLoc, diagonal,
                  floatConstant(body, bodyLoc, body.getF32Type(), 1),
                  floatConstant(body, bodyLoc, body.getF32Type(), 0));
              return arith::SubFOp::create(body, bodyLoc, unit, vals[0]);
            });
        Value updated = tensor::InsertSliceOp::create(
            nb, row, args[0], ArrayRef<OpFoldResult>{i, nb.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(chunk)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
        scf::YieldOp::create(nb, ValueRange{updated});
      });
  Value m = substitution.getResult(0);

  // W = M (beta K exp(Gamma)), U = M (beta V), Vn = U - W S.
  Value decay = tb.map(gamma, f32(),
                       [](OpBuilder &nested, Location loc, ValueRange args) {
                         return math::ExpOp::create(nested, loc, args[0]);
                       });
  auto betaRows = [&](Value x, Value factor) {
    ArrayRef<int64_t> shape = tensorTypeOf(x).getShape();
    SmallVector<Value> inputs = {x, beta};
    SmallVector<AffineMap> maps = {identity, rowMap};
    if (factor) {
      inputs.push_back(factor);
      maps.push_back(identity);
    }
    return tb.mapIndexed(
        {attr(shape[0]), attr(shape[1])}, inputs, maps, f32(),
        [](OpBuilder &nested, Location loc, ValueRange args) -> Value {
          Value r = arith::MulFOp::create(nested, loc, args[0], args[1]);
          if (args.size() > 2)
            r = arith::MulFOp::create(nested, loc, r, args[2]);
          return r;
        });
  };
  Value w = tb.matmul(m, betaRows(k, decay), false, false);
  Value u = tb.matmul(m, betaRows(v, Value()), false, false);
  Value pseudoValues = subtract(u, tb.matmul(w, state, false, false));

  // O = (Q exp(Gamma)) S + Aqk Vn.
  Value qDecayed = tb.multiply(q, decay);
  Value out = tb.add(tb.matmul(qDecayed, state, false, false),
                     tb.matmul(aqk, pseudoValues, false, false));

  // S' = exp(Gamma_last) S + (K exp(Gamma_last - Gamma))^T Vn.
  Value lastRow = rowOf(gamma, attr(chunk - 1));
  Value kDecayed = scaleByDecay(k, gamma, lastRow, -1.0);
  Value stateDecayed = tb.mapIndexed(
      {attr(keyDim), attr(valueDim)}, ValueRange{state, lastRow},
      {identity, rowMap}, f32(),
      [](OpBuilder &nested, Location loc, ValueRange args) -> Value {
        Value factor = math::ExpOp::create(nested, loc, args[1]);
        return arith::MulFOp::create(nested, loc, args[0], factor);
      });
  Value next =
      tb.add(stateDecayed, tb.matmul(kDecayed, pseudoValues, true, false));
  return {out, next};
}

std::pair<Value, Value> KDATiler::build(KDAOp op) {
  Type elementOut = tensorTypeOf(op.getOutput()).getElementType();
  Value batch = tensor::DimOp::create(b, op.getQuery(), 0);
  Value length = tensor::DimOp::create(b, op.getQuery(), 1);
  OpFoldResult heads = tensor::getMixedSize(b, b.getLoc(), op.getQuery(), 2);

  // Pad the sequence with zeros to whole chunks: a padded step has g = 0,
  // k = v = 0 and beta = 0, so it leaves the state unchanged.
  Value numChunks = arith::CeilDivUIOp::create(b, length, idx(chunk));
  Value padded = arith::MulIOp::create(b, numChunks, idx(chunk));
  auto pad = [&](Value x) { return tb.zeroPadded(x, 1, padded, f32()); };
  Value q = pad(op.getQuery()), k = pad(op.getKey()), v = pad(op.getValue()),
        g = pad(op.getLogDecay()), beta = pad(op.getBeta());
  bool valueMajor = op.getStateLayout() == StateLayout::ValueMajor;

  Value outInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{batch, padded, heads, attr(valueDim)}, f32());
  Value stateInit = tensor::EmptyOp::create(
      b, ArrayRef<OpFoldResult>{batch, heads, attr(keyDim), attr(valueDim)},
      f32());
  auto forall =
      scf::ForallOp::create(b, ArrayRef<OpFoldResult>{batch, heads},
                            ValueRange{outInit, stateInit}, std::nullopt);
  Value bi = forall.getInductionVar(0), hi = forall.getInductionVar(1);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());

    // The incoming state of this (batch, head), as [K, V].
    Value state;
    if (Value initial = op.getInitialState()) {
      int64_t d2 = valueMajor ? valueDim : keyDim;
      int64_t d3 = valueMajor ? keyDim : valueDim;
      state = tensor::ExtractSliceOp::create(
          b, RankedTensorType::get({d2, d3}, f32()), initial,
          ArrayRef<OpFoldResult>{bi, hi, attr(0), attr(0)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(d2), attr(d3)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
      if (valueMajor) {
        Value init = tensor::EmptyOp::create(
            b, ArrayRef<int64_t>{keyDim, valueDim}, f32());
        state =
            linalg::TransposeOp::create(b, state, init, ArrayRef<int64_t>{1, 0})
                ->getResult(0);
      }
    } else {
      state = tb.filled({attr(keyDim), attr(valueDim)}, f32(), 0.0);
    }
    Value headOut = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{padded, attr(valueDim)}, f32());

    auto chunks = scf::ForOp::create(
        b, b.getLoc(), idx(0), numChunks, idx(1), ValueRange{state, headOut},
        [&](OpBuilder &nested, Location loc, Value c, ValueRange args) {
          ImplicitLocOpBuilder nb(loc, nested);
          KDATiler inner(nb, chunk, subChunk, reference, path, exponentLimit,
                         scale, keyDim, valueDim);
          Value start = arith::MulIOp::create(
              nb, c, arith::ConstantIndexOp::create(nb, chunk));
          auto slice = [&](Value x, int64_t width) {
            auto type =
                width ? RankedTensorType::get({chunk, width}, nb.getF32Type())
                      : RankedTensorType::get({chunk}, nb.getF32Type());
            SmallVector<OpFoldResult> offsets = {bi, start, hi};
            SmallVector<OpFoldResult> sizes = {
                nb.getIndexAttr(1), nb.getIndexAttr(chunk), nb.getIndexAttr(1)};
            if (width) {
              offsets.push_back(nb.getIndexAttr(0));
              sizes.push_back(nb.getIndexAttr(width));
            }
            SmallVector<OpFoldResult> strides(sizes.size(), nb.getIndexAttr(1));
            return tensor::ExtractSliceOp::create(nb, type, x, offsets, sizes,
                                                  strides)
                .getResult();
          };
          auto [out, next] = inner.chunkStep(
              slice(q, keyDim), slice(k, keyDim), slice(v, valueDim),
              slice(g, keyDim), slice(beta, 0), args[0]);
          Value headUpdated = tensor::InsertSliceOp::create(
              nb, out, args[1],
              ArrayRef<OpFoldResult>{start, nb.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(chunk),
                                     nb.getIndexAttr(valueDim)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
          scf::YieldOp::create(nb, ValueRange{next, headUpdated});
        });

    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, chunks.getResult(1), forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{bi, attr(0), hi, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), padded, attr(1), attr(valueDim)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, chunks.getResult(0), forall.getRegionIterArgs()[1],
        ArrayRef<OpFoldResult>{bi, hi, attr(0), attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(keyDim), attr(valueDim)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  }

  // Drop the padding, restore the element type and the state layout.
  Value output = tensor::ExtractSliceOp::create(
      b, forall.getResult(0),
      ArrayRef<OpFoldResult>{attr(0), attr(0), attr(0), attr(0)},
      ArrayRef<OpFoldResult>{batch, length, heads, attr(valueDim)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  output = tb.convert(output, elementOut);
  if (output.getType() != op.getOutput().getType())
    output = tensor::CastOp::create(b, op.getOutput().getType(), output);
  Value finalState = forall.getResult(1);
  if (valueMajor) {
    Value init = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{batch, heads, attr(valueDim), attr(keyDim)},
        f32());
    finalState = linalg::TransposeOp::create(b, finalState, init,
                                             ArrayRef<int64_t>{0, 1, 3, 2})
                     ->getResult(0);
  }
  if (finalState.getType() != op.getFinalState().getType())
    finalState =
        tensor::CastOp::create(b, op.getFinalState().getType(), finalState);
  return {output, finalState};
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoETileLinearAttentionPass
    : public moe::impl::MoETileLinearAttentionBase<MoETileLinearAttentionPass> {
  using MoETileLinearAttentionBase::MoETileLinearAttentionBase;
  void runOnOperation() override;
};
} // namespace

void MoETileLinearAttentionPass::runOnOperation() {
  Operation *root = getOperation();
  auto isPowerOfTwo = [](int64_t n) { return n > 0 && (n & (n - 1)) == 0; };
  if (!isPowerOfTwo(chunkSize) || !isPowerOfTwo(subChunkSize) ||
      subChunkSize > chunkSize || subChunkSize < 2) {
    root->emitError() << "expects powers of two 2 <= sub-chunk-size ("
                      << static_cast<int64_t>(subChunkSize)
                      << ") <= chunk-size (" << static_cast<int64_t>(chunkSize)
                      << ")";
    return signalPassFailure();
  }
  std::optional<TileReference> ref = symbolizeTileReference(reference);
  if (!ref) {
    root->emitError() << "unknown reference '" << reference
                      << "', expected pre, start or mid";
    return signalPassFailure();
  }

  DecayBounds bounds(root);
  SmallVector<KDAOp> ops;
  root->walk([&](KDAOp op) { ops.push_back(op); });
  for (KDAOp op : ops) {
    // Tiles are static: [C, K] and [K, V]. (The verifier already requires a
    // static K.)
    if (tensorTypeOf(op.getValue()).isDynamicDim(3)) {
      op.emitOpError("needs a static value dimension V to be tiled");
      return signalPassFailure();
    }
    RankedTensorType qType = tensorTypeOf(op.getQuery());
    Type operandType = qType.getElementType();
    TileSafetyVerdict verdict =
        bounds.checkTile(op.getLogDecay(), subChunkSize, *ref, operandType);
    DiagonalPath path;
    std::string why;
    std::string boundText =
        verdict.lowerBound ? llvm::formatv("{0}", *verdict.lowerBound).str()
                           : std::string("none");
    std::string numbers = llvm::formatv(
        "bound {0}, {1} reference over {2} rows: exponent {3} vs limit {4} "
        "for {5}, margin {6}",
        boundText, stringifyTileReference(*ref), subChunkSize, verdict.exponent,
        verdict.limit, operandType, verdict.margin);
    if (testForceDense) {
      path = DiagonalPath::Dense;
      why = "dense diagonal tiles forced by test-force-dense (" + numbers + ")";
    } else if (verdict.proven) {
      path = DiagonalPath::Dense;
      why = "dense diagonal tiles, proven safe (" + numbers + ")";
    } else if (runtimeGuard) {
      path = DiagonalPath::Guarded;
      why = "runtime-guarded diagonal tiles, not proven (" + numbers + ")";
    } else {
      path = DiagonalPath::PerPosition;
      why = "per-position diagonal tiles, not proven (" + numbers + ")";
    }
    op.emitRemark() << "kda tiled with chunk "
                    << static_cast<int64_t>(chunkSize) << ", sub-chunk "
                    << static_cast<int64_t>(subChunkSize) << ": " << why;

    OpBuilder builder(op);
    ImplicitLocOpBuilder b(op.getLoc(), builder);
    KDATiler tiler(b, chunkSize, subChunkSize, *ref, path, verdict.limit,
                   op.getScaleOrDefault(), qType.getDimSize(3),
                   tensorTypeOf(op.getValue()).getDimSize(3));
    auto [output, finalState] = tiler.build(op);
    op.getOutput().replaceAllUsesWith(output);
    op.getFinalState().replaceAllUsesWith(finalState);
    op.erase();
  }
}
