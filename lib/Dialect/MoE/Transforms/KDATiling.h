//===- KDATiling.h - Chunked KDA on static tiles ----------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The tile builder of -moe-tile-linear-attention, shared by the forward of
// `moe.kda` (TileLinearAttention.cpp) and the backward of `moe.kda_grad`
// (KDATilingGrad.cpp): one chunk's intra-chunk matrices with their diagonal
// tile paths, the WY/UT pseudo-values, the output and state update
// (ALGORITHMS.md sections 1.4-1.6, 2.4) and their reverse (section 1.7).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_DIALECT_MOE_TRANSFORMS_KDATILING_H
#define MOE_LIB_DIALECT_MOE_TRANSFORMS_KDATILING_H

#include "moe/Analysis/DecayBound.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::moe::kda_tiling {

/// How the diagonal sub-chunk tiles of one kda op are computed.
enum class DiagonalPath { Dense, PerPosition, Guarded };

/// What the pass decided for one op.
struct TilingConfig {
  int64_t chunk, subChunk;
  TileReference reference;
  DiagonalPath path;
  /// L_op of the operand type: the run-time guard's limit.
  double exponentLimit;
  double scale;
  int64_t keyDim, valueDim;
};

/// The forward quantities of one chunk, all static fp32 tiles.
struct ChunkForward {
  /// The chunk's rows: `q` already scaled (Q = s q), `[C, K]`; `v: [C, V]`;
  /// `beta: [C]`; the incoming state `[K, V]`.
  Value q, k, v, g, beta, state;
  /// Tril(1) `[C, C]`; Gamma (in-chunk inclusive cumsum of g) and
  /// exp(Gamma), `[C, K]`.
  Value lowerOnes, gamma, decay;
  /// Aqk (j <= i) and the unscaled strictly lower `KK[i, j] = sum_d k_i k_j
  /// exp(Gamma_i - Gamma_j)`, so that L = Diag(beta) KK (null when M is
  /// read back), and M = (I + L)^-1; `[C, C]`.
  Value aqk, keyKey, l, m;
  /// beta K exp(Gamma) `[C, K]`, beta V `[C, V]`, W, U, Vn = U - W S.
  Value kBeta, vBeta, w, u, pseudoValues;
  /// Q exp(Gamma) `[C, K]`; Gamma's last row `[K]`; exp(Gamma_last - G)
  /// `[C, K]` and K exp(Gamma_last - G).
  Value qDecayed, lastRow, tailDecay, kDecayed;
  /// Per diagonal tile, the run-time guard's verdict (i1) for the guarded
  /// path; empty otherwise.
  SmallVector<Value> safe;
};

/// A chunk's forward quantities that an earlier stage stored, read back
/// instead of recomputed: M = (I + L)^-1, W, U, K exp(Gamma_last - Gamma),
/// Q exp(Gamma), Aqk and KK (null members are recomputed).
struct StoredChunk {
  Value inverse, w, u, kDecayed, qDecayed, aqk, keyKey;
};

/// The gradients of one chunk (section 1.7).
struct ChunkGradients {
  /// `[C, K]` for dq, dk, dg; `[C, V]` for dv; `[C]` for dbeta; the adjoint
  /// of the incoming state `[K, V]`.
  Value dq, dk, dv, dg, dbeta, dState;
};

/// The forward quantities of a chunk that the backward's first stage stores
/// (those of StoredChunk).
enum class ChunkValue { W, U, KDecayed, QDecayed, Aqk, Inverse, KeyKey };

/// A chunk's gradients but for the pairwise terms of Aqk and KK, which the
/// gradient stage's second half adds from their adjoints (section 1.7).
struct ChunkLocalGradients {
  /// dv `[C, V]` and dbeta `[C]`, whole; the strictly lower adjoints of Aqk
  /// and of KK (beta applied) `[C, C]`; dq / s, dk and dGamma without their
  /// pairwise terms `[C, K]`; the last row's extra dGamma `[K]`.
  Value dv, dbeta, dAqk, dKK, dqLocal, dkLocal, dGammaLocal, dLast;
};

/// The members of ChunkLocalGradients, in their order: the index of each
/// one's output in the backward's stage that stores them.
enum LocalGradient : unsigned {
  DValue,
  DBeta,
  DAqk,
  DKeyKey,
  DQueryLocal,
  DKeyLocal,
  DGammaLocal,
  DLast
};

/// Builds the tiled computation of one op at one location.
class KDATiler {
public:
  KDATiler(ImplicitLocOpBuilder &b, const TilingConfig &config)
      : b(b), tb(b), config(config), chunk(config.chunk),
        subChunk(config.subChunk) {}

  /// Lowers `moe.kda`; returns (output, final state) with the op's types.
  std::pair<Value, Value> build(KDAOp op);
  /// Lowers `moe.kda_grad`; returns its six results with the op's types.
  SmallVector<Value> buildGrad(KDAGradOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value cst(double v) { return floatConstant(b, b.getLoc(), f32(), v); }
  Value idx(int64_t v);
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }

  //===--- Tile helpers (TileLinearAttention.cpp) ---------------------===//

  /// Row `row` of a static 2-D tensor, as a 1-D tensor.
  Value rowOf(Value matrix, OpFoldResult row);
  /// Rows `[offset, offset + size)` of a static 2-D tensor.
  Value rowsOf(Value matrix, int64_t offset, int64_t size);
  /// Entries `[offset, offset + size)` of a static 1-D tensor.
  Value entriesOf(Value vector, int64_t offset, int64_t size);
  /// The `[c, c]` tile at tile coordinates (row, col) of a `[C, C]` matrix.
  Value tileOf(Value matrix, int64_t row, int64_t col);
  /// `tile` written into `into` at element offsets (row, col).
  Value insertAt(Value tile, Value into, int64_t row, int64_t col);
  /// `x * exp(sign * (gamma - row))`, `row` broadcast over rows of `x`.
  Value scaleByDecay(Value x, Value gamma, Value row, double sign);
  /// `x[i, j] * rowFactor[i]` (times `other[i, j]` when given).
  Value scaleRows(Value x, Value rowFactor, Value other = Value());
  /// Element-wise `a - b`.
  Value subtract(Value lhs, Value rhs);
  /// `x` times the constant `factor`.
  Value scaled(Value x, double factor);
  /// Keeps the entries of a `[n, n]` matrix with `j <= i` (`strict`: j < i),
  /// selecting zero elsewhere.
  Value lowerPart(Value matrix, bool strict);
  /// Tril(1) of `[C, C]`.
  Value lowerOnesMatrix();
  /// The incoming `[K, V]` state of (bi, hi) from a state tensor in the op's
  /// layout.
  Value stateOf(Value states, Value bi, Value hi, bool valueMajor);

  /// The diagonal tile (Aqk, KK) of rows `q, k, gamma` ([c, K]); KK is not
  /// scaled by beta.
  std::pair<Value, Value> diagonalDense(Value q, Value k, Value gamma, Value g);
  std::pair<Value, Value> diagonalPerPosition(Value q, Value k, Value gamma);
  std::pair<Value, Value> diagonalGuarded(Value q, Value k, Value gamma,
                                          Value g, Value safe);
  /// Masks a raw [c, c] tile: Aqk keeps j <= i; KK keeps j < i.
  std::pair<Value, Value> maskTile(Value rawAqk, Value rawKK);
  /// The reference row of a tile for the dense path.
  Value referenceRow(Value gamma, Value g);
  /// The exact run-time guard of section 2.4 for one tile (an i1).
  Value guardCondition(Value gamma, Value g);

  /// The rows of a chunk that its pairwise tiles read: Q = s q, k, g,
  /// Tril(1), Gamma and, for the guarded path, each diagonal tile's verdict.
  ChunkForward chunkRows(Value q, Value k, Value g);
  /// One chunk's forward quantities; what `stored` holds (this chunk's
  /// values from an earlier stage) is read, the rest computed here.
  /// `emit`, when given, gets each value of ChunkValue as soon as it is
  /// whole.
  ChunkForward chunkForward(Value q, Value k, Value v, Value g, Value beta,
                            Value state, const StoredChunk &stored = {},
                            function_ref<void(ChunkValue, Value)> emit = {});
  /// O = (Q exp(Gamma)) S + Aqk Vn, `[C, V]`.
  Value chunkOutput(const ChunkForward &f);
  /// S' = exp(Gamma_last) S + (K exp(Gamma_last - Gamma))^T Vn.
  Value chunkNextState(const ChunkForward &f);

  //===--- Backward (KDATilingGrad.cpp) -------------------------------===//

  /// Section 1.7 for one chunk, given dO `[C, V]` and dS' `[K, V]`, up to
  /// the adjoints of Aqk and KK; `emit(value, which)`, when given, is
  /// called as soon as each result is whole.
  ChunkLocalGradients
  chunkBackwardLocal(const ChunkForward &f, Value dOut, Value dNext,
                     function_ref<void(Value, LocalGradient)> emit = {});
  /// The pairwise terms of Aqk and KK for the rows of `f` (those that
  /// chunkRows sets) added to `local`: dq, dk and dg (the rest null).
  ChunkGradients chunkBackwardPairwise(const ChunkForward &f,
                                       const ChunkLocalGradients &local);
  /// The pairwise terms of the diagonal tile `a` for the given adjoints of
  /// Aqk and KK (`[c, c]`, strictly lower): returns (dQ from Aqk, dK of the row
  /// side from KK, dK of the column side from both), each `[c, K]`.
  SmallVector<Value> diagonalGradDense(Value dAqk, Value dKK, Value q, Value k,
                                       Value gamma, Value g);
  SmallVector<Value> diagonalGradPerPosition(Value dAqk, Value dKK, Value q,
                                             Value k, Value gamma);
  /// Sums over the rows of a `[n, m]` matrix: `[m]`.
  Value columnSums(Value matrix);
  /// Sums over the columns of a `[n, m]` matrix: `[n]`.
  Value rowSumOf(Value matrix);

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  TilingConfig config;
  int64_t chunk, subChunk;
};

/// The chunk slice `[C, width]` (or `[C]` when width is 0) at (bi, start, hi)
/// of a `[B, P, H, width]` (or `[B, P, H]`) tensor.
Value sliceChunk(OpBuilder &b, Location loc, Value x, Value bi, Value start,
                 Value hi, int64_t chunk, int64_t width);

} // namespace mlir::moe::kda_tiling

#endif // MOE_LIB_DIALECT_MOE_TRANSFORMS_KDATILING_H
