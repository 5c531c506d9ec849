//===- DeviceTest.cpp - Device memory, streams and events on a GPU --------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Needs a CUDA device; prints "UNSUPPORTED: no CUDA device (...)" and exits 0
// without one. Round-trips data through every copy and memset, synchronously
// and on streams, times work with events, and checks that driver failures
// (an impossible allocation) come back as messages.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring> // defines: std::memcmp
#include <vector>  // defines: std::vector

using namespace moert::test;

static void testProperties(Checker &checker, moertContext ctx) {
  moertDeviceProperties props;
  REQUIRE_OK(checker, ctx, moertDeviceGetProperties(ctx, &props));
  fmt::print("device {} of {}: {}, sm_{}{}, {} SMs, {:.1f} GiB, {} KiB shared "
             "per block (opt-in {} KiB), {} MiB L2, driver {}\n",
             props.ordinal, props.deviceCount, props.name,
             props.computeCapabilityMajor, props.computeCapabilityMinor,
             props.multiprocessorCount,
             double(props.totalMemoryBytes) / (1 << 30),
             props.sharedMemoryPerBlockBytes / 1024,
             props.sharedMemoryPerBlockOptinBytes / 1024,
             props.l2CacheBytes >> 20, props.driverVersion);
  CHECK(checker, props.name[0] != '\0');
  CHECK(checker, props.ordinal == 0 && props.deviceCount >= 1);
  CHECK(checker, props.computeCapabilityMajor >= 5);
  CHECK(checker, props.multiprocessorCount > 0);
  CHECK(checker, props.warpSize == 32);
  CHECK(checker, props.maxThreadsPerBlock >= 512);
  CHECK(checker, props.maxBlockDim[0] >= 512 && props.maxGridDim[0] >= 65535);
  CHECK(checker, props.sharedMemoryPerBlockBytes == 48 * 1024);
  CHECK(checker, props.sharedMemoryPerBlockOptinBytes >=
                     props.sharedMemoryPerBlockBytes);
  CHECK(checker, props.totalMemoryBytes > (intptr_t(1) << 30));
  CHECK(checker, props.driverVersion >= 13000);
  intptr_t freeBytes = 0, totalBytes = 0;
  CHECK_OK(checker, ctx,
           moertDeviceGetMemoryInfo(ctx, &freeBytes, &totalBytes));
  CHECK(checker, totalBytes == props.totalMemoryBytes);
  CHECK(checker, freeBytes > 0 && freeBytes <= totalBytes);
}

/// Host -> device -> device -> host, with a memset in between.
static void testSyncRoundTrip(Checker &checker, moertContext ctx) {
  const intptr_t n = 1 << 20, bytes = n * intptr_t(sizeof(float));
  std::vector<float> host(n), back(n, -1.0f);
  for (intptr_t i = 0; i < n; ++i)
    host[i] = float(i) * 0.25f;
  void *a = nullptr, *b = nullptr;
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, bytes, &a));
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, bytes, &b));
  CHECK(checker, reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK_OK(checker, ctx, moertMemcpyHtoD(ctx, a, host.data(), bytes));
  CHECK_OK(checker, ctx, moertMemcpyDtoD(ctx, b, a, bytes));
  // Zero the second half of b: 0x00 bytes are 0.0f.
  CHECK_OK(checker, ctx,
           moertMemset(ctx, static_cast<char *>(b) + bytes / 2, 0, bytes / 2));
  CHECK_OK(checker, ctx, moertMemcpyDtoH(ctx, back.data(), b, bytes));
  bool same = std::memcmp(back.data(), host.data(), bytes / 2) == 0;
  bool zero = true;
  for (intptr_t i = n / 2; i < n; ++i)
    zero = zero && back[i] == 0.0f;
  CHECK(checker, same);
  CHECK(checker, zero);
  CHECK_OK(checker, ctx, moertMemFree(ctx, a));
  CHECK_OK(checker, ctx, moertMemFree(ctx, b));
}

/// The same on two streams with pinned host memory, ordered by an event.
static void testAsyncRoundTrip(Checker &checker, moertContext ctx) {
  const intptr_t n = 1 << 22, bytes = n * intptr_t(sizeof(int));
  void *pinnedIn = nullptr, *pinnedOut = nullptr, *dev = nullptr,
       *copy = nullptr;
  REQUIRE_OK(checker, ctx, moertHostAlloc(ctx, bytes, &pinnedIn));
  REQUIRE_OK(checker, ctx, moertHostAlloc(ctx, bytes, &pinnedOut));
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, bytes, &dev));
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, bytes, &copy));
  int *in = static_cast<int *>(pinnedIn), *out = static_cast<int *>(pinnedOut);
  for (intptr_t i = 0; i < n; ++i) {
    in[i] = int(i * 7 + 1);
    out[i] = 0;
  }
  moertStream first = nullptr, second = nullptr;
  moertEvent uploaded = nullptr;
  REQUIRE_OK(checker, ctx, moertStreamCreate(ctx, &first));
  REQUIRE_OK(checker, ctx, moertStreamCreate(ctx, &second));
  REQUIRE_OK(checker, ctx, moertEventCreate(ctx, &uploaded));
  CHECK_OK(checker, ctx, moertMemcpyHtoDAsync(ctx, dev, in, bytes, first));
  CHECK_OK(checker, ctx, moertEventRecord(ctx, uploaded, first));
  // The second stream copies only after the upload; then sets the first
  // 16 bytes to 0x01 (0x01010101 per int).
  CHECK_OK(checker, ctx, moertStreamWaitEvent(ctx, second, uploaded));
  CHECK_OK(checker, ctx, moertMemcpyDtoDAsync(ctx, copy, dev, bytes, second));
  CHECK_OK(checker, ctx, moertMemsetAsync(ctx, copy, 1, 16, second));
  CHECK_OK(checker, ctx, moertMemcpyDtoHAsync(ctx, out, copy, bytes, second));
  CHECK_OK(checker, ctx, moertStreamSynchronize(ctx, second));
  bool ok = true;
  for (intptr_t i = 0; i < n; ++i)
    ok = ok && out[i] == (i < 4 ? 0x01010101 : int(i * 7 + 1));
  CHECK(checker, ok);
  CHECK_OK(checker, ctx, moertStreamSynchronize(ctx, nullptr));
  CHECK_OK(checker, ctx, moertContextSynchronize(ctx));
  CHECK_OK(checker, ctx, moertEventDestroy(ctx, uploaded));
  CHECK_OK(checker, ctx, moertStreamDestroy(ctx, first));
  CHECK_OK(checker, ctx, moertStreamDestroy(ctx, second));
  // Destroyed handles are rejected from now on.
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertStreamSynchronize(ctx, first), "not a live stream");
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertEventSynchronize(ctx, uploaded), "not a live event");
  CHECK_OK(checker, ctx, moertHostFree(ctx, pinnedIn));
  CHECK_OK(checker, ctx, moertHostFree(ctx, pinnedOut));
  CHECK_OK(checker, ctx, moertMemFree(ctx, dev));
  CHECK_OK(checker, ctx, moertMemFree(ctx, copy));
}

static void testEvents(Checker &checker, moertContext ctx) {
  const intptr_t bytes = intptr_t(1) << 30;
  void *buffer = nullptr;
  moertStream stream = nullptr;
  moertEvent start = nullptr, end = nullptr;
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, bytes, &buffer));
  REQUIRE_OK(checker, ctx, moertStreamCreate(ctx, &stream));
  REQUIRE_OK(checker, ctx, moertEventCreate(ctx, &start));
  REQUIRE_OK(checker, ctx, moertEventCreate(ctx, &end));
  CHECK_OK(checker, ctx, moertEventRecord(ctx, start, stream));
  for (int i = 0; i < 4; ++i)
    CHECK_OK(checker, ctx, moertMemsetAsync(ctx, buffer, i, bytes, stream));
  CHECK_OK(checker, ctx, moertEventRecord(ctx, end, stream));
  CHECK_OK(checker, ctx, moertEventSynchronize(ctx, end));
  float ms = -1;
  CHECK_OK(checker, ctx, moertEventElapsedTime(ctx, start, end, &ms));
  fmt::print("memset of 4 x 1 GiB: {:.3f} ms ({:.0f} GB/s)\n", ms,
             4.0 * double(bytes) / (double(ms) * 1e6));
  CHECK(checker, ms > 0.0f);
  CHECK_OK(checker, ctx, moertMemFree(ctx, buffer));
  // The context destroys the stream and events it still owns.
}

static void testDriverErrors(Checker &checker, moertContext ctx) {
  void *ptr = nullptr;
  // 1 PiB: no device has it.
  CHECK_ERROR(checker, ctx, MOERT_ERROR_CUDA,
              moertMemAlloc(ctx, intptr_t(1) << 50, &ptr),
              "moertMemAlloc: cuMemAlloc(&ptr, size_t(sizeBytes)) failed: "
              "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(checker, moertGetLastDriverResult(ctx) == 2);
  CHECK(checker, contains(moertGetLastError(ctx), "at Memory.cpp:") &&
                     contains(moertGetLastError(ctx),
                              "\nrequested 1125899906842624 bytes"));
  CHECK(checker, ptr == nullptr);
  // The failure is not sticky: the context still works.
  CHECK_OK(checker, ctx, moertMemAlloc(ctx, 64, &ptr));
  CHECK_OK(checker, ctx, moertMemFree(ctx, ptr));
}

/// Two contexts on one device share its primary context but not handles.
static void testTwoContexts(Checker &checker, moertContext ctx) {
  moertContext other = nullptr;
  REQUIRE_OK(checker, other, moertContextCreate(0, &other));
  moertStream stream = nullptr;
  REQUIRE_OK(checker, other, moertStreamCreate(other, &stream));
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertStreamSynchronize(ctx, stream),
              "or created by another context");
  void *ptr = nullptr;
  CHECK_OK(checker, other, moertMemAlloc(other, 1024, &ptr));
  // Same primary context: memory of one is usable from the other.
  CHECK_OK(checker, ctx, moertMemset(ctx, ptr, 3, 1024));
  CHECK_OK(checker, other, moertMemFree(other, ptr));
  CHECK(checker, moertContextDestroy(other) == MOERT_SUCCESS);
  CHECK_OK(checker, ctx, moertContextSynchronize(ctx));
}

int main() {
  Checker checker("moert-device-test");
  moertContext ctx = openDeviceOrSkip("moert-device-test");
  testProperties(checker, ctx);
  testSyncRoundTrip(checker, ctx);
  testAsyncRoundTrip(checker, ctx);
  testEvents(checker, ctx);
  testDriverErrors(checker, ctx);
  testTwoContexts(checker, ctx);
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
  return checker.finish();
}
