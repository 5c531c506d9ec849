//===- InPlaceLoopCarries.cpp - Loop-carried tensors updated in place -----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-in-place-loop-carries: in the scf.for loops of scf.forall
// bodies, each yielded tensor that is not already written into its
// iteration argument is copied into it, so that bufferization keeps one
// buffer per carried value and a GPU tile program's buffers have fixed
// places.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEINPLACELOOPCARRIES
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Whether `value` is `target` written through destinations: the result of
/// a destination-style op whose tied init is (recursively) `target`, or of
/// an inner scf.for started from it (which this pass makes update its init
/// in place too).
bool writtenInto(Value value, Value target) {
  while (value != target) {
    auto result = dyn_cast<OpResult>(value);
    if (!result)
      return false;
    if (auto inner = dyn_cast<scf::ForOp>(result.getOwner())) {
      value = inner.getInitArgs()[result.getResultNumber()];
      continue;
    }
    auto dps = dyn_cast<DestinationStyleOpInterface>(result.getOwner());
    if (!dps)
      return false;
    OpOperand *init = dps.getTiedOpOperand(result);
    if (!init)
      return false;
    value = init->get();
  }
  return true;
}

struct MoEInPlaceLoopCarriesPass
    : public moe::impl::MoEInPlaceLoopCarriesBase<MoEInPlaceLoopCarriesPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<scf::ForallOp>())
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
      rewriter.setInsertionPoint(yield);
      for (auto [i, operand] : llvm::enumerate(yield->getOpOperands())) {
        Value yielded = operand.get();
        Value carried = loop.getRegionIterArg(i);
        if (!isa<RankedTensorType>(yielded.getType()) ||
            writtenInto(yielded, carried))
          continue;
        Value copy =
            linalg::CopyOp::create(rewriter, yield.getLoc(), yielded, carried)
                .getResult(0);
        rewriter.modifyOpInPlace(yield, [&] { operand.set(copy); });
        ++numCopies;
      }
    }
  }
};

} // namespace
