//===- Memory.cpp - Device and pinned memory, memset and copies -----------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Device pointers cross the C ABI as void *, the way MLIR's memref
// descriptors hold them, and become CUdeviceptr only at the driver call.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <optional>

using namespace moert;

static CUdeviceptr toDevice(const void *ptr) {
  return CUdeviceptr(reinterpret_cast<uintptr_t>(ptr));
}

/// Checks an allocation request.
static moertStatus checkAllocation(moertContext ctx, intptr_t sizeBytes,
                                   void **result, const char *resultName) {
  if (sizeBytes <= 0)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "sizeBytes must be positive (got {})", sizeBytes);
  if (!result)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "{} is null", resultName);
  *result = nullptr;
  return MOERT_SUCCESS;
}

/// Checks a memset (`src` unused) or a copy. Sets `*empty` for 0 bytes, which
/// the caller skips without touching the pointers or the device.
static moertStatus checkTransfer(moertContext ctx, const void *dst,
                                 const void *src, bool hasSource,
                                 intptr_t sizeBytes, bool *empty) {
  *empty = false;
  if (sizeBytes < 0)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "sizeBytes must not be negative (got {})", sizeBytes);
  if (sizeBytes == 0) {
    *empty = true;
    return MOERT_SUCCESS;
  }
  if (!dst)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "the destination is null ({} bytes)", sizeBytes);
  if (hasSource && !src)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "the source is null ({} bytes)", sizeBytes);
  return MOERT_SUCCESS;
}

static moertStatus checkByte(moertContext ctx, int value) {
  if (value < 0 || value > 255)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "value must be a byte, 0..255 (got {})", value);
  return MOERT_SUCCESS;
}

/// Checks a memset (`src` unused) or copy and, when `stream` is given, the
/// stream; skips 0 bytes; else runs `body(cuStream)` on the device.
template <typename Body>
static moertStatus transfer(moertContext ctx, const void *dst, const void *src,
                            bool hasSource, intptr_t sizeBytes,
                            std::optional<moertStream> stream, Body &&body) {
  bool empty = false;
  CUstream cuStream = nullptr;
  MOERT_TRY(checkTransfer(ctx, dst, src, hasSource, sizeBytes, &empty));
  if (stream)
    MOERT_TRY(lookupStream(ctx, *stream, &cuStream));
  if (empty)
    return MOERT_SUCCESS;
  return onDevice(ctx, [&]() -> moertStatus { return body(cuStream); });
}

moertStatus moertMemAlloc(moertContext ctx, intptr_t sizeBytes,
                          void **devicePtr) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkAllocation(ctx, sizeBytes, devicePtr, "devicePtr"));
    return onDevice(ctx, [&]() -> moertStatus {
      CUdeviceptr ptr = 0;
      MOERT_CU_CHECK_DETAIL(ctx, cuMemAlloc(&ptr, size_t(sizeBytes)),
                            fmt::format("requested {} bytes", sizeBytes));
      *devicePtr = reinterpret_cast<void *>(uintptr_t(ptr));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertMemFree(moertContext ctx, void *devicePtr) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!devicePtr)
      return MOERT_SUCCESS;
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuMemFree(toDevice(devicePtr)));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertHostAlloc(moertContext ctx, intptr_t sizeBytes,
                           void **hostPtr) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkAllocation(ctx, sizeBytes, hostPtr, "hostPtr"));
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK_DETAIL(ctx, cuMemAllocHost(hostPtr, size_t(sizeBytes)),
                            fmt::format("requested {} bytes", sizeBytes));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertHostFree(moertContext ctx, void *hostPtr) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!hostPtr)
      return MOERT_SUCCESS;
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuMemFreeHost(hostPtr));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertMemset(moertContext ctx, void *devicePtr, int value,
                        intptr_t sizeBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkByte(ctx, value));
    return transfer(ctx, devicePtr, nullptr, /*hasSource=*/false, sizeBytes,
                    std::nullopt, [&](CUstream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemsetD8(toDevice(devicePtr),
                                                     (unsigned char)value,
                                                     size_t(sizeBytes)));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemsetAsync(moertContext ctx, void *devicePtr, int value,
                             intptr_t sizeBytes, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkByte(ctx, value));
    return transfer(ctx, devicePtr, nullptr, /*hasSource=*/false, sizeBytes,
                    stream, [&](CUstream cuStream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemsetD8Async(toDevice(devicePtr),
                                                          (unsigned char)value,
                                                          size_t(sizeBytes),
                                                          cuStream));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyHtoD(moertContext ctx, void *dst, const void *src,
                            intptr_t sizeBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, std::nullopt,
                    [&](CUstream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemcpyHtoD(toDevice(dst), src,
                                                       size_t(sizeBytes)));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyDtoH(moertContext ctx, void *dst, const void *src,
                            intptr_t sizeBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, std::nullopt,
                    [&](CUstream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemcpyDtoH(dst, toDevice(src),
                                                       size_t(sizeBytes)));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyDtoD(moertContext ctx, void *dst, const void *src,
                            intptr_t sizeBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, std::nullopt,
                    [&](CUstream) -> moertStatus {
                      MOERT_CU_CHECK(ctx,
                                     cuMemcpyDtoD(toDevice(dst), toDevice(src),
                                                  size_t(sizeBytes)));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyHtoDAsync(moertContext ctx, void *dst, const void *src,
                                 intptr_t sizeBytes, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, stream,
                    [&](CUstream cuStream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemcpyHtoDAsync(toDevice(dst), src,
                                                            size_t(sizeBytes),
                                                            cuStream));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyDtoHAsync(moertContext ctx, void *dst, const void *src,
                                 intptr_t sizeBytes, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, stream,
                    [&](CUstream cuStream) -> moertStatus {
                      MOERT_CU_CHECK(ctx, cuMemcpyDtoHAsync(dst, toDevice(src),
                                                            size_t(sizeBytes),
                                                            cuStream));
                      return MOERT_SUCCESS;
                    });
  });
}

moertStatus moertMemcpyDtoDAsync(moertContext ctx, void *dst, const void *src,
                                 intptr_t sizeBytes, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    return transfer(ctx, dst, src, /*hasSource=*/true, sizeBytes, stream,
                    [&](CUstream cuStream) -> moertStatus {
                      MOERT_CU_CHECK(
                          ctx, cuMemcpyDtoDAsync(toDevice(dst), toDevice(src),
                                                 size_t(sizeBytes), cuStream));
                      return MOERT_SUCCESS;
                    });
  });
}
