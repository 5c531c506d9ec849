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
      "Lower tensor-level IR (func, linalg, tensor, scf, arith, math, and the "
      "moe primitive and layer ops) to the LLVM dialect for the host: one-shot "
      "bufferization, buffer deallocation, loops, LLVM conversion, C "
      "interfaces for every function",
      buildLowerToCPUPipeline);
  PassPipelineRegistration<LowerToNVVMOptions>(
      "moe-lower-to-nvvm",
      "Lower tensor-level IR (moe ops included) to the LLVM dialect for the "
      "host plus GPU kernels serialized to PTX (or cubin) for sm_90: every "
      "scf.forall of the tiled IR becomes a kernel over its iterations; the "
      "host calls the mgpu* ABI of moert's MLIR adapter. Set CUDA_HOME (or "
      "put ptxas on PATH) so that libdevice is linked",
      buildLowerToNVVMPipeline);
}
