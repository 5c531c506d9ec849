//===- PrepareGPUMapping.cpp - Bufferized tiles ready for gpu.launch ------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-prepare-gpu-mapping, which readies bufferized tiled IR for
// the upstream parallel-loop-to-GPU mapping: each scf.forall iteration
// becomes one GPU thread block, and host code and kernels share memory.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEPREPAREGPUMAPPING
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEPrepareGPUMappingPass
    : public moe::impl::MoEPrepareGPUMappingBase<MoEPrepareGPUMappingPass> {
  void runOnOperation() override;
};
} // namespace

void MoEPrepareGPUMappingPass::runOnOperation() {
  func::FuncOp func = getOperation();
  IRRewriter rewriter(&getContext());

  // Copies inside a future kernel become loops: the runtime's memrefCopy
  // does not exist on the device.
  SmallVector<memref::CopyOp> copies;
  func.walk([&](memref::CopyOp copy) {
    if (copy->getParentOfType<scf::ForallOp>())
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  }

  // Arguments that a future kernel reads are copied once into host-shared
  // memory: the caller's buffers may be plain host memory, which a GPU
  // without host page access cannot read. (Bufferized arguments are only
  // read, so nothing is copied back.)
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.getLayout().isIdentity())
      continue;
    bool readByKernel = llvm::any_of(arg.getUses(), [](OpOperand &use) {
      return use.getOwner()->getParentOfType<scf::ForallOp>() != nullptr;
    });
    if (!readByKernel)
      continue;
    rewriter.setInsertionPointToStart(&entry);
    Location loc = arg.getLoc();
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(memref::DimOp::create(rewriter, loc, arg, i));
    Value copy = memref::AllocOp::create(rewriter, loc, type, dynamicSizes);
    memref::CopyOp::create(rewriter, loc, arg, copy);
    rewriter.replaceUsesWithIf(arg, copy, [&](OpOperand &use) {
      return use.getOwner()->getParentOfType<scf::ForallOp>() != nullptr;
    });
    // Freed before every return (it becomes a shared gpu.dealloc below).
    func.walk([&](func::ReturnOp ret) {
      rewriter.setInsertionPoint(ret);
      memref::DeallocOp::create(rewriter, loc, copy);
    });
  }

  // Host buffers are allocated in memory that host and device share, since
  // host loops and kernels read and write the same buffers.
  SmallVector<memref::AllocOp> allocs;
  SmallVector<memref::DeallocOp> deallocs;
  func.walk([&](Operation *op) {
    if (op->getParentOfType<scf::ForallOp>())
      return;
    if (auto alloc = dyn_cast<memref::AllocOp>(op))
      allocs.push_back(alloc);
    else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
      deallocs.push_back(dealloc);
  });
  for (memref::AllocOp alloc : allocs) {
    rewriter.setInsertionPoint(alloc);
    auto shared = gpu::AllocOp::create(
        rewriter, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
        /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
        alloc.getSymbolOperands(), /*hostShared=*/true);
    rewriter.replaceOp(alloc, shared.getMemref());
  }
  // The GPU-to-LLVM lowering frees only asynchronously: free on a fresh
  // stream and wait for it.
  Type tokenType = gpu::AsyncTokenType::get(&getContext());
  for (memref::DeallocOp dealloc : deallocs) {
    rewriter.setInsertionPoint(dealloc);
    Location loc = dealloc.getLoc();
    Value start = gpu::WaitOp::create(rewriter, loc, tokenType, ValueRange())
                      .getAsyncToken();
    Value done = gpu::DeallocOp::create(rewriter, loc, tokenType,
                                        ValueRange{start}, dealloc.getMemref())
                     .getAsyncToken();
    gpu::WaitOp::create(rewriter, loc, Type(), ValueRange{done});
    rewriter.eraseOp(dealloc);
  }
}
