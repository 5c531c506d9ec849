//===- KernelsAhead.cpp - Generated kernels serialized ahead --------------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelsAhead.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>

using namespace mlir;
using namespace mlir::moe;

/// The discardable attribute that marks a placeholder gpu.binary.
static constexpr llvm::StringLiteral kPlaceholder = "moe.kernels_ahead";

KernelsAhead::KernelsAhead(ModuleOp module, Mode mode,
                           PipelinePart buildLowering,
                           PipelinePart buildSerialization, bool verifyEach) {
  MLIRContext *ctx = module.getContext();
  result.checked = mode == Mode::Check;
  // The same attributes (gpu.container_module, the data layout) around the
  // copies, so that the passes see each copy as they see the original.
  copies = ModuleOp::create(module.getLoc());
  (*copies)->setAttrs(module->getAttrDictionary());
  OpBuilder copyBuilder = OpBuilder::atBlockEnd(copies->getBody());
  // Never run: replaced by finish() (or the compile fails).
  auto placeholderObject = gpu::ObjectAttr::get(
      NVVM::NVVMTargetAttr::get(ctx), gpu::CompilationTarget::Assembly,
      StringAttr::get(ctx, ""));
  for (gpu::GPUModuleOp gpuModule :
       llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
    ++result.modules;
    if (mode == Mode::Check) {
      copyBuilder.clone(*gpuModule);
      continue;
    }
    OpBuilder builder(gpuModule);
    auto placeholder = gpu::BinaryOp::create(
        builder, gpuModule.getLoc(), gpuModule.getName(), Attribute(),
        ArrayRef<Attribute>{placeholderObject});
    placeholder->setAttr(kPlaceholder, builder.getUnitAttr());
    gpuModule->moveBefore(copies->getBody(), copies->getBody()->end());
  }
  if (result.modules == 0)
    return;

  lowering = std::make_unique<PassManager>(ctx);
  buildLowering(*lowering);
  serialization = std::make_unique<PassManager>(ctx);
  buildSerialization(*serialization);
  for (PassManager *pm : {lowering.get(), serialization.get()})
    pm->enableVerifier(verifyEach);
  // A pass manager loads its passes' dialects when it starts; loaded here,
  // they are all there before either thread's passes run.
  DialectRegistry registry;
  lowering->getDependentDialects(registry);
  serialization->getDependentDialects(registry);
  ctx->appendDialectRegistry(registry);
  for (StringRef name : registry.getDialectNames())
    ctx->getOrLoadDialect(name);

  thread = std::thread([this] { run(); });
}

KernelsAhead::~KernelsAhead() {
  if (thread.joinable())
    thread.join();
}

void KernelsAhead::run() {
  auto start = std::chrono::steady_clock::now();
  if (failed(lowering->run(*copies))) {
    failedThere = true;
  } else {
    if (result.checked)
      lowered = OwningOpRef<ModuleOp>(copies->clone());
    failedThere = failed(serialization->run(*copies));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

FailureOr<KernelsAheadResult> KernelsAhead::finish(ModuleOp module) {
  if (thread.joinable())
    thread.join();
  if (result.modules == 0)
    return result;
  // The pass that failed said why (its diagnostics reach the context's
  // handlers from the thread).
  if (failedThere)
    return module.emitError()
           << "lowering and serializing the kernel generators' gpu.modules "
              "failed (--kernels-ahead)";
  SymbolTable binaries(*copies);
  std::optional<SymbolTable> loweredModules;
  if (result.checked)
    loweredModules.emplace(*lowered);
  for (Operation &op : llvm::make_early_inc_range(*module.getBody())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol)
      continue;
    auto binary = binaries.lookup<gpu::BinaryOp>(symbol.getName());
    if (!binary)
      continue;
    if (result.checked) {
      auto gpuModule = dyn_cast<gpu::GPUModuleOp>(op);
      auto copy = loweredModules->lookup<gpu::GPUModuleOp>(symbol.getName());
      if (!gpuModule || !copy)
        continue;
      // Strict: locations too (the PTX's line information comes from them).
      if (!OperationEquivalence::isEquivalentTo(
              gpuModule, copy, OperationEquivalence::Flags::None))
        return gpuModule.emitError()
               << "lowered with the host code, this gpu.module differs from "
                  "its lowering on its own (--kernels-ahead=check): a pass "
                  "changes a kernel module by what is outside it";
    } else if (!op.hasAttr(kPlaceholder)) {
      continue;
    }
    OpBuilder builder(&op);
    builder.clone(*binary);
    op.erase();
    ++result.used;
  }
  // A placeholder left would be an empty kernel image in the executable.
  for (gpu::BinaryOp binary : module.getOps<gpu::BinaryOp>())
    if (binary->hasAttr(kPlaceholder))
      return binary.emitError()
             << "no binary for this kernel module from --kernels-ahead (a "
                "bug of moe-compile: please report it with the model)";
  return result;
}
