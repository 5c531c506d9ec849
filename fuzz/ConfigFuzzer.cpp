//===- ConfigFuzzer.cpp - Fuzz the Kimi-Linear config.json importer -------===//
//
// Part of the moe-mlir project.
//
// The bytes are a config.json as moe-import-config reads it: parsed,
// validated and, when valid, turned into a verified moe.model. Rejections
// are fine; a crash, a hang or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "moe/Import/KimiConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  SmallVector<moe::ConfigDiagnostic> diagnostics;
  llvm::StringRef json(reinterpret_cast<const char *>(data), size);
  (void)moe::importKimiConfig(json, &context, diagnostics, "fuzz.json");
  return 0;
}
