//===- SplitFreshDeallocs.cpp - One dealloc per fresh buffer --------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-split-fresh-deallocs: a bufferization.dealloc whose
// buffers are all fresh allocations becomes one bufferization.dealloc per
// buffer, which upstream's simplification would otherwise do after a
// quadratic number of alias queries.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOESPLITFRESHDEALLOCS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoESplitFreshDeallocsPass
    : public moe::impl::MoESplitFreshDeallocsBase<MoESplitFreshDeallocsPass> {
  void runOnOperation() override;
};

/// A buffer that no other value can be: the result of a memref.alloc or of
/// a call of an outlined kind (which returns fresh buffers only).
bool isFreshBuffer(Value value) {
  Operation *definer = value.getDefiningOp();
  return definer &&
         (isa<memref::AllocOp>(definer) || isOutlinedKindCall(definer));
}

/// Whether every buffer of `dealloc` is fresh and none is repeated, so that
/// no two can be the same allocation.
bool hasOnlyDistinctFreshBuffers(bufferization::DeallocOp dealloc) {
  llvm::SmallDenseSet<Value, 16> seen;
  for (Value memref : dealloc.getMemrefs())
    if (!isFreshBuffer(memref) || !seen.insert(memref).second)
      return false;
  return true;
}

void splitDealloc(bufferization::DeallocOp dealloc) {
  OpBuilder builder(dealloc);
  Location loc = dealloc.getLoc();
  ValueRange retained = dealloc.getRetained();
  // The updated condition of retained value i is the disjunction over the
  // buffers; only the used ones are built.
  SmallVector<Value> updated(retained.size());
  for (auto [memref, condition] :
       llvm::zip_equal(dealloc.getMemrefs(), dealloc.getConditions())) {
    auto single = bufferization::DeallocOp::create(
        builder, loc, ValueRange{memref}, ValueRange{condition}, retained);
    for (auto [i, result] : llvm::enumerate(dealloc.getUpdatedConditions())) {
      if (result.use_empty())
        continue;
      Value part = single.getUpdatedConditions()[i];
      updated[i] =
          updated[i]
              ? arith::OrIOp::create(builder, loc, updated[i], part).getResult()
              : part;
    }
  }
  for (auto [result, value] :
       llvm::zip_equal(dealloc.getUpdatedConditions(), updated))
    if (!result.use_empty())
      result.replaceAllUsesWith(value);
  dealloc.erase();
}
} // namespace

void MoESplitFreshDeallocsPass::runOnOperation() {
  SmallVector<bufferization::DeallocOp> deallocs;
  getOperation().walk([&](bufferization::DeallocOp dealloc) {
    if (dealloc.getMemrefs().size() > 1 && hasOnlyDistinctFreshBuffers(dealloc))
      deallocs.push_back(dealloc);
  });
  for (bufferization::DeallocOp dealloc : deallocs)
    splitDealloc(dealloc);
}
