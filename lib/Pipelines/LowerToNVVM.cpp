//===- LowerToNVVM.cpp - The moe-lower-to-nvvm pipeline -------------------===//
//
// Part of the moe-mlir project.
//
// Builds the GPU back end's pipeline: the same tiled tensor IR as the CPU
// back end, bufferized, with every scf.forall turned into a GPU kernel whose
// thread blocks are the forall's iterations, then upstream's NVVM lowering
// and serialization to PTX for sm_90. This first mapping runs each block's
// tile program on one thread; it is correct for every tiling decision and
// is the base that thread-level and tensor-core mappings refine.
//
//===----------------------------------------------------------------------===//

#include "moe/Pipelines/Pipelines.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/RequestCWrappers.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

using namespace mlir;

void mlir::moe::buildLowerToNVVMPipeline(OpPassManager &pm,
                                         const LowerToNVVMOptions &options) {
  // 1. moe -> upstream tensor IR as for the CPU, except that KDA and
  // attention ops the kernel generators handle become tensor-core kernels
  // first.
  addMoEToUpstreamPasses(pm, [&](OpPassManager &nested) {
    MoEGenerateKDAKernelsOptions kdaOptions;
    kdaOptions.diagonal = options.kdaDiagonal;
    kdaOptions.valueTile = options.kdaValueTile;
    nested.addPass(createMoEGenerateKDAKernels(kdaOptions));
    MoEGenerateAttentionKernelsOptions attentionOptions;
    attentionOptions.queryTile = options.attentionQueryTile;
    attentionOptions.convertOnce = options.attentionConvertOnce;
    nested.addPass(createMoEGenerateAttentionKernels(attentionOptions));
  });
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());

  // 2. Buffers.
  addBufferizationPasses(pm);

  // 3. Each scf.forall -> gpu.launch over its iterations; structured ops
  // become loops (inside a block they run in program order).
  pm.addNestedPass<func::FuncOp>(createMoEPrepareGPUMapping());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  // Expands with several dynamic sizes in one group (a whole model's
  // [B*T, d] -> [B, T, d]) crash upstream's expand-strided-metadata, which
  // the NVVM pipeline runs: rewrite them first, as the CPU pipeline does.
  pm.addPass(createMoELowerDynamicExpandShape());

  // 4. Upstream: kernel outlining, NVVM, host GPU calls, serialization.
  gpu::GPUToNVVMPipelineOptions gpuOptions;
  gpuOptions.cubinChip = options.chip;
  gpuOptions.cubinFeatures = options.features;
  gpuOptions.cubinFormat = options.format;
  gpuOptions.optLevel = options.optLevel;
  gpu::buildLowerToNVVMPassPipeline(pm, gpuOptions);
}
