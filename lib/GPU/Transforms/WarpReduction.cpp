//===- WarpReduction.cpp - Structured reductions, one warp per output -----===//
//
// Part of the moe-mlir project.
//
// Implements the warp mapping of structured reductions that
// -moe-map-forall-to-gpu uses for the host code's reductions: a thread per
// output reads a whole row alone (its neighbours a row apart, so no load is
// coalesced, and a 0-d sum runs on one thread); a warp per output reads the
// row with 32 neighbouring lanes and combines them with five shuffles.
//
//===----------------------------------------------------------------------===//

#include "WarpReduction.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

constexpr int64_t kWarp = 32;
/// Inputs of at most this many elements stay in the caches, however the
/// lanes read them (a narrow projection's [d, 4] weights).
constexpr int64_t kSmallInput = 16384;

} // namespace

Operation *mlir::moe::reductionCombiner(linalg::LinalgOp op, unsigned i) {
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  BlockArgument outArg = op.getMatchingBlockArgument(op.getDpsInitOperand(i));
  // The output's value flows through one combiner, or a chain of the same
  // one (`(acc + a) + b`: two weight gradients' terms summed into one
  // output), each step its value's only use, into the yield: as
  // reorderable as one combiner.
  Operation *combiner = nullptr;
  Value chained = outArg;
  while (chained.hasOneUse()) {
    Operation *link = *chained.getUsers().begin();
    if (link == yield.getOperation())
      break;
    if (link->getNumOperands() != 2 || link->getNumResults() != 1 ||
        (combiner &&
         (link->getName() != combiner->getName() ||
          link->getAttrDictionary() != combiner->getAttrDictionary())))
      return nullptr;
    // The other operand must not depend on the output (no `acc * acc`).
    Value other = link->getOperand(0) == chained ? link->getOperand(1)
                                                 : link->getOperand(0);
    if (other == chained)
      return nullptr;
    combiner = link;
    chained = link->getResult(0);
  }
  if (!combiner || !chained.hasOneUse() || yield.getOperand(i) != chained)
    return nullptr;
  // Commutative and associative, so lanes may combine in any order (as
  // floating-point sums in another order: the CPU's order differs too).
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp, arith::AddIOp, arith::MulIOp,
           arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp,
           arith::AndIOp, arith::OrIOp, arith::XOrIOp>(combiner))
    return nullptr;
  Type type = combiner->getResult(0).getType();
  if (!type.isF32() && !type.isInteger(32))
    return nullptr; // a shuffle moves 32 bits
  if (!arith::getNeutralElement(combiner))
    return nullptr;
  return combiner;
}

void mlir::moe::delinearizeInto(OpBuilder &b, Location loc, Value linear,
                                ArrayRef<unsigned> dims, ArrayRef<Value> counts,
                                ArrayRef<Range> ranges,
                                SmallVectorImpl<Value> &ivs) {
  for (int64_t k = static_cast<int64_t>(dims.size()) - 1; k >= 0; --k) {
    Value i = linear;
    if (k > 0) {
      i = arith::RemUIOp::create(b, loc, linear, counts[k]);
      linear = arith::DivUIOp::create(b, loc, linear, counts[k]);
    }
    const Range &range = ranges[dims[k]];
    Value stride = getValueOrCreateConstantIndexOp(b, loc, range.stride);
    Value offset = getValueOrCreateConstantIndexOp(b, loc, range.offset);
    ivs[dims[k]] = arith::AddIOp::create(
        b, loc, offset, arith::MulIOp::create(b, loc, i, stride));
  }
}

Value mlir::moe::combineWith(OpBuilder &b, Operation *combiner, Value lhs,
                             Value rhs) {
  Operation *copy = b.clone(*combiner);
  copy->setOperands({lhs, rhs});
  return copy->getResult(0);
}

SmallVector<Value> mlir::moe::indicesAt(OpBuilder &b, Location loc,
                                        linalg::LinalgOp op, OpOperand &operand,
                                        ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : op.getMatchingIndexingMap(&operand).getResults())
    indices.push_back(affine::expandAffineExpr(b, loc, expr, ivs, {}));
  return indices;
}

Value mlir::moe::indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value mlir::moe::tripCount(OpBuilder &b, Location loc, Value lb, Value ub,
                           Value step) {
  Value span = arith::SubIOp::create(b, loc, ub, lb);
  Value count = arith::CeilDivSIOp::create(b, loc, span, step);
  return arith::MaxSIOp::create(b, loc, count, indexConstant(b, loc, 0));
}

Value mlir::moe::product(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  Value total = indexConstant(b, loc, 1);
  for (Value v : values)
    total = arith::MulIOp::create(b, loc, total, v);
  return total;
}

SmallVector<Value> mlir::moe::delinearize(OpBuilder &b, Location loc,
                                          Value linear, ArrayRef<Value> counts,
                                          ArrayRef<Value> lbs,
                                          ArrayRef<Value> steps) {
  SmallVector<Value> ivs(counts.size());
  for (int64_t d = static_cast<int64_t>(counts.size()) - 1; d >= 0; --d) {
    Value i = linear;
    if (d > 0) {
      i = arith::RemUIOp::create(b, loc, linear, counts[d]);
      linear = arith::DivUIOp::create(b, loc, linear, counts[d]);
    }
    Value scaled = arith::MulIOp::create(b, loc, i, steps[d]);
    ivs[d] = arith::AddIOp::create(b, loc, lbs[d], scaled);
  }
  return ivs;
}

bool mlir::moe::hasReorderableReductions(linalg::LinalgOp op,
                                         int64_t minExtent) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() == 0 ||
      op.getNumDpsInits() == 0 || !op.getBlock())
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t extent = 1;
  for (auto [size, it] : llvm::zip(op.getStaticLoopRanges(), iterators)) {
    if (it != utils::IteratorType::reduction)
      continue;
    extent = ShapedType::isDynamic(size) || ShapedType::isDynamic(extent)
                 ? ShapedType::kDynamic
                 : extent * size;
  }
  if (!ShapedType::isDynamic(extent) && extent < minExtent)
    return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    for (AffineExpr expr : op.getMatchingIndexingMap(&init).getResults()) {
      bool reductionDim = false;
      expr.walk([&](AffineExpr e) {
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          reductionDim |=
              iterators[dim.getPosition()] == utils::IteratorType::reduction;
      });
      if (reductionDim)
        return false;
    }
    if (!isa<MemRefType>(init.get().getType()))
      return false;
  }
  // The body may read memory (a gather) but write none.
  for (Operation &bodyOp : op.getBlock()->without_terminator())
    if (!isa<memref::LoadOp>(bodyOp) && !isMemoryEffectFree(&bodyOp))
      return false;
  for (unsigned i = 0, e = op.getNumDpsInits(); i < e; ++i)
    if (!reductionCombiner(op, i))
      return false;
  return true;
}

bool mlir::moe::readsReductionContiguously(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // Lanes read neighbouring reduction iterations: a large input must have a
  // reduction dimension innermost, or its reads would be a row apart (a
  // projection onto [k, n] weights reads down a column: there one thread
  // per output, with neighbours on neighbouring columns, coalesces).
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!type || map.getNumResults() == 0)
      continue;
    bool readsReduction = false;
    for (AffineExpr expr : map.getResults())
      expr.walk([&](AffineExpr e) {
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          readsReduction |=
              iterators[dim.getPosition()] == utils::IteratorType::reduction;
      });
    auto innermost = dyn_cast<AffineDimExpr>(map.getResults().back());
    bool contiguous = innermost && iterators[innermost.getPosition()] ==
                                       utils::IteratorType::reduction;
    bool small = type.hasStaticShape() && type.getNumElements() <= kSmallInput;
    if (readsReduction && !contiguous && !small)
      return false;
  }
  return true;
}

bool mlir::moe::isWarpReduction(linalg::LinalgOp op, int64_t minExtent) {
  return hasReorderableReductions(op, minExtent) &&
         readsReductionContiguously(op);
}

SmallVector<Value> mlir::moe::cloneBodyAt(OpBuilder &b, Location loc,
                                          linalg::LinalgOp op,
                                          ArrayRef<Value> ivs,
                                          ValueRange outputs) {
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get();
    if (isa<MemRefType>(value.getType()))
      value = memref::LoadOp::create(b, loc, value,
                                     indicesAt(b, loc, op, *input, ivs));
    mapping.map(op.getMatchingBlockArgument(input), value);
  }
  for (auto [init, output] : llvm::zip(op.getDpsInitsMutable(), outputs))
    mapping.map(op.getMatchingBlockArgument(&init), output);
  Block *body = op.getBlock();
  for (Operation &bodyOp : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(bodyOp, mapping);
  }
  SmallVector<Value> yielded;
  for (Value value : body->getTerminator()->getOperands())
    yielded.push_back(mapping.lookupOrDefault(value));
  return yielded;
}

Value mlir::moe::warpCombine(OpBuilder &b, Location loc, Value value,
                             Operation *combiner) {
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, value, offset, kWarp,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = combineWith(b, combiner, value, other);
  }
  return value;
}

LoopSpace mlir::moe::loopSpaceOf(OpBuilder &b, linalg::LinalgOp op) {
  Location loc = op.getLoc();
  LoopSpace space;
  space.ranges = op.createLoopRanges(b, loc);
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    const Range &r = space.ranges[d];
    Value offset = getValueOrCreateConstantIndexOp(b, loc, r.offset);
    Value size = getValueOrCreateConstantIndexOp(b, loc, r.size);
    Value stride = getValueOrCreateConstantIndexOp(b, loc, r.stride);
    Value ub = arith::AddIOp::create(b, loc, offset, size);
    Value count = tripCount(b, loc, offset, ub, stride);
    bool reduction = it == utils::IteratorType::reduction;
    (reduction ? space.reductionDims : space.parallelDims).push_back(d);
    (reduction ? space.reductionCounts : space.parallelCounts).push_back(count);
  }
  space.outputs = indexConstant(b, loc, 1);
  for (Value count : space.parallelCounts)
    space.outputs = arith::MulIOp::create(b, loc, space.outputs, count);
  space.iterations = indexConstant(b, loc, 1);
  for (Value count : space.reductionCounts)
    space.iterations = arith::MulIOp::create(b, loc, space.iterations, count);
  return space;
}

void mlir::moe::emitWarpReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                  Value warp, Value warps, Value lane,
                                  ArrayRef<Value> starts) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  LoopSpace space = loopSpaceOf(rewriter, op);
  ArrayRef<Range> ranges = space.ranges;
  ArrayRef<unsigned> parallelDims = space.parallelDims,
                     reductionDims = space.reductionDims;
  ArrayRef<Value> parallelCounts = space.parallelCounts,
                  reductionCounts = space.reductionCounts;
  Value outputs = space.outputs, iterations = space.iterations;

  unsigned numOutputs = op.getNumDpsInits();
  SmallVector<Operation *> combiners;
  for (unsigned i = 0; i < numOutputs; ++i)
    combiners.push_back(reductionCombiner(op, i));

  // Warps stride over the outputs (uniform control flow within a warp, so
  // every lane reaches the shuffles).
  auto outer = scf::ForOp::create(rewriter, loc, warp, outputs, warps);
  rewriter.setInsertionPointToStart(outer.getBody());
  Value zero = indexConstant(rewriter, loc, 0);
  SmallVector<Value> ivs(ranges.size(), zero);
  delinearizeInto(rewriter, loc, outer.getInductionVar(), parallelDims,
                  parallelCounts, ranges, ivs);
  SmallVector<Value> neutral;
  for (Operation *combiner : combiners)
    neutral.push_back(arith::ConstantOp::create(
        rewriter, loc, *arith::getNeutralElement(combiner)));

  // Each lane folds iterations lane, lane + 32, ... into its partials.
  auto inner = scf::ForOp::create(
      rewriter, loc, lane, iterations, indexConstant(rewriter, loc, kWarp),
      neutral,
      [&](OpBuilder &b, Location bodyLoc, Value linear, ValueRange partials) {
        SmallVector<Value> loopIvs(ivs);
        delinearizeInto(b, bodyLoc, linear, reductionDims, reductionCounts,
                        ranges, loopIvs);
        scf::YieldOp::create(b, bodyLoc,
                             cloneBodyAt(b, bodyLoc, op, loopIvs, partials));
      });

  // The warp's sums by butterfly shuffles; lane 0 adds them to the outputs.
  addWarpTotals(rewriter, op, inner.getResults(), ivs, lane, starts);
  rewriter.eraseOp(op);
}

/// The buffer `value` views (through view-like ops), or `value` itself.
static Value viewRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

SmallVector<linalg::FillOp>
mlir::moe::fillsOfReductionOutputs(linalg::LinalgOp op,
                                   SmallVectorImpl<Value> &starts) {
  starts.assign(op.getNumDpsInits(), Value());
  SmallVector<linalg::FillOp> fills;
  if (!op.hasPureBufferSemantics())
    return fills;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto fill = dyn_cast<linalg::FillOp>(prev);
    if (!fill) {
      if (isMemoryEffectFree(prev))
        continue;
      break;
    }
    if (!fill.hasPureBufferSemantics())
      break;
    Value filled = fill.getDpsInitOperand(0)->get();
    // The reduction must not read what the fill wrote (through any view).
    Value filledRoot = viewRoot(filled);
    if (llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
          return viewRoot(input->get()) == filledRoot;
        }))
      break;
    OpOperand *init = nullptr;
    for (OpOperand &candidate : op.getDpsInitsMutable())
      if (candidate.get() == filled)
        init = &candidate;
    // A fill of another buffer may alias an output or an input: stop.
    if (!init)
      break;
    unsigned i = init->getOperandNumber() - op.getNumDpsInputs();
    AffineMap map = op.getMatchingIndexingMap(init);
    auto type = cast<MemRefType>(filled.getType());
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    bool whole =
        map.isProjectedPermutation() && map.getNumResults() == type.getRank() &&
        static_cast<unsigned>(map.getNumResults()) ==
            op.getNumParallelLoops() &&
        llvm::all_of(map.getResults(), [&](AffineExpr result) {
          return iterators[cast<AffineDimExpr>(result).getPosition()] ==
                 utils::IteratorType::parallel;
        });
    if (!whole || starts[i])
      break;
    starts[i] = fill.getDpsInputOperand(0)->get();
    fills.push_back(fill);
  }
  return fills;
}

void mlir::moe::addWarpTotals(OpBuilder &b, linalg::LinalgOp op,
                              ValueRange partials, ArrayRef<Value> ivs,
                              Value lane, ArrayRef<Value> starts) {
  Location loc = op.getLoc();
  SmallVector<Value> totals;
  for (auto [i, partial] : llvm::enumerate(partials))
    totals.push_back(warpCombine(b, loc, partial, reductionCombiner(op, i)));
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      indexConstant(b, loc, 0));
  auto guard = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  for (auto [i, init, total] :
       llvm::enumerate(op.getDpsInitsMutable(), totals)) {
    SmallVector<Value> indices = indicesAt(b, loc, op, init, ivs);
    Value old =
        i < starts.size() && starts[i]
            ? starts[i]
            : Value(memref::LoadOp::create(b, loc, init.get(), indices));
    memref::StoreOp::create(
        b, loc, combineWith(b, reductionCombiner(op, i), old, total),
        init.get(), indices);
  }
}
