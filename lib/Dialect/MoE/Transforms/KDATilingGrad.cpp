//===- KDATilingGrad.cpp - Chunked KDA backward on static tiles -----------===//
//
// Part of the moe-mlir project.
//
// The backward half of -moe-tile-linear-attention: lowers `moe.kda_grad`
// into the chunked backward of ALGORITHMS.md section 1.7, chunk-parallel
// except for the state and its adjoint: the state-independent quantities of
// every chunk in parallel, then per (batch, head, column block of the state)
// a forward sweep storing the state at each chunk start and a reverse sweep
// storing its adjoint at each chunk end, then every chunk's gradients in
// parallel, in two halves: all but the pairwise terms of Aqk and KK from the
// first stage's stored tiles and the stored state, then those pairwise terms
// (with the same diagonal paths and run-time guards as the forward). The
// pairwise decay terms of the backward use the forward's
// tiling: off-diagonal tiles factored through their first row (factors <=
// 1), and diagonal tiles dense (factored through the reference row) or per
// position (exponentials of differences Gamma_i - Gamma_j with j <= i only).
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

ChunkLocalGradients
KDATiler::chunkBackwardLocal(const ChunkForward &f, Value dOut, Value dNext,
                             function_ref<void(Value, LocalGradient)> emit) {
  ChunkLocalGradients d;
  // Each result goes to `emit` as soon as it is whole, and the terms are
  // ordered so that few [C, K] tiles are live at once.
  auto done = [&](Value &field, Value value, LocalGradient which) {
    field = value;
    if (emit)
      emit(value, which);
  };
  // The adjoint of the pseudo-values (section 1.7): dVn = Aqk^T dO + Kd dS'.
  Value dPseudo = tb.add(tb.matmul(f.aqk, dOut, true, false),
                         tb.matmul(f.kDecayed, dNext, false, false));

  // dAqk = Tril(dO Vn^T). Its diagonal (exp(0) = 1) is applied apart:
  // d/dGamma of its terms cancels exactly, so the pairwise terms use the
  // strictly lower part only, and rounding leaves no residue in dg.
  done(d.dAqk,
       lowerPart(tb.matmul(dOut, f.pseudoValues, false, true),
                 /*strict=*/true),
       DAqk);
  Value dAqkDiagonal = rowSumOf(tb.multiply(dOut, f.pseudoValues));

  // The terms of dq / s, dk and dGamma that are not pairwise, through the
  // inter-chunk terms X = dO S^T and Y = Vn dS'^T:
  //   dQ     = X exp(G) + Diag(dAqk) K                  (+ pairwise)
  //   dK     = Y exp(G_last - G) + beta exp(G) dKb + Diag(dAqk) Q
  //                                                     (+ pairwise)
  //   dGamma = X Q exp(G) - Y Kd + dKb Kb               (+ pairwise)
  // plus, on dGamma's last row, sum_rows(Y Kd) + exp(G_last) rowsum(dS' S).
  Value x = tb.matmul(dOut, f.state, false, true);
  done(d.dqLocal, tb.add(tb.multiply(x, f.decay), scaleRows(f.k, dAqkDiagonal)),
       DQueryLocal);
  Value y = tb.matmul(f.pseudoValues, dNext, false, true);
  Value yKd = tb.multiply(y, f.kDecayed);
  Value lastDecay = tb.map(
      f.lastRow, f32(), [](OpBuilder &nested, Location loc, ValueRange args) {
        return math::ExpOp::create(nested, loc, args[0]);
      });
  done(d.dLast,
       tb.add(columnSums(yKd),
              tb.multiply(lastDecay, rowSumOf(tb.multiply(dNext, f.state)))),
       DLast);
  // Through Vn = U - W S and W = M Kb.
  Value dW = scaled(tb.matmul(dPseudo, f.state, false, true), -1.0);
  Value dKb = tb.matmul(f.m, dW, true, false);
  done(d.dkLocal,
       tb.add(
           tb.add(tb.multiply(y, f.tailDecay), scaleRows(dKb, f.beta, f.decay)),
           scaleRows(f.q, dAqkDiagonal)),
       DKeyLocal);
  done(d.dGammaLocal,
       tb.add(subtract(tb.multiply(x, f.qDecayed), yKd),
              tb.multiply(dKb, f.kBeta)),
       DGammaLocal);

  // Through U = M (beta V).
  Value mdU = tb.matmul(f.m, dPseudo, true, false);
  done(d.dv, scaleRows(mdU, f.beta), DValue);
  Value dBeta = tb.add(rowSumOf(tb.multiply(mdU, f.v)),
                       rowSumOf(tb.multiply(dKb, tb.multiply(f.k, f.decay))));

  // Through M = (I + L)^-1: dL = StrictTril(-M^T dM M^T), with
  // dM = dU (beta V)^T + dW Kb^T; L = Diag(beta) KK.
  Value dM = tb.add(tb.matmul(dPseudo, f.vBeta, false, true),
                    tb.matmul(dW, f.kBeta, false, true));
  Value dL = lowerPart(
      scaled(tb.matmul(tb.matmul(f.m, dM, true, false), f.m, false, true),
             -1.0),
      /*strict=*/true);
  done(d.dbeta, tb.add(dBeta, rowSumOf(tb.multiply(dL, f.keyKey))), DBeta);
  done(d.dKK, scaleRows(dL, f.beta), DKeyKey);
  return d;
}

ChunkGradients KDATiler::chunkBackwardPairwise(const ChunkForward &f,
                                               const ChunkLocalGradients &d) {
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
      Value dAqkTile = tileOf(d.dAqk, a, c);
      Value dKKTile = tileOf(d.dKK, a, c);
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
    Value dAqkTile = tileOf(d.dAqk, a, a);
    Value dKKTile = tileOf(d.dKK, a, a);
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

  ChunkGradients g;
  // dq = s dQ; dK and dGamma with their pairwise terms:
  //   dQ     += pairwise,  dK += dKRow + dKCol,
  //   dGamma += Q dQpair + K (dKRow - dKCol).
  g.dq = scaled(tb.add(d.dqLocal, dQPairFull), config.scale);
  g.dk = tb.add(d.dkLocal, tb.add(dKRowFull, dKColFull));
  Value dGamma = tb.add(
      d.dGammaLocal, tb.add(tb.multiply(f.q, dQPairFull),
                            tb.multiply(f.k, subtract(dKRowFull, dKColFull))));
  // Gamma_i = sum_{s <= i} g_s: dg_s = sum_{i >= s} dGamma_i, which is
  // Tril(1)^T dGamma; the last row's extra term reaches every s.
  Value dg = tb.matmul(f.lowerOnes, dGamma, true, false);
  MLIRContext *ctx = b.getContext();
  g.dg = tb.mapIndexed(
      {attr(chunk), attr(config.keyDim)}, ValueRange{dg, d.dLast},
      {b.getMultiDimIdentityMap(2),
       AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx)},
      f32(), [](OpBuilder &nested, Location loc, ValueRange args) -> Value {
        return arith::AddFOp::create(nested, loc, args[0], args[1]);
      });
  return g;
}

namespace {

/// The `[rows, cols]` block at offsets (i0, i1, i2, i3) of a rank-4 tensor
/// (dimensions 0 and 2 dropped), or the `[rows]` entries when `cols` is 0
/// (of a rank-3 tensor).
Value blockOf(OpBuilder &b, Location loc, Value x, OpFoldResult i0,
              OpFoldResult i1, OpFoldResult i2, OpFoldResult i3, int64_t rows,
              int64_t cols) {
  auto type = cols ? RankedTensorType::get({rows, cols}, b.getF32Type())
                   : RankedTensorType::get({rows}, b.getF32Type());
  SmallVector<OpFoldResult> offsets = {i0, i1, i2};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(rows),
                                     b.getIndexAttr(1)};
  if (cols) {
    offsets.push_back(i3);
    sizes.push_back(b.getIndexAttr(cols));
  }
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, x, offsets, sizes,
                                        strides)
      .getResult();
}

/// `rows` (`[C, W]` or `[C]`) written by the enclosing forall into a
/// `[B, P, H, W]` (or `[B, P, H]`) tensor at (bi, start, hi).
void writeRows(OpBuilder &b, Location loc, Value rows, Value into, Value bi,
               Value start, Value hi) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<OpFoldResult> offsets = {bi, start, hi};
  SmallVector<OpFoldResult> sizes = {
      b.getIndexAttr(1), b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(1)};
  if (type.getRank() == 2) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(type.getDimSize(1)));
  }
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(b, loc, rows, into, offsets, sizes,
                                        strides);
}

/// Writes a chunk forall's results into their places of its shared outputs
/// as soon as each is whole: a copy into the slice that the terminator
/// inserts (both bufferize in place), so that the result's tile is free from
/// there on, where a result kept for the terminator would hold its tile to
/// the end of the body.
class EarlyWrites {
public:
  EarlyWrites(OpBuilder &b, Location loc, scf::ForallOp loop, Value bi,
              Value start, Value hi, Value c)
      : b(b), loc(loc), loop(loop), bi(bi), start(start), hi(hi), c(c),
        written(loop.getRegionIterArgs().size()) {}

  /// `value` (`[C, W]` or `[C]`) at (bi, start, hi) of output `index`, or
  /// with `perChunk` (`[W]`) at (bi, c, hi).
  void write(unsigned index, Value value, bool perChunk = false) {
    Place &place = written[index];
    auto type = cast<RankedTensorType>(value.getType());
    if (perChunk) {
      place.offsets = {bi, c, hi, b.getIndexAttr(0)};
      place.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1),
                     b.getIndexAttr(type.getDimSize(0))};
    } else {
      place.offsets = {bi, start, hi};
      place.sizes = {b.getIndexAttr(1), b.getIndexAttr(type.getDimSize(0)),
                     b.getIndexAttr(1)};
      if (type.getRank() == 2) {
        place.offsets.push_back(b.getIndexAttr(0));
        place.sizes.push_back(b.getIndexAttr(type.getDimSize(1)));
      }
    }
    SmallVector<OpFoldResult> strides(place.sizes.size(), b.getIndexAttr(1));
    Value slot = tensor::ExtractSliceOp::create(
        b, loc, type, loop.getRegionIterArgs()[index], place.offsets,
        place.sizes, strides);
    place.value = linalg::CopyOp::create(b, loc, value, slot).getResult(0);
  }

  /// The terminator's inserts of every output, which must all be written.
  void finish() {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(loop.getTerminator().getBody());
    for (auto [place, into] : llvm::zip(written, loop.getRegionIterArgs())) {
      assert(place.value && "an output of the chunk loop was not written");
      SmallVector<OpFoldResult> strides(place.sizes.size(), b.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(
          b, loc, place.value, into, place.offsets, place.sizes, strides);
    }
  }

private:
  struct Place {
    Value value;
    SmallVector<OpFoldResult> offsets, sizes;
  };
  OpBuilder &b;
  Location loc;
  scf::ForallOp loop;
  Value bi, start, hi, c;
  SmallVector<Place> written;
};

} // namespace

SmallVector<Value> KDATiler::buildGrad(KDAGradOp op) {
  int64_t keyDim = config.keyDim, valueDim = config.valueDim;
  Location loc = b.getLoc();
  Value batch = tensor::DimOp::create(b, op.getQuery(), 0);
  Value length = tensor::DimOp::create(b, op.getQuery(), 1);
  OpFoldResult heads = tensor::getMixedSize(b, loc, op.getQuery(), 2);

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
  auto chunkStart = [](ImplicitLocOpBuilder &nb, Value c, int64_t chunk) {
    return arith::MulIOp::create(nb, c,
                                 arith::ConstantIndexOp::create(nb, chunk));
  };

  // Only the state and its adjoint need a sequential pass over the chunks,
  // and their recurrences read nothing that depends on the state:
  //   S'  = Diag(exp(G_last)) S + Kd^T (U - W S)
  //   dS  = (Q exp(G))^T dO + Diag(exp(G_last)) dS' - W^T (Aqk^T dO + Kd dS')
  // So (1) every chunk's W, U, Kd, Q exp(G), Aqk and exp(G_last) are built
  // in parallel (with M = (I + L)^-1 and KK, which (3) reads back with
  // them instead of recomputing the chunk's forward tiles); (2) per (batch,
  // head, column block of V) a forward sweep stores the state at each chunk
  // start and a reverse sweep the adjoint at each chunk end (columns of S are
  // independent in both); (3) every chunk's gradients are built in parallel
  // from its two stored boundary values.

  // (1) The chunk-local quantities of the sweeps.
  SmallVector<Value> localInits = {
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(valueDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(chunk)}),
      empty({batch, numChunks, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(chunk)}),
      empty({batch, padded, heads, attr(chunk)})};
  // A forall over (batch, head, chunk) with the builder inside its body.
  struct ChunkLoop {
    scf::ForallOp op;
    Value bi, hi, c, start;
    /// The chunk's `[C, width]` (or `[C]`) rows of a `[B, P, H, width]`
    /// (or `[B, P, H]`) tensor.
    Value slice(OpBuilder &b, Location loc, Value x, int64_t chunk,
                int64_t width) const {
      return sliceChunk(b, loc, x, bi, start, hi, chunk, width);
    }
  };
  auto openChunkLoop = [&](ArrayRef<Value> inits) {
    auto loop = scf::ForallOp::create(
        b, ArrayRef<OpFoldResult>{batch, heads, numChunks}, inits,
        std::nullopt);
    b.setInsertionPoint(loop.getTerminator());
    Value c = loop.getInductionVar(2);
    return ChunkLoop{loop, loop.getInductionVar(0), loop.getInductionVar(1), c,
                     chunkStart(b, c, chunk)};
  };

  scf::ForallOp local;
  {
    OpBuilder::InsertionGuard guard(b);
    ChunkLoop loop = openChunkLoop(localInits);
    local = loop.op;
    Value bi = loop.bi, hi = loop.hi, c = loop.c, start = loop.start;
    auto slice = [&](Value x, int64_t width) {
      return loop.slice(b, loc, x, chunk, width);
    };
    Value noState = tb.filled({attr(keyDim), attr(valueDim)}, f32(), 0.0);
    EarlyWrites writes(b, loc, local, bi, start, hi, c);
    auto emit = [&](ChunkValue which, Value value) {
      switch (which) {
      case ChunkValue::W:
        return writes.write(0, value);
      case ChunkValue::U:
        return writes.write(1, value);
      case ChunkValue::KDecayed:
        return writes.write(2, value);
      case ChunkValue::QDecayed:
        return writes.write(3, value);
      case ChunkValue::Aqk:
        return writes.write(4, value);
      case ChunkValue::Inverse:
        return writes.write(6, value);
      case ChunkValue::KeyKey:
        return writes.write(7, value);
      }
    };
    ChunkForward f = chunkForward(slice(q, keyDim), slice(k, keyDim),
                                  slice(v, valueDim), slice(g, keyDim),
                                  slice(beta, 0), noState, StoredChunk(), emit);
    Value lastDecay = tb.map(
        f.lastRow, f32(), [](OpBuilder &nested, Location l, ValueRange args) {
          return math::ExpOp::create(nested, l, args[0]);
        });
    writes.write(5, lastDecay, /*perChunk=*/true);
    writes.finish();
  }
  Value wAll = local.getResult(0), uAll = local.getResult(1),
        kdAll = local.getResult(2), qdAll = local.getResult(3),
        aqkAll = local.getResult(4), lastAll = local.getResult(5),
        inverseAll = local.getResult(6), keyKeyAll = local.getResult(7);

  // (2) The sweeps, per column block of the state: 16 columns, so that
  // kimi-tiny's B = 16, H = 4, V = 64 gives 256 blocks (32 gave 128 on 132
  // SMs, each sequential over all chunks).
  int64_t valueTile = valueDim % 16 == 0 ? 16 : valueDim;
  SmallVector<Value> sweepInits = {
      empty({batch, heads, numChunks, attr(keyDim), attr(valueDim)}),
      empty({batch, heads, numChunks, attr(keyDim), attr(valueDim)}),
      empty({batch, heads, attr(keyDim), attr(valueDim)})};
  auto sweeps = scf::ForallOp::create(
      b, ArrayRef<OpFoldResult>{batch, heads, attr(valueDim / valueTile)},
      sweepInits, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(sweeps.getTerminator());
    Value bi = sweeps.getInductionVar(0), hi = sweeps.getInductionVar(1);
    Value col = chunkStart(b, sweeps.getInductionVar(2), valueTile);
    auto tileType = RankedTensorType::get({keyDim, valueTile}, f32());
    auto columns = [&](Value state) -> Value {
      return tensor::ExtractSliceOp::create(
          b, tileType, state, ArrayRef<OpFoldResult>{attr(0), col},
          ArrayRef<OpFoldResult>{attr(keyDim), attr(valueTile)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
    };
    Value zeroTile = tb.filled({attr(keyDim), attr(valueTile)}, f32(), 0.0);
    Value state =
        op.getInitialState()
            ? columns(stateOf(op.getInitialState(), bi, hi, valueMajor))
            : zeroTile;
    Value dFinal =
        op.getFinalStateAdjoint()
            ? columns(stateOf(op.getFinalStateAdjoint(), bi, hi, valueMajor))
            : zeroTile;
    // The chunk's sweep operands, [C, K] / [C, C] / [C, tile] / [K].
    struct SweepOperands {
      Value w, kd, qd, aqk, lastDecay;
    };
    auto operandsOf = [&](ImplicitLocOpBuilder &nb, Value c, Value start) {
      auto rows = [&](Value x, int64_t width) {
        return blockOf(nb, loc, x, bi, start, hi, nb.getIndexAttr(0), chunk,
                       width);
      };
      Value lastDecay = tensor::ExtractSliceOp::create(
          nb, RankedTensorType::get({keyDim}, nb.getF32Type()), lastAll,
          ArrayRef<OpFoldResult>{bi, c, hi, nb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1),
                                 nb.getIndexAttr(1), nb.getIndexAttr(keyDim)},
          ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1),
                                 nb.getIndexAttr(1), nb.getIndexAttr(1)});
      return SweepOperands{rows(wAll, keyDim), rows(kdAll, keyDim),
                           rows(qdAll, keyDim), rows(aqkAll, chunk), lastDecay};
    };
    auto valueColumns = [&](ImplicitLocOpBuilder &nb, Value x, Value start) {
      return blockOf(nb, loc, x, bi, start, hi, col, chunk, valueTile);
    };
    auto storeAt = [&](ImplicitLocOpBuilder &nb, Value tile, Value into,
                       Value c) -> Value {
      return tensor::InsertSliceOp::create(
          nb, tile, into,
          ArrayRef<OpFoldResult>{c, nb.getIndexAttr(0), nb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(keyDim),
                                 nb.getIndexAttr(valueTile)},
          ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1),
                                 nb.getIndexAttr(1)});
    };
    auto tilesInit = [&]() -> Value {
      return tensor::EmptyOp::create(
          b, ArrayRef<OpFoldResult>{numChunks, attr(keyDim), attr(valueTile)},
          f32());
    };

    // Forward: the state at the start of every chunk, [N, K, tile].
    auto forward = scf::ForOp::create(
        b, loc, idx(0), numChunks, idx(1), ValueRange{state, tilesInit()},
        [&](OpBuilder &nested, Location l, Value c, ValueRange args) {
          ImplicitLocOpBuilder nb(l, nested);
          KDATiler inner(nb, config);
          Value start = chunkStart(nb, c, chunk);
          Value starts = storeAt(nb, args[0], args[1], c);
          SweepOperands x = operandsOf(nb, c, start);
          Value pseudo =
              inner.subtract(valueColumns(nb, uAll, start),
                             inner.tb.matmul(x.w, args[0], false, false));
          Value next = inner.tb.add(inner.scaleRows(args[0], x.lastDecay),
                                    inner.tb.matmul(x.kd, pseudo, true, false));
          scf::YieldOp::create(nb, ValueRange{next, starts});
        });

    // Reverse: the adjoint of the state at the end of every chunk.
    auto reverse = scf::ForOp::create(
        b, loc, idx(0), numChunks, idx(1), ValueRange{dFinal, tilesInit()},
        [&](OpBuilder &nested, Location l, Value it, ValueRange args) {
          ImplicitLocOpBuilder nb(l, nested);
          KDATiler inner(nb, config);
          Value last = arith::SubIOp::create(
              nb, numChunks, arith::ConstantIndexOp::create(nb, 1));
          Value c = arith::SubIOp::create(nb, last, it);
          Value start = chunkStart(nb, c, chunk);
          Value ends = storeAt(nb, args[0], args[1], c);
          SweepOperands x = operandsOf(nb, c, start);
          Value dO = valueColumns(nb, dOut, start);
          Value dPseudo =
              inner.tb.add(inner.tb.matmul(x.aqk, dO, true, false),
                           inner.tb.matmul(x.kd, args[0], false, false));
          Value dState = inner.subtract(
              inner.tb.add(inner.tb.matmul(x.qd, dO, true, false),
                           inner.scaleRows(args[0], x.lastDecay)),
              inner.tb.matmul(x.w, dPseudo, true, false));
          scf::YieldOp::create(nb, ValueRange{dState, ends});
        });

    b.setInsertionPointToEnd(sweeps.getTerminator().getBody());
    ValueRange outs = sweeps.getRegionIterArgs();
    for (auto [tiles, into] : {std::pair{forward.getResult(1), outs[0]},
                               std::pair{reverse.getResult(1), outs[1]}})
      tensor::ParallelInsertSliceOp::create(
          b, tiles, into, ArrayRef<OpFoldResult>{bi, hi, attr(0), attr(0), col},
          ArrayRef<OpFoldResult>{attr(1), attr(1), numChunks, attr(keyDim),
                                 attr(valueTile)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1), attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, reverse.getResult(0), outs[2],
        ArrayRef<OpFoldResult>{bi, hi, attr(0), col},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(keyDim), attr(valueTile)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
  }

  // (3) Every chunk's gradients from its boundary state and adjoint, in two
  // halves so that each one's tiles fit a block's shared memory: (3a) all
  // but the pairwise terms of Aqk and KK, which (3b) adds from their
  // adjoints.
  SmallVector<Value> localGradInits = {
      empty({batch, padded, heads, attr(valueDim)}),
      empty({batch, padded, heads}),
      empty({batch, padded, heads, attr(chunk)}),
      empty({batch, padded, heads, attr(chunk)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, padded, heads, attr(keyDim)}),
      empty({batch, numChunks, heads, attr(keyDim)})};
  scf::ForallOp localGrads;
  {
    OpBuilder::InsertionGuard guard(b);
    ChunkLoop loop = openChunkLoop(localGradInits);
    localGrads = loop.op;
    Value bi = loop.bi, hi = loop.hi, c = loop.c, start = loop.start;
    auto slice = [&](Value x, int64_t width) {
      return loop.slice(b, loc, x, chunk, width);
    };
    auto boundary = [&](Value tiles) -> Value {
      return tensor::ExtractSliceOp::create(
          b, RankedTensorType::get({keyDim, valueDim}, f32()), tiles,
          ArrayRef<OpFoldResult>{bi, hi, c, attr(0), attr(0)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(keyDim),
                                 attr(valueDim)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1), attr(1)});
    };
    // The chunk's forward tiles from stage (1): neither the pairwise tiles
    // of Aqk and KK nor M's forward substitution nor W and U are repeated.
    StoredChunk stored{slice(inverseAll, chunk), slice(wAll, keyDim),
                       slice(uAll, valueDim),    slice(kdAll, keyDim),
                       slice(qdAll, keyDim),     slice(aqkAll, chunk),
                       slice(keyKeyAll, chunk)};
    ChunkForward f =
        chunkForward(slice(q, keyDim), slice(k, keyDim), slice(v, valueDim),
                     slice(g, keyDim), slice(beta, 0),
                     boundary(sweeps.getResult(0)), stored);
    EarlyWrites writes(b, loc, localGrads, bi, start, hi, c);
    chunkBackwardLocal(f, slice(dOut, valueDim), boundary(sweeps.getResult(1)),
                       [&](Value value, LocalGradient which) {
                         writes.write(which, value,
                                      /*perChunk=*/which == DLast);
                       });
    writes.finish();
  }

  SmallVector<Value> inits = {empty({batch, padded, heads, attr(keyDim)}),
                              empty({batch, padded, heads, attr(keyDim)}),
                              empty({batch, padded, heads, attr(keyDim)})};
  scf::ForallOp pairwise;
  {
    OpBuilder::InsertionGuard guard(b);
    ChunkLoop loop = openChunkLoop(inits);
    pairwise = loop.op;
    Value bi = loop.bi, hi = loop.hi, c = loop.c, start = loop.start;
    auto slice = [&](Value x, int64_t width) {
      return loop.slice(b, loc, x, chunk, width);
    };
    ChunkForward f =
        chunkRows(slice(q, keyDim), slice(k, keyDim), slice(g, keyDim));
    ChunkLocalGradients d;
    d.dAqk = slice(localGrads.getResult(DAqk), chunk);
    d.dKK = slice(localGrads.getResult(DKeyKey), chunk);
    d.dqLocal = slice(localGrads.getResult(DQueryLocal), keyDim);
    d.dkLocal = slice(localGrads.getResult(DKeyLocal), keyDim);
    d.dGammaLocal = slice(localGrads.getResult(DGammaLocal), keyDim);
    d.dLast = tensor::ExtractSliceOp::create(
        b, RankedTensorType::get({keyDim}, f32()), localGrads.getResult(DLast),
        ArrayRef<OpFoldResult>{bi, c, hi, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(keyDim)},
        ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1), attr(1)});
    ChunkGradients grads = chunkBackwardPairwise(f, d);
    b.setInsertionPointToEnd(pairwise.getTerminator().getBody());
    ValueRange outs = pairwise.getRegionIterArgs();
    writeRows(b, loc, grads.dq, outs[0], bi, start, hi);
    writeRows(b, loc, grads.dk, outs[1], bi, start, hi);
    writeRows(b, loc, grads.dg, outs[2], bi, start, hi);
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
  SmallVector<Value> results = {
      unpad(pairwise.getResult(0), op.getDQuery()),
      unpad(pairwise.getResult(1), op.getDKey()),
      unpad(localGrads.getResult(DValue), op.getDValue()),
      unpad(pairwise.getResult(2), op.getDLogDecay()),
      unpad(localGrads.getResult(DBeta), op.getDBeta())};
  Value dInitial = sweeps.getResult(2);
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
