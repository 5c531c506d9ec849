//===- Error.cpp - Status names and error messages ------------------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Formats what failed into the context's error message, and names statuses
// and CUresults. The CUresult table lets moert name a driver error even when
// the driver cannot (the link stub, or a failing cuGetErrorName).
//
//===----------------------------------------------------------------------===//

#include "Error.h"

using namespace moert;

/// Every CUresult enumerator of cuda.h (CUDA 13.0).
#define MOERT_CU_RESULTS(X)                                                    \
  X(CUDA_SUCCESS)                                                              \
  X(CUDA_ERROR_INVALID_VALUE)                                                  \
  X(CUDA_ERROR_OUT_OF_MEMORY)                                                  \
  X(CUDA_ERROR_NOT_INITIALIZED)                                                \
  X(CUDA_ERROR_DEINITIALIZED)                                                  \
  X(CUDA_ERROR_PROFILER_DISABLED)                                              \
  X(CUDA_ERROR_PROFILER_NOT_INITIALIZED)                                       \
  X(CUDA_ERROR_PROFILER_ALREADY_STARTED)                                       \
  X(CUDA_ERROR_PROFILER_ALREADY_STOPPED)                                       \
  X(CUDA_ERROR_STUB_LIBRARY)                                                   \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)                                     \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE)                                             \
  X(CUDA_ERROR_NO_DEVICE)                                                      \
  X(CUDA_ERROR_INVALID_DEVICE)                                                 \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED)                                            \
  X(CUDA_ERROR_INVALID_IMAGE)                                                  \
  X(CUDA_ERROR_INVALID_CONTEXT)                                                \
  X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)                                        \
  X(CUDA_ERROR_MAP_FAILED)                                                     \
  X(CUDA_ERROR_UNMAP_FAILED)                                                   \
  X(CUDA_ERROR_ARRAY_IS_MAPPED)                                                \
  X(CUDA_ERROR_ALREADY_MAPPED)                                                 \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU)                                              \
  X(CUDA_ERROR_ALREADY_ACQUIRED)                                               \
  X(CUDA_ERROR_NOT_MAPPED)                                                     \
  X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY)                                            \
  X(CUDA_ERROR_NOT_MAPPED_AS_POINTER)                                          \
  X(CUDA_ERROR_ECC_UNCORRECTABLE)                                              \
  X(CUDA_ERROR_UNSUPPORTED_LIMIT)                                              \
  X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE)                                         \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)                                        \
  X(CUDA_ERROR_INVALID_PTX)                                                    \
  X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT)                                       \
  X(CUDA_ERROR_NVLINK_UNCORRECTABLE)                                           \
  X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)                                         \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)                                        \
  X(CUDA_ERROR_JIT_COMPILATION_DISABLED)                                       \
  X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY)                                      \
  X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC)                                       \
  X(CUDA_ERROR_CONTAINED)                                                      \
  X(CUDA_ERROR_INVALID_SOURCE)                                                 \
  X(CUDA_ERROR_FILE_NOT_FOUND)                                                 \
  X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)                                 \
  X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)                                      \
  X(CUDA_ERROR_OPERATING_SYSTEM)                                               \
  X(CUDA_ERROR_INVALID_HANDLE)                                                 \
  X(CUDA_ERROR_ILLEGAL_STATE)                                                  \
  X(CUDA_ERROR_LOSSY_QUERY)                                                    \
  X(CUDA_ERROR_NOT_FOUND)                                                      \
  X(CUDA_ERROR_NOT_READY)                                                      \
  X(CUDA_ERROR_ILLEGAL_ADDRESS)                                                \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)                                        \
  X(CUDA_ERROR_LAUNCH_TIMEOUT)                                                 \
  X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING)                                  \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)                                    \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)                                        \
  X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)                                         \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED)                                           \
  X(CUDA_ERROR_ASSERT)                                                         \
  X(CUDA_ERROR_TOO_MANY_PEERS)                                                 \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)                                 \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)                                     \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR)                                           \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION)                                            \
  X(CUDA_ERROR_MISALIGNED_ADDRESS)                                             \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE)                                          \
  X(CUDA_ERROR_INVALID_PC)                                                     \
  X(CUDA_ERROR_LAUNCH_FAILED)                                                  \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)                                   \
  X(CUDA_ERROR_TENSOR_MEMORY_LEAK)                                             \
  X(CUDA_ERROR_NOT_PERMITTED)                                                  \
  X(CUDA_ERROR_NOT_SUPPORTED)                                                  \
  X(CUDA_ERROR_SYSTEM_NOT_READY)                                               \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)                                         \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)                                 \
  X(CUDA_ERROR_MPS_CONNECTION_FAILED)                                          \
  X(CUDA_ERROR_MPS_RPC_FAILURE)                                                \
  X(CUDA_ERROR_MPS_SERVER_NOT_READY)                                           \
  X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED)                                        \
  X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED)                                    \
  X(CUDA_ERROR_MPS_CLIENT_TERMINATED)                                          \
  X(CUDA_ERROR_CDP_NOT_SUPPORTED)                                              \
  X(CUDA_ERROR_CDP_VERSION_MISMATCH)                                           \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)                                     \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)                                     \
  X(CUDA_ERROR_STREAM_CAPTURE_MERGE)                                           \
  X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)                                       \
  X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)                                        \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)                                       \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)                                        \
  X(CUDA_ERROR_CAPTURED_EVENT)                                                 \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)                                    \
  X(CUDA_ERROR_TIMEOUT)                                                        \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)                                      \
  X(CUDA_ERROR_EXTERNAL_DEVICE)                                                \
  X(CUDA_ERROR_INVALID_CLUSTER_SIZE)                                           \
  X(CUDA_ERROR_FUNCTION_NOT_LOADED)                                            \
  X(CUDA_ERROR_INVALID_RESOURCE_TYPE)                                          \
  X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)                                 \
  X(CUDA_ERROR_KEY_ROTATION)                                                   \
  X(CUDA_ERROR_UNKNOWN)

const char *moert::cuResultName(int result) {
  switch (result) {
#define MOERT_CU_RESULT_CASE(name)                                             \
  case name:                                                                   \
    return #name;
    MOERT_CU_RESULTS(MOERT_CU_RESULT_CASE)
#undef MOERT_CU_RESULT_CASE
  default:
    return nullptr;
  }
}

std::string moert::describeCuResult(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (!name)
    name = cuResultName(result);
  std::string text =
      name ? std::string(name) : fmt::format("CUresult {}", int(result));
  const char *description = nullptr;
  if (api.cuGetErrorString &&
      api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  if (description)
    text += fmt::format(" ({})", description);
  return text;
}

std::string moert::formatCudaFailure(std::string_view expression,
                                     std::string_view described,
                                     std::string_view file, int line) {
  size_t slash = file.find_last_of('/');
  if (slash != std::string_view::npos)
    file.remove_prefix(slash + 1);
  return fmt::format("{} failed: {} at {}:{}", expression, described, file,
                     line);
}

moertStatus moert::setError(moertContext ctx, moertStatus status,
                            std::string_view message) {
  ctx->lastError = fmt::format("{}: {}", ctx->apiName, message);
  return status;
}

moertStatus moert::failCuda(moertContext ctx, moertStatus status,
                            CUresult result, const char *expression,
                            const char *file, int line,
                            std::string_view detail) {
  std::string message = formatCudaFailure(
      expression, describeCuResult(ctx->api, result), file, line);
  if (!detail.empty())
    message += fmt::format("\n{}", detail);
  setError(ctx, status, message);
  ctx->lastDriverResult = int(result);
  return status;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

const char *moertStatusName(moertStatus status) {
  switch (status) {
  case MOERT_SUCCESS:
    return "MOERT_SUCCESS";
  case MOERT_ERROR_INVALID_ARGUMENT:
    return "MOERT_ERROR_INVALID_ARGUMENT";
  case MOERT_ERROR_INVALID_HANDLE:
    return "MOERT_ERROR_INVALID_HANDLE";
  case MOERT_ERROR_NO_DRIVER:
    return "MOERT_ERROR_NO_DRIVER";
  case MOERT_ERROR_NO_DEVICE:
    return "MOERT_ERROR_NO_DEVICE";
  case MOERT_ERROR_CUDA:
    return "MOERT_ERROR_CUDA";
  case MOERT_ERROR_OUT_OF_HOST_MEMORY:
    return "MOERT_ERROR_OUT_OF_HOST_MEMORY";
  case MOERT_STATUS_MAX_ENUM_:
    break;
  }
  return "MOERT_STATUS_UNKNOWN";
}

const char *moertGetLastError(moertContext ctx) {
  if (!ctx)
    return "null moertContext: the call had no context to record its error in";
  return ctx->lastError.c_str();
}

int moertGetLastDriverResult(moertContext ctx) {
  return ctx ? ctx->lastDriverResult : 0;
}
