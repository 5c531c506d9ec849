//===- moe-compile.cpp - Compile a model description into an executable ---===//
//
// Part of the moe-mlir project.
//
// moe-compile parses a model description (one `moe.model`), writes its
// parameter manifest, builds the training step (`-moe-build-training-step`,
// docs/Training.md) unless --forward-only, lowers everything with
// `moe-lower-to-cpu` (or, for --target=cuda, `moe-lower-to-nvvm`: host code
// plus sm_90 PTX kernels embedded in it) into the LLVM dialect, translates
// that to LLVM IR, optimises and compiles it for the host with LLVM's
// TargetMachine, and links the object with the driver (driver/) into a
// native executable. By default that executable trains the model on a byte
// corpus (driver/Train.cpp); with --forward-only it initialises the weights,
// reads tokens, runs the forward pass and prints the loss. The CUDA
// executable carries moert's mgpu* adapter and needs only the CUDA driver
// (libcuda.so.1) at run time. The object comes from the compile cache
// (CompileCache.h) when this compiler already built it from the same input
// and options; --timing reports where a compile's time goes.
//
//===----------------------------------------------------------------------===//

#include "CallSequences.h"
#include "CompileCache.h"
#include "KernelsAhead.h"
#include "ParallelCodegen.h"

#include "moe/Conversion/MoEModelToFunc/MoEModelToFunc.h"
#include "moe/Import/HFNames.h"
#include "moe/Import/KimiConfig.h"
#include "moe/InitAll.h"
#include "moe/Pipelines/HoistAllocas.h"
#include "moe/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <mutex>

using namespace mlir;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

namespace {
enum class Target { CPU, CUDA };
enum class Emit { MLIR, LLVM, Object, Executable };
} // namespace

static cl::OptionCategory compileCategory("moe-compile options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.mlir|config.json>"),
                                          cl::init("-"),
                                          cl::cat(compileCategory));
static cl::opt<std::string> outputFilename("o",
                                           cl::desc("Output file (default: "
                                                    "a.out, or - for text "
                                                    "with --emit=mlir|llvm)"),
                                           cl::value_desc("path"),
                                           cl::cat(compileCategory));
static cl::opt<Target>
    target("target", cl::desc("Back end"), cl::init(Target::CPU),
           cl::values(clEnumValN(Target::CPU, "cpu", "the host CPU (default)"),
                      clEnumValN(Target::CUDA, "cuda",
                                 "an NVIDIA GPU (sm_90 PTX kernels)")),
           cl::cat(compileCategory));
static cl::opt<Emit>
    emit("emit", cl::desc("What to write"), cl::init(Emit::Executable),
         cl::values(clEnumValN(Emit::MLIR, "mlir",
                               "the lowered module (LLVM dialect)"),
                    clEnumValN(Emit::LLVM, "llvm", "optimised LLVM IR"),
                    clEnumValN(Emit::Object, "obj", "an object file"),
                    clEnumValN(Emit::Executable, "exe",
                               "a native executable (default)")),
         cl::cat(compileCategory));
static cl::opt<std::string>
    modelName("model",
              cl::desc("The moe.model to compile when the input has several "
                       "(its symbol name, without '@')"),
              cl::value_desc("name"), cl::cat(compileCategory));
static cl::opt<bool> forwardOnly(
    "forward-only",
    cl::desc("Build the loss-only program (one forward pass, 'loss <value>') "
             "instead of the training program"),
    cl::init(false), cl::cat(compileCategory));
static cl::opt<unsigned> dataParallel(
    "data-parallel",
    cl::desc("Train data parallel over N processes (-moe-shard{dp=N}): each "
             "takes 1/N of every batch, the gradient and the router "
             "balancing statistics are summed over the ranks with Gloo; start "
             "it with torchrun-style variables, e.g. scripts/launch-local.sh "
             "(docs/Distributed.md). --target=cpu only"),
    cl::value_desc("N"), cl::init(1), cl::cat(compileCategory));
static cl::opt<unsigned> expertParallel(
    "expert-parallel",
    cl::desc("Share the experts of every MoE layer among groups of P "
             "processes (-moe-shard{ep=P}): the rows of each expert go to "
             "the process that owns it and back. The program runs on "
             "--data-parallel x P processes, each with its own share of "
             "every batch. --target=cpu only"),
    cl::value_desc("P"), cl::init(1), cl::cat(compileCategory));

/// The processes of a sharded program: --data-parallel x --expert-parallel.
static unsigned worldSize() { return dataParallel * expertParallel; }
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM optimisation level (0-3)"),
                                  cl::init(2), cl::cat(compileCategory));
static cl::opt<unsigned> jobs(
    "jobs",
    cl::desc("Optimise and compile the host code in up to N parts, one "
             "thread each (default: the machine's hardware threads, at most "
             "8). The parts are cut at function boundaries and linked into "
             "one object with --cxx's '-r'; 1 compiles the module whole"),
    cl::value_desc("N"), cl::init(0), cl::cat(compileCategory));
static cl::opt<unsigned> hostOptimizeLimit(
    "host-optimize-limit",
    cl::desc("Host functions of more than N LLVM instructions (a step's "
             "sequence of kernel launches or kind calls) are compiled "
             "without optimisation (optnone): they only pass descriptors on, "
             "and LLVM's -O2 takes time superlinear in a function's size "
             "(kimi-linear-48b's training step: most of a minute). On the "
             "CPU their loops are moved to functions of their own first, "
             "which are optimised, and a function with floating-point "
             "arithmetic left is optimised whole. 0 optimises every "
             "function. Default: 2000 for --target=cuda (there the host "
             "functions only pass arguments to launches, and none of them "
             "runs while a CUDA graph replays the step), 20000 for the "
             "CPU"),
    cl::value_desc("N"), cl::cat(compileCategory));
static cl::opt<bool> showRemarks(
    "remarks",
    cl::desc("Print the compiler's remarks (for example which path each KDA "
             "tile took and why)"),
    cl::init(false), cl::cat(compileCategory));
static cl::opt<std::string>
    linkerDriver("cxx",
                 cl::desc("C++ compiler driver that links the executable "
                          "(default: the one that built moe-compile)"),
                 cl::value_desc("path"), cl::init(MOE_HOST_CXX),
                 cl::cat(compileCategory));
static cl::opt<std::string> driverLibrary(
    "driver-lib",
    cl::desc("The executable's main() library (default: "
             "libMoEModelMain.a, or libMoEModelMainCUDA.a for cuda, in the "
             "lib/ folder next to moe-compile's bin/ folder)"),
    cl::value_desc("path"), cl::cat(compileCategory));
static cl::opt<std::string> cudaDriverLibrary(
    "cuda-lib",
    cl::desc("The CUDA driver library a cuda executable links (default: "
             "the toolkit's stub libcuda.so that moe-compile was built "
             "with; the executable loads libcuda.so.1 at run time)"),
    cl::value_desc("path"), cl::cat(compileCategory));
static cl::opt<bool> cpuBlas(
    "blas",
    cl::desc("--target=cpu: run fp32 contractions with OpenBLAS through the "
             "CPU runtime (default on; --blas=false keeps them as loops)"),
    cl::init(true), cl::cat(compileCategory));
static cl::opt<bool> outlineKinds(
    "outline-kinds",
    cl::desc("Compile each kind of layer op group once: every instance calls "
             "one private function per kind (-moe-outline-kinds; same "
             "numbers, bit for bit on the CPU; on the GPU the kinds run on "
             "their caller's stream). Default on; --outline-kinds=false "
             "inlines every instance"),
    cl::init(true), cl::cat(compileCategory));
static cl::opt<bool> cpuProfile(
    "profile",
    cl::desc("--target=cpu: time every moe op (forward and gradient ops, by "
             "op kind); the executable prints the table to stderr at exit"),
    cl::init(false), cl::cat(compileCategory));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("The compile cache's folder (default: $XDG_CACHE_HOME/moe-mlir, "
             "else ~/.cache/moe-mlir). An object or executable compile is "
             "keyed by the SHA-256 of the input's name and text, every option "
             "that changes the object, the host CPU and this moe-compile "
             "executable's own SHA-256 (so a rebuilt compiler misses); a hit "
             "skips straight to linking"),
    cl::value_desc("dir"), cl::cat(compileCategory));
static cl::opt<bool> noCache("no-cache",
                             cl::desc("Neither read nor write the compile "
                                      "cache"),
                             cl::init(false), cl::cat(compileCategory));
static cl::opt<bool> timing(
    "timing",
    cl::desc("Print where the compile's time goes to stderr: reading and "
             "parsing, the MLIR passes (MLIR's pass timing, as "
             "--mlir-timing), LLVM IR translation, optimisation and object "
             "emission, the cache and the link; for --target=cuda also the "
             "PTX and ptxas time of the kernels"),
    cl::init(false), cl::cat(compileCategory));
static cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass, as mlir-opt does (about a "
             "fifth slower: for finding the pass that breaks a module). "
             "Without it the model is verified when it is parsed and the "
             "lowered module once before its translation to LLVM IR"),
    cl::init(false), cl::cat(compileCategory));
namespace {
enum class KernelsAheadMode { Off, On, Check };
} // namespace
static cl::opt<KernelsAheadMode> kernelsAhead(
    "kernels-ahead",
    cl::desc("--target=cuda: the kernel generators' gpu.modules lowered and "
             "serialized on a thread of their own while the host code is "
             "lowered (the executable is the same, the compile shorter)"),
    cl::values(clEnumValN(KernelsAheadMode::On, "on", "the default"),
               clEnumValN(KernelsAheadMode::Off, "off",
                          "with the other kernels, at the pipeline's end"),
               clEnumValN(KernelsAheadMode::Check, "check",
                          "both, and an error where the two lowerings of a "
                          "module differ (slower; for tests)")),
    cl::init(KernelsAheadMode::On), cl::cat(compileCategory));
static cl::opt<std::string> gpuFormat(
    "gpu-format",
    cl::desc("Kernel format of --target=cuda: isa (PTX, compiled by the "
             "driver when the executable starts; the default), bin (cubin, "
             "needs ptxas here) or fatbin"),
    cl::value_desc("isa|bin|fatbin"), cl::init("isa"),
    cl::cat(compileCategory));
static cl::opt<std::string> matmulPrecision(
    "matmul-precision",
    cl::desc("Precision policy of --target=cuda's generated GEMMs: bf16 "
             "(f32 operands rounded to bf16, fp32 accumulation; the "
             "default) or exact (only operands already bf16 go to tensor "
             "cores, f32 ones stay fp32)"),
    cl::value_desc("bf16|exact"), cl::init("bf16"), cl::cat(compileCategory));

static cl::opt<std::string> gpuPipelineOptions(
    "gpu-pipeline-options",
    cl::desc("--target=cuda: further options of the moe-lower-to-nvvm "
             "pipeline, in its textual form (e.g. 'share-tile-memory=true "
             "tile-blocks-per-sm=3'; `moe-opt --help` lists them); they win "
             "over --gpu-format and --matmul-precision"),
    cl::value_desc("options"), cl::init(""), cl::cat(compileCategory));

/// The name of the compiled forward function, which the driver calls.
static constexpr llvm::StringLiteral kEntryName = "moe_model_forward";
/// The name of the compiled train step (docs/Training.md), which the
/// training driver calls.
static constexpr llvm::StringLiteral kTrainStepName = "moe_model_train_step";
/// The pass that builds @<model>_grad and @<model>_train_step.
static constexpr llvm::StringLiteral kTrainingPass = "moe-build-training-step";
/// The pass that marks a model data parallel before it (--data-parallel).
static constexpr llvm::StringLiteral kShardPass = "moe-shard";
/// The name of the manifest global, which the driver reads.
static constexpr llvm::StringLiteral kManifestName = "moe_model_manifest";

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Prints `moe-compile: error: <message>` and returns failure.
static LogicalResult toolError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "moe-compile") << message << "\n";
  return failure();
}

namespace {
/// The first pass that failed (passes run on several threads).
class FirstFailedPass : public PassInstrumentation {
public:
  explicit FirstFailedPass(std::string &name) : name(name) {}
  void runAfterPassFailed(Pass *pass, Operation *) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (name.empty())
      name = pass->getArgument().empty() ? pass->getName().str()
                                         : "-" + pass->getArgument().str();
  }

private:
  std::string &name;
  std::mutex mutex;
};
} // namespace

/// Runs `pm` on `module`. A pass that fails without an error of its own
/// (an upstream rewrite driver that gave up, say) is reported by name, so
/// that no compile fails in silence.
static LogicalResult runPasses(PassManager &pm, ModuleOp module) {
  std::string failedPass;
  pm.addInstrumentation(std::make_unique<FirstFailedPass>(failedPass));
  std::atomic<unsigned> errors = 0;
  ScopedDiagnosticHandler countErrors(
      module.getContext(), [&](Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
          ++errors;
        return failure(); // printed by the handler below this one
      });
  if (succeeded(pm.run(module)))
    return success();
  if (errors == 0)
    return toolError(
        "the pass " +
        (failedPass.empty() ? std::string("pipeline") : failedPass) +
        " failed without an error message (a bug of "
        "moe-compile: please report it with the model)");
  return failure();
}

/// Whether the input is a Kimi-Linear config.json rather than a model
/// description: a .json file, or text that starts with a JSON object.
static bool isKimiConfig(StringRef fileName, StringRef text) {
  if (fileName.ends_with(".json"))
    return true;
  text = text.ltrim();
  return text.starts_with("{") && !text.starts_with("{-#");
}

/// Imports the config in `sourceMgr`'s main buffer (moe-import-config's
/// work, docs/ConfigImport.md); prints its diagnostics.
static OwningOpRef<ModuleOp> importConfig(llvm::SourceMgr &sourceMgr,
                                          MLIRContext *context) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef name =
      inputFilename == "-" ? StringRef("<stdin>") : StringRef(inputFilename);
  SmallVector<moe::ConfigDiagnostic> diagnostics;
  FailureOr<moe::ImportedModel> imported = moe::importKimiConfig(
      buffer->getBuffer(), context, diagnostics,
      llvm::sys::path::filename(name),
      inputFilename == "-" ? "kimi_linear"
                           : moe::modelNameFromFileName(inputFilename));
  for (const moe::ConfigDiagnostic &diag : diagnostics)
    diag.print(llvm::errs(), name);
  if (failed(imported))
    return nullptr;
  return std::move(imported->module);
}

/// Picks the model to compile and erases the others.
static FailureOr<moe::ModelOp> selectModel(ModuleOp module) {
  SmallVector<moe::ModelOp> models(module.getOps<moe::ModelOp>());
  if (models.empty()) {
    // Point at the first op: an implicit module has no line of its own.
    Location loc = module.getBody()->empty()
                       ? module.getLoc()
                       : module.getBody()->front().getLoc();
    emitError(loc)
        << "expects a moe.model at the top level of the input, found none";
    return failure();
  }
  moe::ModelOp chosen;
  if (!modelName.empty()) {
    for (moe::ModelOp model : models)
      if (model.getSymName() == llvm::StringRef(modelName).ltrim('@'))
        chosen = model;
    if (!chosen) {
      InFlightDiagnostic diag = emitError(module.getLoc())
                                << "no moe.model named @" << modelName;
      for (moe::ModelOp model : models)
        diag.attachNote(model.getLoc()) << "available: @" << model.getSymName();
      return failure();
    }
  } else if (models.size() > 1) {
    InFlightDiagnostic diag = emitError(models[1].getLoc())
                              << "the input holds " << models.size()
                              << " models; choose one with --model=NAME";
    for (moe::ModelOp model : models)
      diag.attachNote(model.getLoc()) << "model @" << model.getSymName();
    return failure();
  } else {
    chosen = models.front();
  }
  for (moe::ModelOp model : models)
    if (model != chosen)
      model.erase();
  return chosen;
}

/// Checks what the driver relies on: i32 token ids and labels (the model
/// verifier already checks their rank).
static LogicalResult checkDriverABI(moe::ModelOp model) {
  const char *names[] = {"token ids", "labels"};
  for (auto [index, what] : llvm::enumerate(names)) {
    auto type = cast<RankedTensorType>(
        model.getBody().front().getArgument(index).getType());
    if (!type.getElementType().isSignlessInteger(32))
      return model.emitOpError("expects ")
             << what << " of type tensor<?x?xi32> for moe-compile's driver, "
             << "got " << type;
  }
  auto tokens = cast<RankedTensorType>(model.getTokens().getType());
  auto labels = cast<RankedTensorType>(model.getLabels().getType());
  if (tokens.getShape() != labels.getShape())
    return model.emitOpError("expects token ids and labels of the same shape "
                             "for moe-compile's driver, got ")
           << tokens << " and " << labels;
  return success();
}

/// The manifest the driver parses (see driver/ModelMain.cpp): the model's
/// name, sizes and every parameter's slot and initialiser.
static FailureOr<std::string> buildManifest(moe::ModelOp model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto tokens = cast<RankedTensorType>(model.getTokens().getType());
  auto dim = [&](int64_t i) {
    return tokens.isDynamicDim(i) ? int64_t(-1) : tokens.getDimSize(i);
  };
  os << "moe-model 1\n"
     << "name " << model.getSymName() << "\n"
     << "vocab " << model.getVocabSize() << "\n"
     << "hidden " << model.getHiddenSize() << "\n"
     << "tokens " << dim(0) << " " << dim(1) << "\n"
     << "scalars " << moe::getNumParamScalars(model) << "\n";
  // The Hugging Face (Kimi-Linear) names, for the driver's --hf-names.
  llvm::StringMap<moe::HFParamName> hfNames;
  for (moe::HFParamName &name : moe::getHFParamNames(model))
    hfNames[name.paramName] = std::move(name);
  // A file needs distinct names: a Hugging Face name that another
  // parameter already has (as its own or as its Hugging Face name) is
  // dropped with a warning, that parameter keeps its moe.param name.
  llvm::StringSet<> taken;
  SmallVector<moe::ParamOp> params;
  for (const moe::ParamSlot &slot : moe::getParamLayout(model))
    params.push_back(slot.param);
  for (moe::ParamOp param : params)
    taken.insert(param.getParamName());
  for (moe::ParamOp param : params) {
    auto hf = hfNames.find(param.getParamName());
    if (hf == hfNames.end())
      continue;
    if (hf->second.hfName == param.getParamName())
      continue;
    if (!taken.insert(hf->second.hfName).second) {
      param.emitWarning()
          << "has the Hugging Face name '" << hf->second.hfName
          << "' that another parameter already has; --hf-names keeps "
             "its moe.param name";
      hfNames.erase(hf);
    }
  }
  for (const moe::ParamSlot &slot : moe::getParamLayout(model)) {
    moe::ParamOp param = slot.param;
    if (param.getParamName().contains('\n') ||
        param.getParamName().contains('\0'))
      return param.emitOpError("expects a parameter name without newlines or "
                               "NUL characters");
    moe::InitAttr init = param.getInit();
    auto value = [](std::optional<APFloat> v) {
      return v ? v->convertToDouble() : 0.0;
    };
    os << "param " << slot.offset << " " << param.getNumElements() << " "
       << moe::stringifyInitKind(init.getKind()) << " "
       << llvm::format("%.17g %.17g %.17g", value(init.getStd()),
                       value(init.getLow()), value(init.getHigh()))
       << " " << param.getType().getRank();
    for (int64_t size : param.getType().getShape())
      os << " " << size;
    os << " " << param.getParamName() << "\n";
    // `hf <transposed> <per-expert> <name>`: the parameter's checkpoint key
    // and layout in a Kimi-Linear checkpoint. A layout the shape cannot
    // have (a transpose of fewer than two dimensions, a per-expert split of
    // a scalar) leaves the parameter without one.
    auto hf = hfNames.find(param.getParamName());
    if (hf == hfNames.end())
      continue;
    const moe::HFParamName &name = hf->second;
    int64_t rank = param.getType().getRank();
    if ((name.transposed && rank < (name.perExpert ? 3 : 2)) ||
        (name.perExpert && rank < 1) ||
        llvm::StringRef(name.hfName).contains('\n'))
      continue;
    os << "hf " << (name.transposed ? 1 : 0) << " " << (name.perExpert ? 1 : 0)
       << " " << name.hfName << "\n";
  }
  return text;
}

/// Adds the manifest to the lowered module as a constant NUL-terminated
/// byte array with external linkage.
static void addManifestGlobal(ModuleOp module, llvm::StringRef manifest) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string bytes = manifest.str();
  bytes.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, kManifestName,
                         b.getStringAttr(bytes));
}

/// Fails if the input defines a symbol that moe-compile reserves.
static LogicalResult checkReservedSymbols(ModuleOp module) {
  for (llvm::StringRef name : {kEntryName, kTrainStepName})
    if (SymbolTable::lookupSymbolIn(module, name))
      return emitError(module.getLoc())
             << "the input already defines the symbol @" << name
             << ", which moe-compile reserves for the model";
  return success();
}

/// Checks that `step` has the ABI of docs/Training.md that the driver
/// calls: (params, m, v, tokens, labels, hyper<8>) -> (loss, params, m, v,
/// metrics<M>), with P = `scalars`. Returns M.
static FailureOr<int64_t> checkTrainStepABI(func::FuncOp step,
                                            int64_t scalars) {
  FunctionType type = step.getFunctionType();
  auto vector = [](Type t, int64_t size) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getRank() == 1 && tensor.getElementType().isF32() &&
           (size < 0 ? !tensor.isDynamicDim(0) : tensor.getDimSize(0) == size);
  };
  auto tokens = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getRank() == 2 &&
           tensor.getElementType().isSignlessInteger(32);
  };
  auto scalar = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getRank() == 0 && tensor.getElementType().isF32();
  };
  bool ok = type.getNumInputs() == 6 && type.getNumResults() == 5 &&
            vector(type.getInput(0), scalars) &&
            vector(type.getInput(1), scalars) &&
            vector(type.getInput(2), scalars) && tokens(type.getInput(3)) &&
            tokens(type.getInput(4)) && vector(type.getInput(5), 8) &&
            scalar(type.getResult(0)) && vector(type.getResult(1), scalars) &&
            vector(type.getResult(2), scalars) &&
            vector(type.getResult(3), scalars) && vector(type.getResult(4), -1);
  if (!ok)
    return step.emitOpError("does not have the train step signature of "
                            "docs/Training.md that moe-compile's driver "
                            "calls: (tensor<")
           << scalars << "xf32> x3, tensor<?x?xi32> x2, tensor<8xf32>) -> "
           << "(tensor<f32>, tensor<" << scalars
           << "xf32> x3, tensor<Mxf32>); got " << type;
  return cast<RankedTensorType>(type.getResult(4)).getDimSize(0);
}

/// The manifest lines of the train step's metrics: `metrics <M>`, then
/// `metric <offset> <count> <name>` for each run of equal names of its
/// `moe.metric_names` (one name per entry of the metrics vector).
static FailureOr<std::string> buildMetricManifest(func::FuncOp step,
                                                  int64_t numMetrics) {
  auto names = step->getAttrOfType<ArrayAttr>("moe.metric_names");
  if (!names)
    return step.emitOpError("has no 'moe.metric_names' array, which names "
                            "the entries of its metrics result");
  if (static_cast<int64_t>(names.size()) != numMetrics)
    return step.emitOpError("names ")
           << names.size() << " metrics in 'moe.metric_names', but returns "
           << numMetrics;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "metrics " << numMetrics << "\n";
  for (int64_t i = 0; i < numMetrics;) {
    auto name = dyn_cast<StringAttr>(names[i]);
    if (!name || name.getValue().empty() || name.getValue().contains('\n') ||
        name.getValue().contains('\0'))
      return step.emitOpError("expects 'moe.metric_names' to hold non-empty "
                              "one-line strings; entry ")
             << i << " is " << names[i];
    int64_t end = i + 1;
    while (end < numMetrics && names[end] == names[i])
      ++end;
    os << "metric " << i << " " << end - i << " " << name.getValue() << "\n";
    i = end;
  }
  return text;
}

/// Builds the functions the driver calls: the training step and the
/// forward loss by -moe-build-training-step (the forward alone with
/// --forward-only), renamed kTrainStepName and kEntryName. Appends the
/// train step's lines to `manifest`.
static LogicalResult buildProgram(ModuleOp module, moe::ModelOp model,
                                  std::string &manifest, TimingScope &timer) {
  if (failed(checkReservedSymbols(module)))
    return failure();
  std::string name = model.getSymName().str();
  int64_t scalars = moe::getNumParamScalars(model);
  IRRewriter rewriter(module.getContext());
  if (forwardOnly) {
    func::FuncOp func = moe::convertModelToFunc(model, rewriter);
    SymbolTable::setSymbolName(func, kEntryName);
    manifest += "program forward\n";
    return success();
  }

  const PassInfo *pass = PassInfo::lookup(kTrainingPass);
  if (!pass)
    return toolError("this moe-compile has no -" + kTrainingPass +
                     " pass, so it cannot build a training program; pass "
                     "--forward-only for the loss-only program");
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableTiming(timer);
  pm.enableVerifier(verifyEach);
  auto passError = [](const llvm::Twine &message) {
    return toolError(message);
  };
  if (worldSize() > 1) {
    const PassInfo *shard = PassInfo::lookup(kShardPass);
    if (!shard)
      return toolError("this moe-compile has no -" + kShardPass +
                       " pass, so it cannot build a data-parallel program");
    if (failed(shard->addToPipeline(pm,
                                    "dp=" + std::to_string(dataParallel) +
                                        " ep=" + std::to_string(expertParallel),
                                    passError)))
      return failure();
  }
  if (failed(pass->addToPipeline(pm, "", passError)))
    return failure();
  if (failed(runPasses(pm, module)))
    return failure();

  auto train = dyn_cast_or_null<func::FuncOp>(
      SymbolTable::lookupSymbolIn(module, name + "_train_step"));
  if (!train)
    return emitError(module.getLoc())
           << "-" << kTrainingPass << " built no @" << name << "_train_step";
  // The forward loss: built by the pass, or still the model.
  Operation *named = SymbolTable::lookupSymbolIn(module, name);
  auto forward = dyn_cast_or_null<func::FuncOp>(named);
  if (!forward) {
    auto rest = dyn_cast_or_null<moe::ModelOp>(named);
    if (!rest)
      return emitError(module.getLoc())
             << "-" << kTrainingPass << " left neither a model nor a "
             << "function @" << name << " (the forward loss)";
    forward = moe::convertModelToFunc(rest, rewriter);
  }
  FailureOr<int64_t> numMetrics = checkTrainStepABI(train, scalars);
  if (failed(numMetrics))
    return failure();
  FailureOr<std::string> metrics = buildMetricManifest(train, *numMetrics);
  if (failed(metrics))
    return failure();
  SymbolTable symbols(module);
  if (failed(symbols.rename(forward, kEntryName)) ||
      failed(symbols.rename(train, kTrainStepName)))
    return failure();
  // The driver calls neither @<model>_grad nor anything else that is not
  // used by these two.
  for (func::FuncOp func :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (func != forward && func != train && func.isPublic() &&
        SymbolTable::symbolKnownUseEmpty(func, module))
      func.erase();
  manifest += "program train\n" + *metrics;
  if (worldSize() > 1)
    manifest += "data_parallel " + std::to_string(worldSize()) + "\n";
  if (expertParallel > 1)
    manifest += "expert_parallel " + std::to_string(expertParallel) + "\n";
  return success();
}

/// The parts of the host code's LLVM compile (--jobs, or the default).
static unsigned hostParts() {
  if (jobs > 0)
    return jobs;
  return std::clamp(llvm::hardware_concurrency().compute_thread_count(), 1u,
                    8u);
}

/// --host-optimize-limit as given, else the target's default. On the GPU
/// the host functions only pass descriptors to launches: kimi-tiny's five
/// longest (the step and four kinds) at -O0 halve its host LLVM time (3.0
/// to 1.5 s); its object's code grows by 16 % (72,745 to 84,272 x86
/// instructions of straight-line launch code), which runs only when no
/// CUDA graph replays the step.
static unsigned effectiveHostOptimizeLimit() {
  constexpr unsigned kCudaDefault = 2000, kCpuDefault = 20000;
  if (hostOptimizeLimit.getNumOccurrences())
    return hostOptimizeLimit;
  return target == Target::CUDA ? kCudaDefault : kCpuDefault;
}

/// --outline-kinds as given (on by default for both targets).
static bool useOutlineKinds() { return outlineKinds; }

/// What --kernels-ahead gave, for --timing (set by lowerToNVVM).
static std::optional<moe::KernelsAheadResult> kernelsAheadResult;

/// Lowers the module in place with moe-lower-to-nvvm, in its three parts
/// with --kernels-ahead.
static LogicalResult lowerToNVVM(ModuleOp module, TimingScope &timer) {
  moe::LowerToNVVMOptions options;
  options.format = gpuFormat;
  options.matmulPrecision = matmulPrecision;
  options.outlineKinds = useOutlineKinds();
  // Checked in main before any work.
  if (failed(options.parseFromString(gpuPipelineOptions)))
    return failure();
  auto runPart = [&](auto addPasses) -> LogicalResult {
    PassManager pm(module.getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.enableTiming(timer);
    pm.enableVerifier(verifyEach);
    addPasses(pm, options);
    return runPasses(pm, module);
  };
  // One thread would wait for the other (unless checking).
  bool oneThread = !module.getContext()->isMultithreadingEnabled() ||
                   llvm::hardware_concurrency().compute_thread_count() < 2;
  if (kernelsAhead == KernelsAheadMode::Off ||
      (kernelsAhead == KernelsAheadMode::On && oneThread))
    return runPart(moe::buildLowerToNVVMPipeline);

  if (failed(runPart(moe::addNVVMKernelGenerationPasses)))
    return failure();
  moe::KernelsAhead ahead(
      module,
      kernelsAhead == KernelsAheadMode::Check ? moe::KernelsAhead::Mode::Check
                                              : moe::KernelsAhead::Mode::Move,
      [&](OpPassManager &pm) { moe::addNVVMLoweringPasses(pm, options); },
      [&](OpPassManager &pm) { moe::addNVVMSerializationPasses(pm, options); },
      verifyEach);
  auto finish = [&]() -> LogicalResult {
    TimingScope wait = timer.nest("wait for the kernels serialized ahead");
    FailureOr<moe::KernelsAheadResult> result = ahead.finish(module);
    if (failed(result))
      return failure();
    kernelsAheadResult = *result;
    return success();
  };
  if (failed(runPart(moe::addNVVMLoweringPasses)))
    return failure();
  // Checking compares the main module's gpu.modules before they are
  // serialized. Else the placeholders stay gpu.binary ops through the
  // host's conversion (only the translation to LLVM IR reads their
  // objects), so all of the main module's passes run before the wait.
  if (kernelsAhead == KernelsAheadMode::Check)
    return failure(failed(finish()) ||
                   failed(runPart(moe::addNVVMSerializationPasses)));
  return failure(failed(runPart(moe::addNVVMSerializationPasses)) ||
                 failed(finish()));
}

/// Lowers the module in place with moe-lower-to-cpu or moe-lower-to-nvvm.
static LogicalResult lowerToLLVMDialect(ModuleOp module, TimingScope &timer) {
  if (target == Target::CUDA)
    return lowerToNVVM(module, timer);
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableTiming(timer);
  pm.enableVerifier(verifyEach);
  moe::LowerToCPUOptions options;
  options.blas = cpuBlas;
  options.profile = cpuProfile;
  options.outlineKinds = useOutlineKinds();
  moe::buildLowerToCPUPipeline(pm, options);
  return runPasses(pm, module);
}

namespace {
/// What the host code is compiled for: a CPU executable is tuned for this
/// machine; a CUDA one runs on the GPU's host, so it asks for x86-64-v3
/// (AVX2) only. Part of the cache key.
struct HostTarget {
  llvm::Triple triple;
  std::string cpu;
  /// "+feature,-feature,...", as the TargetMachine gets them.
  std::string features;
  /// The same, sorted by name: the same features give the same cache key.
  std::string sortedFeatures;
};
} // namespace

static HostTarget getHostTarget() {
  HostTarget host;
  host.triple = llvm::Triple(llvm::sys::getDefaultTargetTriple());
  host.cpu = llvm::sys::getHostCPUName().str();
  if (target == Target::CUDA && host.triple.getArch() == llvm::Triple::x86_64) {
    host.cpu = "x86-64-v3";
  } else if (target == Target::CPU) {
    llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
    SmallVector<std::string> names;
    for (const auto &feature : hostFeatures) {
      std::string name = (feature.second ? "+" : "-") + feature.first().str();
      host.features += name + ",";
      names.push_back(name);
    }
    llvm::sort(names, [](const std::string &a, const std::string &b) {
      return StringRef(a).drop_front() < StringRef(b).drop_front();
    });
    for (const std::string &name : names)
      host.sortedFeatures += name + ",";
  }
  return host;
}

/// Tunes every function for a generic x86-64 while it keeps the host's
/// instruction set (clang's -march=native -mtune=generic). The host's own
/// scheduling models (znver3 here, Haswell for x86-64-v3) declare a loop
/// buffer, which turns on LLVM's partial and runtime unrolling of every
/// loop: kimi-tiny's CPU training module then took 25 s to optimise and
/// 17 s to compile instead of 13 s and 11 s (LoopUnrollPass alone 10 s),
/// for an object half as large again.
static void tuneForGenericCPU(llvm::Module &module) {
  if (!llvm::Triple(module.getTargetTriple()).isX86())
    return;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.hasFnAttribute("tune-cpu"))
      function.addFnAttr("tune-cpu", "generic");
}

/// The TargetMachine for `host` (PIC, so that the object links into a PIE).
static std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(const HostTarget &host) {
  const llvm::Triple &triple = host.triple;
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget) {
    (void)toolError("no LLVM target for " + triple.str() + ": " + error);
    return nullptr;
  }
  llvm::CodeGenOptLevel level =
      optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : optLevel == 0 ? llvm::CodeGenOptLevel::None
                      : llvm::CodeGenOptLevel::Default;
  return std::unique_ptr<llvm::TargetMachine>(llvmTarget->createTargetMachine(
      triple, host.cpu, host.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, level));
}

/// Writes `bytes` to `path` (removed again if writing fails).
static LogicalResult writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return toolError("cannot write " + path + ": " + ec.message());
  out.os() << bytes;
  out.os().close();
  if (out.os().has_error()) {
    ec = out.os().error();
    out.os().clear_error();
    return toolError("cannot write " + path + ": " + ec.message());
  }
  out.keep();
  return success();
}

#ifdef MOE_MODEL_MAIN_CUDA_LIB
static constexpr const char *kCudaDriverMain = MOE_MODEL_MAIN_CUDA_LIB;
static constexpr const char *kCudaDriverLib = MOE_CUDA_DRIVER_LIB;
#else
static constexpr const char *kCudaDriverMain = "";
static constexpr const char *kCudaDriverLib = "";
#endif

/// The driver library: --driver-lib, else libMoEModelMain.a (or
/// libMoEModelMainCUDA.a) in the lib/ folder next to moe-compile's bin/
/// folder, else where the build put it.
static std::string findDriverLibrary(const char *argv0) {
  if (!driverLibrary.empty())
    return driverLibrary;
  bool cuda = target == Target::CUDA;
  std::string self =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&findDriverLibrary);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
  llvm::sys::path::append(path, "lib",
                          cuda ? "libMoEModelMainCUDA.a" : "libMoEModelMain.a");
  if (llvm::sys::fs::exists(path))
    return std::string(path);
  return cuda ? kCudaDriverMain : MOE_MODEL_MAIN_LIB;
}

/// The CPU runtime library (moe_cpu_contract_f32, ...): libMoECpuRuntime.a
/// in the lib/ folder next to moe-compile's bin/ folder, else where the
/// build put it.
static std::string findCpuRuntimeLibrary(const char *argv0) {
  std::string self =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&findCpuRuntimeLibrary);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
  llvm::sys::path::append(path, "lib", "libMoECpuRuntime.a");
  if (llvm::sys::fs::exists(path))
    return std::string(path);
  return MOE_CPU_RUNTIME_LIB;
}

/// The distributed runtime (moe_dist_*, Gloo): libMoEDistRuntime.a next to
/// the CPU runtime.
static std::string findDistRuntimeLibrary(const char *argv0) {
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(findCpuRuntimeLibrary(argv0)));
  llvm::sys::path::append(path, "libMoEDistRuntime.a");
  if (llvm::sys::fs::exists(path))
    return std::string(path);
  return MOE_DIST_RUNTIME_LIB;
}

/// Links `object` with the driver into the executable `output`.
/// Runs the linker command `args` (args[0] the program): "" when it
/// succeeds, else " (why):" and the command line, for an error message.
static std::string runLinker(llvm::ArrayRef<std::string> args) {
  SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(args.front(), argRefs, std::nullopt,
                                         {}, 0, 0, &message);
  if (status == 0)
    return "";
  std::string failure =
      (message.empty() ? "" : " (" + message + ")") + std::string(":");
  for (const std::string &arg : args)
    failure += " " + arg;
  return failure;
}

static LogicalResult linkExecutable(llvm::StringRef object,
                                    llvm::StringRef output, const char *argv0) {
  std::string driver = findDriverLibrary(argv0);
  if (!llvm::sys::fs::exists(driver))
    return toolError("cannot find the driver library '" + driver +
                     "' (build the MoEModelMain target, or pass "
                     "--driver-lib=PATH)");
  llvm::ErrorOr<std::string> cxx = llvm::sys::findProgramByName(linkerDriver);
  if (!cxx)
    return toolError("cannot find the C++ compiler '" + linkerDriver +
                     "' to link with (pass --cxx=PATH)");
  SmallVector<std::string> args = {*cxx, object.str(), driver, "-o",
                                   output.str()};
  if (target == Target::CUDA) {
    // The driver library carries moert's mgpu* adapter and memrefCopy; the
    // executable needs only the CUDA driver, found at run time under its
    // soname (libcuda.so.1).
    std::string cudaLib = cudaDriverLibrary.empty()
                              ? std::string(kCudaDriverLib)
                              : cudaDriverLibrary.getValue();
    if (!llvm::sys::fs::exists(cudaLib))
      return toolError("cannot find the CUDA driver library '" + cudaLib +
                       "' to link with (pass --cuda-lib=PATH, for example "
                       "the toolkit's lib64/stubs/libcuda.so)");
    args.append({cudaLib, "-lm"});
  } else {
    // The CPU runtime runs contractions with OpenBLAS.
    std::string runtime = findCpuRuntimeLibrary(argv0);
    if (!llvm::sys::fs::exists(runtime))
      return toolError("cannot find the CPU runtime library '" + runtime +
                       "' (build the MoECpuRuntime target)");
    args.append({runtime, "-lopenblas"});
    // A data-parallel program's collectives call the distributed runtime,
    // which runs them with Gloo.
    if (worldSize() > 1) {
      std::string dist = findDistRuntimeLibrary(argv0);
      if (!llvm::sys::fs::exists(dist))
        return toolError("cannot find the distributed runtime library '" +
                         dist + "' (build the MoEDistRuntime target)");
      args.append({dist, "-lgloo", "-lpthread"});
    }
    // memref.copy of strided buffers calls memrefCopy from MLIR's C runner
    // utils, and f32 -> bf16 truncation __truncsfbf2 from its float16
    // utils; the rpath lets the executable run from anywhere.
    std::string libDir = MOE_LLVM_LIBRARY_DIR;
    args.append({"-L" + libDir, "-Wl,-rpath," + libDir, "-Wl,--as-needed",
                 "-lmlir_c_runner_utils", "-lmlir_float16_utils", "-lm"});
  }
  // A sanitizer build's driver and runtime libraries are instrumented: the
  // executable links the sanitizers' runtimes too.
  for (llvm::StringRef flag :
       llvm::split(llvm::StringRef(MOE_HOST_LINK_FLAGS), ' '))
    if (!flag.empty())
      args.push_back(flag.str());
  if (std::string failure = runLinker(args); !failure.empty())
    return toolError("linking failed" + failure);
  return success();
}

/// Links the parts' objects of moe::compileInParts into one relocatable
/// object with the C++ compiler driver (`-r`).
static llvm::Expected<SmallVector<char, 0>>
linkRelocatable(llvm::ArrayRef<SmallVector<char, 0>> objects) {
  llvm::ErrorOr<std::string> cxx = llvm::sys::findProgramByName(linkerDriver);
  if (!cxx)
    return llvm::createStringError(
        "cannot find the C++ compiler '" + linkerDriver +
        "' to join the parts with (pass --cxx=PATH, or --jobs=1)");
  SmallVector<std::string> args = {*cxx, "-r", "-nostdlib", "-o"};
  SmallVector<std::unique_ptr<llvm::FileRemover>> removers;
  auto temporary = [&](llvm::SmallString<128> &path) -> llvm::Error {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("moe-compile", "o", path))
      return llvm::createStringError("cannot create a temporary object file: " +
                                     ec.message());
    removers.push_back(std::make_unique<llvm::FileRemover>(path));
    return llvm::Error::success();
  };
  llvm::SmallString<128> joined;
  if (llvm::Error err = temporary(joined))
    return std::move(err);
  args.push_back(joined.str().str());
  for (const SmallVector<char, 0> &object : objects) {
    llvm::SmallString<128> path;
    if (llvm::Error err = temporary(path))
      return std::move(err);
    if (failed(writeFile(path, llvm::StringRef(object.data(), object.size()))))
      return llvm::createStringError("cannot write " + path);
    args.push_back(path.str().str());
  }
  if (std::string failure = runLinker(args); !failure.empty())
    return llvm::createStringError("joining the parts failed" + failure);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(joined);
  if (!buffer)
    return llvm::createStringError("cannot read " + joined + ": " +
                                   buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return SmallVector<char, 0>(bytes.begin(), bytes.end());
}

//===----------------------------------------------------------------------===//
// Compile cache and timing report
//===----------------------------------------------------------------------===//

/// Why the cache cannot stand in for this compile, or "" if it can: a cache
/// hit would skip what --remarks and MLIR's debugging options (printing IR,
/// pass statistics, ...) print, and their effect on the object is unknown.
/// Options that only time the compile (--timing, --mlir-timing*) are fine.
static std::string getCacheBypassReason() {
  if (showRemarks)
    return "--remarks prints what the compile finds";
  for (const auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    if (option->getNumOccurrences() == 0 ||
        entry.first.starts_with("mlir-timing") ||
        llvm::is_contained(option->Categories, &compileCategory) ||
        llvm::is_contained(option->Categories, &llvm::getColorCategory()))
      continue;
    return "--" + entry.first.str() + " is given";
  }
  return "";
}

/// The cache key of this compile: this moe-compile, the input's name (it
/// reaches the executable through locations, e.g. in shape-check messages)
/// and text, every option that changes the object, and the host target.
/// --emit=obj and --emit=exe share entries: both compile the same object.
static FailureOr<std::string> buildCacheKey(llvm::StringRef input,
                                            const HostTarget &host,
                                            const char *argv0) {
  llvm::Expected<std::string> compiler =
      moe::getCompilerIdentity(argv0, (void *)&buildCacheKey);
  if (!compiler) {
    llvm::WithColor::warning(llvm::errs(), "moe-compile")
        << "not using the compile cache: "
        << llvm::toString(compiler.takeError()) << "\n";
    return failure();
  }
  moe::CacheKeyBuilder key;
  key.add("moe-compile", *compiler);
  key.add("llvm", LLVM_VERSION_STRING);
  // The shared libLLVM and libMLIR, which a package update may replace
  // under the same version.
  key.add("libllvm",
          moe::describeLoadedFile((const void *)&llvm::sys::getHostCPUName));
  key.add("libmlir", moe::describeLoadedFile(
                         (const void *)&mlir::translateModuleToLLVMIR));
  key.add("input-name", inputFilename);
  key.add("input", input);
  key.add("model", modelName);
  key.add("target", target == Target::CUDA ? "cuda" : "cpu");
  key.add("forward-only", forwardOnly ? "1" : "0");
  key.add("data-parallel", std::to_string(dataParallel));
  key.add("expert-parallel", std::to_string(expertParallel));
  key.add("opt-level", std::to_string(optLevel));
  key.add("host-optimize-limit", std::to_string(effectiveHostOptimizeLimit()));
  // The same code, cut differently: another object.
  key.add("jobs", std::to_string(hostParts()));
  key.add("blas", cpuBlas ? "1" : "0");
  key.add("profile", cpuProfile ? "1" : "0");
  key.add("outline-kinds", useOutlineKinds() ? "1" : "0");
  key.add("gpu-format", gpuFormat);
  key.add("matmul-precision", matmulPrecision);
  key.add("gpu-pipeline-options", gpuPipelineOptions);
  key.add("verify-each", verifyEach ? "1" : "0");
  // --kernels-ahead changes no byte of the result but for =check, which
  // must run.
  key.add("kernels-ahead-check",
          kernelsAhead == KernelsAheadMode::Check ? "1" : "0");
  key.add("triple", host.triple.str());
  key.add("cpu", host.cpu);
  key.add("features", host.sortedFeatures);
  // The kernels link the toolkit's libdevice, and --gpu-format=bin|fatbin
  // run its ptxas.
  if (target == Target::CUDA) {
    const char *cudaHome = std::getenv("CUDA_HOME");
    key.add("cuda-home", cudaHome ? cudaHome : "");
  }
  return key.finish();
}

namespace {
/// The kernels' compile times that the serializer records on each
/// gpu.object (in milliseconds), summed over the GPU modules.
struct GpuCompileTimes {
  int64_t modules = 0;
  std::optional<int64_t> ptxasMs;
  /// --kernels-ahead's copies.
  std::optional<moe::KernelsAheadResult> ahead;
  /// Each module's LLVM IR to PTX time and name, slowest first (empty
  /// where the serializer recorded none).
  SmallVector<std::pair<int64_t, std::string>> llvmToPtxMs;
};
} // namespace

/// Sums the LLVMIRToISATimeInMs and ISAToBinaryTimeInMs properties of the
/// gpu.objects in `module`.
static GpuCompileTimes collectGpuCompileTimes(ModuleOp module) {
  GpuCompileTimes times;
  auto add = [](std::optional<int64_t> &sum, DictionaryAttr properties,
                llvm::StringRef name) {
    if (auto ms = dyn_cast_or_null<IntegerAttr>(properties.get(name)))
      sum = sum.value_or(0) + ms.getInt();
  };
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(attr);
      if (!object)
        continue;
      ++times.modules;
      if (DictionaryAttr properties = object.getProperties()) {
        add(times.ptxasMs, properties, "ISAToBinaryTimeInMs");
        if (auto ms = dyn_cast_or_null<IntegerAttr>(
                properties.get("LLVMIRToISATimeInMs")))
          times.llvmToPtxMs.push_back({ms.getInt(), binary.getName().str()});
      }
    }
  });
  llvm::stable_sort(times.llvmToPtxMs, [](const auto &a, const auto &b) {
    return a.first > b.first;
  });
  return times;
}

/// The GPU part of --timing's report, after MLIR's.
static void printGpuCompileTimes(const GpuCompileTimes &times) {
  llvm::raw_ostream &os = llvm::errs();
  os << "===" << std::string(73, '-') << "===\n"
     << "  GPU kernels (" << times.modules << " gpu.module"
     << (times.modules == 1 ? "" : "s")
     << "; summed over the threads of MoEGPUModulesToBinaries above"
     << (times.ahead ? " and of --kernels-ahead" : "") << ")\n"
     << "===" << std::string(73, '-') << "===\n";
  auto seconds = [](int64_t ms) {
    return llvm::format("%10.4f", static_cast<double>(ms) / 1000.0);
  };
  if (times.llvmToPtxMs.empty()) {
    os << "             LLVM IR to PTX: not reported\n";
  } else {
    int64_t total = 0;
    for (const auto &entry : times.llvmToPtxMs)
      total += entry.first;
    os << "  " << seconds(total)
       << "  LLVM IR to PTX (NVPTX), of which the slowest modules:\n";
    // Where a compile's kernel time goes: often one or two large kernels
    // (kimi-tiny's KDA gradient tiles), which a thread compiles alone.
    constexpr size_t kSlowestShown = 5;
    for (const auto &[ms, name] :
         ArrayRef(times.llvmToPtxMs).take_front(kSlowestShown))
      os << "  " << seconds(ms) << "    " << name << "\n";
  }
  if (const std::optional<moe::KernelsAheadResult> &ahead = times.ahead) {
    os << "  " << llvm::format("%10.4f", ahead->seconds) << "  --kernels-ahead"
       << (ahead->checked ? "=check" : "") << ": the generators' "
       << ahead->modules << " gpu.module" << (ahead->modules == 1 ? "" : "s")
       << " lowered and serialized on a thread of their own during the host "
          "passes";
    if (ahead->checked)
      os << "; " << ahead->used << " equal to their lowering with the host";
    os << "\n";
  }
  if (times.ptxasMs)
    os << "  " << seconds(*times.ptxasMs) << "  ptxas (PTX to cubin)\n";
  else
    os << "             ptxas: not run (--gpu-format=" << gpuFormat
       << ": the CUDA driver compiles the PTX when the executable loads "
          "it)\n";
}

/// Writes the object (--emit=obj) or links it into the executable.
static LogicalResult finishFromObject(llvm::StringRef object,
                                      llvm::StringRef output, const char *argv0,
                                      TimingScope &root) {
  if (emit == Emit::Object) {
    TimingScope timer = root.nest("write the object");
    return writeFile(output, object);
  }
  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("moe-compile", "o", objectPath))
    return toolError("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(objectPath);
  if (failed(writeFile(objectPath, object)))
    return failure();
  TimingScope timer = root.nest("link");
  return linkExecutable(objectPath, output, argv0);
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

static LogicalResult compile(const char *argv0, TimingScope &root,
                             GpuCompileTimes &gpuTimes) {
  if (target == Target::CUDA) {
    if (emit == Emit::Executable && driverLibrary.empty() &&
        llvm::StringRef(kCudaDriverMain).empty())
      return toolError("--target=cuda: this moe-compile was built without "
                       "the CUDA toolkit (no libMoEModelMainCUDA.a); pass "
                       "--driver-lib=PATH or --emit=mlir|llvm|obj");
    if (gpuFormat != "isa" && gpuFormat != "bin" && gpuFormat != "fatbin")
      return toolError("--gpu-format must be isa, bin or fatbin, got '" +
                       gpuFormat.getValue() + "'");
    if (matmulPrecision != "bf16" && matmulPrecision != "exact")
      return toolError("--matmul-precision must be bf16 or exact, got '" +
                       matmulPrecision.getValue() + "'");
    {
      moe::LowerToNVVMOptions check;
      std::string message;
      llvm::raw_string_ostream errors(message);
      if (failed(check.parseFromString(gpuPipelineOptions, errors)))
        return toolError("--gpu-pipeline-options: cannot parse '" +
                         gpuPipelineOptions.getValue() + "': " + message);
    }
    // Kernels link libdevice (exp, log, ...), found through CUDA_HOME.
    if (!std::getenv("CUDA_HOME") &&
        llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
      setenv("CUDA_HOME", "/usr/local/cuda", /*overwrite=*/0);
  } else if (!gpuPipelineOptions.empty()) {
    return toolError("--gpu-pipeline-options needs --target=cuda");
  }
  if (optLevel > 3)
    return toolError("--opt-level must be 0, 1, 2 or 3");
  std::string output = outputFilename;
  if (output.empty())
    output = (emit == Emit::MLIR || emit == Emit::LLVM) ? "-" : "a.out";
  if (output == "-" && (emit == Emit::Object || emit == Emit::Executable))
    return toolError("cannot write an object or executable to stdout; pass "
                     "-o PATH");

  TimingScope readTimer = root.nest("read the input");
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file)
    return toolError(errorMessage);
  readTimer.stop();

  // The cache stands in for everything up to the object.
  HostTarget host = getHostTarget();
  std::optional<moe::CompileCacheEntry> cacheEntry;
  if ((emit == Emit::Object || emit == Emit::Executable) && !noCache) {
    TimingScope timer = root.nest("cache lookup");
    std::string dir = cacheDir.empty() ? moe::getDefaultCacheDirectory()
                                       : cacheDir.getValue();
    std::string bypass = getCacheBypassReason();
    if (!bypass.empty()) {
      llvm::errs() << "moe-compile: cache not used: " << bypass << "\n";
    } else if (dir.empty()) {
      llvm::WithColor::warning(llvm::errs(), "moe-compile")
          << "not using the compile cache: neither $XDG_CACHE_HOME nor a "
             "home folder is known (pass --cache-dir=DIR)\n";
    } else if (FailureOr<std::string> key =
                   buildCacheKey(file->getBuffer(), host, argv0);
               succeeded(key)) {
      cacheEntry.emplace(dir, *key);
      std::unique_ptr<llvm::MemoryBuffer> object;
      std::string reason;
      switch (cacheEntry->lookup(object, reason)) {
      case moe::CompileCacheEntry::LookupStatus::Hit:
        llvm::errs() << "moe-compile: cache hit: " << cacheEntry->getPath()
                     << (emit == Emit::Object ? " (copying the object)\n"
                                              : " (linking only)\n");
        timer.stop();
        return finishFromObject(object->getBuffer(), output, argv0, root);
      case moe::CompileCacheEntry::LookupStatus::Miss:
        llvm::errs() << "moe-compile: cache miss: compiling into "
                     << cacheEntry->getPath() << "\n";
        break;
      case moe::CompileCacheEntry::LookupStatus::Corrupt:
        llvm::errs() << "moe-compile: cache miss: " << cacheEntry->getPath()
                     << " is corrupt (" << reason << "); compiling again\n";
        break;
      }
    }
  }

  TimingScope setupTimer = root.nest("set up MLIR (dialects, context)");
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  moe::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // gpu.binary's default handler (#gpu.select_object) embeds the kernels.
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  setupTimer.stop();

  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  bool isConfig = isKimiConfig(inputFilename, file->getBuffer());
  sourceMgr->AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler sourceHandler(*sourceMgr, &context);
  // Remarks (KDA tiling decisions, ...) only on request.
  ScopedDiagnosticHandler remarkFilter(&context, [](Diagnostic &diag) {
    return success(diag.getSeverity() == DiagnosticSeverity::Remark &&
                   !showRemarks);
  });

  TimingScope parseTimer =
      root.nest(isConfig ? "import the config" : "parse the model");
  OwningOpRef<ModuleOp> module =
      isConfig ? importConfig(*sourceMgr, &context)
               : parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return failure();
  FailureOr<moe::ModelOp> model = selectModel(*module);
  if (failed(model) || failed(checkDriverABI(*model)))
    return failure();
  parseTimer.stop();
  if (dataParallel == 0)
    return toolError("--data-parallel must be at least 1");
  if (expertParallel == 0)
    return toolError("--expert-parallel must be at least 1");
  if (worldSize() > 1 && forwardOnly)
    return toolError("--data-parallel and --expert-parallel shard the "
                     "training program; a --forward-only program has no "
                     "step to shard");
  if (worldSize() > 1 && target == Target::CUDA)
    return toolError("--data-parallel and --expert-parallel need "
                     "--target=cpu: the CUDA back end has no NCCL "
                     "collectives yet");
  FailureOr<std::string> manifest = buildManifest(*model);
  if (failed(manifest))
    return failure();
  {
    TimingScope timer = root.nest(forwardOnly ? "build the forward program"
                                              : "build the training step");
    if (failed(buildProgram(*module, *model, *manifest, timer)))
      return failure();
  }
  {
    TimingScope timer =
        root.nest(target == Target::CUDA ? "lower (moe-lower-to-nvvm)"
                                         : "lower (moe-lower-to-cpu)");
    if (failed(lowerToLLVMDialect(*module, timer)))
      return failure();
  }
  if (!verifyEach) {
    TimingScope timer = root.nest("verify the lowered module");
    if (failed(verify(*module)))
      return toolError("the lowered module fails to verify (a bug of "
                       "moe-compile: --verify-each finds the pass; please "
                       "report it with the model)");
  }
  if (target == Target::CUDA) {
    gpuTimes = collectGpuCompileTimes(*module);
    gpuTimes.ahead = kernelsAheadResult;
  }
  addManifestGlobal(*module, *manifest);

  if (emit == Emit::MLIR) {
    auto out = openOutputFile(output, &errorMessage);
    if (!out)
      return toolError(errorMessage);
    module->print(out->os());
    out->keep();
    return success();
  }

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine(host);
  if (!machine)
    return failure();
  llvm::LLVMContext llvmContext;
  TimingScope translateTimer = root.nest("translate to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, inputFilename);
  if (!llvmModule)
    return toolError("translating the lowered module to LLVM IR failed");
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());
  // The MLIR module is no longer needed; freeing it here keeps its
  // destruction out of the LLVM timers.
  module = nullptr;
  // Launch argument slots out of host loops (else the stack grows per
  // iteration; moe/Pipelines/HoistAllocas.h).
  mlir::moe::hoistConstantAllocasToEntry(*llvmModule);
  tuneForGenericCPU(*llvmModule);
  // The CPU's step and forward keep a few copy loops between their calls;
  // those move to functions of their own, which are optimised.
  moe::CallSequenceCounts callSequences = moe::leaveCallSequencesUnoptimised(
      *llvmModule, effectiveHostOptimizeLimit(),
      /*extractLoops=*/target == Target::CPU);
  unsigned unoptimised = callSequences.unoptimised;
  translateTimer.stop();
  // Said in the LLVM timer's name, so that --timing shows it.
  std::string unoptimisedNote =
      unoptimised
          ? ", " + std::to_string(unoptimised) + " call sequence" +
                (unoptimised == 1 ? "" : "s") + " unoptimised" +
                (callSequences.loopsExtracted
                     ? " (" + std::to_string(callSequences.loopsExtracted) +
                           " loops moved out)"
                     : "")
          : "";

  if (emit == Emit::LLVM) {
    {
      TimingScope timer =
          root.nest("LLVM optimisation (-O" + std::to_string(optLevel) +
                    unoptimisedNote + ")");
      if (llvm::Error err = makeOptimizingTransformer(
              optLevel, /*sizeLevel=*/0, machine.get())(llvmModule.get()))
        return toolError("optimising LLVM IR failed: " +
                         llvm::toString(std::move(err)));
    }
    auto out = openOutputFile(output, &errorMessage);
    if (!out)
      return toolError(errorMessage);
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return success();
  }

  SmallVector<char, 0> object;
  {
    unsigned parts = hostParts();
    TimingScope timer =
        root.nest("LLVM optimisation (-O" + std::to_string(optLevel) +
                  unoptimisedNote + ") and codegen, " + std::to_string(parts) +
                  (parts == 1 ? " part" : " parts on as many threads"));
    llvm::Expected<SmallVector<char, 0>> compiled = moe::compileInParts(
        std::move(llvmModule), parts, optLevel,
        [&] { return createHostTargetMachine(host); }, linkRelocatable);
    if (!compiled)
      return toolError("compiling the host code failed: " +
                       llvm::toString(compiled.takeError()));
    object = std::move(*compiled);
  }
  llvm::StringRef objectBytes(object.data(), object.size());
  if (cacheEntry) {
    TimingScope timer = root.nest("cache store");
    // A cache that cannot be written costs the next compile, not this one.
    if (llvm::Error err = cacheEntry->store(objectBytes))
      llvm::WithColor::warning(llvm::errs(), "moe-compile")
          << "cannot store the compile cache entry " << cacheEntry->getPath()
          << ": " << llvm::toString(std::move(err)) << "\n";
  }
  return finishFromObject(objectBytes, output, argv0, root);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Registered before the pass manager's options, whose pass-name parsers
  // (--mlir-print-ir-after=...) list the registry as it is when they are
  // built; -moe-build-training-step is also found by name in it.
  moe::registerAllPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  const cl::OptionCategory *shown[] = {&compileCategory,
                                       &llvm::getColorCategory()};
  cl::HideUnrelatedOptions(shown);
  cl::ParseCommandLineOptions(
      argc, argv,
      "moe-compile: compile a moe-mlir model description into a native "
      "executable\n\n"
      "  moe-compile MODEL.mlir -o OUT [--forward-only] [--target=cpu|cuda]\n"
      "  moe-compile CONFIG.json -o OUT ...\n\n"
      "The input holds one moe.model (or several and --model=NAME), or is a\n"
      "Kimi-Linear config.json, imported as moe-import-config does. OUT\n"
      "trains the model: it initialises the weights from a seed and runs\n"
      "AdamW steps on byte windows of a corpus (the embedded Debian fortune\n"
      "databases, or --data=FILE), printing the loss, learning rate,\n"
      "gradient norm, MoE balance and tokens/s of each step. With\n"
      "--forward-only, OUT reads token ids (a binary file of uint32, or\n"
      "embedded sample text), runs the forward pass and prints\n"
      "'loss <value>'. Run OUT --help for its options. --target=cuda builds\n"
      "either program for the GPU (its gradient kernels are not yet fast); a\n"
      "cuda OUT runs its kernels on GPU 0 and needs the CUDA driver only. "
      "MLIR's\n"
      "usual options (--mlir-print-ir-after-all, --mlir-timing, ...) work\n"
      "too; --help-hidden lists them.\n\n"
      "Compile cache: an object or executable compile first looks up its\n"
      "object in --cache-dir (default $XDG_CACHE_HOME/moe-mlir, else\n"
      "~/.cache/moe-mlir) and, on a hit, only links; stderr says 'cache\n"
      "hit' or 'cache miss' and names the entry. The key is the SHA-256 of\n"
      "the input's name and text, the options that change the object\n"
      "(--target, --model, --forward-only, --opt-level, --blas, --profile,\n"
      "--outline-kinds, --jobs, --gpu-format, --matmul-precision,\n"
      "--gpu-pipeline-options), the\n"
      "host CPU and its features,\n"
      "CUDA_HOME for cuda, the LLVM version and the SHA-256 of this\n"
      "moe-compile executable itself, so rebuilding the compiler changes\n"
      "every key. Entries are written to a temporary file and renamed into\n"
      "place, and carry their size and SHA-256: a damaged entry is compiled\n"
      "again. --remarks and MLIR's debugging options bypass the cache;\n"
      "--no-cache turns it off. --timing prints where the compile's time\n"
      "goes.\n");
  // --timing (or --mlir-timing): one report for the whole compile, MLIR's
  // pass timing nested in the phases.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  if (timing)
    timingManager.setEnabled(true);
  GpuCompileTimes gpuTimes;
  LogicalResult result = failure();
  {
    TimingScope root = timingManager.getRootScope();
    result = compile(argv[0], root, gpuTimes);
  }
  if (timingManager.isEnabled()) {
    timingManager.print();
    // print() clears the timers; the destructor would print an empty report.
    timingManager.setEnabled(false);
    if (gpuTimes.modules > 0)
      printGpuCompileTimes(gpuTimes);
  }
  return failed(result) ? 1 : 0;
}
