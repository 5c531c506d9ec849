//===- FuseElementwise.cpp - Element-wise producers into their consumer ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-fuse-elementwise: an element-wise linalg.generic on
// tensors whose only user is another element-wise linalg.generic over the
// same iterations is computed inside that user (upstream's
// linalg::fuseElementwiseOps), so the intermediate tensor is never
// materialized. Only one-to-one fusions are taken: nothing is recomputed,
// contractions and reductions keep the bodies their generators match.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEFUSEELEMENTWISE
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

bool isElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() &&
         op.getNumLoops() == op.getNumParallelLoops();
}

/// Whether `operand`'s producer may be computed inside its consumer: both
/// element-wise over as many loops, the producer used by this consumer
/// only and each element of its result read once (permutation maps).
bool isOneToOneFusion(OpOperand *operand) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer || !isElementwise(consumer) ||
      !isElementwise(producer) || !producer->hasOneUse() ||
      producer.getNumLoops() != consumer.getNumLoops() ||
      producer->getBlock() != consumer->getBlock())
    return false;
  auto result = cast<OpResult>(operand->get());
  return consumer.getMatchingIndexingMap(operand).isPermutation() &&
         producer.getIndexingMapMatchingResult(result).isPermutation() &&
         linalg::areElementwiseOpsFusable(operand);
}

struct FuseOneToOne : OpRewritePattern<linalg::GenericOp> {
  FuseOneToOne(MLIRContext *ctx, llvm::Statistic &fusions)
      : OpRewritePattern(ctx), fusions(fusions) {}
  llvm::Statistic &fusions;
  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!isOneToOneFusion(&operand))
        continue;
      Operation *producer = operand.get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        continue;
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
          return use.getOwner() != producer;
        });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      ++fusions;
      return success();
    }
    return failure();
  }
};

struct MoEFuseElementwisePass
    : public moe::impl::MoEFuseElementwiseBase<MoEFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseOneToOne>(&getContext(), numFusions);
    // Only the fusions: no folding of the other ops. No iteration limit:
    // each fusion replaces two generics by one, so the rewrites end; a
    // model's long chains take more than the default ten sweeps
    // (kimi-linear-48b's training step did, and the pass failed).
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false).setMaxIterations(
        GreedyRewriteConfig::kNoLimit);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
