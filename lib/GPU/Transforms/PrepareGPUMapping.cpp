//===- PrepareGPUMapping.cpp - Bufferized tiles ready for gpu.launch ------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-prepare-gpu-mapping, which readies bufferized tiled IR for
// -moe-map-forall-to-gpu: copies inside future kernels become linalg, and
// host buffers become GPU buffers, in device memory unless host code
// touches them.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

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

/// Whether a function argument's memory: the caller's, which may be plain
/// host memory.
bool isFunctionArgument(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  return arg && arg.getOwner()->isEntryBlock() &&
         isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

/// Whether host code may read or write `buffer` (a host allocation), through
/// it or any view of it: a host load or store, a call, a return to the
/// caller, a copy that stays on the host (from the caller's memory), or any
/// op this does not know. Kernels (forall bodies, structured ops and copies,
/// which -moe-map-forall-to-gpu maps onto the GPU, generated launches) and
/// shape queries do not count.
bool isReachedByHost(Value buffer) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      // Inside a future kernel: a forall body or a structured op's body
      // (which reads buffers it captures, like a gather).
      if (user->getParentOfType<scf::ForallOp>() ||
          user->getParentOfType<linalg::LinalgOp>())
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          for (Value result : user->getResults())
            worklist.push_back(result);
          continue;
        }
      }
      if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        if (!isFunctionArgument(copy.getSource()))
          continue;
        return true;
      }
      if (isa<linalg::LinalgOp, gpu::LaunchFuncOp, gpu::MemcpyOp,
              memref::DeallocOp, memref::DimOp,
              memref::ExtractStridedMetadataOp,
              memref::ExtractAlignedPointerAsIndexOp>(user))
        continue;
      return true;
    }
  }
  return false;
}
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

  // Arguments that a future kernel reads are copied once into device
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
    gpu::MemcpyOp::create(rewriter, loc, /*asyncToken=*/Type(),
                          /*asyncDependencies=*/ValueRange(), copy, arg);
    rewriter.replaceUsesWithIf(arg, copy, [&](OpOperand &use) {
      return use.getOwner()->getParentOfType<scf::ForallOp>() != nullptr;
    });
    // Freed before every return (it becomes a gpu.dealloc below).
    func.walk([&](func::ReturnOp ret) {
      rewriter.setInsertionPoint(ret);
      memref::DeallocOp::create(rewriter, loc, copy);
    });
  }

  // Host buffers become GPU buffers: in device memory when only kernels
  // touch them, in memory that host and device share when host code reads
  // or writes them, or the caller receives them.
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
    auto buffer = gpu::AllocOp::create(
        rewriter, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
        /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
        alloc.getSymbolOperands(),
        /*hostShared=*/isReachedByHost(alloc.getMemref()));
    rewriter.replaceOp(alloc, buffer.getMemref());
  }
  // Freed in stream order by -moe-async-gpu-stream, which makes these
  // asynchronous.
  for (memref::DeallocOp dealloc : deallocs) {
    rewriter.setInsertionPoint(dealloc);
    gpu::DeallocOp::create(rewriter, dealloc.getLoc(), /*asyncToken=*/Type(),
                           /*asyncDependencies=*/ValueRange(),
                           dealloc.getMemref());
    rewriter.eraseOp(dealloc);
  }
}
