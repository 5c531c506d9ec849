//===- moe-import-config.cpp - Import a Kimi-Linear config.json -----------===//
//
// Part of the moe-mlir project.
//
// moe-import-config reads a Hugging Face Kimi-Linear config.json (with this
// project's optional `moe_mlir` key, docs/ConfigImport.md), writes the model
// as a `moe.model` description and prints its parameter counts. Errors name
// the file and the JSON key; unknown keys are a warning.
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/ModelSummary.h"
#include "moe/Import/HFNames.h"
#include "moe/Import/KimiConfig.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory importCategory("moe-import-config options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<config.json>"),
                                          cl::init("-"),
                                          cl::cat(importCategory));
static cl::opt<std::string>
    outputFilename("o", cl::desc("Output model file (default: stdout)"),
                   cl::value_desc("path"), cl::init("-"),
                   cl::cat(importCategory));
static cl::opt<std::string> modelName(
    "model-name",
    cl::desc("Symbol name of the moe.model when the config has no "
             "moe_mlir.model_name (default: the input's file name, e.g. "
             "kimi-tiny.json -> kimi_tiny)"),
    cl::value_desc("name"), cl::cat(importCategory));
static cl::opt<bool>
    printSummary("summary",
                 cl::desc("Print the model's layer and parameter counts to "
                          "stderr (default on; --summary=false for none)"),
                 cl::init(true), cl::cat(importCategory));

static cl::opt<bool> hfNames(
    "hf-names",
    cl::desc("Write the table of parameter names instead of the model: one "
             "line per parameter, its moe.param name, its Hugging Face "
             "checkpoint name ({e}: the expert index) and 'transposed' or "
             "'per-expert' where the layouts differ"),
    cl::init(false), cl::cat(importCategory));
static cl::list<std::string> hfLookup(
    "hf-lookup",
    cl::desc("Resolve a Hugging Face checkpoint name to its moe.param (and "
             "expert) instead of writing the model; repeatable"),
    cl::value_desc("name"), cl::cat(importCategory));

/// Writes `name`'s table row: "PARAM HFNAME [transposed] [per-expert]".
static void printHFName(llvm::raw_ostream &os, const moe::HFParamName &name) {
  os << name.paramName << " " << name.hfName;
  if (name.transposed)
    os << " transposed";
  if (name.perExpert)
    os << " per-expert";
  os << "\n";
}

/// What --hf-names and --hf-lookup write for `model`. Returns whether every
/// looked-up name resolved.
static bool writeHFNames(moe::ModelOp model, llvm::raw_ostream &os) {
  SmallVector<moe::HFParamName> names = moe::getHFParamNames(model);
  if (hfNames)
    for (const moe::HFParamName &name : names)
      printHFName(os, name);
  bool resolved = true;
  for (const std::string &key : hfLookup) {
    std::optional<moe::HFNameMatch> match = moe::matchHFName(names, key);
    if (!match) {
      llvm::WithColor::error(llvm::errs(), "moe-import-config")
          << "'" << key << "' names no parameter of @" << model.getSymName()
          << "\n";
      resolved = false;
      continue;
    }
    os << key << " -> " << match->entry->paramName;
    if (match->expert)
      os << " expert " << *match->expert;
    if (match->entry->transposed)
      os << " transposed";
    os << "\n";
  }
  return resolved;
}

static int importConfig() {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::WithColor::error(llvm::errs(), "moe-import-config")
        << errorMessage << "\n";
    return 1;
  }
  StringRef displayName =
      inputFilename == "-" ? StringRef("<stdin>") : StringRef(inputFilename);
  std::string defaultName = modelName;
  if (defaultName.empty())
    defaultName = inputFilename == "-"
                      ? std::string("kimi_linear")
                      : moe::modelNameFromFileName(inputFilename);

  // importKimiConfig loads the dialects the model needs.
  MLIRContext context;
  SmallVector<moe::ConfigDiagnostic> diagnostics;
  FailureOr<moe::ImportedModel> imported = moe::importKimiConfig(
      input->getBuffer(), &context, diagnostics,
      llvm::sys::path::filename(displayName), defaultName);
  for (const moe::ConfigDiagnostic &diag : diagnostics)
    diag.print(llvm::errs(), displayName);
  if (failed(imported))
    return 1;

  auto out = openOutputFile(outputFilename, &errorMessage);
  if (!out) {
    llvm::WithColor::error(llvm::errs(), "moe-import-config")
        << errorMessage << "\n";
    return 1;
  }
  bool namesOnly = hfNames || !hfLookup.empty();
  bool resolved = true;
  if (namesOnly) {
    for (moe::ModelOp model : imported->module->getOps<moe::ModelOp>())
      resolved &= writeHFNames(model, out->os());
  } else {
    out->os() << imported->text;
  }
  out->keep();
  if (printSummary)
    for (moe::ModelOp model : imported->module->getOps<moe::ModelOp>())
      moe::printModelSummary(moe::summarizeModel(model), llvm::errs());
  return resolved ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  const cl::OptionCategory *shown[] = {&importCategory,
                                       &llvm::getColorCategory()};
  cl::HideUnrelatedOptions(shown);
  cl::ParseCommandLineOptions(
      argc, argv,
      "moe-import-config: turn a Kimi-Linear config.json into a moe.model\n\n"
      "  moe-import-config CONFIG.json -o MODEL.mlir\n\n"
      "Reads the Hugging Face Kimi-Linear keys (hidden_size, "
      "linear_attn_config,\nthe MLA and MoE keys, ...) and the project's "
      "own moe_mlir key (bounded\ndecay gate, quantile balancing, Attention "
      "Residuals, SiTU-GLU, MLA output\ngate; docs/ConfigImport.md), writes "
      "the model description and prints its\nlayer and parameter counts to "
      "stderr. An error names the file and the JSON\nkey and exits with "
      "status 1; unknown keys are listed in a warning. --hf-names writes\n"
      "the Hugging Face checkpoint name of every parameter instead.\n");
  return importConfig();
}
