//===- AsyncGPUStream.cpp - A function's GPU work queued on one stream ----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-async-gpu-stream: the GPU ops of each host block become
// asynchronous, chained by their tokens in program order, so that the host
// queues a function's kernels, copies and stream-ordered allocations
// without waiting, and waits only before host code that reads memory, ops
// with regions, and the block's end.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEASYNCGPUSTREAM
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEAsyncGPUStreamPass
    : public moe::impl::MoEAsyncGPUStreamBase<MoEAsyncGPUStreamPass> {
  void runOnOperation() override;
};

/// Whether `op` is work the stream orders: kernels, copies, fills and the
/// allocation and release of device buffers.
bool isStreamWork(Operation *op) {
  if (auto alloc = dyn_cast<gpu::AllocOp>(op))
    return !alloc.getHostShared();
  return isa<gpu::LaunchOp, gpu::LaunchFuncOp, gpu::DeallocOp, gpu::MemcpyOp,
             gpu::MemsetOp>(op);
}

/// Makes `token` the only dependency of the stream op `op`.
void dependOnlyOn(Operation *op, Value token) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<gpu::LaunchOp, gpu::LaunchFuncOp, gpu::AllocOp, gpu::DeallocOp,
            gpu::MemcpyOp, gpu::MemsetOp>([&](auto streamOp) {
        streamOp.getAsyncDependenciesMutable().assign(token);
      });
}

/// The token `op` returns, after giving `op` (replaced by a copy with one
/// more result) a token when it has none.
Value withToken(OpBuilder &builder, Operation *op) {
  auto asyncOp = cast<gpu::AsyncOpInterface>(op);
  if (Value token = asyncOp.getAsyncToken())
    return token;
  // The token is the last result of every GPU op that has one.
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(op->getOperands());
  state.addTypes(op->getResultTypes());
  state.addTypes(gpu::AsyncTokenType::get(op->getContext()));
  state.addAttributes(op->getDiscardableAttrDictionary().getValue());
  state.propertiesAttr = op->getPropertiesAsAttribute();
  state.addSuccessors(op->getSuccessors());
  for (unsigned i = 0, e = op->getNumRegions(); i < e; ++i)
    state.addRegion();
  builder.setInsertionPoint(op);
  Operation *async = builder.create(state);
  for (unsigned i = 0, e = op->getNumRegions(); i < e; ++i)
    async->getRegion(i).takeBody(op->getRegion(i));
  op->replaceAllUsesWith(async->getResults().drop_back());
  op->erase();
  return async->getResults().back();
}

/// Chains the GPU ops of `block` (and, separately, of every block nested in
/// its host ops) on one token.
void chainBlock(Block &block) {
  OpBuilder builder(block.getParentOp()->getContext());
  Type tokenType = gpu::AsyncTokenType::get(builder.getContext());
  // The chain's latest token; null when the host has waited for it all.
  Value token;
  auto hostWaits = [&](Operation *before) {
    if (!token)
      return;
    builder.setInsertionPoint(before);
    gpu::WaitOp::create(builder, before->getLoc(), Type(), ValueRange{token});
    token = Value();
  };

  for (Operation &next : llvm::make_early_inc_range(block)) {
    Operation *op = &next;
    // Waits already in the IR (around a generator's allocations, say) are
    // subsumed by the chain: what the host must wait for, it waits for
    // below.
    if (auto wait = dyn_cast<gpu::WaitOp>(op)) {
      if (Value result = wait.getAsyncToken()) {
        if (!token) {
          wait.getAsyncDependenciesMutable().clear();
          token = result;
          continue;
        }
        result.replaceAllUsesWith(token);
      }
      wait.erase();
      continue;
    }
    if (isStreamWork(op)) {
      if (!token) {
        builder.setInsertionPoint(op);
        token =
            gpu::WaitOp::create(builder, op->getLoc(), tokenType, ValueRange())
                .getAsyncToken();
      }
      dependOnlyOn(op, token);
      token = withToken(builder, op);
      continue;
    }
    if (isa<gpu::AllocOp>(op))
      continue; // host-shared: allocated by the host, not on the stream
    bool hostTouchesMemory = !isMemoryEffectFree(op);
    if (op->hasTrait<OpTrait::IsTerminator>() || op->getNumRegions() > 0 ||
        hostTouchesMemory)
      hostWaits(op);
    for (Region &region : op->getRegions())
      for (Block &nested : region)
        chainBlock(nested);
  }
}
} // namespace

void MoEAsyncGPUStreamPass::runOnOperation() {
  for (Block &block : getOperation().getBody())
    chainBlock(block);
}
