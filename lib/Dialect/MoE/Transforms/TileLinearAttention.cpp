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
// exact runtime guard that picks a path per tile. `moe.kda_grad` is lowered
// by the same pass, with the same decision, into the chunked backward of
// section 1.7 (KDATilingGrad.cpp); the tile builder is KDATiling.h.
//
//===----------------------------------------------------------------------===//

#include "KDATiling.h"

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
using namespace mlir::moe::kda_tiling;

#define DEBUG_TYPE "moe-tile-linear-attention"

//===----------------------------------------------------------------------===//
// Tile helpers
//===----------------------------------------------------------------------===//

Value KDATiler::idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }

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

Value KDATiler::entriesOf(Value vector, int64_t offset, int64_t size) {
  return tensor::ExtractSliceOp::create(
      b, vector, ArrayRef<OpFoldResult>{attr(offset)},
      ArrayRef<OpFoldResult>{attr(size)}, ArrayRef<OpFoldResult>{attr(1)});
}

Value KDATiler::tileOf(Value matrix, int64_t row, int64_t col) {
  return tensor::ExtractSliceOp::create(
      b, matrix,
      ArrayRef<OpFoldResult>{attr(row * subChunk), attr(col * subChunk)},
      ArrayRef<OpFoldResult>{attr(subChunk), attr(subChunk)},
      ArrayRef<OpFoldResult>{attr(1), attr(1)});
}

Value KDATiler::insertAt(Value tile, Value into, int64_t row, int64_t col) {
  ArrayRef<int64_t> shape = tensorTypeOf(tile).getShape();
  return tensor::InsertSliceOp::create(
      b, tile, into, ArrayRef<OpFoldResult>{attr(row), attr(col)},
      ArrayRef<OpFoldResult>{attr(shape[0]), attr(shape[1])},
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

Value KDATiler::scaleRows(Value x, Value rowFactor, Value other) {
  ArrayRef<int64_t> shape = tensorTypeOf(x).getShape();
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  SmallVector<Value> inputs = {x, rowFactor};
  SmallVector<AffineMap> maps = {identity, rowMap};
  if (other) {
    inputs.push_back(other);
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
}

Value KDATiler::subtract(Value lhs, Value rhs) {
  return tb.map(ValueRange{lhs, rhs}, f32(),
                [](OpBuilder &nested, Location loc, ValueRange args) {
                  return arith::SubFOp::create(nested, loc, args[0], args[1]);
                });
}

Value KDATiler::scaled(Value x, double factor) {
  return tb.map(
      x, f32(), [&](OpBuilder &nested, Location loc, ValueRange args) {
        return arith::MulFOp::create(nested, loc, args[0],
                                     floatConstant(nested, loc, f32(), factor));
      });
}

Value KDATiler::lowerPart(Value matrix, bool strict) {
  int64_t n = tensorTypeOf(matrix).getDimSize(0);
  // A select, never a multiply by zero: masked entries may be infinite
  // (section 1.6).
  return tb.mapIndexed(
      {attr(n), attr(n)}, ValueRange{matrix}, {b.getMultiDimIdentityMap(2)},
      f32(), [&](OpBuilder &nested, Location loc, ValueRange args) -> Value {
        Value i = linalg::IndexOp::create(nested, loc, 0);
        Value j = linalg::IndexOp::create(nested, loc, 1);
        Value inside = arith::CmpIOp::create(nested, loc,
                                             strict ? arith::CmpIPredicate::ult
                                                    : arith::CmpIPredicate::ule,
                                             j, i);
        Value zero = floatConstant(nested, loc, nested.getF32Type(), 0.0);
        return arith::SelectOp::create(nested, loc, inside, args[0], zero);
      });
}

Value KDATiler::lowerOnesMatrix() {
  return tb.mapIndexed(
      {attr(chunk), attr(chunk)}, ValueRange{}, {}, f32(),
      [](OpBuilder &nested, Location loc, ValueRange) -> Value {
        Value i = linalg::IndexOp::create(nested, loc, 0);
        Value j = linalg::IndexOp::create(nested, loc, 1);
        Value keep =
            arith::CmpIOp::create(nested, loc, arith::CmpIPredicate::ule, j, i);
        return arith::SelectOp::create(
            nested, loc, keep,
            floatConstant(nested, loc, nested.getF32Type(), 1),
            floatConstant(nested, loc, nested.getF32Type(), 0));
      });
}

Value KDATiler::stateOf(Value states, Value bi, Value hi, bool valueMajor) {
  int64_t keyDim = config.keyDim, valueDim = config.valueDim;
  int64_t d2 = valueMajor ? valueDim : keyDim;
  int64_t d3 = valueMajor ? keyDim : valueDim;
  Value state = tensor::ExtractSliceOp::create(
      b, RankedTensorType::get({d2, d3}, f32()), states,
      ArrayRef<OpFoldResult>{bi, hi, attr(0), attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(d2), attr(d3)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  if (!valueMajor)
    return state;
  Value init =
      tensor::EmptyOp::create(b, ArrayRef<int64_t>{keyDim, valueDim}, f32());
  return linalg::TransposeOp::create(b, state, init, ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

Value kda_tiling::sliceChunk(OpBuilder &b, Location loc, Value x, Value bi,
                             Value start, Value hi, int64_t chunk,
                             int64_t width) {
  auto type = width ? RankedTensorType::get({chunk, width}, b.getF32Type())
                    : RankedTensorType::get({chunk}, b.getF32Type());
  SmallVector<OpFoldResult> offsets = {bi, start, hi};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(chunk),
                                     b.getIndexAttr(1)};
  if (width) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(width));
  }
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, x, offsets, sizes,
                                        strides)
      .getResult();
}

//===----------------------------------------------------------------------===//
// Diagonal tiles
//===----------------------------------------------------------------------===//

std::pair<Value, Value> KDATiler::maskTile(Value rawAqk, Value rawKK) {
  return {lowerPart(rawAqk, /*strict=*/false),
          lowerPart(rawKK, /*strict=*/true)};
}

Value KDATiler::referenceRow(Value gamma, Value g) {
  switch (config.reference) {
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
                                                Value g) {
  // exp(G_i - G_j) = exp(G_i - G_r) * exp(G_r - G_j): two GEMMs.
  Value ref = referenceRow(gamma, g);
  Value qFactored = scaleByDecay(q, gamma, ref, +1.0);
  Value kFactored = scaleByDecay(k, gamma, ref, +1.0);
  Value kInverse = scaleByDecay(k, gamma, ref, -1.0);
  Value rawAqk = tb.matmul(qFactored, kInverse, false, true);
  Value rawKK = tb.matmul(kFactored, kInverse, false, true);
  return maskTile(rawAqk, rawKK);
}

std::pair<Value, Value> KDATiler::diagonalPerPosition(Value q, Value k,
                                                      Value gamma) {
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
  Value initKK = tb.filled(sizes, f32(), 0.0);
  auto generic = linalg::GenericOp::create(
      b, TypeRange{initAqk.getType(), initKK.getType()},
      ValueRange{q, k, k, gamma, gamma}, ValueRange{initAqk, initKK},
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
  return maskTile(generic.getResult(0), generic.getResult(1));
}

Value KDATiler::guardCondition(Value gamma, Value g) {
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
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, maxExponent,
                               cst(config.exponentLimit));
}

std::pair<Value, Value> KDATiler::diagonalGuarded(Value q, Value k, Value gamma,
                                                  Value g, Value safe) {
  auto tileType = RankedTensorType::get({subChunk, subChunk}, f32());
  auto ifOp = scf::IfOp::create(b, TypeRange{tileType, tileType}, safe,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto [aqk, kk] = diagonalDense(q, k, gamma, g);
    scf::YieldOp::create(b, ValueRange{aqk, kk});
    b.setInsertionPointToStart(ifOp.elseBlock());
    auto [aqkSlow, kkSlow] = diagonalPerPosition(q, k, gamma);
    scf::YieldOp::create(b, ValueRange{aqkSlow, kkSlow});
  }
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

//===----------------------------------------------------------------------===//
// One chunk
//===----------------------------------------------------------------------===//

ChunkForward KDATiler::chunkRows(Value q, Value k, Value g) {
  ChunkForward f;
  // Q = s q; Gamma = in-chunk inclusive cumsum of g, as Tril(1) . g.
  f.q = scaled(q, config.scale);
  f.k = k;
  f.g = g;
  f.lowerOnes = lowerOnesMatrix();
  f.gamma = tb.matmul(f.lowerOnes, g, false, false);
  if (config.path == DiagonalPath::Guarded)
    for (int64_t a = 0; a < chunk / subChunk; ++a)
      f.safe.push_back(guardCondition(rowsOf(f.gamma, a * subChunk, subChunk),
                                      rowsOf(g, a * subChunk, subChunk)));
  return f;
}

ChunkForward
KDATiler::chunkForward(Value q, Value k, Value v, Value g, Value beta,
                       Value state, const StoredChunk &stored,
                       function_ref<void(ChunkValue, Value)> emit) {
  auto done = [&](ChunkValue which, Value value) {
    if (emit)
      emit(which, value);
  };
  ChunkForward f = chunkRows(q, k, g);
  f.v = v;
  f.beta = beta;
  f.state = state;
  q = f.q;
  Value gamma = f.gamma;

  // The intra-chunk matrices Aqk and KK from a grid of c x c tiles.
  int64_t numTiles = chunk / subChunk;
  if (stored.aqk && stored.keyKey) {
    f.aqk = stored.aqk;
    f.keyKey = stored.keyKey;
  }
  Value aqk, kk;
  if (!f.aqk) {
    aqk = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
    kk = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
  }
  for (int64_t a = 0; a < numTiles && !f.aqk; ++a) {
    Value qa = rowsOf(q, a * subChunk, subChunk);
    Value ka = rowsOf(k, a * subChunk, subChunk);
    Value ga = rowsOf(gamma, a * subChunk, subChunk);
    // Off-diagonal tiles (a > b), referenced at the first row of tile a:
    // both factors are <= 1 for any gate.
    Value first = rowOf(ga, attr(0));
    Value qaRef = scaleByDecay(qa, ga, first, +1.0);
    Value kaRef = scaleByDecay(ka, ga, first, +1.0);
    for (int64_t c = 0; c < a; ++c) {
      Value kc = rowsOf(k, c * subChunk, subChunk);
      Value gc = rowsOf(gamma, c * subChunk, subChunk);
      Value kcRef = scaleByDecay(kc, gc, first, -1.0);
      aqk = insertAt(tb.matmul(qaRef, kcRef, false, true), aqk, a * subChunk,
                     c * subChunk);
      kk = insertAt(tb.matmul(kaRef, kcRef, false, true), kk, a * subChunk,
                    c * subChunk);
    }
    Value gRows = rowsOf(g, a * subChunk, subChunk);
    std::pair<Value, Value> diagonal;
    switch (config.path) {
    case DiagonalPath::Dense:
      diagonal = diagonalDense(qa, ka, ga, gRows);
      break;
    case DiagonalPath::PerPosition:
      diagonal = diagonalPerPosition(qa, ka, ga);
      break;
    case DiagonalPath::Guarded:
      diagonal = diagonalGuarded(qa, ka, ga, gRows, f.safe[a]);
      break;
    }
    aqk = insertAt(diagonal.first, aqk, a * subChunk, a * subChunk);
    kk = insertAt(diagonal.second, kk, a * subChunk, a * subChunk);
  }
  if (!f.aqk) {
    f.aqk = aqk;
    f.keyKey = kk;
    done(ChunkValue::Aqk, aqk);
    done(ChunkValue::KeyKey, kk);
  }

  // M = (I + L)^-1 by forward substitution: row i = e_i - L[i, :] M, which
  // only reads the finished rows m < i (L = Diag(beta) KK is strictly lower
  // triangular). Its 64 dependent steps are the longest chain of a chunk: a
  // caller that has M already passes it.
  if (stored.inverse) {
    f.m = stored.inverse;
  } else {
    f.l = scaleRows(f.keyKey, beta);
    Value l = f.l;
    Value mInit = tb.filled({attr(chunk), attr(chunk)}, f32(), 0.0);
    auto substitution = scf::ForOp::create(
        b, b.getLoc(), idx(0), idx(chunk), idx(1), ValueRange{mInit},
        [&](OpBuilder &nested, Location loc, Value i, ValueRange args) {
          ImplicitLocOpBuilder nb(loc, nested);
          Value lRow = tensor::ExtractSliceOp::create(
              nb, l, ArrayRef<OpFoldResult>{i, nb.getIndexAttr(0)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1),
                                     nb.getIndexAttr(chunk)},
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
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1),
                                     nb.getIndexAttr(chunk)},
              ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1)});
          scf::YieldOp::create(nb, ValueRange{updated});
        });
    f.m = substitution.getResult(0);
    done(ChunkValue::Inverse, f.m);
  }

  // W = M (beta K exp(Gamma)), U = M (beta V), Vn = U - W S.
  f.decay = tb.map(gamma, f32(),
                   [](OpBuilder &nested, Location loc, ValueRange args) {
                     return math::ExpOp::create(nested, loc, args[0]);
                   });
  f.kBeta = scaleRows(k, beta, f.decay);
  f.vBeta = scaleRows(v, beta);
  auto computed = [&](Value storedValue, ChunkValue which,
                      function_ref<Value()> compute) {
    if (storedValue)
      return storedValue;
    Value value = compute();
    done(which, value);
    return value;
  };
  f.w = computed(stored.w, ChunkValue::W,
                 [&] { return tb.matmul(f.m, f.kBeta, false, false); });
  f.u = computed(stored.u, ChunkValue::U,
                 [&] { return tb.matmul(f.m, f.vBeta, false, false); });
  f.pseudoValues = subtract(f.u, tb.matmul(f.w, state, false, false));
  f.qDecayed = computed(stored.qDecayed, ChunkValue::QDecayed,
                        [&] { return tb.multiply(q, f.decay); });
  f.lastRow = rowOf(gamma, attr(chunk - 1));
  // exp(Gamma_last - Gamma) from the suffix sums sum_{j > i} g_j, not from
  // the difference of two cumulative sums: near the chunk's end that
  // difference is rounding noise of |Gamma_last| (one ulp of 5000 nats is
  // 5e-4), where the exact factor is 1 or close to it.
  Value suffix = subtract(tb.matmul(f.lowerOnes, g, true, false), g);
  f.tailDecay = tb.map(suffix, f32(),
                       [](OpBuilder &nested, Location loc, ValueRange args) {
                         return math::ExpOp::create(nested, loc, args[0]);
                       });
  f.kDecayed = computed(stored.kDecayed, ChunkValue::KDecayed,
                        [&] { return tb.multiply(k, f.tailDecay); });
  return f;
}

Value KDATiler::chunkOutput(const ChunkForward &f) {
  // O = (Q exp(Gamma)) S + Aqk Vn.
  return tb.add(tb.matmul(f.qDecayed, f.state, false, false),
                tb.matmul(f.aqk, f.pseudoValues, false, false));
}

Value KDATiler::chunkNextState(const ChunkForward &f) {
  // S' = exp(Gamma_last) S + (K exp(Gamma_last - Gamma))^T Vn.
  Value lastDecay = tb.map(
      f.lastRow, f32(), [](OpBuilder &nested, Location loc, ValueRange args) {
        return math::ExpOp::create(nested, loc, args[0]);
      });
  Value stateDecayed = scaleRows(f.state, lastDecay);
  return tb.add(stateDecayed,
                tb.matmul(f.kDecayed, f.pseudoValues, true, false));
}

//===----------------------------------------------------------------------===//
// The forward of moe.kda
//===----------------------------------------------------------------------===//

std::pair<Value, Value> KDATiler::build(KDAOp op) {
  int64_t keyDim = config.keyDim, valueDim = config.valueDim;
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
    Value state = op.getInitialState()
                      ? stateOf(op.getInitialState(), bi, hi, valueMajor)
                      : tb.filled({attr(keyDim), attr(valueDim)}, f32(), 0.0);
    Value headOut = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{padded, attr(valueDim)}, f32());

    auto chunks = scf::ForOp::create(
        b, b.getLoc(), idx(0), numChunks, idx(1), ValueRange{state, headOut},
        [&](OpBuilder &nested, Location loc, Value c, ValueRange args) {
          ImplicitLocOpBuilder nb(loc, nested);
          KDATiler inner(nb, config);
          Value start = arith::MulIOp::create(
              nb, c, arith::ConstantIndexOp::create(nb, chunk));
          auto slice = [&](Value x, int64_t width) {
            return sliceChunk(nb, loc, x, bi, start, hi, chunk, width);
          };
          ChunkForward f = inner.chunkForward(
              slice(q, keyDim), slice(k, keyDim), slice(v, valueDim),
              slice(g, keyDim), slice(beta, 0), args[0]);
          Value out = inner.chunkOutput(f);
          Value next = inner.chunkNextState(f);
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
  // Decides the diagonal path of one op the same way for the forward and
  // the backward, and says so in a remark; fails on a dynamic V.
  auto configure = [&](Operation *op, StringRef what, Value query, Value value,
                       Value logDecay,
                       double scale) -> std::optional<TilingConfig> {
    // Tiles are static: [C, K] and [K, V]. (The verifiers already require a
    // static K.)
    if (tensorTypeOf(value).isDynamicDim(3)) {
      op->emitOpError("needs a static value dimension V to be tiled");
      return std::nullopt;
    }
    RankedTensorType qType = tensorTypeOf(query);
    Type operandType = qType.getElementType();
    TileSafetyVerdict verdict =
        bounds.checkTile(logDecay, subChunkSize, *ref, operandType);
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
    op->emitRemark() << what << " tiled with chunk "
                     << static_cast<int64_t>(chunkSize) << ", sub-chunk "
                     << static_cast<int64_t>(subChunkSize) << ": " << why;
    return TilingConfig{chunkSize,
                        subChunkSize,
                        *ref,
                        path,
                        verdict.limit,
                        scale,
                        qType.getDimSize(3),
                        tensorTypeOf(value).getDimSize(3)};
  };

  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<KDAOp, KDAGradOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder builder(op);
    ImplicitLocOpBuilder b(op->getLoc(), builder);
    if (auto kda = dyn_cast<KDAOp>(op)) {
      std::optional<TilingConfig> config =
          configure(op, "kda", kda.getQuery(), kda.getValue(),
                    kda.getLogDecay(), kda.getScaleOrDefault());
      if (!config)
        return signalPassFailure();
      KDATiler tiler(b, *config);
      auto [output, finalState] = tiler.build(kda);
      kda.getOutput().replaceAllUsesWith(output);
      kda.getFinalState().replaceAllUsesWith(finalState);
      kda.erase();
      continue;
    }
    auto grad = cast<KDAGradOp>(op);
    std::optional<TilingConfig> config =
        configure(op, "kda_grad", grad.getQuery(), grad.getValue(),
                  grad.getLogDecay(), grad.getScaleOrDefault());
    if (!config)
      return signalPassFailure();
    KDATiler tiler(b, *config);
    SmallVector<Value> gradients = tiler.buildGrad(grad);
    grad->replaceAllUsesWith(gradients);
    grad.erase();
  }
}
