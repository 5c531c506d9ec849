//===- MlirGpuAdapter.cpp - MLIR's mgpu* host ABI on the CUDA driver ------===//
//
// Part of the moe-mlir project.
//
// Implements the functions that MLIR's GPU-to-LLVM lowering calls from host
// code: module load (PTX through the driver JIT, or cubin), function lookup,
// kernel launch, streams, and allocation (device or host-shared). Failures
// are recorded, never printed; see moert_mlir.h.
//
//===----------------------------------------------------------------------===//

#include "moert/moert_mlir.h"

#include <cuda.h> // defines: the driver API

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

/// Allocations made through mgpuMemAlloc, by address (their size), and
/// freed ones kept for reuse, by size. Callers hold the state's mutex.
struct BufferPool {
  std::unordered_map<void *, uint64_t> sizes;
  std::multimap<uint64_t, void *> idle;

  /// A kept buffer of `size` bytes, or null.
  void *take(uint64_t size) {
    auto kept = idle.find(size);
    if (kept == idle.end())
      return nullptr;
    void *ptr = kept->second;
    idle.erase(kept);
    return ptr;
  }
  /// Keeps `ptr` if this pool allocated it.
  bool keep(void *ptr) {
    auto known = sizes.find(ptr);
    if (known == sizes.end())
      return false;
    idle.emplace(known->second, ptr);
    return true;
  }
  /// Forgets the kept buffers and returns them.
  std::vector<void *> drain() {
    std::vector<void *> buffers;
    for (auto &entry : idle) {
      sizes.erase(entry.second);
      buffers.push_back(entry.second);
    }
    idle.clear();
    return buffers;
  }
};

/// Where a CUDA graph capture of one call of compiled code stands
/// (moertMlirGraphCaptureBegin .. moertMlirGraphCaptureEnd).
enum class CaptureStage {
  Off,       // no capture: every call runs
  Armed,     // the next mgpuStreamCreate starts capturing its stream
  Capturing, // the captured stream's work becomes the graph's
  Captured,  // the captured stream was synchronized: the graph is complete
  Failed,    // the capture failed (`failure` says why): work is skipped
};

/// The capture of a call and the graph it made.
struct GraphState {
  CaptureStage stage = CaptureStage::Off;
  std::string failure;
  CUstream stream = nullptr; // the captured stream
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  size_t nodes = 0;
  CUstream launchStream = nullptr; // where moertMlirGraphLaunch runs it
};

/// Process-wide adapter state: the ABI passes no context.
struct AdapterState {
  std::mutex mutex;
  std::string error;
  CUcontext context = nullptr;
  bool initialized = false;
  /// Host-shared (managed) buffers: they come back at the next call without
  /// a new allocation, whose cost grows with its size (results handed to
  /// the caller leave the pool's books when the caller frees them). Device
  /// buffers are the driver's stream-ordered pool's.
  BufferPool shared;
  /// Managed memory allocated and not yet freed (bytes by address), and
  /// the most of it at once since the last reset.
  std::unordered_map<void *, uint64_t> managedSizes;
  uint64_t managedBytes = 0, managedPeak = 0;
  /// Streams that compiled code destroyed, kept for its next
  /// mgpuStreamCreate: the host code of a synchronous launch creates and
  /// destroys one around every launch.
  std::vector<CUstream> idleStreams;
  /// Kernel timing: events around each launch since the last read.
  bool timing = false;
  std::vector<std::pair<CUevent, CUevent>> launchEvents;
  std::vector<CUfunction> launchFunctions;
  std::vector<double> lastTimes;
  /// The dynamic shared memory each kernel has been allowed so far.
  std::unordered_map<void *, int32_t> sharedLimits;
  /// Host waits for a stream (mgpuStreamSynchronize, and releases of
  /// host-shared buffers) outside captures.
  uint64_t streamSyncs = 0;
  GraphState capture;
};

AdapterState &state() {
  // Never destroyed: compiled libraries unload their modules from their
  // own static destructors, which may run after this file's.
  static AdapterState *instance = new AdapterState;
  return *instance;
}

/// Records the first failure of `call` with its CUresult name.
void recordFailure(const char *call, CUresult result,
                   const std::string &detail = {}) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.error.empty())
    return;
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  s.error = std::string(call) + " failed: " + name;
  if (!detail.empty())
    s.error += " (" + detail + ")";
}

std::string resultName(CUresult result) {
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  return name;
}

CaptureStage captureStage() {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.capture.stage;
}

/// Fails the capture under way, if any, for `why` (the first reason is
/// kept). A stream still capturing stops, so that it runs work again; the
/// partial graph is dropped. From here on the captured call's GPU work is
/// skipped (its results are not used).
void failCapture(const std::string &why) {
  AdapterState &s = state();
  CUstream capturing = nullptr;
  CUgraph graph = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    GraphState &c = s.capture;
    if (c.stage == CaptureStage::Off)
      return;
    if (c.failure.empty())
      c.failure = why;
    if (c.stage == CaptureStage::Capturing)
      capturing = c.stream;
    graph = c.graph;
    c.graph = nullptr;
    c.stage = CaptureStage::Failed;
  }
  if (capturing) {
    // An invalidated capture ends with an error and no graph.
    CUgraph partial = nullptr;
    if (cuStreamEndCapture(capturing, &partial) == CUDA_SUCCESS && partial)
      cuGraphDestroy(partial);
  }
  if (graph)
    cuGraphDestroy(graph);
}

/// A failed driver call: the capture's failure while capturing (the call
/// runs again uncaptured), else the adapter's.
void reportFailure(const char *call, CUresult result) {
  if (captureStage() == CaptureStage::Capturing) {
    failCapture(std::string(call) +
                " failed while capturing: " + resultName(result));
    return;
  }
  recordFailure(call, result);
}

/// Whether a GPU call (`call`, on `stream`) of compiled code runs: always
/// outside captures; while capturing, on the captured stream only. Any
/// other call in a capture fails it (the graph would miss that work) and
/// is skipped.
bool runsWork(const char *call, CUstream stream) {
  std::string why;
  {
    AdapterState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    GraphState &c = s.capture;
    switch (c.stage) {
    case CaptureStage::Off:
      return true;
    case CaptureStage::Failed:
      return false;
    case CaptureStage::Capturing:
      if (stream == c.stream)
        return true;
      why = std::string(call) + " on a stream other than the captured one";
      break;
    case CaptureStage::Armed:
      why = std::string(call) + " before the compiled code created a stream";
      break;
    case CaptureStage::Captured:
      why = std::string(call) +
            " after the compiled code synchronized its stream (a graph "
            "would hold only the part of the call before that wait)";
      break;
    }
  }
  failCapture(why);
  return false;
}

bool failed() {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return !s.error.empty();
}

#define MOERT_MLIR_CHECK(expr, ...)                                            \
  do {                                                                         \
    CUresult result_ = (expr);                                                 \
    if (result_ != CUDA_SUCCESS) {                                             \
      reportFailure(#expr, result_);                                           \
      return __VA_ARGS__;                                                      \
    }                                                                          \
  } while (false)

/// Makes device 0's primary context current on this thread, creating it and
/// sizing the device heap (kernels allocate tiles with malloc) on first use.
bool ensureContext() {
  if (failed())
    return false;
  AdapterState &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.initialized) {
      CUcontext current = nullptr;
      if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == s.context)
        return true;
    }
  }
  MOERT_MLIR_CHECK(cuInit(/*Flags=*/0), false);
  CUdevice device;
  MOERT_MLIR_CHECK(cuDeviceGet(&device, /*ordinal=*/0), false);
  CUcontext context;
  MOERT_MLIR_CHECK(cuDevicePrimaryCtxRetain(&context, device), false);
  MOERT_MLIR_CHECK(cuCtxSetCurrent(context), false);
  CUresult limitResult = CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.initialized) {
      size_t heapBytes = size_t(1) << 30;
      if (const char *env = std::getenv("MOERT_DEVICE_HEAP_BYTES"))
        heapBytes = std::strtoull(env, nullptr, 10);
      limitResult = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, heapBytes);
      if (limitResult == CUDA_SUCCESS) {
        s.context = context;
        s.initialized = true;
      }
    }
  }
  if (limitResult != CUDA_SUCCESS) {
    recordFailure("cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)", limitResult);
    return false;
  }
  // Device buffers come from the device's stream-ordered pool, which keeps
  // what is freed (instead of returning it to the driver at every
  // synchronization) so that the next call's buffers cost nothing.
  CUmemoryPool pool;
  MOERT_MLIR_CHECK(cuDeviceGetDefaultMemPool(&pool, device), false);
  cuuint64_t keepAll = ~cuuint64_t(0);
  MOERT_MLIR_CHECK(
      cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepAll),
      false);
  return true;
}

CUmodule loadModule(const void *data, bool isPTX, int optLevel) {
  if (!ensureContext())
    return nullptr;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(
                        optLevel < 0 ? 0 : (optLevel > 4 ? 4 : optLevel)))};
  CUmodule module = nullptr;
  CUresult result =
      cuModuleLoadDataEx(&module, data, isPTX ? 3 : 2, options, values);
  if (result != CUDA_SUCCESS) {
    recordFailure("cuModuleLoadDataEx", result,
                  log[0] ? std::string("JIT log: ") + log : std::string());
    return nullptr;
  }
  return module;
}

/// With MOERT_KERNEL_PROFILE set: the timed launches' time by kernel name
/// on stderr, largest first.
void printKernelProfile(const std::vector<CUfunction> &functions,
                        const std::vector<double> &times, double total) {
  struct Row {
    std::string name;
    int launches = 0;
    double ms = 0.0;
  };
  std::vector<Row> rows;
  std::unordered_map<CUfunction, size_t> index;
  for (size_t i = 0; i < functions.size() && i < times.size(); ++i) {
    auto [it, inserted] = index.try_emplace(functions[i], rows.size());
    if (inserted) {
      const char *name = nullptr;
      if (cuFuncGetName(&name, functions[i]) != CUDA_SUCCESS || !name)
        name = "(unnamed)";
      rows.push_back({name});
    }
    rows[it->second].launches += 1;
    rows[it->second].ms += times[i];
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row &a, const Row &b) { return a.ms > b.ms; });
  std::fprintf(stderr, "kernel profile: %zu launches, %.3f ms\n", times.size(),
               total);
  std::fprintf(stderr, "%10s %8s %6s  %s\n", "ms", "launches", "share",
               "kernel");
  for (const Row &row : rows)
    std::fprintf(stderr, "%10.3f %8d %5.1f%%  %s\n", row.ms, row.launches,
                 total > 0 ? 100.0 * row.ms / total : 0.0, row.name.c_str());
}

/// Takes `ptr` off the managed-memory books, if it is on them. Callers hold
/// the state's mutex.
void forgetManaged(AdapterState &s, void *ptr) {
  auto known = s.managedSizes.find(ptr);
  if (known == s.managedSizes.end())
    return;
  s.managedBytes -= known->second;
  s.managedSizes.erase(known);
}

} // namespace

extern "C" {

const char *moertMlirGetError(void) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.error.c_str();
}

void moertMlirClearError(void) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.error.clear();
}

void *moertMlirAllocShared(unsigned long long sizeBytes) {
  if (!ensureContext())
    return nullptr;
  CUdeviceptr ptr = 0;
  uint64_t size = sizeBytes ? sizeBytes : 1;
  MOERT_MLIR_CHECK(cuMemAllocManaged(&ptr, size, CU_MEM_ATTACH_GLOBAL),
                   nullptr);
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.managedSizes[reinterpret_cast<void *>(ptr)] = size;
  s.managedBytes += size;
  s.managedPeak = std::max(s.managedPeak, s.managedBytes);
  return reinterpret_cast<void *>(ptr);
}

void moertMlirFree(void *ptr) {
  if (!ptr || !ensureContext())
    return;
  {
    AdapterState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.shared.sizes.erase(ptr);
    forgetManaged(s, ptr);
  }
  MOERT_MLIR_CHECK(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
}

int moertMlirPeakBytes(unsigned long long *devicePool,
                       unsigned long long *managed) {
  if (!ensureContext())
    return -1;
  CUdevice device;
  CUmemoryPool pool;
  cuuint64_t high = 0;
  MOERT_MLIR_CHECK(cuCtxGetDevice(&device), -1);
  MOERT_MLIR_CHECK(cuDeviceGetDefaultMemPool(&pool, device), -1);
  MOERT_MLIR_CHECK(
      cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high), -1);
  if (devicePool)
    *devicePool = high;
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (managed)
    *managed = s.managedPeak;
  return 0;
}

void moertMlirResetPeakBytes(void) {
  if (!ensureContext())
    return;
  CUdevice device;
  CUmemoryPool pool;
  cuuint64_t zero = 0;
  MOERT_MLIR_CHECK(cuCtxGetDevice(&device));
  MOERT_MLIR_CHECK(cuDeviceGetDefaultMemPool(&pool, device));
  // Setting the high-water mark to zero restarts it at the current use.
  MOERT_MLIR_CHECK(
      cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.managedPeak = s.managedBytes;
}

//===----------------------------------------------------------------------===//
// The mgpu* ABI (signatures fixed by MLIR's GPU-to-LLVM lowering)
//===----------------------------------------------------------------------===//

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return loadModule(data, /*isPTX=*/false, /*optLevel=*/4);
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  return loadModule(data, /*isPTX=*/true, optLevel);
}

void mgpuModuleUnload(void *module) {
  if (!module || failed())
    return;
  // Its functions' handles may be reused by a later module.
  {
    AdapterState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.sharedLimits.clear();
  }
  MOERT_MLIR_CHECK(cuModuleUnload(static_cast<CUmodule>(module)));
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module || !ensureContext())
    return nullptr;
  CUfunction function = nullptr;
  CUresult result =
      cuModuleGetFunction(&function, static_cast<CUmodule>(module), name);
  if (result != CUDA_SUCCESS) {
    recordFailure("cuModuleGetFunction", result, name);
    return nullptr;
  }
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  if (!function || !ensureContext())
    return;
  if (gridX <= 0 || gridY <= 0 || gridZ <= 0)
    return; // An empty grid (e.g. batch 0) launches nothing.
  auto kernel = static_cast<CUfunction>(function);
  auto cuStream = static_cast<CUstream>(stream);
  if (!runsWork("mgpuLaunchKernel", cuStream))
    return;
  AdapterState &s = state();
  // More than 48 KiB of shared memory in all (the kernel's static shared
  // memory, as small as the 16-byte anchor that MLIR declares for the
  // dynamic part, plus `smem`) must be asked for, once per kernel and
  // size (and then the largest shared-memory carveout, so that as many
  // blocks as the shared memory allows share an SM).
  if (smem > 0) {
    bool allowed;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      auto known = s.sharedLimits.find(function);
      allowed = known != s.sharedLimits.end() && known->second >= smem;
    }
    if (!allowed) {
      int staticBytes = 0;
      MOERT_MLIR_CHECK(cuFuncGetAttribute(
          &staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel));
      if (staticBytes + smem > 48 * 1024) {
        MOERT_MLIR_CHECK(cuFuncSetAttribute(
            kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
        MOERT_MLIR_CHECK(cuFuncSetAttribute(
            kernel, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100));
      }
      std::lock_guard<std::mutex> lock(s.mutex);
      s.sharedLimits[function] = smem;
    }
  }
  bool timing;
  {
    // No timing events in a graph.
    std::lock_guard<std::mutex> lock(s.mutex);
    timing = s.timing && s.capture.stage == CaptureStage::Off;
  }
  CUevent start = nullptr, stop = nullptr;
  if (timing) {
    MOERT_MLIR_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    MOERT_MLIR_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    MOERT_MLIR_CHECK(cuEventRecord(start, cuStream));
  }
  MOERT_MLIR_CHECK(cuLaunchKernel(kernel, gridX, gridY, gridZ, blockX, blockY,
                                  blockZ, smem, cuStream, params, extra));
  if (timing) {
    MOERT_MLIR_CHECK(cuEventRecord(stop, cuStream));
    std::lock_guard<std::mutex> lock(s.mutex);
    s.launchEvents.emplace_back(start, stop);
    s.launchFunctions.push_back(kernel);
  }
}

void moertMlirSetKernelTiming(int enabled) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.timing = enabled != 0;
}

double moertMlirKernelMilliseconds(void) {
  AdapterState &s = state();
  std::vector<std::pair<CUevent, CUevent>> events;
  std::vector<CUfunction> functions;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    events.swap(s.launchEvents);
    functions.swap(s.launchFunctions);
  }
  double total = 0.0;
  std::vector<double> times;
  for (auto [start, stop] : events) {
    float ms = 0.0f;
    CUresult result = cuEventSynchronize(stop);
    if (result == CUDA_SUCCESS)
      result = cuEventElapsedTime(&ms, start, stop);
    if (result != CUDA_SUCCESS)
      recordFailure("cuEventElapsedTime", result);
    total += ms;
    times.push_back(ms);
    cuEventDestroy(start);
    cuEventDestroy(stop);
  }
  if (std::getenv("MOERT_KERNEL_PROFILE"))
    printKernelProfile(functions, times, total);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.lastTimes = std::move(times);
  return total;
}

int moertMlirLastKernelTimes(double *milliseconds, int capacity) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int count = static_cast<int>(s.lastTimes.size());
  for (int i = 0; i < count && i < capacity; ++i)
    milliseconds[i] = s.lastTimes[i];
  return count;
}

void moertMlirReleaseCachedBuffers(void) {
  AdapterState &s = state();
  std::vector<void *> shared;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    shared = s.shared.drain();
    for (void *ptr : shared)
      forgetManaged(s, ptr);
  }
  for (void *ptr : shared)
    MOERT_MLIR_CHECK(cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
  if (!ensureContext())
    return;
  CUdevice device;
  CUmemoryPool pool;
  MOERT_MLIR_CHECK(cuCtxSynchronize());
  MOERT_MLIR_CHECK(cuCtxGetDevice(&device));
  MOERT_MLIR_CHECK(cuDeviceGetDefaultMemPool(&pool, device));
  MOERT_MLIR_CHECK(cuMemPoolTrimTo(pool, 0));
}

//===----------------------------------------------------------------------===//
// CUDA graphs of a whole call
//===----------------------------------------------------------------------===//

int moertMlirGraphCaptureBegin(void) {
  if (!ensureContext())
    return -1;
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  GraphState &c = s.capture;
  c.failure.clear();
  if (c.stage != CaptureStage::Off || c.exec) {
    c.failure = c.exec ? "a graph is held already (moertMlirGraphDestroy)"
                       : "a capture is under way already";
    return -1;
  }
  c.stage = CaptureStage::Armed;
  c.stream = nullptr;
  c.nodes = 0;
  return 0;
}

long long moertMlirGraphCaptureEnd(void) {
  AdapterState &s = state();
  CaptureStage stage = captureStage();
  if (stage == CaptureStage::Armed)
    failCapture("the call created no stream (it queued no GPU work)");
  else if (stage == CaptureStage::Capturing)
    failCapture("the call returned without synchronizing its stream");
  CUgraph graph = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    GraphState &c = s.capture;
    if (c.stage == CaptureStage::Off)
      c.failure = "no capture was begun";
    graph = c.graph;
    c.graph = nullptr;
    c.stream = nullptr;
    c.stage = CaptureStage::Off;
    if (!graph)
      return -1;
  }
  auto fail = [&](const char *call, CUresult result) -> long long {
    cuGraphDestroy(graph);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.capture.failure = std::string(call) + " failed: " + resultName(result);
    return -1;
  };
  size_t nodes = 0;
  CUresult result = cuGraphGetNodes(graph, nullptr, &nodes);
  if (result != CUDA_SUCCESS)
    return fail("cuGraphGetNodes", result);
  // Buffers the call allocates and does not free are freed before the
  // next replay.
  CUgraphExec exec = nullptr;
  result = cuGraphInstantiate(&exec, graph,
                              CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
  if (result != CUDA_SUCCESS)
    return fail("cuGraphInstantiate", result);
  CUstream launchStream = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    launchStream = s.capture.launchStream;
  }
  if (!launchStream) {
    result = cuStreamCreate(&launchStream, CU_STREAM_DEFAULT);
    if (result != CUDA_SUCCESS) {
      cuGraphExecDestroy(exec);
      return fail("cuStreamCreate", result);
    }
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  GraphState &c = s.capture;
  c.graph = graph;
  c.exec = exec;
  c.nodes = nodes;
  c.launchStream = launchStream;
  return static_cast<long long>(nodes);
}

const char *moertMlirGraphFailure(void) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.capture.failure.c_str();
}

int moertMlirGraphLaunch(void) {
  if (!ensureContext())
    return -1;
  AdapterState &s = state();
  CUgraphExec exec;
  CUstream stream;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    exec = s.capture.exec;
    stream = s.capture.launchStream;
  }
  if (!exec) {
    recordFailure("moertMlirGraphLaunch (no graph captured)",
                  CUDA_ERROR_INVALID_HANDLE);
    return -1;
  }
  MOERT_MLIR_CHECK(cuGraphLaunch(exec, stream), -1);
  MOERT_MLIR_CHECK(cuStreamSynchronize(stream), -1);
  return 0;
}

void moertMlirGraphDestroy(void) {
  AdapterState &s = state();
  CUgraphExec exec;
  CUgraph graph;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    exec = s.capture.exec;
    graph = s.capture.graph;
    s.capture.exec = nullptr;
    s.capture.graph = nullptr;
    s.capture.nodes = 0;
  }
  if (exec)
    MOERT_MLIR_CHECK(cuGraphExecDestroy(exec));
  if (graph)
    MOERT_MLIR_CHECK(cuGraphDestroy(graph));
  if (!exec || !ensureContext())
    return;
  // The graph's own buffers go back to the driver.
  CUdevice device;
  MOERT_MLIR_CHECK(cuCtxSynchronize());
  MOERT_MLIR_CHECK(cuCtxGetDevice(&device));
  MOERT_MLIR_CHECK(cuDeviceGraphMemTrim(device));
}

int moertMlirGraphPeakBytes(unsigned long long *bytes) {
  if (!ensureContext())
    return -1;
  CUdevice device;
  cuuint64_t high = 0;
  MOERT_MLIR_CHECK(cuCtxGetDevice(&device), -1);
  MOERT_MLIR_CHECK(cuDeviceGetGraphMemAttribute(
                       device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &high),
                   -1);
  if (bytes)
    *bytes = high;
  return 0;
}

unsigned long long moertMlirStreamSyncCount(void) {
  AdapterState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.streamSyncs;
}

void *mgpuStreamCreate(void) {
  if (!ensureContext())
    return nullptr;
  AdapterState &s = state();
  CUstream stream = nullptr;
  CaptureStage stage;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    stage = s.capture.stage;
    if (!s.idleStreams.empty()) {
      stream = s.idleStreams.back();
      s.idleStreams.pop_back();
    }
  }
  // A blocking stream: it waits for the legacy default stream, where a
  // caller (PyTorch, by default) may still be writing the arguments.
  if (!stream)
    MOERT_MLIR_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT), nullptr);
  if (stage == CaptureStage::Capturing)
    failCapture("the compiled code created a second stream while capturing "
                "(a graph captures one)");
  else if (stage == CaptureStage::Captured)
    failCapture("the compiled code created a stream after it synchronized "
                "the captured one (a graph would hold only part of the call)");
  if (stage != CaptureStage::Armed)
    return stream;
  // Relaxed: the call may still allocate managed memory for its results.
  CUresult begun = cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
  if (begun != CUDA_SUCCESS) {
    failCapture("cuStreamBeginCapture failed: " + resultName(begun));
    return stream;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.capture.stream = stream;
  s.capture.stage = CaptureStage::Capturing;
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (!stream || failed())
    return;
  AdapterState &s = state();
  bool capturing;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    capturing = s.capture.stage == CaptureStage::Capturing &&
                s.capture.stream == static_cast<CUstream>(stream);
  }
  if (capturing)
    failCapture("the compiled code released the captured stream without "
                "synchronizing it");
  // Kept for reuse: work still queued on it runs in order either way.
  std::lock_guard<std::mutex> lock(s.mutex);
  s.idleStreams.push_back(static_cast<CUstream>(stream));
}

void mgpuStreamSynchronize(void *stream) {
  if (failed())
    return;
  auto cuStream = static_cast<CUstream>(stream);
  AdapterState &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.capture.stage == CaptureStage::Off)
      ++s.streamSyncs;
  }
  CaptureStage stage = captureStage();
  if (stage == CaptureStage::Capturing) {
    bool captured;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      captured = s.capture.stream == cuStream;
    }
    if (captured) {
      // The call waits for its work: the capture is complete (nothing ran).
      CUgraph graph = nullptr;
      CUresult ended = cuStreamEndCapture(cuStream, &graph);
      if (ended != CUDA_SUCCESS || !graph) {
        std::string why = "cuStreamEndCapture failed: " + resultName(ended) +
                          " (a call the capture cannot hold invalidated it)";
        {
          std::lock_guard<std::mutex> lock(s.mutex);
          s.capture.stage = CaptureStage::Failed; // the stream has stopped
          if (s.capture.failure.empty())
            s.capture.failure = why;
        }
        if (graph)
          cuGraphDestroy(graph);
        return;
      }
      std::lock_guard<std::mutex> lock(s.mutex);
      s.capture.graph = graph;
      s.capture.stage = CaptureStage::Captured;
      return;
    }
  }
  if (!runsWork("mgpuStreamSynchronize", cuStream))
    return;
  MOERT_MLIR_CHECK(cuStreamSynchronize(cuStream));
}

int moertMlirCopy(void *dst, const void *src, unsigned long long bytes) {
  if (!bytes)
    return 0;
  if (!ensureContext())
    return -1;
  if (captureStage() != CaptureStage::Off) {
    recordFailure("moertMlirCopy (during a capture)",
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    return -1;
  }
  // On the graph's stream, when there is one: after its replays.
  CUstream stream = nullptr;
  {
    AdapterState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    stream = s.capture.launchStream;
  }
  MOERT_MLIR_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                 reinterpret_cast<CUdeviceptr>(src), bytes,
                                 stream),
                   -1);
  MOERT_MLIR_CHECK(cuStreamSynchronize(stream), -1);
  return 0;
}

void moertMlirStreamWait(void *stream) { mgpuStreamSynchronize(stream); }

void moertMlirStreamRelease(void *stream) { mgpuStreamDestroy(stream); }

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  if (isHostShared) {
    uint64_t size = sizeBytes ? sizeBytes : 1;
    AdapterState &s = state();
    void *shared;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      shared = s.shared.take(size);
    }
    if (shared)
      return shared; // its pages are where its last user left them
    shared = moertMlirAllocShared(sizeBytes);
    if (shared) {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.shared.sizes[shared] = size;
    }
    // Results written by kernels: populate the pages on the device now
    // rather than by faults inside the kernels (not in a graph: a replay
    // finds them there).
    CUmemLocation device = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    if (shared && captureStage() == CaptureStage::Off)
      MOERT_MLIR_CHECK(cuMemPrefetchAsync(reinterpret_cast<CUdeviceptr>(shared),
                                          sizeBytes ? sizeBytes : 1, device,
                                          /*flags=*/0,
                                          static_cast<CUstream>(stream)),
                       nullptr);
    return shared;
  }
  if (!ensureContext() ||
      !runsWork("mgpuMemAlloc", static_cast<CUstream>(stream)))
    return nullptr;
  // Stream-ordered: the buffer may be memory that work queued earlier on
  // this stream freed. While capturing: a graph allocation node.
  CUdeviceptr ptr = 0;
  MOERT_MLIR_CHECK(cuMemAllocAsync(&ptr, sizeBytes ? sizeBytes : 1,
                                   static_cast<CUstream>(stream)),
                   nullptr);
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr)
    return;
  AdapterState &s = state();
  bool shared = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.shared.sizes.count(ptr)) {
      if (s.capture.stage == CaptureStage::Off) {
        // Reused only by later work: wait for this stream's work on it.
        ++s.streamSyncs;
        if (stream)
          cuStreamSynchronize(static_cast<CUstream>(stream));
        s.shared.keep(ptr);
        return;
      }
      // In a capture the wait cannot be: the capture fails, so that no
      // work on the buffer is left (its graph is dropped, the rest of the
      // call is skipped).
      shared = true;
      s.shared.keep(ptr);
    }
  }
  if (shared) {
    failCapture("the compiled code released a host-shared buffer, which "
                "waits for its stream, before its end");
    return;
  }
  if (!ensureContext() ||
      !runsWork("mgpuMemFree", static_cast<CUstream>(stream)))
    return;
  // A device buffer goes back to the pool once the stream's work before
  // this point is done.
  MOERT_MLIR_CHECK(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr),
                                  static_cast<CUstream>(stream)));
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (!sizeBytes || !ensureContext() ||
      !runsWork("mgpuMemcpy", static_cast<CUstream>(stream)))
    return;
  MOERT_MLIR_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                 reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                                 static_cast<CUstream>(stream)));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  if (!count || !ensureContext() ||
      !runsWork("mgpuMemset32", static_cast<CUstream>(stream)))
    return;
  MOERT_MLIR_CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                    count, static_cast<CUstream>(stream)));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  if (!count || !ensureContext() ||
      !runsWork("mgpuMemset16", static_cast<CUstream>(stream)))
    return;
  MOERT_MLIR_CHECK(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                    count, static_cast<CUstream>(stream)));
}

} // extern "C"
