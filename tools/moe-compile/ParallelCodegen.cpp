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
  // Code generation at -O0 (fast instruction selection and register
  // allocation): the optimised pipeline's register allocator does not skip
  // optnone functions, and on a launch sequence of 160,000 instructions it
  // took 23 of llc's 34 seconds (-O0: 5 s).
  if (optLevel == 0)
    machine.setOptLevel(CodeGenOptLevel::None);
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

/// Whether `function` is compiled without optimisation (optnone).
static bool isUnoptimised(const Function &function) {
  return function.hasFnAttribute(Attribute::OptimizeNone);
}

/// The part of each function definition: the optimised ones largest first,
/// each to the part with the fewest instructions so far; then each optnone
/// function to a part of its own, after those `parts`.
static DenseMap<const GlobalValue *, unsigned> assignParts(Module &module,
                                                           unsigned parts) {
  SmallVector<std::pair<unsigned, Function *>> sized;
  DenseMap<const GlobalValue *, unsigned> partOf;
  unsigned next = parts;
  for (Function &function : module) {
    if (function.isDeclaration())
      continue;
    if (isUnoptimised(function))
      partOf[&function] = next++;
    else
      sized.push_back({function.getInstructionCount(), &function});
  }
  llvm::stable_sort(
      sized, [](const auto &a, const auto &b) { return a.first > b.first; });
  SmallVector<uint64_t> load(parts, 0);
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
  unsigned optimised = 0, unoptimised = 0;
  for (Function &function : *module) {
    if (function.isDeclaration())
      continue;
    ++(isUnoptimised(function) ? unoptimised : optimised);
  }
  unsigned threads = std::max(1u, parts);
  parts = std::max(1u, std::min(parts, optimised));
  if (parts == 1 && unoptimised == 0) {
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
  // The optimised parts, then one part per optnone function, compiled at
  // -O0.
  unsigned optimisedParts = parts;
  parts += unoptimised;
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
    DefaultThreadPool pool(hardware_concurrency(std::min(threads, parts)));
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
        unsigned level = part < optimisedParts ? optLevel : 0;
        if (Error err =
                optimiseAndEmit(**piece, *machine, level, result.object))
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
