//===- ModelSummary.cpp - Parameter and layer counts of a model -----------===//
//
// Part of the moe-mlir project.
//
// Counts a model's layer ops by kind and its parameters, in total and as read
// by one token, and prints them for -moe-print-model-summary.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/ModelSummary.h"

#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::moe;

/// The fraction of a parameter's scalars that one token reads through `use`.
static double activeFraction(OpOperand &use) {
  Operation *user = use.getOwner();
  Value v = use.get();
  if (auto ffn = dyn_cast<MoEFFNOp>(user)) {
    if (v == ffn.getWGate() || v == ffn.getWUp() || v == ffn.getWDown()) {
      RoutingAttr routing = ffn.getRouting();
      return static_cast<double>(routing.getTopK()) /
             static_cast<double>(routing.getNumExperts());
    }
  }
  if (auto embedding = dyn_cast<EmbeddingOp>(user)) {
    // A token reads one row of the table.
    if (v == embedding.getTable())
      return 1.0 / static_cast<double>(
                       cast<RankedTensorType>(v.getType()).getDimSize(0));
  }
  return 1.0;
}

/// The fraction of a parameter's scalars that one token reads: the largest
/// over its uses, so that a table shared by `moe.embedding` and `moe.lm_head`
/// (tied embeddings) counts in full. An unused parameter counts in full.
static double activeFraction(ParamOp param) {
  if (param->use_empty())
    return 1.0;
  double fraction = 0.0;
  for (OpOperand &use : param->getUses())
    fraction = std::max(fraction, activeFraction(use));
  return fraction;
}

ModelSummary mlir::moe::summarizeModel(ModelOp model) {
  ModelSummary summary;
  summary.name = model.getSymName().str();
  summary.vocabSize = model.getVocabSize();
  summary.hiddenSize = model.getHiddenSize();
  model.getBody().walk([&](Operation *op) {
    if (auto param = dyn_cast<ParamOp>(op)) {
      int64_t n = param.getNumElements();
      summary.totalParameters += n;
      summary.activeParameters += activeFraction(param) * n;
      return;
    }
    if (isa<KDALayerOp, MLALayerOp, MoEFFNOp, GLUFFNOp, AttnResOp, EmbeddingOp,
            LMHeadOp>(op))
      ++summary.layersByKind[op->getName().stripDialect()];
  });
  return summary;
}

/// Prints `n` with a short magnitude suffix, e.g. 48.9B.
static void printMagnitude(llvm::raw_ostream &os, double n) {
  static constexpr std::pair<double, const char *> kUnits[] = {
      {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (auto [scale, suffix] : kUnits) {
    if (n >= scale) {
      os << llvm::format("%.2f", n / scale) << suffix;
      return;
    }
  }
  os << llvm::format("%.0f", n);
}

void mlir::moe::printModelSummary(const ModelSummary &summary,
                                  llvm::raw_ostream &os) {
  os << "model @" << summary.name << ": vocab_size " << summary.vocabSize
     << ", hidden_size " << summary.hiddenSize << "\n";
  auto count = [&](StringRef kind) {
    return summary.layersByKind.lookup(kind);
  };
  int64_t kda = count("kda_layer"), mla = count("mla_layer");
  os << "  decoder layers: " << kda + mla << " (" << kda << " kda_layer, "
     << mla << " mla_layer)\n";
  os << "  layer ops:";
  for (auto [kind, n] : summary.layersByKind)
    os << " " << kind << "=" << n;
  os << "\n";
  os << "  parameters: " << summary.totalParameters << " total (";
  printMagnitude(os, static_cast<double>(summary.totalParameters));
  os << "), " << llvm::format("%.0f", summary.activeParameters)
     << " active per token (";
  printMagnitude(os, summary.activeParameters);
  os << ")\n";
}
