//===- moe-opt.cpp - The moe-mlir optimizer driver ------------------------===//
//
// Part of the moe-mlir project.
//
// mlir-opt with the moe dialect and passes added: every upstream dialect,
// pass, extension and LLVM IR translation (GPU included) is registered, so
// MLIR's usual flags (--pass-pipeline, -mlir-print-ir-*, -mlir-timing, crash
// reproducers) and the GPU serialization passes all work.
//
//===----------------------------------------------------------------------===//

#include "moe/InitAll.h"
#include "test/lib/TestPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::moe::registerAllPasses();
  mlir::moe::test::registerTestPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  mlir::moe::registerAllDialects(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "moe-mlir optimizer driver\n", registry));
}
