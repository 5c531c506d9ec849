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
// it costs the stream no wait. The functions of -moe-outline-kinds take
// their caller's stream as a token argument and give it back as a token
// result, so that a call costs no wait either.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"

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

/// The host's waits for a stream the lowering cannot see the creation of.
/// Upstream's GPU-to-LLVM lowering takes the operand of a `gpu.wait` for an
/// event unless it comes straight from the `gpu.wait async` that created
/// the stream, and destroys it; a stream that came through a call (an
/// argument, a call's result) is waited for with moert's adapter instead,
/// which keeps it: the chain goes on on the same stream.
struct StreamCalls {
  func::FuncOp wait;    // moertMlirStreamWait(stream): synchronize, keep
  func::FuncOp release; // moertMlirStreamRelease(stream): give back
};

/// Declares `name` (one token argument, no result) in `module`, or returns
/// its declaration.
func::FuncOp declareStreamCall(ModuleOp module, StringRef name) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto type = builder.getFunctionType(
      {gpu::AsyncTokenType::get(module.getContext())}, {});
  auto func = func::FuncOp::create(builder, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// How a function's chains are built.
struct ChainContext {
  StreamCalls calls;
  /// The functions that take the caller's stream (a token argument, last)
  /// and give it back (a token result, last).
  const llvm::DenseSet<StringAttr> &threaded;
};

/// Whether `op` is a call of a function that takes the caller's stream.
func::CallOp threadedCall(Operation *op, const ChainContext &context) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call || !context.threaded.contains(call.getCalleeAttr().getAttr()))
    return nullptr;
  return call;
}

/// Chains the GPU ops of `block` (and, separately, of every block nested in
/// its host ops) on one token. `entryToken` is the stream the block starts
/// on (a threaded function's token argument), null when the block starts
/// with none; a threaded function's entry block returns its stream.
void chainBlock(Block &block, const ChainContext &context,
                Value entryToken = Value()) {
  OpBuilder builder(block.getParentOp()->getContext());
  Type tokenType = gpu::AsyncTokenType::get(builder.getContext());
  // The chain's latest token; null when the host has waited for it all.
  Value token = entryToken;
  // Whether `token`'s stream came through a call or an argument (then the
  // host waits for it with the adapter's calls, and the stream stays).
  bool throughCall = static_cast<bool>(entryToken);
  // Whether the stream may have work the host has not waited for.
  bool pending = throughCall;
  auto hostWaits = [&](Operation *before) {
    if (!token || !pending)
      return;
    builder.setInsertionPoint(before);
    if (throughCall) {
      func::CallOp::create(builder, before->getLoc(), context.calls.wait,
                           ValueRange{token});
      pending = false;
      return;
    }
    gpu::WaitOp::create(builder, before->getLoc(), Type(), ValueRange{token});
    token = Value();
  };
  auto ensureToken = [&](Operation *before) {
    if (token)
      return;
    builder.setInsertionPoint(before);
    token =
        gpu::WaitOp::create(builder, before->getLoc(), tokenType, ValueRange())
            .getAsyncToken();
    throughCall = false;
    pending = true;
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
          throughCall = false;
          pending = true;
          continue;
        }
        result.replaceAllUsesWith(token);
      }
      wait.erase();
      continue;
    }
    if (isStreamWork(op)) {
      ensureToken(op);
      dependOnlyOn(op, token);
      token = withToken(builder, op);
      pending = true;
      continue;
    }
    if (isa<gpu::AllocOp>(op))
      continue; // host-shared: allocated by the host, not on the stream
    // A call of a threaded function queues its work behind the chain's and
    // gives the stream back: the host does not wait.
    if (func::CallOp call = threadedCall(op, context)) {
      ensureToken(op);
      SmallVector<Value> operands(call.getOperands());
      operands.push_back(token);
      SmallVector<Type> results(call.getResultTypes());
      results.push_back(tokenType);
      builder.setInsertionPoint(call);
      auto threadedCall = func::CallOp::create(
          builder, call.getLoc(), call.getCalleeAttr(), results, operands);
      threadedCall->setDiscardableAttrs(call->getDiscardableAttrDictionary());
      call.replaceAllUsesWith(threadedCall.getResults().drop_back());
      call.erase();
      token = threadedCall.getResults().back();
      throughCall = true;
      pending = true;
      continue;
    }
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      if (entryToken && isa<func::ReturnOp>(op) && op->getBlock() == &block) {
        // A threaded function hands its stream back unwaited.
        cast<func::ReturnOp>(op).getOperandsMutable().append(token);
        continue;
      }
      hostWaits(op);
      if (token && throughCall) {
        // The stream the block created went through calls: give it back.
        func::CallOp::create(builder, op->getLoc(), context.calls.release,
                             ValueRange{token});
        token = Value();
      }
      continue;
    }
    bool hostTouchesMemory = !isMemoryEffectFree(op);
    if (op->getNumRegions() > 0 || hostTouchesMemory)
      hostWaits(op);
    for (Region &region : op->getRegions())
      for (Block &nested : region)
        chainBlock(nested, context);
  }
}
} // namespace

void MoEAsyncGPUStreamPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  // Inner guards first, so that a guard of guards flattens too.
  for (func::FuncOp func : funcs)
    func.walk([&](scf::IfOp ifOp) {
      if (onlyGuardsLaunches(ifOp))
        flattenLaunchGuard(ifOp);
    });

  // The outlined kinds run on their caller's stream: they are private and
  // only called (-moe-outline-kinds makes them so), and their one block
  // returns what they compute.
  llvm::DenseSet<StringAttr> threaded;
  for (func::FuncOp func : funcs)
    if (func->hasAttr(kOutlinedKindAttrName) && func.isPrivate() &&
        func.getBody().hasOneBlock())
      threaded.insert(func.getSymNameAttr());
  ChainContext context{{}, threaded};
  context.calls.wait = declareStreamCall(module, "moertMlirStreamWait");
  context.calls.release = declareStreamCall(module, "moertMlirStreamRelease");

  Type tokenType = gpu::AsyncTokenType::get(&getContext());
  for (func::FuncOp func : funcs) {
    Value entryToken;
    if (threaded.contains(func.getSymNameAttr())) {
      unsigned arguments = func.getNumArguments();
      unsigned results = func.getNumResults();
      if (failed(func.insertArgument(arguments, tokenType, DictionaryAttr(),
                                     func.getLoc())) ||
          failed(func.insertResult(results, tokenType, DictionaryAttr()))) {
        func.emitOpError("could not take its caller's GPU stream");
        return signalPassFailure();
      }
      entryToken = func.getArgument(arguments);
    }
    for (Block &block : func.getBody())
      chainBlock(block, context, block.isEntryBlock() ? entryToken : Value());
  }
  // Nothing asked for the adapter's calls: leave no declarations behind.
  for (func::FuncOp call : {context.calls.wait, context.calls.release})
    if (SymbolTable::symbolKnownUseEmpty(call, module))
      call.erase();
}
