//===- GPUModulesToBinaries.cpp - Serialize gpu.modules in parallel -------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-gpu-modules-to-binaries: every gpu.module becomes a
// gpu.binary of its targets' objects, as upstream's -gpu-module-to-binary
// makes it, with the modules' LLVM compiles run on the context's threads.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Timer.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGPUMODULESTOBINARIES
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
/// The name prefix of libdevice's functions.
constexpr llvm::StringLiteral kLibdevicePrefix = "__nv_";

/// Whether `gpuModule` calls or declares a libdevice function.
bool usesLibdevice(gpu::GPUModuleOp gpuModule) {
  for (auto func : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (func.getSymName().starts_with(kLibdevicePrefix))
      return true;
  return false;
}

/// PTX of a module that uses nothing of libdevice, the way the NVVM
/// target makes it but for the libraries: libdevice is not loaded, which
/// the target does for every module (its 470 KB parsed once per module,
/// about a second of kimi-tiny's 359 modules) only to link nothing from it.
class PTXWithoutLibraries : public NVVM::SerializeGPUModuleBase {
public:
  using SerializeGPUModuleBase::SerializeGPUModuleBase;

  /// The time of the LLVM IR to PTX step, in milliseconds.
  int64_t isaMilliseconds = 0;

protected:
  std::optional<SmallVector<std::unique_ptr<llvm::Module>>>
  loadBitcodeFiles(llvm::Module &) override {
    return SmallVector<std::unique_ptr<llvm::Module>>();
  }

  FailureOr<SmallVector<char, 0>>
  moduleToObject(llvm::Module &llvmModule) override {
    FailureOr<llvm::TargetMachine *> machine = getOrCreateTargetMachine();
    if (failed(machine))
      return getOperation().emitError()
             << "no NVPTX target machine for " << triple;
    llvm::Timer timer("ptx", "LLVM IR to PTX");
    timer.startTimer();
    FailureOr<SmallString<0>> ptx = translateModuleToISA(
        llvmModule, **machine, [&] { return getOperation().emitError(); });
    timer.stopTimer();
    isaMilliseconds =
        static_cast<int64_t>(timer.getTotalTime().getWallTime() * 1000);
    // Else the timer reports itself to stderr when it is destroyed.
    timer.clear();
    if (failed(ptx))
      return failure();
    return SmallVector<char, 0>(ptx->begin(), ptx->end());
  }
};

/// `gpuModule` serialized for `target`: PTX without libdevice where the
/// module needs none, else the target's own serialization.
std::optional<SmallVector<char, 0>>
serializeModule(gpu::GPUModuleOp gpuModule, gpu::TargetAttrInterface target,
                const gpu::TargetOptions &options) {
  auto nvvmTarget = dyn_cast<NVVM::NVVMTargetAttr>(target);
  if (!nvvmTarget || nvvmTarget.getLink() ||
      options.getCompilationTarget() != gpu::CompilationTarget::Assembly ||
      !options.getLibrariesToLink().empty() || usesLibdevice(gpuModule))
    return target.serializeToObject(gpuModule, options);
  PTXWithoutLibraries serializer(*gpuModule, nvvmTarget, options);
  serializer.init();
  std::optional<SmallVector<char, 0>> ptx = serializer.run();
  // Where the target records it, for createObject and moe-compile --timing.
  gpuModule->setAttr(
      "LLVMIRToISATimeInMs",
      IntegerAttr::get(IntegerType::get(gpuModule.getContext(), 64),
                       serializer.isaMilliseconds));
  return ptx;
}

struct MoEGPUModulesToBinariesPass
    : public moe::impl::MoEGPUModulesToBinariesBase<
          MoEGPUModulesToBinariesPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void MoEGPUModulesToBinariesPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<gpu::CompilationTarget> target =
      llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(format)
          .Case("llvm", gpu::CompilationTarget::Offload)
          .Case("isa", gpu::CompilationTarget::Assembly)
          .Case("bin", gpu::CompilationTarget::Binary)
          .Case("fatbin", gpu::CompilationTarget::Fatbin)
          .Default(std::nullopt);
  if (!target) {
    module.emitError() << "-moe-gpu-modules-to-binaries: unknown format '"
                       << format << "' (isa, bin, fatbin or llvm)";
    return signalPassFailure();
  }
  // Serializers may ask for the symbol table of the modules' parent; it is
  // built before the threads start and not changed while they run.
  SymbolTable symbols(module);
  auto getSymbols = [&]() -> SymbolTable * { return &symbols; };
  gpu::TargetOptions options({}, {}, {}, {}, *target, getSymbols);

  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  std::vector<SmallVector<Attribute>> objects(gpuModules.size());
  // The threads take the modules largest first: one kernel can take
  // seconds (kimi-tiny's KDA backward tile program, a third of the
  // serialization), and started last it would run alone at the end. The
  // binaries keep the modules' places either way.
  SmallVector<std::pair<int64_t, size_t>> largestFirst;
  for (auto [index, gpuModule] : llvm::enumerate(gpuModules)) {
    int64_t ops = 0;
    gpuModule.walk([&](Operation *) { ++ops; });
    largestFirst.push_back({-ops, index});
  }
  llvm::sort(largestFirst);
  LogicalResult serialized = failableParallelForEachN(
      &getContext(), 0, gpuModules.size(), [&](size_t rank) -> LogicalResult {
        size_t index = largestFirst[rank].second;
        gpu::GPUModuleOp gpuModule = gpuModules[index];
        ArrayAttr targets = gpuModule.getTargetsAttr();
        if (!targets || targets.empty())
          return gpuModule.emitError()
                 << "gpu.module has no target to serialize it for";
        for (Attribute attr : targets) {
          auto targetAttr = dyn_cast<gpu::TargetAttrInterface>(attr);
          if (!targetAttr)
            return gpuModule.emitError()
                   << "target " << attr << " cannot serialize a module";
          std::optional<SmallVector<char, 0>> object =
              serializeModule(gpuModule, targetAttr, options);
          if (!object)
            return gpuModule.emitError()
                   << "could not serialize the module for " << attr;
          objects[index].push_back(
              targetAttr.createObject(gpuModule, *object, options));
        }
        return success();
      });
  if (failed(serialized))
    return signalPassFailure();

  for (auto [gpuModule, moduleObjects] : llvm::zip(gpuModules, objects)) {
    OpBuilder builder(gpuModule);
    gpu::BinaryOp::create(builder, gpuModule.getLoc(), gpuModule.getName(),
                          gpuModule.getOffloadingHandlerAttr(),
                          builder.getArrayAttr(moduleObjects));
    gpuModule.erase();
  }
}
