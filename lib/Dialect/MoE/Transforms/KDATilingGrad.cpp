//===- KDATilingGrad.cpp - Chunked KDA backward on static tiles -----------===//
//
// Part of the moe-mlir project.
//
// The backward half of -moe-tile-linear-attention: lowers `moe.kda_grad`
// into the chunked backward of ALGORITHMS.md section 1.7. Per (batch, head)
// a forward sweep over the chunks stores the state at each chunk start; a
// reverse sweep recomputes each chunk's forward quantities from its stored
// state (the same tiles, with the same diagonal paths and run-time guards
// as the forward), then propagates the output and state adjoints through
// them. The pairwise decay terms of the backward use the forward's tiling:
// off-diagonal tiles factored through their first row (factors <= 1), and
// diagonal tiles dense (factored through the reference row) or per position
// (exponentials of differences Gamma_i - Gamma_j with j <= i only).
//
//===----------------------------------------------------------------------===//

#include "KDATiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::kda_tiling;

Value KDATiler::columnSums(Value matrix) {
  ArrayRef<int64_t> shape = tensorTypeOf(matrix).getShape();
  MLIRContext *ctx = b.getContext();
  AffineMap transposed = AffineMap::get(
      2, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(0, ctx)}, ctx);
  AffineMap out = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  Value init = tb.filled({attr(shape[1])}, f32(), 0.0);
  return tb.generic(ValueRange{matrix}, {transposed}, ValueRange{init}, {out},
                    /*numLoops=*/2, /*numParallel=*/1,
                    [](OpBuilder &nested, Location loc, ValueRange args) {
                      return SmallVector<Value>{
                          arith::AddFOp::create(nested, loc, args[1], args[0])};
                    })[0];
}

Value KDATiler::rowSumOf(Value matrix) {
  return tb.reduceLast(
      matrix, f32(), 0.0, [](OpBuilder &nested, Location loc, ValueRange args) {
        return arith::AddFOp::create(nested, loc, args[1], args[0]);
      });
}

SmallVector<Value> KDATiler::diagonalGradDense(Value dAqk, Value dKK, Value q,
                                               Value k, Value gamma, Value g) {
  // With exp(G_i - G_j) = exp(G_i - G_r) exp(G_r - G_j), each pairwise
  // gradient is a GEMM between an adjoint tile (exact zeros where masked)
  // and the forward's factored operands.
  Value ref = referenceRow(gamma, g);
  Value qFactored = scaleByDecay(q, gamma, ref, +1.0);
  Value kFactored = scaleByDecay(k, gamma, ref, +1.0);
  Value kInverse = scaleByDecay(k, gamma, ref, -1.0);
  Value dQ = scaleByDecay(tb.matmul(dAqk, kInverse), gamma, ref, +1.0);
  Value dKRow = scaleByDecay(tb.matmul(dKK, kInverse), gamma, ref, +1.0);
  Value dKCol = scaleByDecay(tb.add(tb.matmul(dAqk, qFactored, true, false),
                                    tb.matmul(dKK, kFactored, true, false)),
                             gamma, ref, -1.0);
  return {dQ, dKRow, dKCol};
}

SmallVector<Value> KDATiler::diagonalGradPerPosition(Value dAqk, Value dKK,
                                                     Value q, Value k,
                                                     Value gamma) {
  // Only exp(G_i - G_j) with j <= i is evaluated (the exponent is masked
  // before the exponential), so every factor is at most 1.
  MLIRContext *ctx = b.getContext();
  auto dim = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](AffineExpr r, AffineExpr c) {
    return AffineMap::get(3, 0, {r, c}, ctx);
  };
  int64_t keyDim = config.keyDim;
  auto decayed = [](OpBuilder &nested, Location loc, Value row, Value col,
                    Value gammaRow, Value gammaCol) -> Value {
    Value causal =
        arith::CmpIOp::create(nested, loc, arith::CmpIPredicate::ule, col, row);
    Value diff = arith::SubFOp::create(nested, loc, gammaRow, gammaCol);
    Value zero = floatConstant(nested, loc, nested.getF32Type(), 0.0);
    Value exponent = arith::SelectOp::create(nested, loc, causal, diff, zero);
    return math::ExpOp::create(nested, loc, exponent);
  };

  // Row side, loops (i, d, j): dQ[i, d] = sum_j dAqk[i, j] k[j, d] e_ijd and
  // dKRow[i, d] = sum_j dKK[i, j] k[j, d] e_ijd.
  Value initQ = tb.filled({attr(subChunk), attr(keyDim)}, f32(), 0.0);
  Value initRow = tb.filled({attr(subChunk), attr(keyDim)}, f32(), 0.0);
  AffineExpr i = dim(0), d = dim(1), j = dim(2);
  SmallVector<Value> rowSide =
      tb.generic(ValueRange{dAqk, dKK, k, gamma, gamma},
                 {map(i, j), map(i, j), map(j, d), map(i, d), map(j, d)},
                 ValueRange{initQ, initRow}, {map(i, d), map(i, d)}, 3, 2,
                 [&](OpBuilder &nested, Location loc, ValueRange args) {
                   Value row = linalg::IndexOp::create(nested, loc, 0);
                   Value col = linalg::IndexOp::create(nested, loc, 2);
                   Value e = decayed(nested, loc, row, col, args[3], args[4]);
                   Value ke = arith::MulFOp::create(nested, loc, args[2], e);
                   Value q = arith::AddFOp::create(
                       nested, loc, args[5],
                       arith::MulFOp::create(nested, loc, args[0], ke));
                   Value r = arith::AddFOp::create(
                       nested, loc, args[6],
                       arith::MulFOp::create(nested, loc, args[1], ke));
                   return SmallVector<Value>{q, r};
                 });

  // Column side, loops (j, d, i): dKCol[j, d] = sum_i (dAqk[i, j] Q[i, d] +
  // dKK[i, j] k[i, d]) e_ijd.
  Value initCol = tb.filled({attr(subChunk), attr(keyDim)}, f32(), 0.0);
  AffineExpr jc = dim(0), dc = dim(1), ic = dim(2);
  Value colSide = tb.generic(
      ValueRange{dAqk, dKK, q, k, gamma, gamma},
      {map(ic, jc), map(ic, jc), map(ic, dc), map(ic, dc), map(ic, dc),
       map(jc, dc)},
      ValueRange{initCol}, {map(jc, dc)}, 3, 2,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        Value col = linalg::IndexOp::create(nested, loc, 0);
        Value row = linalg::IndexOp::create(nested, loc, 2);
        Value e = decayed(nested, loc, row, col, args[4], args[5]);
        Value sum = arith::AddFOp::create(
            nested, loc, arith::MulFOp::create(nested, loc, args[0], args[2]),
            arith::MulFOp::create(nested, loc, args[1], args[3]));
        return SmallVector<Value>{arith::AddFOp::create(
            nested, loc, args[6], arith::MulFOp::create(nested, loc, sum, e))};
      })[0];
  return {rowSide[0], rowSide[1], colSide};
}

ChunkGradients KDATiler::chunkBackward(const ChunkForward &f, Value dOut,
                                       Value dNext) {
  // The adjoints of the chunk's outputs O and S' (section 1.7):
  //   dVn = Aqk^T dO + Kd dS'
  //   dS  = (Q exp(G))^T dO + Diag(exp(G_last)) dS' - W^T dVn
  Value dPseudo = tb.add(tb.matmul(f.aqk, dOut, true, false),
                         tb.matmul(f.kDecayed, dNext, false, false));
  Value lastDecay = tb.map(
      f.lastRow, f32(), [](OpBuilder &nested, Location loc, ValueRange args) {
        return math::ExpOp::create(nested, loc, args[0]);
      });
  Value dState = subtract(tb.add(tb.matmul(f.qDecayed, dOut, true, false),
                                 scaleRows(dNext, lastDecay)),
                          tb.matmul(f.w, dPseudo, true, false));

  // dAqk = Tril(dO Vn^T). Its diagonal (exp(0) = 1) is applied apart:
  // d/dGamma of its terms cancels exactly, so the pairwise terms below use
  // the strictly lower part only, and rounding leaves no residue in dg.
  Value dAqk = lowerPart(tb.matmul(dOut, f.pseudoValues, false, true),
                         /*strict=*/true);
  Value dAqkDiagonal = rowSumOf(tb.multiply(dOut, f.pseudoValues));
  // The inter-chunk terms X = dO S^T, Y = Vn dS'^T.
  Value x = tb.matmul(dOut, f.state, false, true);
  Value y = tb.matmul(f.pseudoValues, dNext, false, true);

  // Through Vn = U - W S and U = M (beta V), W = M Kb.
  Value dW = scaled(tb.matmul(dPseudo, f.state, false, true), -1.0);
  Value mdU = tb.matmul(f.m, dPseudo, true, false);
  Value dV = scaleRows(mdU, f.beta);
  Value dBeta = rowSumOf(tb.multiply(mdU, f.v));
  Value dKb = tb.matmul(f.m, dW, true, false);
  Value kExp = tb.multiply(f.k, f.decay);
  dBeta = tb.add(dBeta, rowSumOf(tb.multiply(dKb, kExp)));

  // Through M = (I + L)^-1: dL = StrictTril(-M^T dM M^T), with
  // dM = dU (beta V)^T + dW Kb^T; L = Diag(beta) KK.
  Value dM = tb.add(tb.matmul(dPseudo, f.vBeta, false, true),
                    tb.matmul(dW, f.kBeta, false, true));
  Value dL = lowerPart(
      scaled(tb.matmul(tb.matmul(f.m, dM, true, false), f.m, false, true),
             -1.0),
      /*strict=*/true);
  dBeta = tb.add(dBeta, rowSumOf(tb.multiply(dL, f.keyKey)));
  Value dKK = scaleRows(dL, f.beta);

  // The pairwise terms of Aqk and KK, tile by tile.
  int64_t numTiles = chunk / subChunk;
  SmallVector<Value> dQPair(numTiles), dKRow(numTiles), dKCol(numTiles);
  auto accumulate = [&](Value &sum, Value term) {
    sum = sum ? tb.add(sum, term) : term;
  };
  for (int64_t a = 0; a < numTiles; ++a) {
    Value qa = rowsOf(f.q, a * subChunk, subChunk);
    Value ka = rowsOf(f.k, a * subChunk, subChunk);
    Value ga = rowsOf(f.gamma, a * subChunk, subChunk);
    // Off-diagonal tiles (a > c), referenced at the first row of tile a.
    Value first = rowOf(ga, attr(0));
    Value qaRef = scaleByDecay(qa, ga, first, +1.0);
    Value kaRef = scaleByDecay(ka, ga, first, +1.0);
    for (int64_t c = 0; c < a; ++c) {
      Value kc = rowsOf(f.k, c * subChunk, subChunk);
      Value gc = rowsOf(f.gamma, c * subChunk, subChunk);
      Value kcRef = scaleByDecay(kc, gc, first, -1.0);
      Value dAqkTile = tileOf(dAqk, a, c);
      Value dKKTile = tileOf(dKK, a, c);
      accumulate(dQPair[a],
                 scaleByDecay(tb.matmul(dAqkTile, kcRef), ga, first, +1.0));
      accumulate(dKRow[a],
                 scaleByDecay(tb.matmul(dKKTile, kcRef), ga, first, +1.0));
      accumulate(dKCol[c],
                 scaleByDecay(tb.add(tb.matmul(dAqkTile, qaRef, true, false),
                                     tb.matmul(dKKTile, kaRef, true, false)),
                              gc, first, -1.0));
    }
    // The diagonal tile: the forward's path (and guard verdict).
    Value dAqkTile = tileOf(dAqk, a, a);
    Value dKKTile = tileOf(dKK, a, a);
    Value gRows = rowsOf(f.g, a * subChunk, subChunk);
    SmallVector<Value> diagonal;
    switch (config.path) {
    case DiagonalPath::Dense:
      diagonal = diagonalGradDense(dAqkTile, dKKTile, qa, ka, ga, gRows);
      break;
    case DiagonalPath::PerPosition:
      diagonal = diagonalGradPerPosition(dAqkTile, dKKTile, qa, ka, ga);
      break;
    case DiagonalPath::Guarded: {
      auto tileType = RankedTensorType::get({subChunk, config.keyDim}, f32());
      auto ifOp = scf::IfOp::create(b, TypeRange{tileType, tileType, tileType},
                                    f.safe[a], /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(
            b, diagonalGradDense(dAqkTile, dKKTile, qa, ka, ga, gRows));
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(
            b, diagonalGradPerPosition(dAqkTile, dKKTile, qa, ka, ga));
      }
      diagonal.assign(ifOp.getResults().begin(), ifOp.getResults().end());
      break;
    }
    }
    accumulate(dQPair[a], diagonal[0]);
    accumulate(dKRow[a], diagonal[1]);
    accumulate(dKCol[a], diagonal[2]);
  }
  auto assemble = [&](ArrayRef<Value> tiles) {
    Value full = tensor::EmptyOp::create(
        b, ArrayRef<int64_t>{chunk, config.keyDim}, f32());
    for (int64_t a = 0; a < numTiles; ++a)
      full = insertAt(tiles[a], full, a * subChunk, 0);
    return full;
  };
  Value dQPairFull = assemble(dQPair);
  Value dKRowFull = assemble(dKRow);
  Value dKColFull = assemble(dKCol);

  // dQ = X exp(G) + pairwise + Diag(dAqk) K; dq = s dQ.
  Value dq = scaled(tb.add(tb.add(tb.multiply(x, f.decay), dQPairFull),
                           scaleRows(f.k, dAqkDiagonal)),
                    config.scale);
  // dK = Y exp(G_last - G) + beta exp(G) dKb + pairwise + Diag(dAqk) Q.
  Value dk = tb.add(
      tb.add(tb.multiply(y, f.tailDecay), scaleRows(dKb, f.beta, f.decay)),
      tb.add(tb.add(dKRowFull, dKColFull), scaleRows(f.q, dAqkDiagonal)));

  // dGamma = X Q exp(G) - Y Kd + dKb Kb + Q dQpair + K (dKRow - dKCol),
  // plus, on the last row, sum_rows(Y Kd) + exp(G_last) rowsum(dS' S).
  Value yKd = tb.multiply(y, f.kDecayed);
  Value dGamma =
      tb.add(tb.add(subtract(tb.multiply(x, f.qDecayed), yKd),
                    tb.multiply(dKb, f.kBeta)),
             tb.add(tb.multiply(f.q, dQPairFull),
                    tb.multiply(f.k, subtract(dKRowFull, dKColFull))));
  Value dLast =
      tb.add(columnSums(yKd),
             tb.multiply(lastDecay, rowSumOf(tb.multiply(dNext, f.state))));
  // Gamma_i = sum_{s <= i} g_s: dg_s = sum_{i >= s} dGamma_i, which is
  // Tril(1)^T dGamma; the last row's extra term reaches every s.
  Value dg = tb.matmul(f.lowerOnes, dGamma, true, false);
  MLIRContext *ctx = b.getContext();
  dg = tb.mapIndexed(
      {attr(chunk), attr(config.keyDim)}, ValueRange{dg, dLast},
      {b.getMultiDimIdentityMap(2),
       AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx)},
      f32(), [](OpBuilder &nested, Location loc, ValueRange args) -> Value {
        return arith::AddFOp::create(nested, loc, args[0], args[1]);
      });
  return ChunkGradients{dq, dk, dV, dg, dBeta, dState};
}

SmallVector<Value> KDATiler::buildGrad(KDAGradOp op) {
  int64_t keyDim = config.keyDim, valueDim = config.valueDim;
  Value batch = tensor::DimOp::create(b, op.getQuery(), 0);
  Value length = tensor::DimOp::create(b, op.getQuery(), 1);
  OpFoldResult heads = tensor::getMixedSize(b, b.getLoc(), op.getQuery(), 2);

  // Zero padding to whole chunks, as in the forward: padded steps are the
  // identity, and their (zero) output adjoints add nothing.
  Value numChunks = arith::CeilDivUIOp::create(b, length, idx(chunk));
  Value padded = arith::MulIOp::create(b, numChunks, idx(chunk));
  auto pad = [&](Value x) { return tb.zeroPadded(x, 1, padded, f32()); };
  Value q = pad(op.getQuery()), k = pad(op.getKey()), v = pad(op.getValue()),
        g = pad(op.getLogDecay()), beta = pad(op.getBeta()),
        dOut = pad(op.getOutputAdjoint());
  bool valueMajor = op.getStateLayout() == StateLayout::ValueMajor;

  auto empty = [&](ArrayRef<OpFoldResult> sizes) -> Value {
    return tensor::EmptyOp::create(b, sizes, f32());
  };
  SmallVector<Value> inits = {
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(valueDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads}),
      empty({batch, heads, attr(keyDim), attr(valueDim)})};
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{batch, heads},
                                      inits, std::nullopt);
  Value bi = forall.getInductionVar(0), hi = forall.getInductionVar(1);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value zeroState = tb.filled({attr(keyDim), attr(valueDim)}, f32(), 0.0);
    Value state = op.getInitialState()
                      ? stateOf(op.getInitialState(), bi, hi, valueMajor)
                      : zeroState;
    Value dFinal = op.getFinalStateAdjoint()
                       ? stateOf(op.getFinalStateAdjoint(), bi, hi, valueMajor)
                       : zeroState;

    // Forward sweep: the state at the start of every chunk, [N, K, V].
    Value startsInit = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{numChunks, attr(keyDim), attr(valueDim)},
        f32());
    auto insertState = [&](ImplicitLocOpBuilder &nb, Value s, Value into,
                           Value c) {
      return tensor::InsertSliceOp::create(
          nb, s, into, ArrayRef<OpFoldResult>{c, attr(0), attr(0)},
          ArrayRef<OpFoldResult>{attr(1), attr(keyDim), attr(valueDim)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
    };
    auto forward = scf::ForOp::create(
        b, b.getLoc(), idx(0), numChunks, idx(1), ValueRange{state, startsInit},
        [&](OpBuilder &nested, Location loc, Value c, ValueRange args) {
          ImplicitLocOpBuilder nb(loc, nested);
          KDATiler inner(nb, config);
          Value start = arith::MulIOp::create(
              nb, c, arith::ConstantIndexOp::create(nb, chunk));
          auto slice = [&](Value x, int64_t width) {
            return sliceChunk(nb, loc, x, bi, start, hi, chunk, width);
          };
          Value starts = insertState(nb, args[0], args[1], c);
          ChunkForward f = inner.chunkForward(
              slice(q, keyDim), slice(k, keyDim), slice(v, valueDim),
              slice(g, keyDim), slice(beta, 0), args[0]);
          scf::YieldOp::create(nb, ValueRange{inner.chunkNextState(f), starts});
        });
    Value starts = forward.getResult(1);

    // Reverse sweep over the chunks, carrying the state adjoint.
    SmallVector<Value> headInits = {
        empty({padded, attr(keyDim)}), empty({padded, attr(keyDim)}),
        empty({padded, attr(valueDim)}), empty({padded, attr(keyDim)}),
        empty({padded})};
    SmallVector<Value> carried = {dFinal};
    carried.append(headInits);
    auto reverse = scf::ForOp::create(
        b, b.getLoc(), idx(0), numChunks, idx(1), carried,
        [&](OpBuilder &nested, Location loc, Value it, ValueRange args) {
          ImplicitLocOpBuilder nb(loc, nested);
          KDATiler inner(nb, config);
          Value last = arith::SubIOp::create(
              nb, numChunks, arith::ConstantIndexOp::create(nb, 1));
          Value c = arith::SubIOp::create(nb, last, it);
          Value start = arith::MulIOp::create(
              nb, c, arith::ConstantIndexOp::create(nb, chunk));
          auto slice = [&](Value x, int64_t width) {
            return sliceChunk(nb, loc, x, bi, start, hi, chunk, width);
          };
          Value chunkState = tensor::ExtractSliceOp::create(
              nb, RankedTensorType::get({keyDim, valueDim}, nb.getF32Type()),
              starts, ArrayRef<OpFoldResult>{c, attr(0), attr(0)},
              ArrayRef<OpFoldResult>{attr(1), attr(keyDim), attr(valueDim)},
              ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
          ChunkForward f = inner.chunkForward(
              slice(q, keyDim), slice(k, keyDim), slice(v, valueDim),
              slice(g, keyDim), slice(beta, 0), chunkState);
          ChunkGradients d =
              inner.chunkBackward(f, slice(dOut, valueDim), args[0]);
          auto insertRows = [&](Value rows, Value into) -> Value {
            auto type = tensorTypeOf(rows);
            SmallVector<OpFoldResult> offsets = {start};
            SmallVector<OpFoldResult> sizes = {attr(chunk)};
            if (type.getRank() == 2) {
              offsets.push_back(attr(0));
              sizes.push_back(attr(type.getDimSize(1)));
            }
            SmallVector<OpFoldResult> strides(sizes.size(), attr(1));
            return tensor::InsertSliceOp::create(nb, rows, into, offsets, sizes,
                                                 strides);
          };
          scf::YieldOp::create(
              nb, ValueRange{
                      d.dState, insertRows(d.dq, args[1]),
                      insertRows(d.dk, args[2]), insertRows(d.dv, args[3]),
                      insertRows(d.dg, args[4]), insertRows(d.dbeta, args[5])});
        });

    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    auto writeBack = [&](Value rows, Value into, int64_t width) {
      SmallVector<OpFoldResult> offsets = {bi, attr(0), hi};
      SmallVector<OpFoldResult> sizes = {attr(1), padded, attr(1)};
      if (width) {
        offsets.push_back(attr(0));
        sizes.push_back(attr(width));
      }
      SmallVector<OpFoldResult> strides(sizes.size(), attr(1));
      tensor::ParallelInsertSliceOp::create(b, rows, into, offsets, sizes,
                                            strides);
    };
    ValueRange shared = forall.getRegionIterArgs();
    writeBack(reverse.getResult(1), shared[0], keyDim);
    writeBack(reverse.getResult(2), shared[1], keyDim);
    writeBack(reverse.getResult(3), shared[2], valueDim);
    writeBack(reverse.getResult(4), shared[3], keyDim);
    writeBack(reverse.getResult(5), shared[4], 0);
    tensor::ParallelInsertSliceOp::create(
        b, reverse.getResult(0), shared[5],
        ArrayRef<OpFoldResult>{bi, hi, attr(0), attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(keyDim), attr(valueDim)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  }

  // Drop the padding, restore element types and the state layout.
  auto unpad = [&](Value x, Value like) {
    auto type = tensorTypeOf(x);
    SmallVector<OpFoldResult> offsets(type.getRank(), attr(0));
    SmallVector<OpFoldResult> sizes = {batch, length, heads};
    if (type.getRank() == 4)
      sizes.push_back(attr(type.getDimSize(3)));
    SmallVector<OpFoldResult> strides(type.getRank(), attr(1));
    Value result =
        tensor::ExtractSliceOp::create(b, x, offsets, sizes, strides);
    result = tb.convert(result, tensorTypeOf(like).getElementType());
    if (result.getType() != like.getType())
      result = tensor::CastOp::create(b, like.getType(), result);
    return result;
  };
  SmallVector<Value> results = {unpad(forall.getResult(0), op.getDQuery()),
                                unpad(forall.getResult(1), op.getDKey()),
                                unpad(forall.getResult(2), op.getDValue()),
                                unpad(forall.getResult(3), op.getDLogDecay()),
                                unpad(forall.getResult(4), op.getDBeta())};
  Value dInitial = forall.getResult(5);
  if (valueMajor) {
    Value init = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{batch, heads, attr(valueDim), attr(keyDim)},
        f32());
    dInitial = linalg::TransposeOp::create(b, dInitial, init,
                                           ArrayRef<int64_t>{0, 1, 3, 2})
                   ->getResult(0);
  }
  if (dInitial.getType() != op.getDInitialState().getType())
    dInitial =
        tensor::CastOp::create(b, op.getDInitialState().getType(), dInitial);
  results.push_back(dInitial);
  return results;
}
