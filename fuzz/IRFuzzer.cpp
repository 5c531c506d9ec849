//===- IRFuzzer.cpp - Fuzz the moe dialect's parser, verifier, decompose --===//
//
// Part of the moe-mlir project.
//
// The bytes are a module in MLIR's textual form, as moe-opt would read it:
// parsed (moe, func, arith, tensor), verified, and, when they verify,
// decomposed by -moe-decompose. Errors are expected and silenced; a crash,
// a hang or a sanitizer report is a bug.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DialectRegistry registry;
  registry.insert<moe::MoEDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
  // One context per input: nothing an input leaves behind (types,
  // attributes, diagnostics handlers) reaches the next.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  // MLIR's lexer reads up to a terminating NUL, which the tools' buffers
  // (files read through llvm::MemoryBuffer) have and libFuzzer's do not.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&context);
  pm.addPass(moe::createMoEDecompose());
  (void)pm.run(*module);
  return 0;
}
