//===- ColumnReduction.cpp - Split reductions onto few outputs ------------===//
//
// Part of the moe-mlir project.
//
// Implements the split column reduction of ColumnReduction.h, the mapping
// -moe-map-forall-to-gpu gives the host code's reductions over the tokens
// (weight gradients): they had run one thread per output, each walking all
// B * T tokens alone.
//
//===----------------------------------------------------------------------===//

#include "ColumnReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::moe;

namespace {
/// Iterations a run folds at least (fewer would make the partials cost
/// more than they save).
constexpr int64_t kMinRun = 64;
/// Runs per output at most (the grid's y extent).
constexpr int64_t kMaxRuns = 65535;
constexpr int64_t kWarp = 32;

/// The combiners of `op`'s outputs, in order.
SmallVector<Operation *> combinersOf(linalg::LinalgOp op) {
  SmallVector<Operation *> combiners;
  for (unsigned i = 0, e = op.getNumDpsInits(); i < e; ++i)
    combiners.push_back(reductionCombiner(op, i));
  return combiners;
}

/// The neutral elements of `combiners`.
SmallVector<Value> neutralsOf(OpBuilder &b, Location loc,
                              ArrayRef<Operation *> combiners) {
  SmallVector<Value> neutral;
  for (Operation *combiner : combiners)
    neutral.push_back(
        arith::ConstantOp::create(b, loc, *arith::getNeutralElement(combiner)));
  return neutral;
}
} // namespace

bool mlir::moe::isColumnReduction(linalg::LinalgOp op, int64_t minIterations,
                                  int64_t maxOutputs) {
  if (!hasReorderableReductions(op, minIterations) ||
      readsReductionContiguously(op))
    return false;
  int64_t outputs = 1;
  for (auto [size, it] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (it != utils::IteratorType::parallel)
      continue;
    if (ShapedType::isDynamic(size))
      return true;
    outputs *= size;
  }
  return outputs < maxOutputs;
}

ColumnSplit mlir::moe::planColumnSplit(OpBuilder &b, linalg::LinalgOp op,
                                       const LoopSpace &space,
                                       int64_t blockSize,
                                       int64_t targetThreads) {
  Location loc = op.getLoc();
  ColumnSplit split;
  Value one = indexConstant(b, loc, 1);
  Value threads = indexConstant(b, loc, blockSize);
  // At least one block, so that an empty output set still launches a
  // valid grid (its threads do nothing).
  split.columnBlocks = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, space.outputs, threads), one);
  // Runs: enough for about targetThreads threads, but none shorter than
  // kMinRun iterations and at most kMaxRuns.
  Value columnThreads =
      arith::MulIOp::create(b, loc, split.columnBlocks, threads);
  Value wanted = arith::CeilDivUIOp::create(
      b, loc, indexConstant(b, loc, targetThreads), columnThreads);
  Value longest = arith::CeilDivUIOp::create(b, loc, space.iterations,
                                             indexConstant(b, loc, kMinRun));
  Value runs = arith::MinUIOp::create(b, loc, wanted, longest);
  runs = arith::MinUIOp::create(b, loc, runs, indexConstant(b, loc, kMaxRuns));
  split.runs = arith::MaxUIOp::create(b, loc, runs, one);
  split.runLength =
      arith::CeilDivUIOp::create(b, loc, space.iterations, split.runs);
  Value elements = arith::MulIOp::create(b, loc, split.runs, space.outputs);
  for (Operation *combiner : combinersOf(op)) {
    auto type = MemRefType::get({ShapedType::kDynamic},
                                combiner->getResult(0).getType());
    split.partials.push_back(
        gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(), ValueRange(),
                             ValueRange{elements}, ValueRange(),
                             /*hostShared=*/false)
            .getMemref());
  }
  return split;
}

void mlir::moe::emitColumnPartials(OpBuilder &b, linalg::LinalgOp op,
                                   const LoopSpace &space,
                                   const ColumnSplit &split, Value column,
                                   Value run) {
  Location loc = op.getLoc();
  SmallVector<Operation *> combiners = combinersOf(op);
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        column, space.outputs);
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  SmallVector<Value> ivs(space.ranges.size(), indexConstant(b, loc, 0));
  delinearizeInto(b, loc, column, space.parallelDims, space.parallelCounts,
                  space.ranges, ivs);
  Value start = arith::MulIOp::create(b, loc, run, split.runLength);
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, start, split.runLength),
      space.iterations);
  // The run's reduction indices (trip counts, row major) are delinearized
  // once, at its start, and then stepped with carries: a division per
  // iteration by the dynamic token counts would cost more than the body.
  ArrayRef<Value> counts = space.reductionCounts;
  size_t numDims = counts.size();
  SmallVector<Value> first(numDims);
  Value rest = start;
  for (size_t k = numDims; k-- > 0;) {
    first[k] = k == 0 ? rest : arith::RemUIOp::create(b, loc, rest, counts[k]);
    if (k > 0)
      rest = arith::DivUIOp::create(b, loc, rest, counts[k]);
  }
  SmallVector<Value> init = neutralsOf(b, loc, combiners);
  size_t numPartials = init.size();
  init.append(first);
  Value one = indexConstant(b, loc, 1), zero = indexConstant(b, loc, 0);
  auto loop = scf::ForOp::create(
      b, loc, start, end, one, init,
      [&](OpBuilder &lb, Location bodyLoc, Value, ValueRange carried) {
        ValueRange partials = carried.take_front(numPartials);
        ValueRange indices = carried.drop_front(numPartials);
        SmallVector<Value> loopIvs(ivs);
        for (auto [k, dim] : llvm::enumerate(space.reductionDims)) {
          const Range &range = space.ranges[dim];
          Value stride =
              getValueOrCreateConstantIndexOp(lb, bodyLoc, range.stride);
          Value offset =
              getValueOrCreateConstantIndexOp(lb, bodyLoc, range.offset);
          loopIvs[dim] = arith::AddIOp::create(
              lb, bodyLoc, offset,
              arith::MulIOp::create(lb, bodyLoc, indices[k], stride));
        }
        SmallVector<Value> next =
            cloneBodyAt(lb, bodyLoc, op, loopIvs, partials);
        // The next iteration's indices: the innermost one up, carries out.
        SmallVector<Value> stepped(indices.begin(), indices.end());
        Value carry = one;
        for (size_t k = numDims; k-- > 0;) {
          Value bumped = arith::AddIOp::create(lb, bodyLoc, stepped[k], carry);
          if (k == 0) {
            stepped[k] = bumped;
            break;
          }
          Value wraps = arith::CmpIOp::create(
              lb, bodyLoc, arith::CmpIPredicate::eq, bumped, counts[k]);
          stepped[k] =
              arith::SelectOp::create(lb, bodyLoc, wraps, zero, bumped);
          carry = arith::SelectOp::create(lb, bodyLoc, wraps, one, zero);
        }
        next.append(stepped);
        scf::YieldOp::create(lb, bodyLoc, next);
      });
  // Run-major: the first kernel's neighbouring threads store neighbouring
  // elements, and the second kernel's lanes read one output's runs.
  Value slot = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, run, space.outputs), column);
  for (auto [partial, buffer] :
       llvm::zip(loop.getResults().take_front(numPartials), split.partials))
    memref::StoreOp::create(b, loc, partial, buffer, ValueRange{slot});
}

void mlir::moe::emitColumnCombine(RewriterBase &rewriter, linalg::LinalgOp op,
                                  const LoopSpace &space,
                                  const ColumnSplit &split, Value warp,
                                  Value warps, Value lane,
                                  ArrayRef<Value> starts) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Operation *> combiners = combinersOf(op);
  // Warps stride over the outputs (uniform control flow within a warp, so
  // every lane reaches the shuffles).
  auto outer = scf::ForOp::create(rewriter, loc, warp, space.outputs, warps);
  rewriter.setInsertionPointToStart(outer.getBody());
  Value output = outer.getInductionVar();
  Value zero = indexConstant(rewriter, loc, 0);
  SmallVector<Value> ivs(space.ranges.size(), zero);
  delinearizeInto(rewriter, loc, output, space.parallelDims,
                  space.parallelCounts, space.ranges, ivs);
  auto inner = scf::ForOp::create(
      rewriter, loc, lane, split.runs, indexConstant(rewriter, loc, kWarp),
      neutralsOf(rewriter, loc, combiners),
      [&](OpBuilder &b, Location bodyLoc, Value run, ValueRange partials) {
        Value slot = arith::AddIOp::create(
            b, bodyLoc, arith::MulIOp::create(b, bodyLoc, run, space.outputs),
            output);
        SmallVector<Value> next;
        for (auto [partial, buffer, combiner] :
             llvm::zip(partials, split.partials, combiners)) {
          Value value =
              memref::LoadOp::create(b, bodyLoc, buffer, ValueRange{slot});
          next.push_back(combineWith(b, combiner, partial, value));
        }
        scf::YieldOp::create(b, bodyLoc, next);
      });
  addWarpTotals(rewriter, op, inner.getResults(), ivs, lane, starts);
  rewriter.eraseOp(op);
}
