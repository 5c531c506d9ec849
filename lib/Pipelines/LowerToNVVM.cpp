//===- LowerToNVVM.cpp - The moe-lower-to-nvvm pipeline -------------------===//
//
// Part of the moe-mlir project.
//
// Builds the GPU back end's pipeline: the same tiled tensor IR as the CPU
// back end, bufferized, with every scf.forall turned into a GPU kernel whose
// thread blocks are the forall's iterations (each block's threads share its
// tile program) and every structured op of the host code into a kernel,
// then upstream's NVVM lowering and serialization to PTX for sm_90.
//
//===----------------------------------------------------------------------===//

#include "moe/Pipelines/Pipelines.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/RequestCWrappers.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

using namespace mlir;

void mlir::moe::addNVVMKernelGenerationPasses(
    OpPassManager &pm, const LowerToNVVMOptions &options) {
  // 1. moe -> upstream tensor IR as for the CPU, except that the KDA,
  // attention, routing and expert ops the kernel generators handle become
  // GPU kernels first.
  addMoEToUpstreamPasses(
      pm,
      [&](OpPassManager &nested) {
        MoEGenerateKDAKernelsOptions kdaOptions;
        kdaOptions.diagonal = options.kdaDiagonal;
        kdaOptions.valueTile = options.kdaValueTile;
        nested.addPass(createMoEGenerateKDAKernels(kdaOptions));
        MoEGenerateAttentionKernelsOptions attentionOptions;
        attentionOptions.queryTile = options.attentionQueryTile;
        attentionOptions.convertOnce = options.attentionConvertOnce;
        nested.addPass(createMoEGenerateAttentionKernels(attentionOptions));
        nested.addPass(createMoEGenerateAttentionGradKernels());
        nested.addPass(createMoEGenerateRoutingKernels());
        nested.addPass(createMoEGenerateEmbeddingGradKernels());
        MoEGenerateExpertKernelsOptions expertOptions;
        expertOptions.reductionStep = options.expertReductionStep;
        expertOptions.stages = options.expertStages;
        expertOptions.blockCols = options.expertBlockCols;
        expertOptions.matmulPrecision = options.matmulPrecision;
        nested.addPass(createMoEGenerateExpertKernels(expertOptions));
        MoEGenerateExpertGradKernelsOptions expertGradOptions;
        expertGradOptions.stages = options.expertStages;
        expertGradOptions.matmulPrecision = options.matmulPrecision;
        nested.addPass(createMoEGenerateExpertGradKernels(expertGradOptions));
        // The MoE gradients the generators left, with each expert's rows
        // split over enough blocks to fill the GPU (one block per expert
        // leaves most SMs idle).
        MoELowerRoutingGradOptions gradOptions;
        gradOptions.expertBlocks = options.expertGradBlocks;
        nested.addPass(createMoELowerRoutingGrad(gradOptions));
        // The lm_head loss as whole-batch projections of vocabulary chunks and
        // row reductions, before -moe-tile-loss would make it token tiles.
        nested.addNestedPass<func::FuncOp>(createMoEChunkLoss());
      },
      /*shapeChecks=*/false, options.outlineKinds);
  // The dense contractions left in the host code (projections, the dense
  // FFNs lowered to linalg) -> tensor-core GEMM kernels.
  MoEGenerateGEMMKernelsOptions gemmOptions;
  // One precision policy: `exact` keeps f32 contractions exact here too.
  gemmOptions.operandType =
      options.matmulPrecision == "exact" ? "f32-exact" : "bf16";
  pm.addPass(createMoEGenerateGEMMKernels(gemmOptions));
  // Chains of element-wise ops (host kernels, tile-program ops) -> one op.
  if (options.fuseElementwise)
    pm.addNestedPass<func::FuncOp>(createMoEFuseElementwise());
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
}

void mlir::moe::addNVVMLoweringPasses(OpPassManager &pm,
                                      const LowerToNVVMOptions &options) {
  // 2. Buffers, with the loops of tile programs updating what they carry in
  // place (one buffer each), so that every tile buffer gets a fixed place.
  pm.addNestedPass<func::FuncOp>(createMoEInPlaceLoopCarries());
  addBufferizationPasses(pm);

  // 3. Each scf.forall -> a kernel whose threads share its tile program, and
  // each structured op of the host code -> a kernel whose threads share its
  // iterations; what stays on the host is scalar. Structured ops left inside
  // kernels (those with no parallel dimension) become loops on one thread.
  pm.addPass(createMoEPrepareGPUMapping());
  // Under the bf16 policy, tile programs' f32 contractions may use tf32
  // tensor cores (more exact than the bf16 rounding the policy allows).
  MoEMapForallToGPUOptions mapOptions;
  mapOptions.tileContractions =
      options.matmulPrecision == "exact" ? "fp32" : "tf32";
  mapOptions.shareTileMemory = options.shareTileMemory;
  mapOptions.tileBlocksPerSM = options.tileBlocksPerSM;
  mapOptions.sharedMemoryBytes = options.sharedMemoryBytes;
  mapOptions.partialSharedMemoryBytes = options.partialSharedMemoryBytes;
  mapOptions.shareSpilledTiles = options.shareSpilledTiles;
  mapOptions.elideBarriers = options.elideBarriers;
  mapOptions.tileElementsPerThread = options.tileElementsPerThread;
  pm.addNestedPass<func::FuncOp>(createMoEMapForallToGPU(mapOptions));
  // The host queues each function's GPU work on one stream (an outlined
  // kind's on its caller's) and waits only where it reads memory and
  // before returning.
  pm.addPass(createMoEAsyncGPUStream());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.nestAny().addPass(createCanonicalizerPass());
  // Expands with several dynamic sizes in one group (a whole model's
  // [B*T, d] -> [B, T, d]) crash upstream's expand-strided-metadata, which
  // the NVVM pipeline runs: rewrite them first, as the CPU pipeline does.
  pm.addPass(createMoELowerDynamicExpandShape());

  // 4. Upstream's GPU-to-NVVM passes (the order of its
  // gpu-lower-to-nvvm-pipeline): kernel outlining, NVVM and LLVM lowering of
  // kernels and host. Between the kernels' lowering and their serialization,
  // identical kernels become one; the serialization runs on all threads.
  pm.addPass(createConvertNVGPUToNVVMPass());
  // Constants stay in the kernels (MLIR 22's outlining would pass each as
  // an argument).
  pm.addPass(createMoESinkIntoGPULaunches());
  pm.addPass(createMoEOutlineGPUKernels());
  // Once right after outlining (one module per launch, about half of them
  // copies of another), so that the lowering below handles each kernel
  // once; again before the serialization, for modules that the lowering
  // made equal.
  pm.addPass(createMoEDedupeGPUModules());
  // The op-agnostic lowerings run on each host function and each gpu.module
  // separately, on the context's threads (on the module as a whole they
  // would run on one; each rewrites inside its function or module only).
  OpPassManager &eachBeforeLLVM = pm.nestAny();
  eachBeforeLLVM.addPass(createConvertVectorToSCFPass());
  eachBeforeLLVM.addPass(createSCFToControlFlowPass());
  eachBeforeLLVM.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  GpuNVVMAttachTargetOptions targetOptions;
  targetOptions.triple = "nvptx64-nvidia-cuda";
  targetOptions.chip = options.chip;
  targetOptions.features = options.features;
  targetOptions.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(targetOptions));
  OpPassManager &each = pm.nestAny();
  each.addPass(memref::createExpandStridedMetadataPass());
  each.addPass(createLowerAffinePass());
  each.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions indexOptions;
  indexOptions.indexBitwidth = 64;
  each.addPass(createConvertIndexToLLVMPass(indexOptions));
  each.addPass(createCanonicalizerPass());
  each.addPass(createCSEPass());
  ConvertGpuOpsToNVVMOpsOptions kernelOptions;
  kernelOptions.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(
      createConvertGpuOpsToNVVMOps(kernelOptions));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  pm.addPass(createMoEDedupeGPUModules());
}

void mlir::moe::addNVVMSerializationPasses(OpPassManager &pm,
                                           const LowerToNVVMOptions &options) {
  // Serialized first: the host's conversion then walks the host code only,
  // not every kernel's LLVM dialect ops (0.8 s of kimi-tiny's compile).
  MoEGPUModulesToBinariesOptions binaryOptions;
  binaryOptions.format = options.format;
  pm.addPass(createMoEGPUModulesToBinaries(binaryOptions));
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  OpPassManager &eachHostFunction = pm.nestAny();
  eachHostFunction.addPass(createCanonicalizerPass());
  eachHostFunction.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::moe::buildLowerToNVVMPipeline(OpPassManager &pm,
                                         const LowerToNVVMOptions &options) {
  addNVVMKernelGenerationPasses(pm, options);
  addNVVMLoweringPasses(pm, options);
  addNVVMSerializationPasses(pm, options);
}
