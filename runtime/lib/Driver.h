//===- Driver.h - The CUDA driver functions moert calls ---------*- C++ -*-===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// moert loads libcuda.so.1 with dlopen instead of linking it, so that its
// programs and tests start on machines without a driver (CI) and report that
// as a status. The functions it calls are listed once, in
// MOERT_DRIVER_FUNCTIONS; each becomes a typed member of DriverApi that is
// resolved under the symbol name cuda.h maps it to (cuMemAlloc becomes
// cuMemAlloc_v2), the very symbol that linking against libcuda would bind.
//
//===----------------------------------------------------------------------===//

#ifndef MOERT_LIB_DRIVER_H
#define MOERT_LIB_DRIVER_H

#include <cuda.h> // defines: CUresult, CUdevice, ... and the cu* prototypes

#include <string>

/// Every driver function moert calls. Adding one here declares and resolves
/// it; call it as ctx->api.cuName(...) through MOERT_CU_CHECK.
#define MOERT_DRIVER_FUNCTIONS(X)                                              \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemGetInfo)                                                              \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuFuncGetParamInfo)                                                        \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemAllocHost)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD8Async)                                                           \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuLaunchKernel)

/// Expands macros in `x` (cuMemAlloc -> cuMemAlloc_v2), then quotes it.
#define MOERT_STRINGIFY(x) MOERT_STRINGIFY_IMPL(x)
#define MOERT_STRINGIFY_IMPL(x) #x

namespace moert {

/// The driver functions of one loaded libcuda. Members are named and typed by
/// cuda.h's versioned names, so `api.cuMemAlloc(...)` in source calls the
/// member cuMemAlloc_v2 with cuMemAlloc_v2's prototype.
struct DriverApi {
#define MOERT_DECLARE_DRIVER_FUNCTION(fn) decltype(&::fn) fn = nullptr;
  MOERT_DRIVER_FUNCTIONS(MOERT_DECLARE_DRIVER_FUNCTION)
#undef MOERT_DECLARE_DRIVER_FUNCTION
};

/// Opens `library` with dlopen and resolves every MOERT_DRIVER_FUNCTIONS
/// entry into `api`. Returns "" and sets `*handle` on success; otherwise
/// returns why (the dlerror text or the missing symbol), with `*handle` null
/// and the library closed again.
std::string loadDriver(const char *library, void **handle, DriverApi &api);

/// Closes a library opened by loadDriver. Only for a driver that was never
/// initialized: an initialized libcuda stays loaded for the life of the
/// process, as it does in programs linked against it.
void unloadDriver(void *handle);

} // namespace moert

#endif // MOERT_LIB_DRIVER_H
