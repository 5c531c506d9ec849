//===- Context.cpp - Context creation, destruction and synchronization ----===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Brings a device up (load the driver, cuInit, pick the device, retain its
// primary context, query its properties) and takes it down again. The
// primary context is the one the CUDA runtime and other libraries share;
// retaining it, rather than creating a context (cuCtxCreate, whose signature
// changed in CUDA 13), keeps moert interoperable with them.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <new> // defines: std::nothrow

using namespace moert;

/// The driver a context loads unless told otherwise.
static constexpr const char *kDefaultDriverLibrary = "libcuda.so.1";

/// cuInit fails with CUDA_ERROR_STUB_LIBRARY when the loaded libcuda is the
/// toolkit's link stub (a machine with the toolkit but no driver); any other
/// failure means the driver found no usable device.
static moertStatus initFailureStatus(CUresult result) {
  return result == CUDA_ERROR_STUB_LIBRARY ? MOERT_ERROR_NO_DRIVER
                                           : MOERT_ERROR_NO_DEVICE;
}

static moertStatus bringUpDevice(moertContext ctx, const char *library,
                                 int ordinal) {
  if (ordinal < 0)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "device ordinal must be >= 0 (got {})", ordinal);
  std::string reason = loadDriver(library, &ctx->driverHandle, ctx->api);
  if (!reason.empty())
    return setError(ctx, MOERT_ERROR_NO_DRIVER, reason);
  // From here on the library stays loaded (see unloadDriver).
  ctx->driverInitialized = true;
  MOERT_CU_CHECK_STATUS(ctx, cuInit(0), initFailureStatus); // Flags = 0.
  int count = 0;
  MOERT_CU_CHECK(ctx, cuDeviceGetCount(&count));
  if (count == 0)
    return fail(ctx, MOERT_ERROR_NO_DEVICE,
                "no CUDA device: cuDeviceGetCount returned 0");
  if (ordinal >= count)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "device ordinal {} is out of range: the driver sees {} "
                "device(s)",
                ordinal, count);
  MOERT_CU_CHECK(ctx, cuDeviceGet(&ctx->device, ordinal));
  MOERT_CU_CHECK(ctx, cuDevicePrimaryCtxRetain(&ctx->cuContext, ctx->device));
  return queryDeviceProperties(ctx, ordinal, count);
}

static moertStatus createContext(const char *apiName, const char *library,
                                 int ordinal, moertContext *ctx) {
  if (!ctx)
    return MOERT_ERROR_INVALID_ARGUMENT;
  *ctx = nullptr;
  moertContext context = new (std::nothrow) moertContext_;
  if (!context)
    return MOERT_ERROR_OUT_OF_HOST_MEMORY;
  *ctx = context;
  return apiCall(context, apiName, [&]() -> moertStatus {
    // Room for most messages, and for the out-of-memory one in any case.
    context->lastError.reserve(1024);
    moertStatus status = bringUpDevice(
        context, library ? library : kDefaultDriverLibrary, ordinal);
    context->deviceStatus = status;
    if (status != MOERT_SUCCESS)
      context->deviceError = context->lastError;
    return status;
  });
}

moertStatus moertContextCreate(int deviceOrdinal, moertContext *ctx) {
  return createContext(__func__, nullptr, deviceOrdinal, ctx);
}

moertStatus moertContextCreateWithDriver(const char *driverLibrary,
                                         int deviceOrdinal, moertContext *ctx) {
  return createContext(__func__, driverLibrary, deviceOrdinal, ctx);
}

/// Destroys the device objects `ctx` still owns; keeps the first failure.
static moertStatus destroyDeviceObjects(moertContext ctx) {
  moertStatus first = MOERT_SUCCESS;
  auto keep = [&](moertStatus status) {
    if (first == MOERT_SUCCESS)
      first = status;
  };
  for (moertEvent_ *event : ctx->events.handles())
    keep(destroyEvent(ctx, event));
  for (moertStream_ *stream : ctx->streams.handles())
    keep(destroyStream(ctx, stream));
  for (moertModule_ *module : ctx->modules.handles())
    keep(destroyModule(ctx, module));
  return first;
}

moertStatus moertContextDestroy(moertContext ctx) {
  if (!ctx)
    return MOERT_SUCCESS;
  moertStatus status = apiCall(ctx, __func__, [&]() -> moertStatus {
    for (moertArgs_ *args : ctx->args.handles())
      ctx->args.erase(args);
    moertStatus first = MOERT_SUCCESS;
    if (ctx->deviceStatus == MOERT_SUCCESS)
      first = onDevice(ctx, [&] { return destroyDeviceObjects(ctx); });
    if (ctx->cuContext) {
      ctx->cuContext = nullptr;
      moertStatus released = [&]() -> moertStatus {
        MOERT_CU_CHECK(ctx, cuDevicePrimaryCtxRelease(ctx->device));
        return MOERT_SUCCESS;
      }();
      if (first == MOERT_SUCCESS)
        first = released;
    }
    return first;
  });
  if (!ctx->driverInitialized)
    unloadDriver(ctx->driverHandle);
  delete ctx;
  return status;
}

moertStatus moertContextSynchronize(moertContext ctx) {
  return apiCall(ctx, __func__, [&] {
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuCtxSynchronize());
      return MOERT_SUCCESS;
    });
  });
}
