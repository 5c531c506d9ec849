//===- UnrolledElementLoop.cpp - Several elements per thread, loads first -===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "UnrolledElementLoop.h"
#include "WarpReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::moe;

LogicalResult mlir::moe::emitUnrolledStridedLoop(RewriterBase &rewriter,
                                                 scf::ParallelOp par,
                                                 Value start, Value step,
                                                 int64_t unroll) {
  if (unroll < 2 || !par.getInitVals().empty())
    return failure();
  Block *body = par.getBody();
  bool stored = false;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() != 0)
      return failure();
    if (isa<memref::StoreOp>(op)) {
      stored = true;
      continue;
    }
    if (isa<memref::LoadOp>(op) ? stored : !isMemoryEffectFree(&op))
      return failure();
  }

  // With a static trip count that is a multiple of step * unroll, every
  // trip's iterations are in range (start lies in [0, step)): no guards.
  std::optional<int64_t> staticStep = getConstantIntValue(step);
  std::optional<int64_t> staticTotal = 1;
  for (auto [lb, ub, s] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           c = getConstantIntValue(s);
    if (!l || !u || !c || *c <= 0) {
      staticTotal.reset();
      break;
    }
    *staticTotal *= std::max<int64_t>(0, llvm::divideCeil(*u - *l, *c));
  }
  bool full = staticStep && staticTotal && *staticStep > 0 &&
              *staticTotal % (*staticStep * unroll) == 0;

  Location loc = par.getLoc();
  rewriter.setInsertionPoint(par);
  SmallVector<Value> counts;
  for (auto [lb, ub, s] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep()))
    counts.push_back(tripCount(rewriter, loc, lb, ub, s));
  Value total = product(rewriter, loc, counts);
  Value stride = arith::MulIOp::create(rewriter, loc, step,
                                       indexConstant(rewriter, loc, unroll));
  auto loop = scf::ForOp::create(rewriter, loc, start, total, stride);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value base = loop.getInductionVar();

  SmallVector<Value> lbs(par.getLowerBound()), steps(par.getStep());
  SmallVector<IRMapping> mappings(unroll);
  SmallVector<Value> inRange(unroll);
  for (int64_t j = 0; j < unroll; ++j) {
    Value linear = base;
    if (j > 0) {
      Value index = arith::AddIOp::create(
          rewriter, loc, base,
          arith::MulIOp::create(rewriter, loc, step,
                                indexConstant(rewriter, loc, j)));
      linear = index;
      if (!full) {
        inRange[j] = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::ult, index, total);
        linear =
            arith::SelectOp::create(rewriter, loc, inRange[j], index, base);
      }
    }
    SmallVector<Value> ivs =
        delinearize(rewriter, loc, linear, counts, lbs, steps);
    mappings[j].map(body->getArguments(), ivs);
  }
  // The loads (with the index arithmetic they need) of every iteration,
  // then the computations, then the stores: in-order issue would otherwise
  // wait for each iteration's load before issuing the next one's.
  llvm::DenseSet<Operation *> feedsLoads;
  for (Operation &op : llvm::reverse(body->without_terminator()))
    if (isa<memref::LoadOp>(op) ||
        (!isa<memref::StoreOp>(op) &&
         llvm::any_of(op.getUsers(), [&](Operation *user) {
           return feedsLoads.contains(user);
         })))
      feedsLoads.insert(&op);
  for (bool loads : {true, false})
    for (int64_t j = 0; j < unroll; ++j)
      for (Operation &op : body->without_terminator())
        if (!isa<memref::StoreOp>(op) && feedsLoads.contains(&op) == loads)
          rewriter.clone(op, mappings[j]);
  for (int64_t j = 0; j < unroll; ++j) {
    OpBuilder::InsertionGuard guard(rewriter);
    if (j > 0 && !full) {
      auto inside = scf::IfOp::create(rewriter, loc, inRange[j],
                                      /*withElseRegion=*/false);
      rewriter.setInsertionPoint(inside.thenBlock()->getTerminator());
    }
    for (Operation &op : body->without_terminator())
      if (isa<memref::StoreOp>(op))
        rewriter.clone(op, mappings[j]);
  }
  rewriter.eraseOp(par);
  return success();
}
