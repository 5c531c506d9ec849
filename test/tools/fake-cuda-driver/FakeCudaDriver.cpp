//===- FakeCudaDriver.cpp - A CUDA driver that runs no kernels ------------===//
//
// Part of the moe-mlir project.
//
// libcuda.so.1 for lit tests of the host side of cuda executables on
// machines without a GPU: the driver calls that moert's adapter makes, on
// host memory, with stream capture modelled (a captured call becomes a
// node; a stream synchronization while capturing invalidates the capture,
// as the real driver does). Kernels never run, so a model's loss is the 0
// of the zeroed result buffer: the tests check control flow, not numbers.
// Environment:
//   FAKE_CUDA_UNCAPTURABLE=1  cuLaunchKernel while capturing fails with
//                             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
//   FAKE_CUDA_REPLAY_WRITES=1 each cuGraphLaunch writes 1.0f into the
//                             managed buffers allocated while capturing
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace {
struct Stream {
  bool capturing = false, invalidated = false;
  size_t nodes = 0;
  /// Memory allocated and freed by captured calls: the graph's to release,
  /// or, when the capture is invalidated, released with it.
  std::vector<void *> capturedAllocs, capturedFrees;
};

struct Fake {
  std::map<CUstream, Stream> streams;
  std::map<CUgraph, size_t> graphs; // node counts
  /// What each graph's memory nodes hold; released with the graph, as the
  /// real driver releases a graph's allocations.
  std::map<CUgraph, std::vector<void *>> graphMemory;
  /// Memory of invalidated captures, released already: a later free of it
  /// is a no-op (the real driver drops such allocations with the capture).
  std::set<void *> discarded;
  std::vector<float *> capturedManaged;
  size_t nextHandle = 1;
  CUcontext current = nullptr;

  template <typename T>
  T handle() {
    return reinterpret_cast<T>(static_cast<uintptr_t>(nextHandle++ * 64));
  }
  bool anyCapturing() const {
    for (const auto &entry : streams)
      if (entry.second.capturing)
        return true;
    return false;
  }
  /// A call on `stream`: a node while capturing.
  CUresult work(CUstream stream) {
    auto it = streams.find(stream);
    if (it == streams.end() || !it->second.capturing)
      return CUDA_SUCCESS;
    if (it->second.invalidated)
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    ++it->second.nodes;
    return CUDA_SUCCESS;
  }
};

Fake &fake() {
  static Fake *instance = new Fake;
  return *instance;
}

bool env(const char *name) {
  const char *value = std::getenv(name);
  return value && std::strcmp(value, "1") == 0;
}

void *hostAlloc(size_t bytes) {
  void *memory = std::calloc(bytes ? bytes : 1, 1);
  // The C library may hand out the address of a discarded buffer again:
  // that one is live.
  fake().discarded.erase(memory);
  return memory;
}

/// Frees `memory` unless an invalidated capture released it already.
void release(void *memory) {
  if (!fake().discarded.erase(memory))
    std::free(memory);
}
} // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  static CUcontext primary = fake().handle<CUcontext>();
  *context = primary;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext context) {
  fake().current = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = fake().current;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice *device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetLimit(CUlimit, size_t) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) {
  return fake().anyCapturing() ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                               : CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_STATE:
    *name = "CUDA_ERROR_ILLEGAL_STATE";
    return CUDA_SUCCESS;
  default:
    *name = "CUDA_ERROR (fake driver)";
    return CUDA_SUCCESS;
  }
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice) {
  static CUmemoryPool only = fake().handle<CUmemoryPool>();
  *pool = only;
  return CUDA_SUCCESS;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void *) {
  return CUDA_SUCCESS;
}
CUresult cuMemPoolGetAttribute(CUmemoryPool, CUmemPool_attribute, void *value) {
  *static_cast<cuuint64_t *>(value) = 0;
  return CUDA_SUCCESS;
}
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t) { return CUDA_SUCCESS; }

CUresult cuModuleLoadDataEx(CUmodule *module, const void *, unsigned int,
                            CUjit_option *, void **) {
  *module = fake().handle<CUmodule>();
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *function, CUmodule, const char *) {
  *function = fake().handle<CUfunction>();
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *value, CUfunction_attribute, CUfunction) {
  *value = 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}
CUresult cuFuncGetName(const char **name, CUfunction) {
  *name = "fake_kernel";
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = fake().handle<CUstream>();
  fake().streams[*stream] = Stream();
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream stream) {
  auto it = fake().streams.find(stream);
  if (it != fake().streams.end() && it->second.capturing) {
    it->second.invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  auto it = fake().streams.find(stream);
  if (it == fake().streams.end() || it->second.capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  it->second = Stream();
  it->second.capturing = true;
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  *graph = nullptr;
  auto it = fake().streams.find(stream);
  if (it == fake().streams.end() || !it->second.capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  Stream ended = it->second;
  it->second = Stream();
  if (ended.invalidated) {
    std::set<void *> memory(ended.capturedAllocs.begin(),
                            ended.capturedAllocs.end());
    memory.insert(ended.capturedFrees.begin(), ended.capturedFrees.end());
    for (void *buffer : memory) {
      std::free(buffer);
      fake().discarded.insert(buffer);
    }
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = fake().handle<CUgraph>();
  fake().graphs[*graph] = ended.nodes;
  fake().graphMemory[*graph] = std::move(ended.capturedFrees);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, unsigned int,
                        CUstream stream, void **, void **) {
  auto it = fake().streams.find(stream);
  if (env("FAKE_CUDA_UNCAPTURABLE") && it != fake().streams.end() &&
      it->second.capturing) {
    it->second.invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return fake().work(stream);
}
CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream stream) {
  CUresult result = fake().work(stream);
  void *memory = result == CUDA_SUCCESS ? hostAlloc(bytes) : nullptr;
  auto it = fake().streams.find(stream);
  if (memory && it != fake().streams.end() && it->second.capturing)
    it->second.capturedAllocs.push_back(memory);
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  return result;
}
CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  auto it = fake().streams.find(stream);
  bool captured = it != fake().streams.end() && it->second.capturing;
  CUresult result = fake().work(stream);
  if (captured)
    it->second.capturedFrees.push_back(reinterpret_cast<void *>(ptr));
  else
    release(reinterpret_cast<void *>(ptr));
  return result;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream stream) {
  auto it = fake().streams.find(stream);
  if (it == fake().streams.end() || !it->second.capturing)
    std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
                bytes);
  return fake().work(stream);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream stream) {
  auto it = fake().streams.find(stream);
  if (it == fake().streams.end() || !it->second.capturing)
    for (size_t i = 0; i < count; ++i)
      reinterpret_cast<unsigned int *>(dst)[i] = value;
  return fake().work(stream);
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream stream) {
  auto it = fake().streams.find(stream);
  if (it == fake().streams.end() || !it->second.capturing)
    for (size_t i = 0; i < count; ++i)
      reinterpret_cast<unsigned short *>(dst)[i] = value;
  return fake().work(stream);
}
CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUmemLocation, unsigned int,
                            CUstream stream) {
  return fake().work(stream);
}
CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned int) {
  void *memory = hostAlloc(bytes);
  if (fake().anyCapturing() && bytes >= sizeof(float))
    fake().capturedManaged.push_back(static_cast<float *>(memory));
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr ptr) {
  release(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = fake().handle<CUevent>();
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream stream) { return fake().work(stream); }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }

CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
  auto it = fake().graphs.find(graph);
  if (it == fake().graphs.end() || nodes)
    return CUDA_ERROR_INVALID_VALUE;
  *count = it->second;
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph,
                            unsigned long long) {
  if (!fake().graphs.count(graph))
    return CUDA_ERROR_INVALID_VALUE;
  *exec = reinterpret_cast<CUgraphExec>(graph);
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  if (!fake().graphs.count(reinterpret_cast<CUgraph>(exec)))
    return CUDA_ERROR_INVALID_VALUE;
  if (env("FAKE_CUDA_REPLAY_WRITES"))
    for (float *buffer : fake().capturedManaged)
      *buffer = 1.0f;
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec) { return CUDA_SUCCESS; }
CUresult cuGraphDestroy(CUgraph graph) {
  fake().graphs.erase(graph);
  for (void *memory : fake().graphMemory[graph])
    std::free(memory);
  fake().graphMemory.erase(graph);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetGraphMemAttribute(CUdevice, CUgraphMem_attribute,
                                      void *value) {
  *static_cast<cuuint64_t *>(value) = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGraphMemTrim(CUdevice) { return CUDA_SUCCESS; }

} // extern "C"
