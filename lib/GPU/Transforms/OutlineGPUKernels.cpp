//===- OutlineGPUKernels.cpp - Outlining that keeps NVVM hints ------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-outline-gpu-kernels: upstream's -gpu-kernel-outlining,
// then each launch's nvvm.* attributes on the kernel it became (upstream
// drops a launch's attributes).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEOUTLINEGPUKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// The attributes a launch hands to the PTX compiler.
SmallVector<NamedAttribute> nvvmAttributesOf(gpu::LaunchOp launch) {
  SmallVector<NamedAttribute> attributes;
  for (NamedAttribute attribute : launch->getDiscardableAttrs())
    if (attribute.getName().strref().starts_with("nvvm."))
      attributes.push_back(attribute);
  return attributes;
}

struct MoEOutlineGPUKernelsPass
    : public moe::impl::MoEOutlineGPUKernelsBase<MoEOutlineGPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // Kernel name -> the attributes its launch carried; a launch with
    // attributes gets a name no other launch or symbol has.
    llvm::StringMap<SmallVector<NamedAttribute>> hints;
    llvm::StringSet<> names;
    module.walk([&](gpu::LaunchOp launch) {
      if (FlatSymbolRefAttr function = launch.getFunctionAttr())
        names.insert(function.getValue());
    });
    int64_t counter = 0;
    module.walk([&](gpu::LaunchOp launch) {
      SmallVector<NamedAttribute> attributes = nvvmAttributesOf(launch);
      if (attributes.empty())
        return;
      FlatSymbolRefAttr function = launch.getFunctionAttr();
      if (!function || hints.contains(function.getValue())) {
        auto parent = launch->getParentOfType<FunctionOpInterface>();
        std::string base =
            (parent ? parent.getName() : StringRef("kernel")).str() + "_hinted";
        std::string name;
        do {
          name = base + "_" + std::to_string(counter++);
        } while (
            names.contains(name) ||
            SymbolTable::lookupSymbolIn(module, StringAttr::get(ctx, name)));
        names.insert(name);
        function = FlatSymbolRefAttr::get(ctx, name);
        launch.setFunctionAttr(function);
        launch.setModuleAttr(function);
      }
      hints[function.getValue()] = std::move(attributes);
    });

    // Kernels launched before this pass (the generators') keep theirs.
    DenseSet<Operation *> launched;
    module.walk([&](gpu::LaunchFuncOp launch) { launched.insert(launch); });
    OpPassManager outlining(ModuleOp::getOperationName());
    outlining.addPass(createGpuKernelOutliningPass());
    if (failed(runPipeline(outlining, module)))
      return signalPassFailure();
    if (hints.empty())
      return;

    module.walk([&](gpu::LaunchFuncOp launch) {
      if (launched.contains(launch))
        return;
      auto found = hints.find(launch.getKernelName().getValue());
      if (found == hints.end())
        return;
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel)
        return;
      for (NamedAttribute attribute : found->second)
        kernel->setAttr(attribute.getName(), attribute.getValue());
    });
  }
};

} // namespace
