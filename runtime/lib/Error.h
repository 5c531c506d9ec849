//===- Error.h - Error recording and the checked-call macros ----*- C++ -*-===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// How every moert function reports failure. apiCall wraps a public function:
// it rejects a null context, resets the context's error, records the
// function's name and turns a host allocation failure into a status.
// onDevice runs device work with the primary context current. fail() records
// an argument or handle error; MOERT_CU_CHECK runs one driver call and, when
// it fails, records the expression, CUresult name, file and line and returns.
//
//===----------------------------------------------------------------------===//

#ifndef MOERT_LIB_ERROR_H
#define MOERT_LIB_ERROR_H

#include "Context.h"

#include <fmt/format.h> // defines: fmt::format, fmt::format_string

#include <new>         // defines: std::bad_alloc
#include <string>      // defines: std::string
#include <string_view> // defines: std::string_view
#include <utility>     // defines: std::forward

namespace moert {

/// The enumerator name of a CUresult from cuda.h ("CUDA_ERROR_NO_DEVICE"), or
/// null for a value cuda.h does not define. Works without a driver.
const char *cuResultName(int result);

/// "CUDA_ERROR_X (description)": the driver's name and description when the
/// driver can give them, else cuResultName, else "CUresult <n>".
std::string describeCuResult(const DriverApi &api, CUresult result);

/// "<expression> failed: <described> at <file>:<line>", with `file` reduced
/// to its last component.
std::string formatCudaFailure(std::string_view expression,
                              std::string_view described, std::string_view file,
                              int line);

/// Records "<api>: <message>" as the error of the current call on `ctx`.
moertStatus setError(moertContext ctx, moertStatus status,
                     std::string_view message);

/// Records a formatted message and returns `status`.
template <typename... Args>
moertStatus fail(moertContext ctx, moertStatus status,
                 fmt::format_string<Args...> format, Args &&...args) {
  return setError(ctx, status,
                  fmt::format(format, std::forward<Args>(args)...));
}

/// Records a failed driver call, followed by `detail` on the next line when
/// there is one, and returns `status`.
moertStatus failCuda(moertContext ctx, moertStatus status, CUresult result,
                     const char *expression, const char *file, int line,
                     std::string_view detail);

/// The status of a failed driver call outside context creation.
inline moertStatus cudaFailureStatus(CUresult) { return MOERT_ERROR_CUDA; }

/// The entry of every public function that takes a context (except the
/// error getters and moertContextDestroy).
template <typename Body>
moertStatus apiCall(moertContext ctx, const char *apiName, Body &&body) {
  if (!ctx)
    return MOERT_ERROR_INVALID_HANDLE;
  ctx->apiName = apiName;
  ctx->lastError.clear(); // Keeps the capacity reserved at creation.
  ctx->lastDriverResult = 0;
  try {
    return body();
  } catch (const std::bad_alloc &) {
    // Fits the reserved capacity, so recording it allocates nothing.
    ctx->lastError.assign("out of host memory");
    return MOERT_ERROR_OUT_OF_HOST_MEMORY;
  }
}

/// Runs `body` with the context's primary CUDA context current on this
/// thread, after checking that the context has a device.
template <typename Body>
moertStatus onDevice(moertContext ctx, Body &&body);

/// Checks that `handle` is a live object of `registry`, by address only.
/// `what` names the kind ("module") and `param` the parameter ("module").
template <typename T>
moertStatus checkHandle(moertContext ctx, const Registry<T> &registry,
                        const T *handle, const char *what, const char *param) {
  if (!handle)
    return fail(ctx, MOERT_ERROR_INVALID_HANDLE, "{} is a null {} handle",
                param, what);
  if (!registry.contains(handle))
    return fail(ctx, MOERT_ERROR_INVALID_HANDLE,
                "{} ({}) is not a live {} of this context: it was destroyed, "
                "or created by another context",
                param, fmt::ptr(handle), what);
  return MOERT_SUCCESS;
}

/// Returns the status of `expr` when it is not MOERT_SUCCESS.
#define MOERT_TRY(expr)                                                        \
  do {                                                                         \
    moertStatus moertTryStatus_ = (expr);                                      \
    if (moertTryStatus_ != MOERT_SUCCESS)                                      \
      return moertTryStatus_;                                                  \
  } while (false)

/// Runs `ctx->api.call`; if it fails, records the failure with the status
/// `statusFn(result)` and the text `detail`, and returns that status.
#define MOERT_CU_CHECK_IMPL(ctx, call, text, statusFn, detail)                 \
  do {                                                                         \
    CUresult moertResult_ = (ctx)->api.call;                                   \
    if (moertResult_ != CUDA_SUCCESS)                                          \
      return ::moert::failCuda((ctx), statusFn(moertResult_), moertResult_,    \
                               text, __FILE__, __LINE__, (detail));            \
  } while (false)

/// Checks one driver call: `MOERT_CU_CHECK(ctx, cuMemAlloc(&ptr, size))`.
/// The message quotes the call as written; the member called is the
/// versioned one (cuMemAlloc_v2).
#define MOERT_CU_CHECK(ctx, call)                                              \
  MOERT_CU_CHECK_IMPL(ctx, call, #call, ::moert::cudaFailureStatus,            \
                      std::string_view())

/// As MOERT_CU_CHECK, mapping the CUresult to a status with `statusFn`.
#define MOERT_CU_CHECK_STATUS(ctx, call, statusFn)                             \
  MOERT_CU_CHECK_IMPL(ctx, call, #call, statusFn, std::string_view())

/// As MOERT_CU_CHECK, appending `detail` (evaluated only on failure).
#define MOERT_CU_CHECK_DETAIL(ctx, call, detail)                               \
  MOERT_CU_CHECK_IMPL(ctx, call, #call, ::moert::cudaFailureStatus, detail)

template <typename Body>
moertStatus onDevice(moertContext ctx, Body &&body) {
  if (ctx->deviceStatus != MOERT_SUCCESS)
    return fail(ctx, ctx->deviceStatus, "the context has no usable device: {}",
                ctx->deviceError);
  MOERT_CU_CHECK(ctx, cuCtxPushCurrent(ctx->cuContext));
  moertStatus status = body();
  CUcontext popped = nullptr;
  CUresult popResult = ctx->api.cuCtxPopCurrent(&popped);
  if (popResult == CUDA_SUCCESS)
    return status;
  if (status == MOERT_SUCCESS)
    return failCuda(ctx, MOERT_ERROR_CUDA, popResult,
                    "cuCtxPopCurrent(&popped)", __FILE__, __LINE__,
                    std::string_view());
  // Keeps the first error and notes the second.
  ctx->lastError += fmt::format(
      "\nthen: {}", formatCudaFailure("cuCtxPopCurrent(&popped)",
                                      describeCuResult(ctx->api, popResult),
                                      __FILE__, __LINE__));
  return status;
}

} // namespace moert

#endif // MOERT_LIB_ERROR_H
