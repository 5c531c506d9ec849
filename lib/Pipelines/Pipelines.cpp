//===- Pipelines.cpp - Register the named moe-mlir pipelines --------------===//
//
// Part of the moe-mlir project.
//
// Registers each pipeline declared in moe/Pipelines/Pipelines.h under its
// command-line name.
//
//===----------------------------------------------------------------------===//

#include "moe/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::moe::registerMoEPipelines() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "moe-lower-to-cpu",
      "Lower tensor-level IR (func, linalg, tensor, scf, arith, math; moe ops "
      "once their lowerings exist) to the LLVM dialect for the host: one-shot "
      "bufferization, buffer deallocation, loops, LLVM conversion, C "
      "interfaces for every function",
      buildLowerToCPUPipeline);
}
