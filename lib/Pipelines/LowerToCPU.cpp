//===- LowerToCPU.cpp - The moe-lower-to-cpu pipeline ---------------------===//
//
// Part of the moe-mlir project.
//
// Builds the CPU back end's pipeline: tensor-level IR -> bufferized loops ->
// LLVM dialect for the host. Only the headers of the passes used are
// included (mlir/Conversion/Passes.h is slow to compile).
//
//===----------------------------------------------------------------------===//

#include "moe/Pipelines/Pipelines.h"

#include "moe/Conversion/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/RequestCWrappers.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

using namespace mlir;

void mlir::moe::addMoEToUpstreamPasses(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> kernelGenerators,
    bool shapeChecks, bool outlineKinds) {
  // Passes that lower moe ops to upstream tensor-level IR go here, in order.
  // A whole model becomes a function of its packed parameters.
  pm.addPass(createConvertMoEModelToFunc());
  // Run-time checks of the dynamic sizes the ops as written tie together,
  // named by their operands (the layer ops', before they decompose).
  if (shapeChecks)
    pm.addPass(createMoEInsertShapeChecks());
  // Layer ops (moe.moe_ffn, ...) become primitive ops first.
  pm.addPass(createMoEDecompose());
  // Each kind of op group once, called by every instance.
  if (outlineKinds)
    pm.addPass(createMoEOutlineKinds());
  // A back end's kernel generators take the primitive ops they handle
  // first: before the routing fusion (which takes the MoE ops as a whole)
  // and before the conversion below lowers away moe.decay_gate, which the
  // decay-bound analysis reads.
  if (kernelGenerators)
    kernelGenerators(pm);
  // Routing, dispatch, grouped experts and combine -> fused tile IR.
  pm.addPass(createMoEFuseRouting());
  // Their gradient ops (route, dispatch, grouped experts, dense FFN,
  // combine), reading the forward's values -> gathers and grouped GEMMs.
  pm.addPass(createMoELowerRoutingGrad());
  pm.addPass(createMoETileLinearAttention());
  // MLA attention -> the causal online-softmax forward on tiles.
  pm.addPass(createMoETileAttention());
  // The lm_head loss (projection fused with the cross-entropy) and the
  // loss adjoints -> token tiles walking the vocabulary in chunks.
  pm.addPass(createMoETileLoss());
  // Norms, decay gate, short conv, cross-entropy, embedding, dense gated
  // FFN (the shared expert), attention-residual mixes -> linalg.
  pm.addPass(createConvertMoEToLinalg());
  // Element-wise arith/math ops on whole tensors (a model's residual sums,
  // `arith.addf %a, %b : tensor<...>`) -> linalg.generic, which bufferizes.
  pm.addPass(createConvertElementwiseToLinalgPass());
}

void mlir::moe::addBufferizationPasses(OpPassManager &pm) {
  // Canonicalization and CSE run on each function on its own, on the
  // context's threads (nothing they do crosses a function).
  pm.nestAny().addPass(createCanonicalizerPass());
  // The packed gradient's chain of inserts, which the analysis below takes
  // minutes to prove in place, is written into its buffer directly.
  pm.addNestedPass<func::FuncOp>(createMoEBufferInsertChains());
  // Function boundaries in the identity layout, except that outlined kinds
  // take their parameters as views into the packed buffer.
  pm.addPass(createMoEOneShotBufferize());
  // Upstream's buffer-deallocation-pipeline, with the deallocs of fresh
  // buffers split before its simplification (which would take a quadratic
  // number of alias queries to do so).
  memref::ExpandReallocPassOptions reallocOptions;
  reallocOptions.emitDeallocs = false;
  pm.addPass(memref::createExpandReallocPass(reallocOptions));
  pm.nestAny().addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.nestAny().addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createMoESplitFreshDeallocs());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  OpPassManager &afterDeallocs = pm.nestAny();
  afterDeallocs.addPass(createCSEPass());
  afterDeallocs.addPass(createCanonicalizerPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  // The deallocs sit at block ends: free each buffer after its last use.
  pm.addNestedPass<func::FuncOp>(createMoEEarlyDealloc());
}

void mlir::moe::buildLowerToCPUPipeline(OpPassManager &pm,
                                        const LowerToCPUOptions &options) {
  // 1. moe -> upstream tensor IR; with `profile`, the primitive and gradient
  // ops left after the decomposition are bracketed by timer calls.
  if (options.profile)
    addMoEToUpstreamPasses(
        pm,
        [](OpPassManager &nested) { nested.addPass(createMoEProfileOps()); },
        options.shapeChecks, options.outlineKinds);
  else
    addMoEToUpstreamPasses(pm, nullptr, options.shapeChecks,
                           options.outlineKinds);

  // 2. C wrappers. Done before any pass adds library declarations (math to
  // libm), which must keep their plain C signature.
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());

  // 3. Bufferization. Identity layouts at function boundaries give plain
  // contiguous descriptors to the caller; every returned buffer is a fresh
  // allocation owned by the caller (the deallocation pipeline clones a
  // returned argument or global).
  addBufferizationPasses(pm);
  // Collectives of a sharded step (-moe-shard) -> the Gloo runtime's calls.
  pm.addPass(createMoECollectivesToRuntime());
  // Contractions on buffers (their strides are known there) become calls
  // of the CPU runtime, which runs them with OpenBLAS.
  if (options.blas)
    pm.addPass(createMoEContractionsToBLAS());

  // 4. Structured ops to loops.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createForallToForLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass());

  // 5. Descriptors and control flow. Expands with several dynamic sizes in
  // one group are rewritten first: expand-strided-metadata crashes on them.
  pm.addPass(createMoELowerDynamicExpandShape());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  OpPassManager &afterControlFlow = pm.nestAny();
  afterControlFlow.addPass(createCanonicalizerPass());
  afterControlFlow.addPass(createCSEPass());

  // 6. To the LLVM dialect. exp/log/tanh/... become LLVM intrinsics, which the
  // code generator turns into libm calls that the JIT resolves in the host
  // process; math ops without an intrinsic become explicit libm calls.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
