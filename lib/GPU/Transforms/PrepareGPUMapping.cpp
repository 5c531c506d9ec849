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

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
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

/// Whether `value` is an argument of a function the program's callers call
/// (its memory may be plain host memory). The functions of
/// -moe-outline-kinds are only called by the program itself, with its own
/// GPU buffers or views of them.
bool isCallerMemory(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return false;
  Operation *parent = arg.getOwner()->getParentOp();
  return isa<FunctionOpInterface>(parent) &&
         !parent->hasAttr(kOutlinedKindAttrName);
}

/// Which buffers host code may read or write, across the calls of outlined
/// kinds: a buffer an outlined kind returns is reached when a caller's host
/// code reaches the call's result, and one passed to a kind when the
/// kind's host code reaches its argument.
class HostReach {
public:
  HostReach(ModuleOp module) : symbols(module) {
    module.walk([&](func::CallOp call) {
      if (isOutlinedKindCall(call))
        callsOf[call.getCalleeAttr().getAttr()].push_back(call);
    });
  }

  /// Whether host code may read or write `buffer` (a host allocation),
  /// through it or any view of it: a host load or store, a call (other
  /// than of an outlined kind that leaves it to kernels), a return to the
  /// program's caller, a copy that stays on the host (from the caller's
  /// memory), or any op this does not know. Kernels (forall bodies,
  /// structured ops and copies, which -moe-map-forall-to-gpu maps onto the
  /// GPU, generated launches) and shape queries do not count.
  bool reached(Value buffer);

private:
  bool argumentReached(func::FuncOp callee, unsigned index);
  bool resultReached(func::FuncOp kind, unsigned index);

  SymbolTable symbols;
  DenseMap<StringAttr, SmallVector<func::CallOp>> callsOf;
  /// Per (function, position): known answers, and false while the question
  /// is being answered (outlined kinds do not call themselves).
  DenseMap<std::pair<Operation *, unsigned>, bool> arguments, results;
};

bool HostReach::reached(Value buffer) {
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
        if (!isCallerMemory(copy.getSource()))
          continue;
        return true;
      }
      if (isOutlinedKindCall(user)) {
        auto call = cast<func::CallOp>(user);
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee || callee.isExternal() ||
            argumentReached(callee, use.getOperandNumber()))
          return true;
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(user)) {
        auto func = ret->getParentOfType<func::FuncOp>();
        if (!func->hasAttr(kOutlinedKindAttrName) ||
            resultReached(func, use.getOperandNumber()))
          return true;
        continue;
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

bool HostReach::argumentReached(func::FuncOp callee, unsigned index) {
  auto [it, inserted] = arguments.try_emplace({callee, index}, false);
  if (!inserted)
    return it->second;
  bool answer = reached(callee.getArgument(index));
  arguments[{callee, index}] = answer;
  return answer;
}

bool HostReach::resultReached(func::FuncOp kind, unsigned index) {
  auto [it, inserted] = results.try_emplace({kind, index}, false);
  if (!inserted)
    return it->second;
  bool answer = llvm::any_of(
      callsOf.lookup(kind.getSymNameAttr()),
      [&](func::CallOp call) { return reached(call.getResult(index)); });
  results[{kind, index}] = answer;
  return answer;
}

/// Copies inside future kernels become linalg, and arguments of a public
/// function that its kernels read are copied once into device memory.
void prepareFunction(func::FuncOp func, IRRewriter &rewriter) {
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
    if (!type || !type.getLayout().isIdentity() || !isCallerMemory(arg))
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
}
} // namespace

void MoEPrepareGPUMappingPass::runOnOperation() {
  ModuleOp module = getOperation();
  IRRewriter rewriter(&getContext());
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  for (func::FuncOp func : funcs)
    prepareFunction(func, rewriter);

  // Host buffers become GPU buffers: in device memory when only kernels
  // touch them, in memory that host and device share when host code reads
  // or writes them, or the program's caller receives them. Decided for
  // every function before any changes, since a kind's results are decided
  // by its callers.
  HostReach reach(module);
  SmallVector<std::pair<memref::AllocOp, bool>> allocs;
  SmallVector<memref::DeallocOp> deallocs;
  for (func::FuncOp func : funcs) {
    func.walk([&](Operation *op) {
      if (op->getParentOfType<scf::ForallOp>())
        return;
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        allocs.push_back({alloc, reach.reached(alloc.getMemref())});
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        deallocs.push_back(dealloc);
    });
  }
  for (auto [alloc, hostShared] : allocs) {
    rewriter.setInsertionPoint(alloc);
    auto buffer = gpu::AllocOp::create(
        rewriter, alloc.getLoc(), alloc.getType(), /*asyncToken=*/Type(),
        /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
        alloc.getSymbolOperands(), hostShared);
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
