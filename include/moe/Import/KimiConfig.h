//===- KimiConfig.h - Import a Kimi-Linear config.json ----------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Reads a Hugging Face Kimi-Linear `config.json` (plus this project's own
// `moe_mlir` key, docs/ConfigImport.md) into a validated KimiConfig, writes
// it as a `moe.model` in the moe dialect, and parses and verifies that model.
// Nothing here exits or aborts on bad input: every problem is a
// ConfigDiagnostic that names the JSON key.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_IMPORT_KIMICONFIG_H
#define MOE_IMPORT_KIMICONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::moe {

/// One problem found in a config, located by its JSON key path.
struct ConfigDiagnostic {
  enum class Severity { Error, Warning };
  Severity severity = Severity::Error;
  /// The key path, e.g. "linear_attn_config.kda_layers[3]"; empty for the
  /// file as a whole.
  std::string keyPath;
  std::string message;
  /// Where a JSON syntax error is (1-based); 0 for the other diagnostics.
  unsigned line = 0, column = 0;

  bool isError() const { return severity == Severity::Error; }
  /// Prints "FILE: KEYPATH: error: MESSAGE" (no "KEYPATH: " when empty;
  /// "FILE:LINE:COL: error: MESSAGE" for syntax errors) and a newline.
  void print(llvm::raw_ostream &os, StringRef fileName) const;
};

/// How tokens are balanced over the routed experts.
enum class KimiBalance { SignBias, QuantileExact, QuantileHistogram };

/// A validated Kimi-Linear model configuration; sizes are in elements.
struct KimiConfig {
  std::string modelName;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  /// Parameter element type: "f32", "bf16" or "f16".
  std::string elementType = "f32";
  /// Standard deviation of the normal initialiser (initializer_range).
  double initStd = 0.02;
  double rmsNormEps = 1e-5;
  bool tieWordEmbeddings = false;
  /// One entry per decoder layer (0-based): true for MLA, false for KDA.
  SmallVector<bool> fullAttention;

  // KDA mixers (linear_attn_config).
  int64_t kdaNumHeads = 0;
  int64_t kdaHeadDim = 0;
  int64_t kdaConvSize = 0;
  /// The bounded gate with kdaGMin, or the softplus gate.
  bool kdaBoundedGate = false;
  double kdaGMin = -5.0;

  // MLA mixers.
  int64_t mlaNumHeads = 0;
  /// 0 when the query is a full-rank projection (q_lora_rank null).
  int64_t qLoraRank = 0;
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;
  bool mlaOutputGate = false;

  // FFNs: the first firstKDense layers are dense, the others MoE.
  int64_t firstKDense = 0;
  int64_t intermediateSize = 0;
  int64_t numExperts = 0;
  int64_t topK = 0;
  int64_t moeIntermediateSize = 0;
  int64_t numSharedExperts = 0;
  double routedScalingFactor = 1.0;
  KimiBalance balance = KimiBalance::SignBias;
  double balanceRate = 1e-3;
  int64_t balanceBins = 512;
  /// SiTU-GLU instead of SwiGLU, with its betas (no up cap without one).
  bool situGLU = false;
  double situGateBeta = 4.0;
  std::optional<double> situUpBeta = 25.0;

  /// Block Attention Residuals with this many sub-layers per block; 0 for
  /// plain residual adds.
  int64_t attnResBlockSize = 0;

  int64_t numLayers() const { return fullAttention.size(); }
  int64_t numMLALayers() const;
  bool isMoELayer(int64_t layer) const { return layer >= firstKDense; }
};

/// Parses and validates the text of a config.json. Returns failure when
/// there is an error; warnings (unknown keys) and errors are appended to
/// `diagnostics`. `defaultModelName` is used when the config has no
/// `moe_mlir.model_name`.
FailureOr<KimiConfig>
parseKimiConfig(StringRef json, SmallVectorImpl<ConfigDiagnostic> &diagnostics,
                StringRef defaultModelName = "kimi_linear");

/// Writes `config` as one `moe.model` in the moe dialect's textual form,
/// after `header` (comment lines, written as they are).
void writeKimiModel(const KimiConfig &config, llvm::raw_ostream &os,
                    StringRef header = "");

/// A config turned into a verified module, with the text it was parsed from.
struct ImportedModel {
  OwningOpRef<ModuleOp> module;
  /// The model file: a comment header (the source, the layers and the
  /// parameter counts), then the model.
  std::string text;
};

/// Parses, validates and converts a config.json to a verified module holding
/// one `moe.model`. `sourceName` (the config's file name) is quoted in the
/// generated header. Returns failure on any error in `diagnostics`; the
/// moe dialect is loaded into `context`.
FailureOr<ImportedModel>
importKimiConfig(StringRef json, MLIRContext *context,
                 SmallVectorImpl<ConfigDiagnostic> &diagnostics,
                 StringRef sourceName = "config.json",
                 StringRef defaultModelName = "kimi_linear");

/// A model symbol name derived from a file name: the name without its
/// folder and last extension, other characters than letters, digits and '_'
/// turned into '_' (dir/kimi-tiny.json -> kimi_tiny), prefixed with '_' when
/// it would start with a digit.
std::string modelNameFromFileName(StringRef fileName);

} // namespace mlir::moe

#endif // MOE_IMPORT_KIMICONFIG_H
