//===- ParallelCodegen.cpp - Host code optimised and compiled in parts ----===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "ParallelCodegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace llvm;

namespace {
/// What one part's thread returns.
struct PartResult {
  SmallVector<char, 0> object;
  std::string error;
};
} // namespace

/// Optimises `module` and emits its object with `machine`.
static Error optimiseAndEmit(Module &module, TargetMachine &machine,
                             unsigned optLevel, SmallVectorImpl<char> &object) {
  if (Error err = mlir::makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                                  &machine)(&module))
    return err;
  raw_svector_ostream os(object);
  legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  CodeGenFileType::ObjectFile))
    return createStringError("the host target cannot emit object files");
  codegen.run(module);
  return Error::success();
}

/// Gives every symbol of local linkage hidden global linkage under a name
/// of its own, so that a part may refer to what another part defines.
static void externalizeLocals(Module &module) {
  auto externalize = [](GlobalValue &value) {
    if (!value.hasLocalLinkage())
      return;
    std::string name = ("__moe_local." + value.getName()).str();
    value.setName(name);
    value.setLinkage(GlobalValue::ExternalLinkage);
    value.setVisibility(GlobalValue::HiddenVisibility);
  };
  for (Function &function : module)
    externalize(function);
  for (GlobalVariable &variable : module.globals())
    externalize(variable);
  for (GlobalAlias &alias : module.aliases())
    externalize(alias);
}

/// The part of each function definition: largest first, each to the part
/// with the fewest instructions so far.
static DenseMap<const GlobalValue *, unsigned> assignParts(Module &module,
                                                           unsigned parts) {
  SmallVector<std::pair<unsigned, Function *>> sized;
  for (Function &function : module)
    if (!function.isDeclaration())
      sized.push_back({function.getInstructionCount(), &function});
  llvm::stable_sort(
      sized, [](const auto &a, const auto &b) { return a.first > b.first; });
  SmallVector<uint64_t> load(parts, 0);
  DenseMap<const GlobalValue *, unsigned> partOf;
  for (auto [size, function] : sized) {
    unsigned least = std::min_element(load.begin(), load.end()) - load.begin();
    partOf[function] = least;
    load[least] += size;
  }
  return partOf;
}

Expected<SmallVector<char, 0>> mlir::moe::compileInParts(
    std::unique_ptr<Module> module, unsigned parts, unsigned optLevel,
    const TargetMachineFactory &makeMachine, const RelocatableLinker &link) {
  unsigned definitions = 0;
  for (Function &function : *module)
    definitions += !function.isDeclaration();
  parts = std::max(1u, std::min(parts, definitions));
  if (parts == 1) {
    std::unique_ptr<TargetMachine> machine = makeMachine();
    if (!machine)
      return createStringError("cannot create the host TargetMachine");
    SmallVector<char, 0> object;
    if (Error err = optimiseAndEmit(*module, *machine, optLevel, object))
      return std::move(err);
    return object;
  }

  // Cut the module, and serialise each part: a part's thread reads it into
  // a context of its own (an LLVMContext serves one thread).
  externalizeLocals(*module);
  DenseMap<const GlobalValue *, unsigned> partOf = assignParts(*module, parts);
  SmallVector<SmallVector<char, 0>> bitcode(parts);
  for (unsigned part = 0; part < parts; ++part) {
    ValueToValueMapTy map;
    std::unique_ptr<Module> piece =
        CloneModule(*module, map, [&](const GlobalValue *value) {
          auto it = partOf.find(value);
          // Global variables and aliases go with the first part.
          return it == partOf.end() ? part == 0 : it->second == part;
        });
    raw_svector_ostream os(bitcode[part]);
    WriteBitcodeToFile(*piece, os);
  }
  std::string name = module->getModuleIdentifier();
  module.reset();

  SmallVector<PartResult> results(parts);
  {
    DefaultThreadPool pool(hardware_concurrency(parts));
    for (unsigned part = 0; part < parts; ++part) {
      pool.async([&, part] {
        PartResult &result = results[part];
        LLVMContext context;
        Expected<std::unique_ptr<Module>> piece = parseBitcodeFile(
            MemoryBufferRef(
                StringRef(bitcode[part].data(), bitcode[part].size()), name),
            context);
        if (!piece) {
          result.error = toString(piece.takeError());
          return;
        }
        std::unique_ptr<TargetMachine> machine = makeMachine();
        if (!machine) {
          result.error = "cannot create the host TargetMachine";
          return;
        }
        if (Error err =
                optimiseAndEmit(**piece, *machine, optLevel, result.object))
          result.error = toString(std::move(err));
      });
    }
    pool.wait();
  }
  SmallVector<SmallVector<char, 0>> objects;
  for (auto [part, result] : llvm::enumerate(results)) {
    if (!result.error.empty())
      return createStringError("part " + Twine(part + 1) + " of " +
                               Twine(parts) + ": " + result.error);
    objects.push_back(std::move(result.object));
  }
  return link(objects);
}
