//===- moe-run.cpp - Run a tensor function on .npy inputs -----------------===//
//
// Part of the moe-mlir project.
//
// moe-run parses a module, checks the .npy inputs against the signature of
// one function, lowers the module with the `moe-lower-to-cpu` pipeline,
// JIT-compiles it with mlir::ExecutionEngine, calls the function through its
// C interface (`_mlir_ciface_<name>`, memref descriptors built at run time
// for any rank) and writes every result as DIR/result<i>.npy.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/InitAll.h"
#include "moe/Pipelines/HoistAllocas.h"
#include "moe/Pipelines/Pipelines.h"
#include "moe/Support/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace mlir;
namespace npy = mlir::moe::npy;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::OptionCategory runCategory("moe-run options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<input.mlir>"),
                                          cl::cat(runCategory));
static cl::opt<std::string>
    entryName("entry", cl::desc("Name of the function to call (without '@')"),
              cl::value_desc("name"), cl::cat(runCategory));
static cl::opt<std::string>
    targetName("target", cl::desc("Back end: 'cpu' (default) or 'cuda'"),
               cl::value_desc("cpu|cuda"), cl::init("cpu"),
               cl::cat(runCategory));
static cl::list<std::string>
    inputFiles("i",
               cl::desc("A .npy input, one per function argument, in "
                        "argument order"),
               cl::value_desc("file.npy"), cl::cat(runCategory));
static cl::opt<std::string>
    outputDir("o",
              cl::desc("Directory for result0.npy, result1.npy, ... "
                       "(created if missing)"),
              cl::value_desc("dir"), cl::cat(runCategory));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM optimization level (0-3)"),
                                  cl::init(3), cl::cat(runCategory));
static cl::list<std::string> sharedLibs(
    "shared-libs",
    cl::desc("Extra shared libraries whose symbols the JIT-compiled code may "
             "use (libmlir_c_runner_utils is always loaded)"),
    cl::value_desc("lib.so"), cl::CommaSeparated, cl::cat(runCategory));
static cl::opt<bool> buildTrainingStep(
    "build-training-step",
    cl::desc("Run -moe-build-training-step before anything else, so that "
             "@<model>_grad and @<model>_train_step of each moe.model can "
             "be called"),
    cl::cat(runCategory));
static cl::opt<bool> outlineKinds(
    "outline-kinds",
    cl::desc("Lower each kind of moe op group once, in a function that every "
             "instance calls (-moe-outline-kinds; default on for cpu, off "
             "for cuda); =false lowers every instance inline"),
    cl::init(true), cl::cat(runCategory));
static cl::opt<bool>
    printLowered("print-lowered",
                 cl::desc("Print the module after moe-lower-to-cpu to stdout"),
                 cl::cat(runCategory));

static constexpr const char *kOverview =
    R"(moe-run: run one function of an MLIR module on .npy inputs

  moe-run FILE.mlir --entry=NAME [--target=cpu|cuda] -i a.npy -i b.npy ... -o DIR

The function's arguments and results must be ranked tensors of f32, f16, bf16,
f64, i32, i64 or index. Floating-point arguments take f16/f32/f64 .npy arrays
(converted to the argument's type); integer arguments take i32/i64 arrays.
Every static dimension must match; a dynamic dimension takes the size of the
file. Dynamic sizes that an op ties together (a query's and a key's batch)
are checked when the program runs, which stops with an error naming the op
and both operand dimensions.
Results are written as DIR/result0.npy, DIR/result1.npy, ...: float32 for
f32/f16/bf16, float64 for f64, int64 for integers. Inputs, arguments,
results and dimensions are numbered from 0. Every error is one line on
stderr and exit status 1.

--target=cuda lowers with moe-lower-to-nvvm (PTX for sm_90, loaded through
the driver JIT) and runs the kernels through libmoert_mlir.so; it needs a
CUDA driver and GPU, and CUDA_HOME (default /usr/local/cuda) for libdevice.
Argument and result buffers then live in memory shared by host and device.

--build-training-step first runs -moe-build-training-step, which turns each
moe.model @M into @M, @M_grad and @M_train_step (docs/Training.md).
)";

//===----------------------------------------------------------------------===//
// Errors and diagnostics
//===----------------------------------------------------------------------===//

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Formats an MLIR location as `file:line:col` (or its printed form).
static std::string formatLocation(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
       << fileLoc.getColumn();
  else
    os << loc;
  return s;
}

/// Prints each MLIR diagnostic as one line: `moe-run: LOC: error: MESSAGE`,
/// with its notes appended.
static LogicalResult printDiagnostic(Diagnostic &diag) {
  llvm::StringRef severity = "error";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    break;
  case DiagnosticSeverity::Warning:
    severity = "warning";
    break;
  case DiagnosticSeverity::Remark:
    severity = "remark";
    break;
  case DiagnosticSeverity::Note:
    severity = "note";
    break;
  }
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "moe-run: " << formatLocation(diag.getLocation()) << ": " << severity
     << ": " << diag.str();
  for (Diagnostic &note : diag.getNotes())
    os << " (note: " << formatLocation(note.getLocation()) << ": " << note.str()
       << ")";
  std::replace(line.begin(), line.end(), '\n', ' ');
  llvm::errs() << line << "\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

namespace {
/// The element types moe-run passes across the C interface.
enum class ElementKind { F16, BF16, F32, F64, I32, I64 };

/// A checked argument or result: its tensor type and element kind.
struct TensorSpec {
  RankedTensorType type;
  ElementKind kind;
};
} // namespace

static std::optional<ElementKind> getElementKind(Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(32) && !type.isUnsignedInteger())
    return ElementKind::I32;
  if ((type.isInteger(64) && !type.isUnsignedInteger()) || type.isIndex())
    return ElementKind::I64; // index is 64 bits wide on the host
  return std::nullopt;
}

static size_t getElementSize(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  }
  llvm_unreachable("unknown element kind");
}

static bool isFloatKind(ElementKind kind) {
  return kind != ElementKind::I32 && kind != ElementKind::I64;
}

static std::string typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

/// f32 -> bf16, rounding to nearest even (NaN stays a quiet NaN).
static uint16_t floatToBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

static float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Checks that `@entry` exists and that every argument and result is a ranked
/// tensor of a supported element type.
static llvm::Error checkSignature(func::FuncOp func,
                                  SmallVectorImpl<TensorSpec> &args,
                                  SmallVectorImpl<TensorSpec> &results) {
  std::string name = ("@" + func.getSymName()).str();
  if (func.isExternal())
    return makeError(name + " is only declared; moe-run needs a definition");
  if (func.isPrivate())
    return makeError(name + " is private; make it public to call it");
  auto check = [&](Type type, llvm::StringRef what, unsigned index,
                   SmallVectorImpl<TensorSpec> &out) -> llvm::Error {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    std::optional<ElementKind> kind;
    if (tensorType)
      kind = getElementKind(tensorType.getElementType());
    if (!tensorType || !kind)
      return makeError(what + " " + llvm::Twine(index) + " of " + name +
                       " has type " + typeToString(type) +
                       "; moe-run supports ranked tensors of f32, f16, bf16, "
                       "f64, i32, i64 and index only");
    if (tensorType.getEncoding())
      return makeError(what + " " + llvm::Twine(index) + " of " + name +
                       " has type " + typeToString(type) +
                       "; tensors with an encoding are not supported");
    out.push_back({tensorType, *kind});
    return llvm::Error::success();
  };
  FunctionType type = func.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (llvm::Error err = check(t, "argument", i, args))
      return err;
  for (auto [i, t] : llvm::enumerate(type.getResults()))
    if (llvm::Error err = check(t, "result", i, results))
      return err;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

namespace {
/// Where argument buffers live and how returned buffers are freed: host
/// memory for the CPU, memory shared by host and device for CUDA (set from
/// moert's MLIR adapter once it is loaded).
struct BufferAllocator {
  void *(*allocate)(size_t size) = [](size_t size) -> void * {
    size_t rounded = std::max<size_t>(64, (size + 63) / 64 * 64);
    return std::aligned_alloc(64, rounded);
  };
  void (*release)(void *ptr) = [](void *ptr) { std::free(ptr); };
};
BufferAllocator bufferAllocator;

/// A buffer from `bufferAllocator` (at least 64-byte aligned).
struct AlignedBuffer {
  explicit AlignedBuffer(size_t size) {
    data = static_cast<char *>(bufferAllocator.allocate(size));
  }
  ~AlignedBuffer() { bufferAllocator.release(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  char *data = nullptr;
};

/// An argument ready to pass: its data and its memref descriptor
/// `{allocated, aligned, offset, sizes[rank], strides[rank]}` stored as
/// 64-bit words (every field is pointer-sized, so there is no padding).
struct Argument {
  std::unique_ptr<AlignedBuffer> buffer;
  std::vector<int64_t> descriptor;
  void *descriptorPtr = nullptr;
};
} // namespace

/// Row-major strides of a shape.
static std::vector<int64_t>
getContiguousStrides(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Converts the array to the bytes of `kind`.
static llvm::Expected<std::vector<char>>
convertToKind(const npy::Array &array, ElementKind kind,
              llvm::function_ref<std::string()> describe) {
  switch (kind) {
  case ElementKind::F16:
    return array.convertTo(npy::DType::F16).bytes;
  case ElementKind::F32:
    return array.convertTo(npy::DType::F32).bytes;
  case ElementKind::F64:
    return array.convertTo(npy::DType::F64).bytes;
  case ElementKind::BF16: {
    std::vector<float> values = array.toF32();
    std::vector<char> bytes(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t h = floatToBF16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    return bytes;
  }
  case ElementKind::I64:
    return array.convertTo(npy::DType::I64).bytes;
  case ElementKind::I32: {
    std::vector<int64_t> values = array.toI64();
    for (auto [i, v] : llvm::enumerate(values))
      if (v < INT32_MIN || v > INT32_MAX)
        return makeError(describe() + ": element " + llvm::Twine(i) + " (" +
                         llvm::Twine(v) + ") does not fit in i32");
    return array.convertTo(npy::DType::I32).bytes;
  }
  }
  llvm_unreachable("unknown element kind");
}

/// Reads input `index` and checks it against argument `index` of `name`.
static llvm::Expected<Argument> loadInput(unsigned index, llvm::StringRef path,
                                          const TensorSpec &spec,
                                          llvm::StringRef name) {
  llvm::Expected<npy::Array> array = npy::readFile(path);
  if (!array)
    return makeError("input " + llvm::Twine(index) + ": " +
                     llvm::toString(array.takeError()));

  std::string fileName = llvm::sys::path::filename(path).str();
  std::string typeStr = typeToString(spec.type);
  auto mismatch = [&](llvm::StringRef found, const llvm::Twine &why) {
    return makeError("input " + llvm::Twine(index) + " (" + fileName +
                     ") has " + found + " but argument " + llvm::Twine(index) +
                     " of @" + name + " expects " + typeStr + ": " + why);
  };
  std::string shapeStr = "shape " + npy::formatShape(array->shape);
  llvm::ArrayRef<int64_t> expected = spec.type.getShape();
  if (array->getRank() != static_cast<int64_t>(expected.size()))
    return mismatch(shapeStr, "rank " + llvm::Twine(array->getRank()) +
                                  ", expected " + llvm::Twine(expected.size()));
  for (auto [d, size] : llvm::enumerate(expected))
    if (!ShapedType::isDynamic(size) && array->shape[d] != size)
      return mismatch(shapeStr, "dimension " + llvm::Twine(d) + " is " +
                                    llvm::Twine(array->shape[d]) +
                                    ", expected " + llvm::Twine(size));
  std::string dtypeStr = ("dtype " + npy::getDTypeName(array->dtype)).str();
  if (isFloatKind(spec.kind) && !npy::isFloat(array->dtype))
    return mismatch(dtypeStr,
                    "expected a floating-point array (f16, f32 or f64)");
  if (!isFloatKind(spec.kind) && npy::isFloat(array->dtype))
    return mismatch(dtypeStr, "expected an integer array (i32 or i64)");

  llvm::Expected<std::vector<char>> bytes =
      convertToKind(*array, spec.kind, [&] {
        return ("input " + llvm::Twine(index) + " (" + fileName + ")").str();
      });
  if (!bytes)
    return bytes.takeError();

  Argument arg;
  arg.buffer = std::make_unique<AlignedBuffer>(bytes->size());
  if (!arg.buffer->data)
    return makeError("input " + llvm::Twine(index) + " (" + fileName +
                     "): out of memory");
  if (!bytes->empty()) // an empty array has no data pointer to copy from
    std::memcpy(arg.buffer->data, bytes->data(), bytes->size());
  auto ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(arg.buffer->data));
  arg.descriptor = {ptr, ptr, /*offset=*/0};
  llvm::append_range(arg.descriptor, array->shape);
  llvm::append_range(arg.descriptor, getContiguousStrides(array->shape));
  arg.descriptorPtr = arg.descriptor.data();
  return arg;
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

/// The allocated pointer that memref.get_global lowering stores for globals;
/// such a buffer must never be freed.
static constexpr intptr_t kGlobalAllocatedPtr = 0xdeadbeef;

/// Reads a result through its descriptor (any offset and strides) into a
/// C-ordered .npy array.
static npy::Array readResult(const int64_t *desc, const TensorSpec &spec) {
  int64_t rank = spec.type.getRank();
  const char *aligned = reinterpret_cast<const char *>(desc[1]);
  int64_t offset = desc[2];
  std::vector<int64_t> shape(desc + 3, desc + 3 + rank);
  llvm::ArrayRef<int64_t> strides(desc + 3 + rank, rank);
  size_t eltSize = getElementSize(spec.kind);

  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<char> bytes(n * eltSize);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t linear = offset;
    for (int64_t d = 0; d < rank; ++d)
      linear += index[d] * strides[d];
    std::memcpy(bytes.data() + i * eltSize, aligned + linear * eltSize,
                eltSize);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }

  npy::Array raw;
  raw.shape = shape;
  raw.bytes = std::move(bytes);
  switch (spec.kind) {
  case ElementKind::F32:
    raw.dtype = npy::DType::F32;
    return raw;
  case ElementKind::F64:
    raw.dtype = npy::DType::F64;
    return raw;
  case ElementKind::F16:
    raw.dtype = npy::DType::F16;
    return raw.convertTo(npy::DType::F32);
  case ElementKind::I32:
    raw.dtype = npy::DType::I32;
    return raw.convertTo(npy::DType::I64);
  case ElementKind::I64:
    raw.dtype = npy::DType::I64;
    return raw;
  case ElementKind::BF16: {
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, raw.bytes.data() + 2 * i, 2);
      values[i] = bf16ToFloat(h);
    }
    return npy::Array::fromF32(shape, values);
  }
  }
  llvm_unreachable("unknown element kind");
}

//===----------------------------------------------------------------------===//
// Calling the JIT-compiled function
//===----------------------------------------------------------------------===//

/// The two halves of the crash message (around the signal's name), set
/// before the call because the handler may not allocate.
static char crashPrefix[256];
static constexpr const char *kCrashSuffix =
    "); check that the dynamic dimensions of the inputs agree\n";

extern "C" void handleCrashSignal(int signal) {
  // Only async-signal-safe calls here.
  const char *signalName = signal == SIGSEGV  ? "SIGSEGV"
                           : signal == SIGBUS ? "SIGBUS"
                           : signal == SIGFPE ? "SIGFPE"
                                              : "SIGILL";
  for (const char *part :
       {static_cast<const char *>(crashPrefix), signalName, kCrashSuffix}) {
    ssize_t unused = write(STDERR_FILENO, part, strlen(part));
    (void)unused;
  }
  _exit(1);
}

/// Calls `_mlir_ciface_<name>` with the packed descriptors. With results, the
/// first parameter points to the struct of result descriptors (one
/// descriptor when there is one result); each argument is a pointer to its
/// descriptor.
static llvm::Error invoke(ExecutionEngine &engine, llvm::StringRef name,
                          llvm::MutableArrayRef<Argument> args,
                          std::vector<int64_t> &resultWords) {
  SmallVector<void *> packed;
  void *resultPtr = resultWords.data();
  if (!resultWords.empty())
    packed.push_back(&resultPtr);
  for (Argument &arg : args)
    packed.push_back(&arg.descriptorPtr);

  std::string ciface = ("_mlir_ciface_" + name).str();
  llvm::Expected<void (*)(void **)> fn = engine.lookupPacked(ciface);
  if (!fn)
    return makeError(
        "cannot find the C interface of @" + name + " (" + ciface +
        ") in the compiled module: " + llvm::toString(fn.takeError()));

  // A crash inside compiled code (for example dynamic sizes that disagree
  // between arguments) is reported as one line and exit status 1.
  snprintf(crashPrefix, sizeof(crashPrefix), "moe-run: error: @%s crashed (",
           name.str().c_str());
  struct sigaction action = {}, old[4];
  action.sa_handler = handleCrashSignal;
  sigemptyset(&action.sa_mask);
  const int signals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  for (int i = 0; i < 4; ++i)
    sigaction(signals[i], &action, &old[i]);
  (*fn)(packed.data());
  for (int i = 0; i < 4; ++i)
    sigaction(signals[i], &old[i], nullptr);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// Path of MLIR's C runner utilities (set by CMake).
#ifndef MOE_MLIR_C_RUNNER_UTILS
#define MOE_MLIR_C_RUNNER_UTILS "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so"
#endif

/// Path of the CPU runtime (moe_cpu_contract_f32, ...; set by CMake).
#ifndef MOE_CPU_RUNTIME_SO
#define MOE_CPU_RUNTIME_SO ""
#endif

/// Path of moert's adapter for MLIR's mgpu* host ABI (set by CMake when the
/// CUDA toolkit is present).
#ifndef MOE_MOERT_MLIR_LIB
#define MOE_MOERT_MLIR_LIB ""
#endif

/// The adapter's error query, once loaded.
static const char *(*adapterGetError)() = nullptr;

/// Loads moert's MLIR adapter, which JIT-compiled host code calls, and
/// switches argument buffers to host-shared memory.
static llvm::Error loadCudaAdapter() {
  std::string path = MOE_MOERT_MLIR_LIB;
  if (path.empty())
    return makeError("--target=cuda: this moe-run was built without the CUDA "
                     "toolkit (no libmoert_mlir.so)");
  std::string message;
  if (llvm::sys::DynamicLibrary::LoadLibraryPermanently(path.c_str(), &message))
    return makeError("--target=cuda: cannot load " + path + ": " + message);
  auto lookup = [](const char *symbol) {
    return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(symbol);
  };
  void *allocShared = lookup("moertMlirAllocShared");
  void *release = lookup("moertMlirFree");
  adapterGetError =
      reinterpret_cast<const char *(*)()>(lookup("moertMlirGetError"));
  if (!allocShared || !release || !adapterGetError)
    return makeError("--target=cuda: " + path + " lacks the moertMlir* API");
  using AllocFn = void *(*)(unsigned long long);
  static AllocFn alloc = reinterpret_cast<AllocFn>(allocShared);
  bufferAllocator.allocate = [](size_t size) { return alloc(size); };
  bufferAllocator.release = reinterpret_cast<void (*)(void *)>(release);
  // libdevice (exp, log, ...) is found through CUDA_HOME.
  if (!std::getenv("CUDA_HOME") &&
      llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
    setenv("CUDA_HOME", "/usr/local/cuda", /*overwrite=*/0);
  return llvm::Error::success();
}

/// The adapter's recorded failure, as an error.
static llvm::Error checkCudaAdapter(llvm::StringRef when) {
  if (!adapterGetError)
    return llvm::Error::success();
  const char *error = adapterGetError();
  if (!error || !*error)
    return llvm::Error::success();
  return makeError(("CUDA failure " + when + ": " + error).str());
}

static llvm::Error run() {
  bool cuda = targetName == "cuda";
  if (targetName != "cpu" && !cuda)
    return makeError("unknown target '" + targetName +
                     "' (expected 'cpu' or 'cuda')");
  if (inputFilename.empty())
    return makeError("no input file; usage: moe-run FILE.mlir --entry=NAME "
                     "-i a.npy ... -o DIR (see --help)");
  if (entryName.empty())
    return makeError("missing --entry=NAME (the function to call)");
  if (outputDir.empty())
    return makeError("missing -o DIR (where result0.npy, ... are written)");
  if (optLevel > 3)
    return makeError("--opt-level must be 0, 1, 2 or 3");
  llvm::StringRef name = llvm::StringRef(entryName).ltrim('@');

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  moe::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  if (cuda) {
    registerGPUDialectTranslation(registry);
    // gpu.binary's default handler (#gpu.select_object) embeds the kernels.
    gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
    registerNVVMDialectTranslation(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    if (llvm::Error err = loadCudaAdapter())
      return err;
  }
  MLIRContext context(registry);
  ScopedDiagnosticHandler diagHandler(&context, printDiagnostic);

  // Parse.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFileOrSTDIN(inputFilename, /*IsText=*/true);
  if (!file)
    return makeError(inputFilename +
                     ": cannot open: " + file.getError().message());
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return makeError("cannot parse " + inputFilename);
  if (buildTrainingStep) {
    PassManager trainingPm(&context);
    trainingPm.addPass(moe::createMoEBuildTrainingStep());
    if (failed(trainingPm.run(*module)))
      return makeError("-moe-build-training-step failed on " + inputFilename);
  }

  // Check the signature, then the inputs against it.
  auto func = module->lookupSymbol<func::FuncOp>(name);
  if (!func) {
    std::string available;
    for (auto f : module->getOps<func::FuncOp>())
      if (!f.isExternal() && f.isPublic())
        available += (available.empty() ? "@" : ", @") + f.getSymName().str();
    return makeError("no function @" + name + " in " + inputFilename +
                     (available.empty() ? " (it defines no public function)"
                                        : " (available: " + available + ")"));
  }
  SmallVector<TensorSpec> argSpecs, resultSpecs;
  if (llvm::Error err = checkSignature(func, argSpecs, resultSpecs))
    return err;
  if (inputFiles.size() != argSpecs.size())
    return makeError("@" + name + " takes " + llvm::Twine(argSpecs.size()) +
                     " argument" + (argSpecs.size() == 1 ? "" : "s") + " but " +
                     llvm::Twine(inputFiles.size()) + " input" +
                     (inputFiles.size() == 1 ? " was" : "s were") +
                     " given (-i)");
  SmallVector<Argument> args;
  for (auto [i, spec] : llvm::enumerate(argSpecs)) {
    llvm::Expected<Argument> arg = loadInput(i, inputFiles[i], spec, name);
    if (!arg)
      return arg.takeError();
    args.push_back(std::move(*arg));
  }

  // Lower and compile.
  PassManager pm(&context);
  llvm::StringRef pipelineName =
      cuda ? "moe-lower-to-nvvm" : "moe-lower-to-cpu";
  if (cuda) {
    moe::LowerToNVVMOptions pipelineOptions;
    pipelineOptions.outlineKinds =
        outlineKinds.getNumOccurrences() && outlineKinds;
    moe::buildLowerToNVVMPipeline(pm, pipelineOptions);
  } else {
    moe::LowerToCPUOptions pipelineOptions;
    pipelineOptions.outlineKinds = outlineKinds;
    moe::buildLowerToCPUPipeline(pm, pipelineOptions);
  }
  if (failed(pm.run(*module)))
    return makeError("lowering " + inputFilename + " with " + pipelineName +
                     " failed");
  if (printLowered)
    module->print(llvm::outs());

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // ExecutionEngineOptions::transformer is a function_ref: the std::function
  // must outlive the engine's creation.
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                /*targetMachine=*/nullptr);
  // Launch argument slots out of host loops first (else the stack grows per
  // iteration; moe/Pipelines/HoistAllocas.h).
  std::function<llvm::Error(llvm::Module *)> transformer =
      [&](llvm::Module *llvmModule) {
        moe::hoistConstantAllocasToEntry(*llvmModule);
        return optimize(llvmModule);
      };
  SmallVector<std::string> libPaths;
  // memref.copy of non-contiguous buffers calls memrefCopy from here.
  std::string cRunnerUtils = MOE_MLIR_C_RUNNER_UTILS;
  if (llvm::sys::fs::exists(cRunnerUtils))
    libPaths.push_back(cRunnerUtils);
  if (cuda) {
    libPaths.push_back(MOE_MOERT_MLIR_LIB);
  } else {
    // Contractions call the CPU runtime.
    std::string cpuRuntime = MOE_CPU_RUNTIME_SO;
    if (!llvm::sys::fs::exists(cpuRuntime))
      return makeError("the CPU runtime library '" + cpuRuntime +
                       "' does not exist (build the moe_cpu_runtime target)");
    libPaths.push_back(cpuRuntime);
  }
  for (const std::string &lib : sharedLibs) {
    if (!llvm::sys::fs::exists(lib))
      return makeError("--shared-libs: " + lib + " does not exist");
    libPaths.push_back(lib);
  }
  SmallVector<llvm::StringRef> libRefs(libPaths.begin(), libPaths.end());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(static_cast<int>(optLevel));
  engineOptions.sharedLibPaths = libRefs;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(*module, engineOptions);
  if (!engine) {
    std::string message = llvm::toString(engine.takeError());
    std::replace(message.begin(), message.end(), '\n', ' ');
    return makeError("JIT compilation failed: " + message);
  }
  (*engine)->initialize();

  // Call.
  size_t resultWordCount = 0;
  for (const TensorSpec &spec : resultSpecs)
    resultWordCount += 3 + 2 * spec.type.getRank();
  std::vector<int64_t> resultWords(resultWordCount, 0);
  if (llvm::Error err = checkCudaAdapter("while loading the kernels"))
    return err;
  if (llvm::Error err = invoke(**engine, name, args, resultWords))
    return err;
  if (llvm::Error err = checkCudaAdapter("while running @" + name.str()))
    return err;

  // Write the results, then free the buffers the callee allocated (the
  // deallocation pipeline makes every returned buffer owned by the caller).
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return makeError("cannot create " + outputDir + ": " + ec.message());
  llvm::SmallPtrSet<void *, 8> toFree;
  llvm::SmallPtrSet<void *, 8> inputBuffers;
  for (Argument &arg : args)
    inputBuffers.insert(arg.buffer->data);
  const int64_t *desc = resultWords.data();
  llvm::Error writeError = llvm::Error::success();
  for (auto [i, spec] : llvm::enumerate(resultSpecs)) {
    npy::Array result = readResult(desc, spec);
    llvm::SmallString<256> path(outputDir);
    llvm::sys::path::append(path, "result" + llvm::Twine(i) + ".npy");
    if (llvm::Error err = npy::writeFile(path, result))
      writeError = llvm::joinErrors(std::move(writeError), std::move(err));
    auto *allocated = reinterpret_cast<void *>(desc[0]);
    if (allocated && desc[0] != kGlobalAllocatedPtr &&
        !inputBuffers.contains(allocated))
      toFree.insert(allocated);
    desc += 3 + 2 * spec.type.getRank();
  }
  for (void *ptr : toFree)
    bufferAllocator.release(ptr);
  return writeError;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  if (llvm::Error err = run()) {
    std::string message = llvm::toString(std::move(err));
    std::replace(message.begin(), message.end(), '\n', ' ');
    llvm::errs() << "moe-run: error: " << message << "\n";
    return 1;
  }
  return 0;
}
