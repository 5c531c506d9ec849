//===- DecayBound.h - Lower bounds on KDA log-decay values ------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// A sparse forward dataflow analysis that proves a lower bound on every
// per-step log-decay value reaching a use, starting from `moe.decay_gate`,
// and the tile-safety check of ALGORITHMS.md section 2.2 built on it.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_ANALYSIS_DECAYBOUND_H
#define MOE_ANALYSIS_DECAYBOUND_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace mlir {
class DataFlowSolver;
} // namespace mlir

namespace mlir::moe {

/// The reference row a diagonal tile's decay factors are taken against
/// (ALGORITHMS.md sections 1.6 and 2.2).
enum class TileReference {
  /// The state before the tile (the report's `K/Gamma` form).
  Pre,
  /// The tile's first row.
  Start,
  /// Row `c/2` of the tile (flash-linear-attention's choice).
  Mid,
};

/// Parses "pre", "start" or "mid".
std::optional<TileReference> symbolizeTileReference(llvm::StringRef str);

/// Returns "pre", "start" or "mid".
llvm::StringRef stringifyTileReference(TileReference ref);

/// E_ref(c): the most per-step log-decay values one operand exponent of a
/// tile of `tileLength >= 1` rows sums: `c` for `pre`, `c - 1` for `start`
/// and `max(r, c - 1 - r)` with `r = c / 2` (rounded down) for `mid`, which
/// is `c / 2` for every even `c` and `(c - 1) / 2` for odd `c`.
int64_t getReferenceSteps(TileReference ref, int64_t tileLength);

/// L_op = min(ln(largest finite), -ln(smallest normal)) of a float type (or
/// of the element type of a shaped type): the largest exponent `a` for which
/// both `e^a` and `e^-a` are finite normal numbers. Computed from the type's
/// APFloat semantics: 87.34 for f32, tf32 and bf16, 9.70 for f16, 708.40 for
/// f64. Returns -infinity for a non-float type (nothing is provable).
double getOperandExponentLimit(Type elementType);

/// The answer to "may a diagonal tile use the tensor-core path?".
struct TileSafetyVerdict {
  /// The hard condition E_ref(c) * |lowerBound| <= L_op holds.
  bool proven;
  /// Proven lower bound on every per-step log-decay value; nullopt when none
  /// is known (a softplus gate, an unknown producer, a negative scale).
  std::optional<double> lowerBound;
  /// E_ref(c) * |lowerBound|; +infinity without a lower bound.
  double exponent;
  /// L_op of the operand element type.
  double limit;
  /// limit - exponent (negative when not proven, -infinity without a bound).
  double margin;
};

/// Evaluates the hard condition of ALGORITHMS.md section 2.2 for a known (or
/// unknown) lower bound. Without a bound the tile is never proven, even when
/// E_ref(c) is 0.
TileSafetyVerdict checkTileSafety(std::optional<double> lowerBound,
                                  int64_t tileLength, TileReference ref,
                                  Type operandElementType);

/// Runs the decay-bound dataflow analysis over `root` once (with dead-code
/// analysis and sparse constant propagation for control flow), then answers
/// queries about values defined inside `root`.
///
/// A value has a lower bound `b` when every element `v` of it satisfies
/// `b <= v <= 0` (for NaN-free inputs). Bounds start at `moe.decay_gate`
/// (`bounded`: g_min rounded toward -inf into the result type; `softplus`:
/// none) and flow through scaling by positive constants, float extension and
/// truncation, tensor slicing, reshaping and casts, `linalg.transpose`,
/// `linalg.broadcast`, elementwise `linalg.generic` bodies, `tensor.extract`,
/// `tensor.insert(_slice)`, `tensor.concat`, `arith.select`, region-branch
/// control flow (`scf.for`, `scf.if`, `scf.while`) and `scf.forall` shared
/// outputs. Any other producer has no bound.
///
/// Answers are valid until the IR under `root` changes; values created after
/// construction have no bound.
class DecayBounds {
public:
  explicit DecayBounds(Operation *root);
  ~DecayBounds();
  DecayBounds(DecayBounds &&) noexcept;
  DecayBounds &operator=(DecayBounds &&) noexcept;

  /// The proven lower bound of `logDecay`, or nullopt if there is none.
  std::optional<double> getLowerBound(Value logDecay) const;

  /// The tile-safety verdict for a diagonal tile of `tileLength` rows of
  /// `logDecay` factored through `ref`, with GEMM operands of
  /// `operandElementType`.
  TileSafetyVerdict checkTile(Value logDecay, int64_t tileLength,
                              TileReference ref, Type operandElementType) const;

  /// Whether the solver reached a fixpoint; if not, no value has a bound.
  bool hasConverged() const { return converged; }

private:
  std::unique_ptr<DataFlowSolver> solver;
  bool converged = false;
};

} // namespace mlir::moe

#endif // MOE_ANALYSIS_DECAYBOUND_H
