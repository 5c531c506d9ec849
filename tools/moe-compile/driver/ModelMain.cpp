//===- ModelMain.cpp - main() of executables built by moe-compile ---------===//
//
// Part of the moe-mlir project.
//
// The host program that moe-compile links with a compiled model. It reads
// the model's manifest (parameter names, shapes, offsets and initialisers,
// written into the object by moe-compile) and runs the training loop
// (Train.cpp) when the manifest says `program train`. Otherwise (moe-compile
// --forward-only) it initialises the packed fp32 parameters from a seed,
// builds one batch of tokens and labels from a token file or the embedded
// sample text, calls the compiled forward pass and prints `loss <value>`.
// This file also holds the pieces both programs share (Driver.h). Plain
// C++17; no LLVM or MLIR dependency.
//
// Built twice: for the CPU back end, and with MOE_MODEL_MAIN_CUDA for the
// CUDA back end, where the compiled host code launches its kernels through
// moert's mgpu* adapter (linked into the same executable) and the driver
// keeps the parameters, tokens and labels in memory that host and device
// share.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#ifdef MOE_MODEL_MAIN_CUDA
#include "moert/moert_mlir.h"
#endif

using namespace moe_driver;

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

void moe_driver::fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(1);
}

namespace {
bool parseInitKind(const std::string &text, InitKind &kind) {
  static const struct {
    const char *name;
    InitKind kind;
  } kinds[] = {{"zeros", InitKind::Zeros},
               {"ones", InitKind::Ones},
               {"normal", InitKind::Normal},
               {"log_uniform", InitKind::LogUniform},
               {"inverse_softplus_dt", InitKind::InverseSoftplusDt}};
  for (const auto &entry : kinds)
    if (text == entry.name) {
      kind = entry.kind;
      return true;
    }
  return false;
}
} // namespace

/// Parses the manifest. Its lines:
///   moe-model 1
///   name <symbol>
///   vocab <n>
///   hidden <n>
///   tokens <batch or -1> <length or -1>
///   scalars <n>
///   param <offset> <size> <init> <std> <low> <high> <rank> <dims...> <name>
///   hf <transposed 0|1> <per-expert 0|1> <name>
///   program forward|train
///   data_parallel <ranks>        (a sharded train step only)
///   expert_parallel <group size>  (after data_parallel)
///   metrics <count>
///   metric <offset> <count> <name>
/// A name is the rest of the line after one space; `program` (default
/// forward) says whether the train step is there, `hf` gives the preceding
/// parameter's Hugging Face name and layout (Param::hfName), `metrics` and
/// `metric` describe its metrics vector. The compiler wrote the manifest, so a
/// malformed one is an internal error.
Manifest moe_driver::parseManifest(const char *text) {
  Manifest manifest;
  const char *cursor = text;
  int lineNumber = 0;
  bool sawHeader = false;
  while (*cursor) {
    const char *end = std::strchr(cursor, '\n');
    std::string line = end ? std::string(cursor, end) : std::string(cursor);
    cursor = end ? end + 1 : cursor + line.size();
    ++lineNumber;
    auto bad = [&]() {
      fail("malformed model manifest at line " + std::to_string(lineNumber) +
           ": '" + line + "' (the executable is damaged)");
    };
    char key[32] = {0};
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%31s%n", key, &consumed) != 1)
      bad();
    const char *rest = line.c_str() + consumed;
    std::string keyword = key;
    if (keyword == "moe-model") {
      int version = 0;
      if (std::sscanf(rest, "%d", &version) != 1 || version != 1)
        bad();
      sawHeader = true;
    } else if (keyword == "name") {
      manifest.name = rest[0] == ' ' ? rest + 1 : rest;
    } else if (keyword == "vocab") {
      if (std::sscanf(rest, "%ld", &manifest.vocab) != 1)
        bad();
    } else if (keyword == "hidden") {
      if (std::sscanf(rest, "%ld", &manifest.hidden) != 1)
        bad();
    } else if (keyword == "tokens") {
      if (std::sscanf(rest, "%ld %ld", &manifest.batch, &manifest.length) != 2)
        bad();
    } else if (keyword == "scalars") {
      if (std::sscanf(rest, "%ld", &manifest.scalars) != 1)
        bad();
    } else if (keyword == "param") {
      Param param;
      char kind[32] = {0};
      int rank = 0, n = 0;
      if (std::sscanf(rest, "%ld %ld %31s %lf %lf %lf %d%n", &param.offset,
                      &param.size, kind, &param.std, &param.low, &param.high,
                      &rank, &n) != 7 ||
          !parseInitKind(kind, param.kind) || rank < 0)
        bad();
      rest += n;
      for (int i = 0; i < rank; ++i) {
        int64_t dim = 0;
        if (std::sscanf(rest, "%ld%n", &dim, &n) != 1)
          bad();
        param.shape.push_back(dim);
        rest += n;
      }
      if (rest[0] != ' ')
        bad();
      param.name = rest + 1;
      manifest.params.push_back(std::move(param));
    } else if (keyword == "hf") {
      int transposed = 0, perExpert = 0, n = 0;
      if (manifest.params.empty() || !manifest.params.back().hfName.empty() ||
          std::sscanf(rest, "%d %d%n", &transposed, &perExpert, &n) != 2 ||
          (transposed != 0 && transposed != 1) ||
          (perExpert != 0 && perExpert != 1) || rest[n] != ' ' ||
          rest[n + 1] == '\0')
        bad();
      Param &param = manifest.params.back();
      size_t rank = param.shape.size();
      if ((transposed && rank < (perExpert ? 3u : 2u)) ||
          (perExpert && rank < 1))
        bad();
      param.hfName = rest + n + 1;
      param.hfTransposed = transposed;
      param.hfPerExpert = perExpert;
    } else if (keyword == "program") {
      std::string program = rest[0] == ' ' ? rest + 1 : rest;
      if (program != "forward" && program != "train")
        bad();
      manifest.train = program == "train";
    } else if (keyword == "metrics") {
      if (std::sscanf(rest, "%ld", &manifest.numMetrics) != 1 ||
          manifest.numMetrics < 0)
        bad();
    } else if (keyword == "data_parallel") {
      if (std::sscanf(rest, "%ld", &manifest.dataParallel) != 1 ||
          manifest.dataParallel < 2)
        bad();
    } else if (keyword == "expert_parallel") {
      if (std::sscanf(rest, "%ld", &manifest.expertParallel) != 1 ||
          manifest.expertParallel < 2 ||
          manifest.dataParallel % manifest.expertParallel != 0)
        bad();
    } else if (keyword == "metric") {
      Metric metric;
      int n = 0;
      if (std::sscanf(rest, "%ld %ld%n", &metric.offset, &metric.count, &n) !=
              2 ||
          rest[n] != ' ' || metric.offset < 0 || metric.count < 1 ||
          metric.offset + metric.count > manifest.numMetrics)
        bad();
      metric.name = rest + n + 1;
      manifest.metrics.push_back(std::move(metric));
    } else {
      bad();
    }
  }
  if (!sawHeader)
    fail("the executable carries no model manifest");
  return manifest;
}

//===----------------------------------------------------------------------===//
// Initialisation (ALGORITHMS.md sections 2.1 and 7.4)
//===----------------------------------------------------------------------===//

uint64_t Random::below(uint64_t bound) {
  // Rejects the top partial range of 2^64 mod bound (Lemire's bound).
  uint64_t limit = -bound % bound;
  for (;;) {
    uint64_t value = next();
    if (value >= limit)
      return value % bound;
  }
}

double Random::normal() {
  double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// FNV-1a of the parameter name: each parameter draws from its own stream,
/// so its values depend on the seed and its name only, not on the order of
/// the parameters.
uint64_t moe_driver::hashName(const std::string &name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name)
    hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

namespace {
void initialise(const Param &param, uint64_t seed, float *values) {
  Random random(seed * 0x9e3779b97f4a7c15ull ^ hashName(param.name));
  for (int64_t i = 0; i < param.size; ++i) {
    double value = 0;
    switch (param.kind) {
    case InitKind::Zeros:
      value = 0;
      break;
    case InitKind::Ones:
      value = 1;
      break;
    case InitKind::Normal:
      value = param.std * random.normal();
      break;
    case InitKind::LogUniform:
      // ln U(low, high).
      value = std::log(param.low + (param.high - param.low) * random.uniform());
      break;
    case InitKind::InverseSoftplusDt: {
      // dt = exp(U(ln low, ln high)) >= 1e-4, then softplus^-1(dt).
      double lo = std::log(param.low), hi = std::log(param.high);
      double dt = std::exp(lo + (hi - lo) * random.uniform());
      dt = std::max(dt, 1e-4);
      value = dt + std::log(-std::expm1(-dt));
      break;
    }
    }
    values[i] = static_cast<float>(value);
  }
}
} // namespace

void moe_driver::initialiseParams(const Manifest &manifest, uint64_t seed,
                                  float *values) {
  for (const Param &param : manifest.params) {
    if (param.offset < 0 || param.offset + param.size > manifest.scalars)
      fail("parameter '" + param.name + "' lies outside the packed buffer");
    initialise(param, seed, values + param.offset);
  }
}

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

namespace {
/// Sample text for a byte-level model, used when no token file is given.
const char kSampleText[] =
    "The compiler reads a description of the model, splits every layer into "
    "the operations it is made of, cuts the long sequences into tiles that "
    "fit in fast memory, and writes a program that runs them in order. Each "
    "token first becomes a row of the embedding table. Linear attention then "
    "folds the past into a small state that decays a little at every step, "
    "while the attention layer looks back at every earlier token directly. "
    "Between them, a router sends each token to a few of many experts, and "
    "the residual mixes let every layer choose which earlier blocks to read. "
    "At the end, the head turns the last hidden state into a score for every "
    "byte, and the loss measures how surprised the model was by the next "
    "one. Before any training, that surprise is close to the logarithm of "
    "the vocabulary size, because every byte looks equally likely.\n";

std::vector<uint32_t> readTokens(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    fail("token file '" + path + "' is a directory");
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail("cannot open token file '" + path + "': " + std::strerror(errno));
  std::vector<uint32_t> tokens;
  uint8_t bytes[4];
  size_t count = 0;
  while ((count = std::fread(bytes, 1, 4, file)) == 4)
    tokens.push_back(uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 |
                     uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed)
    fail("cannot read token file '" + path + "'");
  if (count != 0)
    fail("token file '" + path +
         "' is not a sequence of 4-byte uint32 ids "
         "(its size is not a multiple of 4)");
  return tokens;
}
} // namespace

//===----------------------------------------------------------------------===//
// .npy output (--dump-params, --dump-batch)
//===----------------------------------------------------------------------===//

void moe_driver::writeNpy(const std::string &path, const char *descr,
                          size_t itemSize, const std::vector<int64_t> &shape,
                          const void *data) {
  // Python tuple syntax: "()", "(5,)", "(3, 4)".
  std::string shapeText = "(";
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    shapeText += (i ? ", " : "") + std::to_string(shape[i]);
    count *= shape[i];
  }
  shapeText += shape.size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shapeText +
                       ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    fail("cannot write '" + path + "': " + std::strerror(errno));
  const char magic[] = "\x93NUMPY\x01\x00";
  uint16_t length = static_cast<uint16_t>(header.size());
  uint8_t lengthBytes[2] = {uint8_t(length & 0xff), uint8_t(length >> 8)};
  bool ok =
      std::fwrite(magic, 1, 8, file) == 8 &&
      std::fwrite(lengthBytes, 1, 2, file) == 2 &&
      std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
      std::fwrite(data, itemSize, count, file) == size_t(count);
  if (std::fclose(file) != 0 || !ok)
    fail("cannot write '" + path + "'");
}

void moe_driver::makeDirectory(const std::string &path) {
  if (mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
    fail("cannot create directory '" + path + "': " + std::strerror(errno));
}

void moe_driver::dumpParams(const std::string &dir, const Manifest &manifest,
                            const float *params) {
  makeDirectory(dir);
  for (const Param &param : manifest.params) {
    // A parameter name as a file name: '/' would name a directory.
    std::string file = param.name;
    std::replace(file.begin(), file.end(), '/', '_');
    writeNpy(dir + "/" + file + ".npy", "<f4", sizeof(float), param.shape,
             params + param.offset);
  }
}

//===----------------------------------------------------------------------===//
// Device memory
//===----------------------------------------------------------------------===//

void moe_driver::checkDevice(const char *when) {
#ifdef MOE_MODEL_MAIN_CUDA
  const char *error = moertMlirGetError();
  if (error && *error)
    fail(std::string("CUDA failure ") + when + ": " + error);
#else
  (void)when;
#endif
}

void *moe_driver::allocateBuffer(size_t bytes) {
#ifdef MOE_MODEL_MAIN_CUDA
  void *buffer = moertMlirAllocShared(bytes);
  checkDevice("while allocating shared memory");
#else
  // aligned_alloc wants a multiple of the alignment.
  void *buffer = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
#endif
  if (!buffer && bytes)
    fail("cannot allocate " + std::to_string(bytes) + " bytes");
  return buffer;
}

#ifdef MOE_MODEL_MAIN_CUDA
namespace {
/// A copy of `values` in memory that host and device share (kernels may read
/// the model's inputs in place).
template <typename T>
T *sharedCopy(const std::vector<T> &values) {
  void *buffer = allocateBuffer(values.size() * sizeof(T));
  std::memcpy(buffer, values.data(), values.size() * sizeof(T));
  return static_cast<T *>(buffer);
}
} // namespace
#endif

#ifdef MOE_MODEL_MAIN_CUDA
namespace {
/// The forward pass captured as a CUDA graph.
struct CapturedForward {
  bool ready = false;
  std::string why; // why not, when not ready
  long long nodes = 0;
  double seconds = 0;
  /// The captured call's result: each replay writes the loss there.
  MemRef0<float> loss = {nullptr, nullptr, 0};
};

/// Captures one call of the forward pass (after a first, ordinary run that
/// waited for its stream `syncs` times). The call runs nothing; the graph
/// does, at each moertMlirGraphLaunch.
CapturedForward captureForward(MemRef<float, 1> &params,
                               MemRef<int32_t, 2> &tokens,
                               MemRef<int32_t, 2> &labels,
                               unsigned long long syncs) {
  CapturedForward captured;
  if (syncs != 1) {
    captured.why = "the first run waited for its stream " +
                   std::to_string(syncs) +
                   " times (before host code that reads memory or branches); "
                   "a graph needs the one wait at the end";
    return captured;
  }
  struct Call {
    MemRef0<float> *loss;
    MemRef<float, 1> *params;
    MemRef<int32_t, 2> *tokens, *labels;
  } call = {&captured.loss, &params, &tokens, &labels};
  auto start = std::chrono::steady_clock::now();
  long long nodes = captureGraph(
      [](void *context) {
        auto *c = static_cast<Call *>(context);
        _mlir_ciface_moe_model_forward(c->loss, c->params, c->tokens,
                                       c->labels);
      },
      &call, captured.why);
  auto stop = std::chrono::steady_clock::now();
  if (nodes < 0) {
    releaseResult(captured.loss.allocated);
    captured.loss = {nullptr, nullptr, 0};
    return captured;
  }
  captured.ready = true;
  captured.nodes = nodes;
  captured.seconds = std::chrono::duration<double>(stop - start).count();
  return captured;
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
} // namespace
#endif

void moe_driver::freeBuffer(void *buffer) {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirFree(buffer);
#else
  std::free(buffer);
#endif
}

void moe_driver::startKernelTiming() {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirSetKernelTiming(1);
#endif
}

bool moe_driver::finishKernelTiming(int &launches, double &milliseconds) {
#ifdef MOE_MODEL_MAIN_CUDA
  milliseconds = moertMlirKernelMilliseconds();
  launches = moertMlirLastKernelTimes(nullptr, 0);
  moertMlirSetKernelTiming(0);
  checkDevice("while timing the kernels");
  return true;
#else
  launches = 0;
  milliseconds = 0;
  return false;
#endif
}

std::string moe_driver::peakMemoryLine() {
#ifdef MOE_MODEL_MAIN_CUDA
  unsigned long long poolPeak = 0, managedPeak = 0, graphPeak = 0;
  if (moertMlirPeakBytes(&poolPeak, &managedPeak) != 0 ||
      moertMlirGraphPeakBytes(&graphPeak) != 0) {
    std::string why = moertMlirGetError();
    moertMlirClearError();
    return "peak GPU memory: unknown (" + why + ")";
  }
  // A CUDA graph's buffers are its own memory; its replays and the
  // uncaptured calls do not run at once.
  unsigned long long device = std::max(poolPeak, graphPeak);
  char text[240];
  if (graphPeak)
    std::snprintf(text, sizeof(text),
                  "peak GPU memory: %.3f GiB (device buffers %llu bytes, of a "
                  "CUDA graph %llu bytes, host-shared memory %llu bytes)",
                  static_cast<double>(device + managedPeak) / (1 << 30),
                  poolPeak, graphPeak, managedPeak);
  else
    std::snprintf(text, sizeof(text),
                  "peak GPU memory: %.3f GiB (device buffers %llu bytes, "
                  "host-shared memory %llu bytes)",
                  static_cast<double>(device + managedPeak) / (1 << 30),
                  poolPeak, managedPeak);
  return text;
#else
  return "";
#endif
}

uint64_t moe_driver::streamSyncCount() {
#ifdef MOE_MODEL_MAIN_CUDA
  return moertMlirStreamSyncCount();
#else
  return 0;
#endif
}

long long moe_driver::captureGraph(void (*call)(void *), void *context,
                                   std::string &why) {
#ifdef MOE_MODEL_MAIN_CUDA
  if (moertMlirGraphCaptureBegin() != 0) {
    why = moertMlirGraphFailure();
    return -1;
  }
  call(context);
  long long nodes = moertMlirGraphCaptureEnd();
  // A failed capture is not a CUDA failure; a recorded one is.
  checkDevice("while capturing a CUDA graph");
  if (nodes < 0)
    why = moertMlirGraphFailure();
  return nodes;
#else
  (void)call;
  (void)context;
  why = "the CPU back end has no CUDA graphs";
  return -1;
#endif
}

void moe_driver::replayGraph() {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirGraphLaunch();
  checkDevice("while replaying the CUDA graph");
#endif
}

void moe_driver::releaseGraph() {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirGraphDestroy();
  checkDevice("while releasing the CUDA graph");
#endif
}

void moe_driver::releaseCachedMemory() {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirReleaseCachedBuffers();
  checkDevice("while releasing cached buffers");
#endif
}

void moe_driver::copyBuffer(void *dst, const void *src, size_t bytes) {
#ifdef MOE_MODEL_MAIN_CUDA
  moertMlirCopy(dst, src, bytes);
  checkDevice("while copying a buffer");
#else
  std::memcpy(dst, src, bytes);
#endif
}

/// Every host allocation of the CUDA back end is host-shared memory; the
/// CPU back end's are malloc'ed.
void moe_driver::releaseResult(void *allocated) { freeBuffer(allocated); }

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

namespace {
struct Options {
  std::string tokensPath, dumpParams, dumpBatch, lossNpy;
  int64_t batch = -1, length = -1;
  uint64_t seed = 0;
  int64_t repeat = 1;
  bool verbose = false;
  bool cudaGraph = false;
};

} // namespace

#ifdef MOE_MODEL_MAIN_CUDA
const char *const moe_driver::kTargetName = "cuda (sm_90 kernels, device 0)";
#else
const char *const moe_driver::kTargetName = "cpu";
#endif

namespace {

void printHelp(const char *argv0, const Manifest &manifest) {
  std::printf(
      "USAGE: %s [options]\n\n"
      "Runs the forward pass of the model '%s' (compiled by moe-compile\n"
      "--forward-only) on one batch and prints its mean cross-entropy loss\n"
      "as 'loss <value>'.\n"
      "Weights are initialised from --seed by the model's init rules.\n"
      "Sequence b of the batch reads tokens [b*T, b*T + T) of the token\n"
      "stream and is labelled with the tokens one position later, so a\n"
      "batch needs B*T + 1 tokens.\n\n"
      "OPTIONS:\n"
      "  --tokens=FILE      token ids, little-endian uint32 (default: the\n"
      "                     embedded sample text, one token per byte)\n"
      "  --batch=B          sequences per batch (default 2)\n"
      "  --seq-len=T        tokens per sequence (default 64)\n"
      "  --seed=N           weight initialisation seed (default 0)\n"
      "  --repeat=N         run the forward pass N times (default 1); the\n"
      "                     loss is the first run's, and --verbose reports\n"
      "                     the first run's time and the mean of the others\n"
      "  --dump-params=DIR  write every parameter as DIR/<name>.npy (f32)\n"
      "  --dump-batch=DIR   write DIR/tokens.npy and DIR/labels.npy (i32)\n"
      "  --loss-npy=FILE    also write the loss as a 0-d f32 .npy file\n"
#ifdef MOE_MODEL_MAIN_CUDA
      "  --cuda-graph[=on|off]\n"
      "                     with --repeat=N > 1: after the first run,\n"
      "                     capture the forward pass once as a CUDA graph\n"
      "                     and replay it for the N - 1 later runs; every\n"
      "                     replay's loss must equal the first run's bit for\n"
      "                     bit. A forward that cannot be captured runs\n"
      "                     uncaptured, with a warning (default off)\n"
#endif
      "  --verbose          print the model, the batch and the time taken\n"
      "                     (tokens per second) to stderr\n"
      "  --help             print this help\n\n"
      "Model: vocab_size %ld, hidden_size %ld, %zu parameter tensors, %ld "
      "scalars. Target: %s.\n",
      argv0, manifest.name.c_str(), manifest.vocab, manifest.hidden,
      manifest.params.size(), manifest.scalars, kTargetName);
}

} // namespace

void moe_driver::resolveStaticSize(int64_t &size, int64_t fixed,
                                   int64_t fallback, const char *option) {
  if (fixed >= 0 && size >= 0 && size != fixed)
    fail(std::string("the model was compiled for ") + option + " " +
         std::to_string(fixed) + ", got " + std::to_string(size));
  if (size < 0)
    size = fixed >= 0 ? fixed : fallback;
}

bool moe_driver::parseInteger(const std::string &text, int64_t &value,
                              int64_t min) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || parsed < min)
    return false;
  value = parsed;
  return true;
}

uint64_t moe_driver::parseSeed(const std::string &key,
                               const std::string &value) {
  if (value.empty() ||
      value.find_first_not_of("0123456789") != std::string::npos)
    fail("option " + key + " expects an integer >= 0, got '" + value + "'");
  errno = 0;
  unsigned long long parsed = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE)
    fail("option " + key + " expects an integer below 2^64 = " +
         "18446744073709551616, got '" + value + "' (too large)");
  return parsed;
}

namespace {
Options parseOptions(int argc, char **argv, const Manifest &manifest) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      printHelp(argv[0], manifest);
      std::exit(0);
    }
    if (arg == "--verbose") {
      options.verbose = true;
      continue;
    }
#ifdef MOE_MODEL_MAIN_CUDA
    if (arg == "--cuda-graph" || arg == "--cuda-graph=on" ||
        arg == "--cuda-graph=off") {
      options.cudaGraph = arg != "--cuda-graph=off";
      continue;
    }
    if (arg.rfind("--cuda-graph=", 0) == 0)
      fail("option --cuda-graph expects on or off, got '" + arg.substr(13) +
           "'");
#endif
    size_t equals = arg.find('=');
    std::string key = arg.substr(0, equals);
    if (equals == std::string::npos) {
      fail("unknown or incomplete option '" + arg +
           "' (options take the form --name=value; see --help)");
    }
    std::string value = arg.substr(equals + 1);
    if (value.empty())
      fail("option " + key + " expects a value, got an empty one");
    auto integer = [&](int64_t &out, int64_t min) {
      if (!parseInteger(value, out, min))
        fail("option " + key + " expects an integer >= " + std::to_string(min) +
             ", got '" + value + "'");
    };
    if (key == "--tokens") {
      options.tokensPath = value;
    } else if (key == "--batch") {
      integer(options.batch, 1);
    } else if (key == "--seq-len") {
      integer(options.length, 1);
    } else if (key == "--seed") {
      options.seed = parseSeed(key, value);
    } else if (key == "--repeat") {
      integer(options.repeat, 1);
    } else if (key == "--dump-params") {
      options.dumpParams = value;
    } else if (key == "--dump-batch") {
      options.dumpBatch = value;
    } else if (key == "--loss-npy") {
      options.lossNpy = value;
    } else {
      fail("unknown option '" + key + "' (see --help)");
    }
  }
  resolveStaticSize(options.batch, manifest.batch, 2, "--batch");
  resolveStaticSize(options.length, manifest.length, 64, "--seq-len");
  return options;
}
} // namespace

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

namespace {
/// The --forward-only program: one forward pass, `loss <value>`.
int runForward(int argc, char **argv, const Manifest &manifest) {
  Options options = parseOptions(argc, argv, manifest);
  // The kernels were loaded before main (the compiled code's constructors).
  checkDevice("while loading the kernels");

  // Weights.
  std::vector<float> params(static_cast<size_t>(manifest.scalars));
  initialiseParams(manifest, options.seed, params.data());

  // Tokens: the stream, then one batch of inputs and next-token labels.
  std::vector<uint32_t> stream;
  if (options.tokensPath.empty()) {
    if (manifest.vocab < 256)
      fail("the embedded sample data are bytes (ids 0-255), but the model's "
           "vocab_size is " +
           std::to_string(manifest.vocab) + "; pass --tokens=FILE");
    for (const char *c = kSampleText; *c; ++c)
      stream.push_back(static_cast<unsigned char>(*c));
  } else {
    stream = readTokens(options.tokensPath);
  }
  int64_t batch = options.batch, length = options.length;
  size_t needed = static_cast<size_t>(batch * length + 1);
  if (stream.size() < needed)
    fail(std::string(options.tokensPath.empty()
                         ? "the embedded sample data"
                         : "token file '" + options.tokensPath + "'") +
         " holds " + std::to_string(stream.size()) + " tokens, but batch " +
         std::to_string(batch) + " x seq-len " + std::to_string(length) +
         " needs " + std::to_string(needed));
  for (size_t i = 0; i < needed; ++i)
    if (stream[i] >= static_cast<uint64_t>(manifest.vocab))
      fail("token " + std::to_string(stream[i]) + " at position " +
           std::to_string(i) + " is out of range for vocab_size " +
           std::to_string(manifest.vocab));
  std::vector<int32_t> inputs(needed - 1), labels(needed - 1);
  for (size_t i = 0; i + 1 < needed; ++i) {
    inputs[i] = static_cast<int32_t>(stream[i]);
    labels[i] = static_cast<int32_t>(stream[i + 1]);
  }

  if (!options.dumpParams.empty())
    dumpParams(options.dumpParams, manifest, params.data());
  if (!options.dumpBatch.empty()) {
    makeDirectory(options.dumpBatch);
    writeNpy(options.dumpBatch + "/tokens.npy", "<i4", sizeof(int32_t),
             {batch, length}, inputs.data());
    writeNpy(options.dumpBatch + "/labels.npy", "<i4", sizeof(int32_t),
             {batch, length}, labels.data());
  }

  // The forward pass, on buffers the compiled code can read.
  float *paramData = params.data();
  int32_t *inputData = inputs.data(), *labelData = labels.data();
#ifdef MOE_MODEL_MAIN_CUDA
  paramData = sharedCopy(params);
  inputData = sharedCopy(inputs);
  labelData = sharedCopy(labels);
#endif
  MemRef<float, 1> paramsRef = {
      paramData, paramData, 0, {manifest.scalars}, {1}};
  MemRef<int32_t, 2> tokensRef = {
      inputData, inputData, 0, {batch, length}, {length, 1}};
  MemRef<int32_t, 2> labelsRef = {
      labelData, labelData, 0, {batch, length}, {length, 1}};
  float loss = 0;
  double firstSeconds = 0, otherSeconds = 0;
  // --verbose on CUDA: one run's kernels are timed with events, which slows
  // its launches a little: the only run when there is one, else an extra
  // run after the timed ones (warm: no first-touch faults of the managed
  // parameters), left out of the timings.
  int64_t profiledRun = -1;
#ifdef MOE_MODEL_MAIN_CUDA
  double kernelMilliseconds = 0;
  int kernelLaunches = 0;
  if (options.verbose)
    profiledRun = options.repeat > 1 ? options.repeat : 0;
  CapturedForward graph;
  unsigned long long syncsBefore = moertMlirStreamSyncCount();
#endif
  int64_t runs = std::max<int64_t>(options.repeat, profiledRun + 1);
  for (int64_t run = 0; run < runs; ++run) {
#ifdef MOE_MODEL_MAIN_CUDA
    // The timed runs after the first replay the graph; the profiled extra
    // run goes through the compiled code, whose launches the events time.
    if (graph.ready && run < options.repeat) {
      auto start = std::chrono::steady_clock::now();
      moertMlirGraphLaunch();
      auto stop = std::chrono::steady_clock::now();
      checkDevice("while replaying the forward pass's CUDA graph");
      float replayed = graph.loss.aligned[graph.loss.offset];
      if (floatBits(replayed) != floatBits(loss)) {
        char text[256];
        std::snprintf(text, sizeof(text),
                      "the CUDA graph's replay %ld gave the loss %.9g (bits "
                      "0x%08x), the first run %.9g (bits 0x%08x)",
                      static_cast<long>(run), replayed, floatBits(replayed),
                      loss, floatBits(loss));
        fail(std::string(text) +
             ": the graph does not compute what the forward pass does "
             "(run with --cuda-graph=off)");
      }
      otherSeconds += std::chrono::duration<double>(stop - start).count();
      continue;
    }
    moertMlirSetKernelTiming(run == profiledRun ? 1 : 0);
#endif
    MemRef0<float> lossRef = {nullptr, nullptr, 0};
    auto start = std::chrono::steady_clock::now();
    _mlir_ciface_moe_model_forward(&lossRef, &paramsRef, &tokensRef,
                                   &labelsRef);
    auto stop = std::chrono::steady_clock::now();
    checkDevice("while running the forward pass");
#ifdef MOE_MODEL_MAIN_CUDA
    if (run == profiledRun) {
      kernelMilliseconds = moertMlirKernelMilliseconds();
      kernelLaunches = moertMlirLastKernelTimes(nullptr, 0);
      moertMlirSetKernelTiming(0);
      checkDevice("while timing the kernels");
    }
#endif
    if (run == 0)
      loss = lossRef.aligned[lossRef.offset];
    releaseResult(lossRef.allocated);
    double seconds = std::chrono::duration<double>(stop - start).count();
    if (run == 0)
      firstSeconds += seconds;
    else if (run < options.repeat)
      otherSeconds += seconds;
#ifdef MOE_MODEL_MAIN_CUDA
    if (run == 0 && options.cudaGraph && options.repeat > 1) {
      graph = captureForward(paramsRef, tokensRef, labelsRef,
                             moertMlirStreamSyncCount() - syncsBefore);
      if (!graph.ready)
        std::fprintf(stderr,
                     "warning: the forward pass is not replayed as a CUDA "
                     "graph: %s; it runs uncaptured\n",
                     graph.why.c_str());
    }
#endif
  }
#ifdef MOE_MODEL_MAIN_CUDA
  // The most GPU memory in use at once over the runs: the compiled code's
  // device buffers plus the managed parameters, batch and results (what
  // torch.cuda.max_memory_allocated counts for the peer).
  // A driver that cannot say costs the report only, not the run.
  unsigned long long poolPeak = 0, managedPeak = 0;
  bool peakKnown = moertMlirPeakBytes(&poolPeak, &managedPeak) == 0;
  unsigned long long graphPeak = 0;
  if (peakKnown && graph.ready)
    peakKnown = moertMlirGraphPeakBytes(&graphPeak) == 0;
  std::string peakError = peakKnown ? "" : moertMlirGetError();
  moertMlirClearError();
  if (graph.ready) {
    moertMlirGraphDestroy();
    checkDevice("while releasing the CUDA graph");
    releaseResult(graph.loss.allocated);
  }
  moertMlirFree(paramData);
  moertMlirFree(inputData);
  moertMlirFree(labelData);
#endif

  std::printf("loss %.6f\n", loss);
  if (!options.lossNpy.empty())
    writeNpy(options.lossNpy, "<f4", sizeof(float), {}, &loss);
  if (options.verbose) {
    double tokens = static_cast<double>(batch * length);
    std::fprintf(stderr,
                 "model %s: vocab_size %ld, hidden_size %ld, %ld parameters\n"
                 "target %s\n"
                 "batch %ld x %ld tokens, seed %lu\n"
                 "forward %.3f s, %.1f tokens/s\n",
                 manifest.name.c_str(), manifest.vocab, manifest.hidden,
                 manifest.scalars, kTargetName, batch, length,
                 static_cast<unsigned long>(options.seed), firstSeconds,
                 tokens / firstSeconds);
#ifdef MOE_MODEL_MAIN_CUDA
    std::fprintf(stderr,
                 "kernels of the %s run: %d launches, %.3f ms on the GPU\n",
                 profiledRun == 0 ? "first" : "profiled warm", kernelLaunches,
                 kernelMilliseconds);
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    if (peakKnown)
      std::fprintf(stderr,
                   "peak GPU memory: %.3f GiB (device buffers %llu bytes, "
                   "managed parameters, batch and results %llu bytes)\n",
                   (poolPeak + managedPeak) / kGiB, poolPeak, managedPeak);
    else
      std::fprintf(stderr, "peak GPU memory: unknown (%s)\n",
                   peakError.c_str());
    if (graph.ready)
      std::fprintf(stderr,
                   "forward replayed as a CUDA graph of %lld nodes (captured "
                   "in %.3f ms; its own buffers %llu bytes at most); the %ld "
                   "replays' losses equal the first run's bit for bit\n",
                   graph.nodes, graph.seconds * 1e3, graphPeak,
                   static_cast<long>(options.repeat - 1));
#endif
    if (options.repeat > 1) {
      double mean = otherSeconds / static_cast<double>(options.repeat - 1);
      const char *how = "";
#ifdef MOE_MODEL_MAIN_CUDA
      if (graph.ready)
        how = " (CUDA graph replays)";
#endif
      std::fprintf(stderr,
                   "forward, mean of the %ld later runs%s: %.3f ms, %.1f "
                   "tokens/s\n",
                   static_cast<long>(options.repeat - 1), how, mean * 1e3,
                   tokens / mean);
    }
  }
  if (!std::isfinite(loss)) {
    std::fprintf(stderr, "error: the loss is not finite\n");
    return 2;
  }
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  Manifest manifest = parseManifest(moe_model_manifest);
  if (!manifest.train)
    return runForward(argc, argv, manifest);
  if (!_mlir_ciface_moe_model_train_step)
    fail("the manifest says 'program train' but the executable has no "
         "moe_model_train_step (it is damaged)");
  return runTraining(argc, argv, manifest);
}
