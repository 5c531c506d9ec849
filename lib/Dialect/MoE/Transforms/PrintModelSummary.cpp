//===- PrintModelSummary.cpp - Print layer and parameter counts -----------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-print-model-summary, a read-only pass in the spirit of
// upstream's -print-op-stats.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/ModelSummary.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEPRINTMODELSUMMARY
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEPrintModelSummaryPass
    : public moe::impl::MoEPrintModelSummaryBase<MoEPrintModelSummaryPass> {
  void runOnOperation() override;
};
} // namespace

void MoEPrintModelSummaryPass::runOnOperation() {
  bool found = false;
  getOperation().walk([&](ModelOp model) {
    found = true;
    printModelSummary(summarizeModel(model), llvm::outs());
  });
  if (!found) {
    getOperation().emitError("no moe.model to summarize");
    return signalPassFailure();
  }
  markAllAnalysesPreserved();
}
