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
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/RequestCWrappers.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

using namespace mlir;

namespace {
/// Structured ops of the host code (outside every scf.forall, on buffers)
/// -> scf.parallel over their parallel dimensions with their reductions as
/// sequential loops inside, which the parallel-loop mapping below turns into
/// kernels: one thread per output element. Ops inside a forall are left to
/// the forall's kernel (one thread runs them in program order), and ops
/// without a parallel dimension stay on the host.
struct HostLinalgToParallelLoopsPass
    : public PassWrapper<HostLinalgToParallelLoopsPass,
                         OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HostLinalgToParallelLoopsPass)
  StringRef getArgument() const final {
    return "moe-host-linalg-to-parallel-loops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect,
                    memref::MemRefDialect, scf::SCFDialect>();
  }
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<scf::ForallOp>() &&
          op.hasPureBufferSemantics() && op.getNumParallelLoops() > 0)
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op.emitOpError("cannot be lowered to parallel loops for the GPU");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};
} // namespace

void mlir::moe::buildLowerToNVVMPipeline(OpPassManager &pm,
                                         const LowerToNVVMOptions &options) {
  // 1. moe -> upstream tensor IR as for the CPU, except that the KDA,
  // attention, routing and expert ops the kernel generators handle become
  // GPU kernels first.
  addMoEToUpstreamPasses(pm, [&](OpPassManager &nested) {
    MoEGenerateKDAKernelsOptions kdaOptions;
    kdaOptions.diagonal = options.kdaDiagonal;
    kdaOptions.valueTile = options.kdaValueTile;
    nested.addPass(createMoEGenerateKDAKernels(kdaOptions));
    MoEGenerateAttentionKernelsOptions attentionOptions;
    attentionOptions.queryTile = options.attentionQueryTile;
    attentionOptions.convertOnce = options.attentionConvertOnce;
    nested.addPass(createMoEGenerateAttentionKernels(attentionOptions));
    nested.addPass(createMoEGenerateRoutingKernels());
    MoEGenerateExpertKernelsOptions expertOptions;
    expertOptions.reductionStep = options.expertReductionStep;
    expertOptions.stages = options.expertStages;
    expertOptions.blockCols = options.expertBlockCols;
    nested.addPass(createMoEGenerateExpertKernels(expertOptions));
  });
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());

  // 2. Buffers.
  addBufferizationPasses(pm);

  // 3. Each scf.forall -> gpu.launch over its iterations; structured ops
  // become loops (inside a block they run in program order).
  pm.addNestedPass<func::FuncOp>(createMoEPrepareGPUMapping());
  if (options.hostLinalgKernels)
    pm.addNestedPass<func::FuncOp>(
        std::make_unique<HostLinalgToParallelLoopsPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // With host ops as kernels, the innermost dimension (hidden size, vocab)
  // goes to grid x, whose limit is 2^31 - 1 (y and z: 65535).
  GpuMapParallelLoopsPassOptions mapOptions;
  if (options.hostLinalgKernels)
    mapOptions.mappingPolicyStr = "innermost-first";
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass(mapOptions));
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
