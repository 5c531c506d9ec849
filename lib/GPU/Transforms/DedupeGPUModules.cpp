//===- DedupeGPUModules.cpp - One gpu.module per distinct kernel code -----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-dedupe-gpu-modules: of gpu.modules whose text is the same
// but for their own and their kernels' names, the first stays and the
// launches of the others' kernels launch its kernels.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEDEDUPEGPUMODULES
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEDedupeGPUModulesPass
    : public moe::impl::MoEDedupeGPUModulesBase<MoEDedupeGPUModulesPass> {
  void runOnOperation() override;
};

/// The symbols `gpuModule` defines directly (its kernels and any other
/// function), in order.
SmallVector<Operation *> definedSymbols(gpu::GPUModuleOp gpuModule) {
  SmallVector<Operation *> symbols;
  for (Operation &op : gpuModule.getBody()->getOperations())
    if (op.hasAttr(SymbolTable::getSymbolAttrName()))
      symbols.push_back(&op);
  return symbols;
}

/// `gpuModule`'s text with its name and the names it defines replaced by
/// placeholders (their uses inside it are printed as they are, so a module
/// that calls its own function by name is only equal to itself).
std::string anonymousText(gpu::GPUModuleOp gpuModule) {
  MLIRContext *ctx = gpuModule.getContext();
  StringAttr name = gpuModule.getSymNameAttr();
  SmallVector<Operation *> symbols = definedSymbols(gpuModule);
  SmallVector<StringAttr> names;
  gpuModule.setSymName("module");
  for (auto [index, symbol] : llvm::enumerate(symbols)) {
    names.push_back(SymbolTable::getSymbolName(symbol));
    SymbolTable::setSymbolName(symbol,
                               StringAttr::get(ctx, "s" + Twine(index)));
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  gpuModule->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  gpuModule.setSymNameAttr(name);
  for (auto [symbol, original] : llvm::zip(symbols, names))
    SymbolTable::setSymbolName(symbol, original);
  return text;
}
} // namespace

void MoEDedupeGPUModulesPass::runOnOperation() {
  ModuleOp module = getOperation();
  // Duplicates only where every use of the module is a launch, which can
  // be redirected: the roots of the symbol references of all other ops are
  // kept.
  llvm::DenseSet<StringAttr> usedOtherwise;
  // (A gpu.module's own ops cannot refer to another gpu.module.)
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::GPUModuleOp>(op))
      return WalkResult::skip();
    if (!isa<gpu::LaunchFuncOp>(op))
      op->getAttrDictionary().walk([&](SymbolRefAttr ref) {
        usedOtherwise.insert(ref.getRootReference());
      });
    return WalkResult::advance();
  });
  // Modules of equal text have equal operation counts: only those that
  // share their count with another are printed (the kernel generators'
  // large modules, whose printing was most of this pass's time, rarely do).
  SmallVector<std::pair<gpu::GPUModuleOp, size_t>> candidates;
  DenseMap<size_t, unsigned> modulesOfCount;
  for (gpu::GPUModuleOp gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    if (usedOtherwise.contains(gpuModule.getSymNameAttr()))
      continue;
    size_t ops = 0;
    gpuModule.walk([&](Operation *) { ++ops; });
    candidates.push_back({gpuModule, ops});
    ++modulesOfCount[ops];
  }
  llvm::StringMap<gpu::GPUModuleOp> firstOfText;
  // A duplicate's name -> the duplicate and the module that replaces it.
  DenseMap<StringAttr, std::pair<gpu::GPUModuleOp, gpu::GPUModuleOp>>
      duplicates;
  for (auto [gpuModule, ops] : candidates) {
    if (modulesOfCount[ops] < 2)
      continue;
    auto [it, inserted] =
        firstOfText.try_emplace(anonymousText(gpuModule), gpuModule);
    if (!inserted)
      duplicates[gpuModule.getSymNameAttr()] = {gpuModule, it->second};
  }
  if (duplicates.empty())
    return;

  module.walk([&](gpu::LaunchFuncOp launch) {
    auto it = duplicates.find(launch.getKernelModuleName());
    if (it == duplicates.end())
      return;
    auto [duplicate, replacement] = it->second;
    SmallVector<Operation *> ours = definedSymbols(duplicate);
    SmallVector<Operation *> theirs = definedSymbols(replacement);
    auto position = llvm::find_if(ours, [&](Operation *symbol) {
      return SymbolTable::getSymbolName(symbol) == launch.getKernelName();
    });
    if (position == ours.end())
      return; // Not a kernel of the module: the verifier says so.
    StringAttr kernel =
        SymbolTable::getSymbolName(theirs[position - ours.begin()]);
    launch.setKernelAttr(SymbolRefAttr::get(replacement.getSymNameAttr(),
                                            {FlatSymbolRefAttr::get(kernel)}));
  });
  for (auto &entry : duplicates)
    entry.second.first.erase();
}
