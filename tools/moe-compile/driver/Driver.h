//===- Driver.h - Shared pieces of the executables' driver ------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What the two halves of the driver share: the compiled model's C interface
// (MLIR memref descriptors and the entry points), the manifest that
// moe-compile writes into the object, weight initialisation, option parsing
// and buffers the compiled code can read. ModelMain.cpp holds main() and the
// forward-only program; Train.cpp the training loop. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_DRIVER_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moe_driver {

//===----------------------------------------------------------------------===//
// The compiled model's ABI
//===----------------------------------------------------------------------===//

/// MLIR's ranked memref descriptor.
template <typename T, int Rank>
struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};
/// The rank-0 descriptor (no sizes, no strides).
template <typename T>
struct MemRef0 {
  T *allocated;
  T *aligned;
  int64_t offset;
};

/// The results of `@moe_model_train_step` (docs/Training.md): MLIR's C
/// interface returns several results as one struct of descriptors, through
/// a pointer passed first.
struct TrainStepResults {
  MemRef0<float> loss;
  MemRef<float, 1> params, m, v, metrics;
};

} // namespace moe_driver

extern "C" {
/// The manifest: text written by moe-compile, see parseManifest.
extern const char moe_model_manifest[];
/// `func.func @moe_model_forward(params, tokens, labels) -> tensor<f32>`
/// through MLIR's C interface; the result is a fresh heap buffer.
void _mlir_ciface_moe_model_forward(moe_driver::MemRef0<float> *loss,
                                    moe_driver::MemRef<float, 1> *params,
                                    moe_driver::MemRef<int32_t, 2> *tokens,
                                    moe_driver::MemRef<int32_t, 2> *labels);
/// `func.func @moe_model_train_step(params, m, v, tokens, labels, hyper)
/// -> (loss, params, m, v, metrics)`. Weak: a --forward-only program does
/// not define it (its manifest says `program forward`).
void _mlir_ciface_moe_model_train_step(moe_driver::TrainStepResults *results,
                                       moe_driver::MemRef<float, 1> *params,
                                       moe_driver::MemRef<float, 1> *m,
                                       moe_driver::MemRef<float, 1> *v,
                                       moe_driver::MemRef<int32_t, 2> *tokens,
                                       moe_driver::MemRef<int32_t, 2> *labels,
                                       moe_driver::MemRef<float, 1> *hyper)
    __attribute__((weak));

/// The distributed runtime (lib/DistRuntime/DistRuntime.h). Weak: only a
/// data-parallel program (`data_parallel <N>`) links it.
int moe_dist_init_groups(int64_t expectedWorldSize, int64_t expertParallel,
                         char *error, size_t errorSize) __attribute__((weak));
int64_t moe_dist_rank(void) __attribute__((weak));
void moe_dist_all_reduce_sum(void *data, int64_t count, int64_t dtype)
    __attribute__((weak));
void moe_dist_finalize(void) __attribute__((weak));
}

namespace moe_driver {

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

enum class InitKind { Zeros, Ones, Normal, LogUniform, InverseSoftplusDt };

struct Param {
  std::string name;
  int64_t offset = 0;
  int64_t size = 0;
  InitKind kind = InitKind::Zeros;
  double std = 0, low = 0, high = 0;
  std::vector<int64_t> shape;
  /// The Hugging Face (Kimi-Linear) checkpoint key, "" if there is none;
  /// "{e}" in it stands for the expert index when hfPerExpert.
  std::string hfName;
  /// The checkpoint holds the transpose of the last two dimensions
  /// (torch.nn.Linear's [out, in]).
  bool hfTransposed = false;
  /// The checkpoint holds one tensor per index of dimension 0 (expert).
  bool hfPerExpert = false;
};

/// Entries [offset, offset + count) of the train step's metrics vector.
struct Metric {
  std::string name;
  int64_t offset = 0, count = 0;
};

struct Manifest {
  std::string name;
  int64_t vocab = 0, hidden = 0, scalars = 0;
  /// Static batch and sequence sizes of the token tensor, -1 if dynamic.
  int64_t batch = -1, length = -1;
  std::vector<Param> params;
  /// Whether the program carries @moe_model_train_step (`program train`).
  bool train = false;
  /// Size of the train step's metrics vector, and its named entries.
  int64_t numMetrics = 0;
  std::vector<Metric> metrics;
  /// Data-parallel ranks of the train step (`data_parallel <N>`), 1 if
  /// not sharded.
  int64_t dataParallel = 1;
  /// Ranks per expert-parallel group (`expert_parallel <P>`), 1 if the
  /// experts are not shared out.
  int64_t expertParallel = 1;
};

/// Prints `error: <message>` to stderr and exits with status 1.
[[noreturn]] void fail(const std::string &message);

/// Parses the manifest that moe-compile wrote; a malformed one is an
/// internal error (the executable is damaged).
Manifest parseManifest(const char *text);

//===----------------------------------------------------------------------===//
// Random numbers and initialisation
//===----------------------------------------------------------------------===//

/// SplitMix64: a small, well-mixed 64-bit generator.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1): 53 random bits, never exactly 0 or 1.
  double uniform() {
    return ((next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }
  /// Uniform in [0, bound) for bound >= 1, without modulo bias.
  uint64_t below(uint64_t bound);
  /// Standard normal (Box-Muller).
  double normal();
  /// The whole state, for checkpoints: setState(getState()) changes
  /// nothing.
  uint64_t getState() const { return state; }
  void setState(uint64_t value) { state = value; }

private:
  uint64_t state;
};

/// FNV-1a of a string.
uint64_t hashName(const std::string &name);

/// The parameters packed in manifest order, initialised from `seed` by each
/// parameter's init rule (ALGORITHMS.md sections 2.1 and 7.4); each
/// parameter draws from its own stream (seed and name).
void initialiseParams(const Manifest &manifest, uint64_t seed, float *values);

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

/// Writes a little-endian .npy file.
void writeNpy(const std::string &path, const char *descr, size_t itemSize,
              const std::vector<int64_t> &shape, const void *data);
void makeDirectory(const std::string &path);
/// Writes every parameter as DIR/<name>.npy ('/' in a name becomes '_').
void dumpParams(const std::string &dir, const Manifest &manifest,
                const float *params);

/// A view of bytes.
struct ByteSpan {
  const unsigned char *data = nullptr;
  size_t size = 0;
};
/// The embedded training text (Corpus.cpp).
ByteSpan embeddedCorpus();

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// Parses a decimal integer >= min (the whole text); false if it is not one.
bool parseInteger(const std::string &text, int64_t &value, int64_t min);

/// Settles a batch or sequence size given by `option` (-1 when not given)
/// against the model's static size `fixed` (-1 when dynamic): the static
/// size wins over `fallback` and must agree with an explicit option.
void resolveStaticSize(int64_t &size, int64_t fixed, int64_t fallback,
                       const char *option);
/// The value of the seed option `key`: a decimal integer in [0, 2^64).
/// Fails with a message that says what is wrong otherwise.
uint64_t parseSeed(const std::string &key, const std::string &value);

//===----------------------------------------------------------------------===//
// Memory the compiled code reads
//===----------------------------------------------------------------------===//

/// The back end's name, for --help and --verbose.
extern const char *const kTargetName;

/// Fails with the CUDA adapter's recorded failure, if any.
void checkDevice(const char *when);
/// `bytes` of memory the compiled code can read (host-shared on CUDA,
/// 64-byte aligned heap memory on the CPU); fails when there is none.
void *allocateBuffer(size_t bytes);
void freeBuffer(void *buffer);
/// Frees a buffer the compiled code returned.
void releaseResult(void *allocated);

/// Times the GPU kernels that the next calls launch (CUDA; nothing on the
/// CPU, where `finishKernelTiming` then returns false).
void startKernelTiming();
/// Stops the timing of startKernelTiming: the launches' number and summed
/// GPU milliseconds (MOERT_KERNEL_PROFILE=1 also prints them by kernel
/// name on stderr). False on the CPU.
bool finishKernelTiming(int &launches, double &milliseconds);
/// "peak GPU memory: ..." (device buffers plus host-shared memory in use at
/// once so far), or "" on the CPU.
std::string peakMemoryLine();

//===----------------------------------------------------------------------===//
// CUDA graphs of a whole call (CUDA; the CPU back end has none)
//===----------------------------------------------------------------------===//

/// How often the host has waited for the GPU so far (0 on the CPU): a call
/// that waits more than once reads results mid-way and cannot be a graph.
uint64_t streamSyncCount();
/// Captures one `call` of compiled code as a CUDA graph: nothing runs, and
/// the results the call returns are the graph's, written at every replay.
/// Returns the graph's node count, or -1 with `why` (the call's results are
/// then garbage: run it again). Always -1 on the CPU.
long long captureGraph(void (*call)(void *), void *context, std::string &why);
/// Replays the captured graph and waits for it (fails on a device error).
void replayGraph();
/// Releases the captured graph and its memory.
void releaseGraph();
/// Gives the buffers that freed memory pools keep back to the driver (a
/// graph's replays allocate from memory of their own).
void releaseCachedMemory();
/// Copies `bytes` between buffers the compiled code reads, after the work
/// queued so far.
void copyBuffer(void *dst, const void *src, size_t bytes);

/// The training program (Train.cpp): parses its options and trains.
int runTraining(int argc, char **argv, const Manifest &manifest);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_DRIVER_H
