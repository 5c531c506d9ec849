//===- AsyncGPUStream.cpp - A function's GPU work queued on one stream ----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-async-gpu-stream: the GPU ops of each host block become
// asynchronous, chained by their tokens in program order, so that the host
// queues a function's kernels, copies and stream-ordered allocations
// without waiting, and waits only before host code that reads memory, ops
// with regions, and the block's end. A host `scf.if` that only guards
// launches (a generator's "the grid is empty without rows") is first
// replaced by its launches with the grid emptied by the condition, so that
// it costs the stream no wait.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// Whether `ifOp` only guards kernel launches: no results, no else code,
/// and a then block of launches, waits, and pure ops without regions (host
/// arithmetic and views), which may run whatever the condition.
bool onlyGuardsLaunches(scf::IfOp ifOp) {
  if (ifOp.getNumResults() != 0)
    return false;
  if (Block *otherwise = ifOp.elseBlock())
    if (!otherwise->without_terminator().empty())
      return false;
  bool launches = false;
  for (Operation &op : ifOp.thenBlock()->without_terminator()) {
    if (isa<gpu::LaunchFuncOp, gpu::LaunchOp>(op)) {
      launches = true;
      continue;
    }
    if (isa<gpu::WaitOp>(op))
      continue; // subsumed by the chain
    if (op.getNumRegions() != 0 || !isPure(&op))
      return false;
  }
  return launches;
}

/// The grid size `size` if `condition` holds, else an empty grid (moert's
/// adapter launches nothing for an empty grid).
Value gridIf(OpBuilder &builder, Location loc, Value condition, Value size) {
  Value zero = arith::ConstantOp::create(builder, loc,
                                         builder.getZeroAttr(size.getType()));
  return arith::SelectOp::create(builder, loc, condition, size, zero);
}

/// Replaces the guard `ifOp` (onlyGuardsLaunches) with its then block, each
/// launch's grid empty unless the condition holds.
void flattenLaunchGuard(scf::IfOp ifOp) {
  OpBuilder builder(ifOp);
  Value condition = ifOp.getCondition();
  Block *then = ifOp.thenBlock();
  for (Operation &op : then->without_terminator()) {
    builder.setInsertionPoint(&op);
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
      launch.getGridSizeXMutable().assign(
          gridIf(builder, op.getLoc(), condition, launch.getGridSizeX()));
    else if (auto launch = dyn_cast<gpu::LaunchOp>(op))
      launch.getGridSizeXMutable().assign(
          gridIf(builder, op.getLoc(), condition, launch.getGridSizeX()));
  }
  then->getTerminator()->erase();
  ifOp->getBlock()->getOperations().splice(Block::iterator(ifOp),
                                           then->getOperations());
  ifOp.erase();
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
  // Inner guards first, so that a guard of guards flattens too.
  getOperation().walk([&](scf::IfOp ifOp) {
    if (onlyGuardsLaunches(ifOp))
      flattenLaunchGuard(ifOp);
  });
  for (Block &block : getOperation().getBody())
    chainBlock(block);
}
