//===- DecayBound.cpp - Lower bounds on KDA log-decay values --------------===//
//
// Part of the moe-mlir project.
//
// The decay-bound lattice and its sparse forward dataflow analysis, and the
// tile-safety condition of ALGORITHMS.md section 2.2.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/DecayBound.h"

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Analysis/DataFlow/ConstantPropagationAnalysis.h"
#include "mlir/Analysis/DataFlow/DeadCodeAnalysis.h"
#include "mlir/Analysis/DataFlow/SparseAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::dataflow;

#define DEBUG_TYPE "moe-decay-bound"

static constexpr double kInfinity = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Tile references and operand limits
//===----------------------------------------------------------------------===//

std::optional<TileReference> mlir::moe::symbolizeTileReference(StringRef str) {
  return llvm::StringSwitch<std::optional<TileReference>>(str)
      .Case("pre", TileReference::Pre)
      .Case("start", TileReference::Start)
      .Case("mid", TileReference::Mid)
      .Default(std::nullopt);
}

StringRef mlir::moe::stringifyTileReference(TileReference ref) {
  switch (ref) {
  case TileReference::Pre:
    return "pre";
  case TileReference::Start:
    return "start";
  case TileReference::Mid:
    return "mid";
  }
  llvm_unreachable("unknown tile reference");
}

int64_t mlir::moe::getReferenceSteps(TileReference ref, int64_t tileLength) {
  assert(tileLength >= 1 && "expected a tile of at least one row");
  if (tileLength < 1)
    return 0;
  switch (ref) {
  case TileReference::Pre:
    // Gamma_i - Gamma_{-1} includes step 0: up to c steps.
    return tileLength;
  case TileReference::Start:
    // Gamma_i - Gamma_0 sums steps 1..i: up to c - 1 steps.
    return tileLength - 1;
  case TileReference::Mid: {
    // Key side Gamma_r - Gamma_j sums steps j+1..r (r steps at j = 0); query
    // side Gamma_i - Gamma_r sums steps r+1..i (c - 1 - r steps at i = c-1).
    int64_t r = tileLength / 2;
    return std::max(r, tileLength - 1 - r);
  }
  }
  llvm_unreachable("unknown tile reference");
}

/// ln|x| for a finite, non-zero `x` of any float semantics (some do not fit
/// a double, so the binary exponent is split off first).
static double logAbs(const APFloat &x) {
  int exponent = ilogb(x);
  APFloat mantissa = scalbn(x, -exponent, APFloat::rmNearestTiesToEven);
  bool losesInfo = false;
  mantissa.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                   &losesInfo);
  return std::log(std::fabs(mantissa.convertToDouble())) +
         exponent * std::log(2.0);
}

double mlir::moe::getOperandExponentLimit(Type elementType) {
  auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(elementType));
  if (!floatType)
    return -kInfinity;
  const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
  double overflow = logAbs(APFloat::getLargest(semantics));
  double underflow = -logAbs(APFloat::getSmallestNormalized(semantics));
  return std::min(overflow, underflow);
}

TileSafetyVerdict mlir::moe::checkTileSafety(std::optional<double> lowerBound,
                                             int64_t tileLength,
                                             TileReference ref,
                                             Type operandElementType) {
  TileSafetyVerdict verdict;
  verdict.lowerBound = lowerBound;
  verdict.limit = getOperandExponentLimit(operandElementType);
  verdict.exponent =
      lowerBound ? static_cast<double>(getReferenceSteps(ref, tileLength)) *
                       std::fabs(*lowerBound)
                 : kInfinity;
  verdict.margin = verdict.limit - verdict.exponent;
  verdict.proven = lowerBound.has_value() && verdict.exponent <= verdict.limit;
  return verdict;
}

//===----------------------------------------------------------------------===//
// Lattice
//===----------------------------------------------------------------------===//

namespace {

/// What is known about the elements of a float value: nothing yet
/// (uninitialized), a lower bound `b` meaning every element `v` satisfies
/// `b <= v <= 0`, or no bound. Join keeps the weaker bound (the minimum).
class DecayBound {
public:
  /// The uninitialized state.
  DecayBound() = default;

  static DecayBound bounded(double bound) { return {Kind::Bounded, bound}; }
  static DecayBound unbounded() { return {Kind::Unbounded, 0.0}; }

  bool isUninitialized() const { return kind == Kind::Uninitialized; }
  bool isUnbounded() const { return kind == Kind::Unbounded; }

  /// The lower bound, if one is proven.
  std::optional<double> getBound() const {
    if (kind != Kind::Bounded)
      return std::nullopt;
    return bound;
  }

  bool operator==(const DecayBound &rhs) const {
    return kind == rhs.kind && (kind != Kind::Bounded || bound == rhs.bound);
  }

  static DecayBound join(const DecayBound &lhs, const DecayBound &rhs) {
    if (lhs.isUninitialized())
      return rhs;
    if (rhs.isUninitialized())
      return lhs;
    if (lhs.isUnbounded() || rhs.isUnbounded())
      return unbounded();
    return bounded(std::min(lhs.bound, rhs.bound));
  }

  void print(raw_ostream &os) const {
    if (isUninitialized())
      os << "<uninitialized>";
    else if (isUnbounded())
      os << "<unbounded>";
    else
      os << "[" << bound << ", 0]";
  }

private:
  enum class Kind { Uninitialized, Bounded, Unbounded };
  DecayBound(Kind kind, double bound) : kind(kind), bound(bound) {}

  Kind kind = Kind::Uninitialized;
  double bound = 0.0;
};

/// The lattice of one value. Bounds form an infinite descending chain (a loop
/// that scales by more than one lowers its bound forever), so control-flow
/// joins widen: the framework merges block arguments, region-branch results
/// and call results through the virtual join, and after `kMaxLowerings`
/// lowerings of a finite bound there the value gives up its bound. Every
/// SSA cycle passes through such a merge, so the analysis terminates.
class DecayBoundLattice : public Lattice<DecayBound> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DecayBoundLattice)
  using Lattice::join;
  using Lattice::Lattice;

  ChangeResult join(const AbstractSparseLattice &rhs) override {
    const DecayBound &incoming =
        static_cast<const DecayBoundLattice &>(rhs).getValue();
    DecayBound joined = DecayBound::join(getValue(), incoming);
    if (joined == getValue())
      return ChangeResult::NoChange;
    if (getValue().getBound() && joined.getBound() &&
        ++numLowerings > kMaxLowerings)
      joined = DecayBound::unbounded();
    getValue() = joined;
    return ChangeResult::Change;
  }

private:
  static constexpr unsigned kMaxLowerings = 8;
  unsigned numLowerings = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Transfer helpers
//===----------------------------------------------------------------------===//

/// `value` rounded toward -inf into the element type of `type`, as a double;
/// nullopt when that overflows or `type` is not float. Any monotone rounding
/// of an element `v >= value` is then `>=` the result.
static std::optional<double> roundDown(const APFloat &value, Type type) {
  auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(type));
  if (!floatType)
    return std::nullopt;
  APFloat rounded = value;
  bool losesInfo = false;
  rounded.convert(floatType.getFloatSemantics(), APFloat::rmTowardNegative,
                  &losesInfo);
  if (!rounded.isFinite())
    return std::nullopt;
  // Types wider than f64 round down once more; the result stays a bound.
  rounded.convert(APFloat::IEEEdouble(), APFloat::rmTowardNegative, &losesInfo);
  if (!rounded.isFinite())
    return std::nullopt;
  return rounded.convertToDouble();
}

static DecayBound boundOrUnbounded(std::optional<double> bound) {
  return bound ? DecayBound::bounded(*bound) : DecayBound::unbounded();
}

namespace {
/// The range of the elements of a positive constant.
struct PositiveRange {
  double min;
  double max;
};
} // namespace

/// The smallest and largest element of a float constant (scalar or dense)
/// whose elements are all finite, positive and exact as doubles; nullopt for
/// anything else.
static std::optional<PositiveRange> getPositiveRange(Attribute attr) {
  auto toPositive = [](APFloat value) -> std::optional<double> {
    bool losesInfo = false;
    value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
    if (losesInfo || !value.isFiniteNonZero() || value.isNegative())
      return std::nullopt;
    return value.convertToDouble();
  };
  if (auto floatAttr = dyn_cast_if_present<FloatAttr>(attr)) {
    std::optional<double> value = toPositive(floatAttr.getValue());
    if (!value)
      return std::nullopt;
    return PositiveRange{*value, *value};
  }
  auto dense = dyn_cast_if_present<DenseFPElementsAttr>(attr);
  if (!dense || dense.empty())
    return std::nullopt;
  if (dense.isSplat()) {
    std::optional<double> value = toPositive(dense.getSplatValue<APFloat>());
    if (!value)
      return std::nullopt;
    return PositiveRange{*value, *value};
  }
  PositiveRange range{kInfinity, 0.0};
  for (APFloat element : dense.getValues<APFloat>()) {
    std::optional<double> value = toPositive(element);
    if (!value)
      return std::nullopt;
    range.min = std::min(range.min, *value);
    range.max = std::max(range.max, *value);
  }
  return range;
}

//===----------------------------------------------------------------------===//
// DecayBoundAnalysis
//===----------------------------------------------------------------------===//

namespace {

/// Propagates decay bounds forward from `moe.decay_gate` (see DecayBounds).
class DecayBoundAnalysis
    : public SparseForwardDataFlowAnalysis<DecayBoundLattice> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DecayBoundAnalysis)
  using SparseForwardDataFlowAnalysis::SparseForwardDataFlowAnalysis;

  LogicalResult visitOperation(Operation *op,
                               ArrayRef<const DecayBoundLattice *> operands,
                               ArrayRef<DecayBoundLattice *> results) override;

  void visitNonControlFlowArguments(Operation *op,
                                    const RegionSuccessor &successor,
                                    ArrayRef<DecayBoundLattice *> argLattices,
                                    unsigned firstIndex) override;

  /// Entry values (function arguments, loop induction variables, results of
  /// unknown ops) have no bound.
  void setToEntryState(DecayBoundLattice *lattice) override {
    propagateIfChanged(lattice, lattice->join(DecayBound::unbounded()));
  }

private:
  /// Joins `bound` into `lattice`; lattices only move up.
  void joinBound(DecayBoundLattice *lattice, const DecayBound &bound) {
    propagateIfChanged(lattice, lattice->join(bound));
  }

  /// The bound of `bounded * scale` (or `bounded / scale` if `divide`) where
  /// `scale` must be a positive constant; uninitialized while either input is
  /// not known yet.
  DecayBound visitScale(Operation *op, const DecayBound &bounded, Value scale,
                        bool divide);

  /// The shared outputs and results of an `scf.forall`: a shared output
  /// starts as its init operand; a result is the init with the slices that
  /// the threads insert.
  void visitForall(scf::ForallOp forall, ProgramPoint *point);

  /// The block arguments of a `linalg.generic` take the bound of the operand
  /// they are an element of.
  void visitGenericArguments(linalg::GenericOp generic);

  /// The results of a `linalg.generic` are its yielded values, joined with
  /// the init unless every output element is written exactly once.
  void visitGenericResults(linalg::GenericOp generic,
                           ArrayRef<const DecayBoundLattice *> operands,
                           ArrayRef<DecayBoundLattice *> results);
};

} // namespace

DecayBound DecayBoundAnalysis::visitScale(Operation *op,
                                          const DecayBound &bounded,
                                          Value scale, bool divide) {
  if (bounded.isUninitialized())
    return {};
  if (bounded.isUnbounded())
    return DecayBound::unbounded();

  // A constant defined right here needs no fixpoint; otherwise ask sparse
  // constant propagation (and revisit `op` when its answer changes).
  Attribute attr;
  if (!matchPattern(scale, m_Constant(&attr))) {
    const auto *constant =
        getOrCreateFor<Lattice<ConstantValue>>(getProgramPointAfter(op), scale);
    if (constant->getValue().isUninitialized())
      return {};
    attr = constant->getValue().getConstantValue();
  }
  std::optional<PositiveRange> range = getPositiveRange(attr);
  if (!range)
    return DecayBound::unbounded();

  // With b <= v <= 0 and 0 < c_min <= c <= c_max: v * c >= b * c_max and
  // v / c >= b / c_min. Both are rounded down, first in f64 and then in the
  // result type, so that the rounded product or quotient stays above.
  APFloat bound(*bounded.getBound());
  if (divide)
    bound.divide(APFloat(range->min), APFloat::rmTowardNegative);
  else
    bound.multiply(APFloat(range->max), APFloat::rmTowardNegative);
  return boundOrUnbounded(roundDown(bound, op->getResult(0).getType()));
}

LogicalResult
DecayBoundAnalysis::visitOperation(Operation *op,
                                   ArrayRef<const DecayBoundLattice *> operands,
                                   ArrayRef<DecayBoundLattice *> results) {
  // Result 0 takes the join of the given operands' bounds.
  auto forward = [&](std::initializer_list<unsigned> indices) {
    DecayBound bound;
    for (unsigned index : indices)
      bound = DecayBound::join(bound, operands[index]->getValue());
    joinBound(results[0], bound);
  };

  llvm::TypeSwitch<Operation *>(op)
      .Case([&](DecayGateOp gate) {
        DecayGateAttr attr = gate.getGate();
        // g = g_min * sigmoid(...) is rounded to the result type, so the
        // bound is g_min rounded down into that type.
        if (!attr.isBounded() || !attr.getGMin())
          return joinBound(results[0], DecayBound::unbounded());
        joinBound(results[0],
                  boundOrUnbounded(roundDown(*attr.getGMin(), gate.getType())));
      })
      .Case([&](arith::MulFOp mul) {
        // Either operand may be the positive constant.
        DecayBound lhs = visitScale(op, operands[0]->getValue(), mul.getRhs(),
                                    /*divide=*/false);
        DecayBound rhs = visitScale(op, operands[1]->getValue(), mul.getLhs(),
                                    /*divide=*/false);
        if (lhs.getBound() || rhs.getBound())
          return joinBound(results[0], lhs.getBound() ? lhs : rhs);
        if (lhs.isUninitialized() || rhs.isUninitialized())
          return;
        joinBound(results[0], DecayBound::unbounded());
      })
      .Case([&](arith::DivFOp div) {
        joinBound(results[0], visitScale(op, operands[0]->getValue(),
                                         div.getRhs(), /*divide=*/true));
      })
      .Case([&](arith::TruncFOp trunc) {
        // Rounding is monotone and keeps 0, so the bound rounds down.
        const DecayBound &input = operands[0]->getValue();
        if (input.isUninitialized())
          return;
        if (input.isUnbounded())
          return joinBound(results[0], DecayBound::unbounded());
        joinBound(results[0],
                  boundOrUnbounded(
                      roundDown(APFloat(*input.getBound()), trunc.getType())));
      })
      // Ops whose result elements are elements of operand 0, exactly.
      .Case<arith::ExtFOp, tensor::ExtractSliceOp, tensor::ExpandShapeOp,
            tensor::CollapseShapeOp, tensor::ReshapeOp, tensor::CastOp,
            tensor::ExtractOp, linalg::TransposeOp, linalg::BroadcastOp,
            linalg::CopyOp>([&](Operation *) { forward({0}); })
      // Ops whose result elements come from one of several operands.
      .Case([&](arith::SelectOp) { forward({1, 2}); })
      .Case([&](tensor::InsertSliceOp) { forward({0, 1}); })
      .Case([&](tensor::InsertOp) { forward({0, 1}); })
      .Case([&](tensor::ConcatOp) {
        DecayBound bound;
        for (const DecayBoundLattice *operand : operands)
          bound = DecayBound::join(bound, operand->getValue());
        joinBound(results[0], bound);
      })
      .Case([&](linalg::GenericOp generic) {
        visitGenericResults(generic, operands, results);
      })
      .Default([&](Operation *) { setAllToEntryStates(results); });
  return success();
}

void DecayBoundAnalysis::visitGenericResults(
    linalg::GenericOp generic, ArrayRef<const DecayBoundLattice *> operands,
    ArrayRef<DecayBoundLattice *> results) {
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  bool allParallel =
      llvm::all_of(generic.getIteratorTypesArray(), [](auto iteratorType) {
        return iteratorType == utils::IteratorType::parallel;
      });
  ProgramPoint *point = getProgramPointAfter(generic);
  for (auto [index, result] : llvm::enumerate(results)) {
    DecayBound bound =
        getLatticeElementFor(point, yield.getOperand(index))->getValue();
    // An output element that no iteration writes keeps its init value.
    OpOperand *init = generic.getDpsInitOperand(index);
    if (!allParallel || !generic.getMatchingIndexingMap(init).isPermutation())
      bound = DecayBound::join(bound,
                               operands[init->getOperandNumber()]->getValue());
    joinBound(result, bound);
  }
}

void DecayBoundAnalysis::visitGenericArguments(linalg::GenericOp generic) {
  ProgramPoint *point = getProgramPointBefore(generic.getBody());
  for (OpOperand &operand : generic->getOpOperands()) {
    BlockArgument arg = generic.getMatchingBlockArgument(&operand);
    joinBound(getLatticeElement(arg),
              getLatticeElementFor(point, operand.get())->getValue());
  }
}

void DecayBoundAnalysis::visitForall(scf::ForallOp forall,
                                     ProgramPoint *point) {
  for (Value iv : forall.getInductionVars())
    setToEntryState(getLatticeElement(iv));
  for (auto [init, arg, result] :
       llvm::zip(forall.getOutputs(), forall.getRegionOutArgs(),
                 forall.getResults())) {
    DecayBound bound = getLatticeElementFor(point, init)->getValue();
    joinBound(getLatticeElement(arg), bound);
    for (Operation *combining : forall.getCombiningOps(arg)) {
      auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(combining);
      DecayBound inserted =
          insert ? getLatticeElementFor(point, insert.getSource())->getValue()
                 : DecayBound::unbounded();
      bound = DecayBound::join(bound, inserted);
    }
    joinBound(getLatticeElement(result), bound);
  }
}

void DecayBoundAnalysis::visitNonControlFlowArguments(
    Operation *op, const RegionSuccessor &successor,
    ArrayRef<DecayBoundLattice *> argLattices, unsigned firstIndex) {
  if (auto forall = dyn_cast<scf::ForallOp>(op)) {
    // scf.forall does not forward its shared outputs as region-branch
    // operands; wire them here, for the body and for the results.
    ProgramPoint *point = successor.isParent()
                              ? getProgramPointAfter(forall)
                              : getProgramPointBefore(forall.getBody());
    return visitForall(forall, point);
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return visitGenericArguments(generic);
  // Arguments of other non-region-branch ops are unknown.
  if (!isa<RegionBranchOpInterface>(op))
    return setAllToEntryStates(argLattices);
  SparseForwardDataFlowAnalysis::visitNonControlFlowArguments(
      op, successor, argLattices, firstIndex);
}

//===----------------------------------------------------------------------===//
// DecayBounds
//===----------------------------------------------------------------------===//

DecayBounds::DecayBounds(Operation *root)
    : solver(std::make_unique<DataFlowSolver>()) {
  loadBaselineAnalyses(*solver);
  solver->load<DecayBoundAnalysis>();
  converged = succeeded(solver->initializeAndRun(root));
}

DecayBounds::~DecayBounds() = default;
DecayBounds::DecayBounds(DecayBounds &&) noexcept = default;
DecayBounds &DecayBounds::operator=(DecayBounds &&) noexcept = default;

std::optional<double> DecayBounds::getLowerBound(Value logDecay) const {
  if (!converged || !logDecay)
    return std::nullopt;
  const auto *lattice = solver->lookupState<DecayBoundLattice>(logDecay);
  if (!lattice)
    return std::nullopt;
  return lattice->getValue().getBound();
}

TileSafetyVerdict DecayBounds::checkTile(Value logDecay, int64_t tileLength,
                                         TileReference ref,
                                         Type operandElementType) const {
  return checkTileSafety(getLowerBound(logDecay), tileLength, ref,
                         operandElementType);
}
