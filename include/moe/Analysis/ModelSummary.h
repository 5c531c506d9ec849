//===- ModelSummary.h - Parameter and layer counts of a model ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Counts what a `moe.model` holds: layer ops by kind, parameters in total and
// parameters active per token.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_ANALYSIS_MODELSUMMARY_H
#define MOE_ANALYSIS_MODELSUMMARY_H

#include "moe/Dialect/MoE/IR/MoE.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::moe {

/// What a model holds.
struct ModelSummary {
  std::string name;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  /// Layer op name (e.g. "kda_layer") to its count, in first-seen order.
  llvm::MapVector<StringRef, int64_t> layersByKind;
  /// Scalars in all `moe.param` ops.
  int64_t totalParameters = 0;
  /// Scalars one token reads: routed experts scaled by top_k / experts,
  /// embedding tables by one row. A parameter with several uses counts the
  /// largest share, so a table tied to `moe.lm_head` counts in full.
  double activeParameters = 0;
};

/// Computes the summary of `model`.
ModelSummary summarizeModel(ModelOp model);

/// Prints `summary` as a short human-readable block.
void printModelSummary(const ModelSummary &summary, llvm::raw_ostream &os);

} // namespace mlir::moe

#endif // MOE_ANALYSIS_MODELSUMMARY_H
