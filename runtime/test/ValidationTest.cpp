//===- ValidationTest.cpp - Argument and handle checks of every call ------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Host logic only; runs in CI. Every call checks its arguments and handles
// before it needs the device, so a context without a driver shows each
// check: null contexts, null or out-of-range arguments, zero and negative
// sizes, and handles that are null, forged, destroyed or from another
// context. Valid arguments then fail only for want of a device.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace moert::test;

static moertContext makeDriverlessContext() {
  moertContext ctx = nullptr;
  moertContextCreateWithDriver("/nonexistent/libcuda.so.1", 0, &ctx);
  return ctx;
}

/// Every call that takes a context rejects a null one.
static void testNullContext(Checker &checker) {
  const moertStatus kInvalid = MOERT_ERROR_INVALID_HANDLE;
  void *ptr = nullptr;
  char byte = 0;
  moertModule module = nullptr;
  moertFunction function = nullptr;
  moertStream stream = nullptr;
  moertEvent event = nullptr;
  moertArgs args = nullptr;
  float ms = 0;
  intptr_t n = 0;
  void **params = nullptr;
  const char *log = nullptr;
  moertDeviceProperties props;
  moertFunctionAttributes attrs;
  CHECK(checker, moertContextSynchronize(nullptr) == kInvalid);
  CHECK(checker, moertDeviceGetProperties(nullptr, &props) == kInvalid);
  CHECK(checker, moertDeviceGetMemoryInfo(nullptr, &n, &n) == kInvalid);
  CHECK(checker,
        moertModuleLoadPTX(nullptr, ".version 8.0", &module) == kInvalid);
  CHECK(checker, moertModuleLoadCubin(nullptr, &byte, 1, &module) == kInvalid);
  CHECK(checker, moertModuleGetInfoLog(nullptr, module, &log) == kInvalid);
  CHECK(checker, moertModuleUnload(nullptr, module) == kInvalid);
  CHECK(checker,
        moertModuleGetFunction(nullptr, module, "f", &function) == kInvalid);
  CHECK(checker,
        moertFunctionGetAttributes(nullptr, function, &attrs) == kInvalid);
  CHECK(checker, moertMemAlloc(nullptr, 8, &ptr) == kInvalid);
  CHECK(checker, moertMemFree(nullptr, ptr) == kInvalid);
  CHECK(checker, moertHostAlloc(nullptr, 8, &ptr) == kInvalid);
  CHECK(checker, moertHostFree(nullptr, ptr) == kInvalid);
  CHECK(checker, moertMemset(nullptr, &byte, 0, 1) == kInvalid);
  CHECK(checker, moertMemsetAsync(nullptr, &byte, 0, 1, stream) == kInvalid);
  CHECK(checker, moertMemcpyHtoD(nullptr, &byte, &byte, 1) == kInvalid);
  CHECK(checker, moertMemcpyDtoH(nullptr, &byte, &byte, 1) == kInvalid);
  CHECK(checker, moertMemcpyDtoD(nullptr, &byte, &byte, 1) == kInvalid);
  CHECK(checker,
        moertMemcpyHtoDAsync(nullptr, &byte, &byte, 1, stream) == kInvalid);
  CHECK(checker,
        moertMemcpyDtoHAsync(nullptr, &byte, &byte, 1, stream) == kInvalid);
  CHECK(checker,
        moertMemcpyDtoDAsync(nullptr, &byte, &byte, 1, stream) == kInvalid);
  CHECK(checker, moertStreamCreate(nullptr, &stream) == kInvalid);
  CHECK(checker, moertStreamDestroy(nullptr, stream) == kInvalid);
  CHECK(checker, moertStreamSynchronize(nullptr, stream) == kInvalid);
  CHECK(checker, moertStreamWaitEvent(nullptr, stream, event) == kInvalid);
  CHECK(checker, moertEventCreate(nullptr, &event) == kInvalid);
  CHECK(checker, moertEventDestroy(nullptr, event) == kInvalid);
  CHECK(checker, moertEventRecord(nullptr, event, stream) == kInvalid);
  CHECK(checker, moertEventSynchronize(nullptr, event) == kInvalid);
  CHECK(checker, moertEventElapsedTime(nullptr, event, event, &ms) == kInvalid);
  CHECK(checker, moertArgsCreate(nullptr, &args) == kInvalid);
  CHECK(checker, moertArgsDestroy(nullptr, args) == kInvalid);
  CHECK(checker, moertArgsClear(nullptr, args) == kInvalid);
  CHECK(checker, moertArgsAddPointer(nullptr, args, ptr) == kInvalid);
  CHECK(checker, moertArgsAddI32(nullptr, args, 1) == kInvalid);
  CHECK(checker, moertArgsAddI64(nullptr, args, 1) == kInvalid);
  CHECK(checker, moertArgsAddF32(nullptr, args, 1.0f) == kInvalid);
  CHECK(checker, moertArgsAddF64(nullptr, args, 1.0) == kInvalid);
  CHECK(checker, moertArgsAddMemRef(nullptr, args, ptr, ptr, 0, 0, nullptr,
                                    nullptr) == kInvalid);
  CHECK(checker, moertArgsGetParams(nullptr, args, &params, &n) == kInvalid);
  CHECK(checker, moertArgsGetParamSize(nullptr, args, 0, &n) == kInvalid);
  CHECK(checker, moertLaunchKernel(nullptr, function, 1, 1, 1, 1, 1, 1, 0,
                                   stream, params) == kInvalid);
  CHECK(checker, moertLaunchKernelWithArgs(nullptr, function, 1, 1, 1, 1, 1, 1,
                                           0, stream, args) == kInvalid);
}

static void testMemoryArguments(Checker &checker, moertContext ctx) {
  const moertStatus kBad = MOERT_ERROR_INVALID_ARGUMENT;
  void *ptr = &ptr;
  char host[8] = {};
  CHECK_ERROR(checker, ctx, kBad, moertMemAlloc(ctx, 0, &ptr),
              "moertMemAlloc: sizeBytes must be positive (got 0)");
  CHECK(checker, ptr == &ptr); // Untouched: the size was checked first.
  CHECK_ERROR(checker, ctx, kBad, moertMemAlloc(ctx, -16, &ptr),
              "sizeBytes must be positive (got -16)");
  CHECK_ERROR(checker, ctx, kBad, moertMemAlloc(ctx, 16, nullptr),
              "devicePtr is null");
  CHECK_ERROR(checker, ctx, kBad, moertHostAlloc(ctx, 0, &ptr),
              "moertHostAlloc: sizeBytes must be positive (got 0)");
  CHECK_ERROR(checker, ctx, kBad, moertHostAlloc(ctx, 16, nullptr),
              "hostPtr is null");
  CHECK_ERROR(checker, ctx, kBad, moertMemcpyHtoD(ctx, host, host, -1),
              "moertMemcpyHtoD: sizeBytes must not be negative (got -1)");
  CHECK_ERROR(checker, ctx, kBad, moertMemcpyDtoH(ctx, nullptr, host, 8),
              "moertMemcpyDtoH: the destination is null (8 bytes)");
  CHECK_ERROR(checker, ctx, kBad, moertMemcpyDtoD(ctx, host, nullptr, 8),
              "moertMemcpyDtoD: the source is null (8 bytes)");
  CHECK_ERROR(checker, ctx, kBad,
              moertMemcpyHtoDAsync(ctx, host, nullptr, 8, nullptr),
              "the source is null");
  CHECK_ERROR(checker, ctx, kBad,
              moertMemcpyDtoHAsync(ctx, nullptr, host, 8, nullptr),
              "the destination is null");
  CHECK_ERROR(checker, ctx, kBad, moertMemset(ctx, host, 256, 8),
              "moertMemset: value must be a byte, 0..255 (got 256)");
  CHECK_ERROR(checker, ctx, kBad, moertMemsetAsync(ctx, nullptr, 0, 8, nullptr),
              "the destination is null");
  // Zero bytes are a no-op, even without a device; null pointers are fine.
  CHECK_OK(checker, ctx, moertMemcpyHtoD(ctx, nullptr, nullptr, 0));
  CHECK_OK(checker, ctx, moertMemcpyDtoDAsync(ctx, host, host, 0, nullptr));
  CHECK_OK(checker, ctx, moertMemset(ctx, nullptr, 0, 0));
  // Freeing null is a no-op.
  CHECK_OK(checker, ctx, moertMemFree(ctx, nullptr));
  CHECK_OK(checker, ctx, moertHostFree(ctx, nullptr));
  // Valid arguments reach the device check.
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER, moertMemAlloc(ctx, 16, &ptr),
              "the context has no usable device");
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertMemcpyHtoD(ctx, host, host, 8), "no usable device");
  intptr_t freeBytes = 0;
  CHECK_ERROR(checker, ctx, kBad,
              moertDeviceGetMemoryInfo(ctx, &freeBytes, nullptr),
              "freeBytes and totalBytes must not be null");
  CHECK_ERROR(checker, ctx, kBad, moertDeviceGetProperties(ctx, nullptr),
              "props is null");
}

static void testModuleArguments(Checker &checker, moertContext ctx) {
  const moertStatus kBad = MOERT_ERROR_INVALID_ARGUMENT;
  moertModule module = nullptr;
  CHECK_ERROR(checker, ctx, kBad, moertModuleLoadPTX(ctx, nullptr, &module),
              "moertModuleLoadPTX: ptx is null");
  CHECK_ERROR(checker, ctx, kBad, moertModuleLoadPTX(ctx, "", &module),
              "ptx is empty");
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleLoadPTX(ctx, ".version 8.0", nullptr),
              "module is null");
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleLoadPTX(ctx,
                                 "\x7f"
                                 "ELF\x02\x01",
                                 &module),
              "ptx is an ELF image, not PTX text");
  const char notElf[] = "//\n.version 8.0\n";
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleLoadCubin(ctx, notElf, sizeof(notElf), &module),
              "is neither a cubin (ELF) nor a fatbin");
  CHECK_ERROR(checker, ctx, kBad, moertModuleLoadCubin(ctx, notElf, 0, &module),
              "sizeBytes must be positive (got 0)");
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleLoadCubin(ctx,
                                   "\x7f"
                                   "EL",
                                   3, &module),
              "neither a cubin");
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleLoadCubin(ctx, nullptr, 8, &module), "image is null");
  // Well-formed requests reach the device check.
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertModuleLoadPTX(ctx, ".version 8.0\n", &module),
              "no usable device");
  CHECK(checker, module == nullptr);
  const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertModuleLoadCubin(ctx, elf, sizeof(elf), &module),
              "no usable device");
  const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertModuleLoadCubin(ctx, fatbin, sizeof(fatbin), &module),
              "no usable device");

  moertFunction function = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertModuleGetFunction(ctx, nullptr, "vecadd", &function),
              "moertModuleGetFunction: module is a null module handle");
  CHECK_ERROR(checker, ctx, kBad,
              moertModuleGetFunction(ctx, nullptr, "vecadd", nullptr),
              "function is null");
  const char *log = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertModuleGetInfoLog(ctx, nullptr, &log), "null module handle");
  CHECK_OK(checker, ctx, moertModuleUnload(ctx, nullptr));
  moertFunctionAttributes attrs;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertFunctionGetAttributes(ctx, nullptr, &attrs),
              "function is a null function handle");
}

static void testHandles(Checker &checker, moertContext ctx) {
  // A forged handle: an address the context never handed out. moert looks it
  // up by address and never dereferences it.
  long forged = 0;
  moertStream stream = reinterpret_cast<moertStream>(&forged);
  moertEvent event = reinterpret_cast<moertEvent>(&forged);
  moertFunction function = reinterpret_cast<moertFunction>(&forged);
  moertModule module = reinterpret_cast<moertModule>(&forged);
  const moertStatus kHandle = MOERT_ERROR_INVALID_HANDLE;
  CHECK_ERROR(checker, ctx, kHandle, moertStreamSynchronize(ctx, stream),
              "moertStreamSynchronize: stream (0x");
  CHECK_ERROR(checker, ctx, kHandle, moertStreamSynchronize(ctx, stream),
              "is not a live stream of this context: it was destroyed, or "
              "created by another context");
  CHECK_ERROR(checker, ctx, kHandle, moertStreamDestroy(ctx, stream),
              "not a live stream");
  CHECK_ERROR(checker, ctx, kHandle, moertEventRecord(ctx, event, nullptr),
              "event (0x");
  CHECK_ERROR(checker, ctx, kHandle, moertEventRecord(ctx, nullptr, nullptr),
              "event is a null event handle");
  CHECK_ERROR(checker, ctx, kHandle,
              moertStreamWaitEvent(ctx, nullptr, nullptr),
              "event is a null event handle");
  float ms = 0;
  CHECK_ERROR(checker, ctx, kHandle,
              moertEventElapsedTime(ctx, nullptr, event, &ms),
              "start is a null event handle");
  CHECK_ERROR(checker, ctx, kHandle, moertEventDestroy(ctx, event),
              "not a live event");
  CHECK_ERROR(checker, ctx, kHandle, moertEventSynchronize(ctx, event),
              "not a live event");
  CHECK_ERROR(checker, ctx, kHandle, moertModuleUnload(ctx, module),
              "not a live module");
  CHECK_ERROR(
      checker, ctx, kHandle,
      moertLaunchKernel(ctx, function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr),
      "moertLaunchKernel: function (0x");
  CHECK_ERROR(
      checker, ctx, kHandle,
      moertLaunchKernel(ctx, nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr),
      "function is a null function handle");
  // A stream handle is checked before the device is needed.
  char host[4] = {};
  CHECK_ERROR(checker, ctx, kHandle,
              moertMemcpyHtoDAsync(ctx, host, host, 4, stream),
              "not a live stream");
  CHECK_ERROR(checker, ctx, kHandle, moertMemsetAsync(ctx, host, 0, 4, stream),
              "not a live stream");

  // Destroying null handles is a no-op.
  CHECK_OK(checker, ctx, moertStreamDestroy(ctx, nullptr));
  CHECK_OK(checker, ctx, moertEventDestroy(ctx, nullptr));
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, nullptr));

  // Argument lists: destroyed and foreign handles are rejected.
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, args));
  CHECK_ERROR(checker, ctx, kHandle, moertArgsAddI32(ctx, args, 1),
              "moertArgsAddI32: args (0x");
  CHECK_ERROR(checker, ctx, kHandle, moertArgsDestroy(ctx, args),
              "not a live argument list");
  moertContext other = makeDriverlessContext();
  moertArgs foreign = nullptr;
  REQUIRE_OK(checker, other, moertArgsCreate(other, &foreign));
  CHECK_ERROR(checker, ctx, kHandle, moertArgsAddI64(ctx, foreign, 1),
              "or created by another context");
  CHECK_ERROR(checker, ctx, kHandle,
              moertLaunchKernelWithArgs(ctx, nullptr, 1, 1, 1, 1, 1, 1, 0,
                                        nullptr, foreign),
              "function is a null function handle");
  CHECK_OK(checker, other, moertArgsAddI64(other, foreign, 1));
  CHECK(checker, moertContextDestroy(other) == MOERT_SUCCESS);
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_ARGUMENT,
              moertArgsCreate(ctx, nullptr), "moertArgsCreate: args is null");
}

int main() {
  Checker checker("moert-validation-test");
  testNullContext(checker);
  moertContext ctx = makeDriverlessContext();
  if (!CHECK(checker, ctx != nullptr))
    return checker.finish();
  testMemoryArguments(checker, ctx);
  testModuleArguments(checker, ctx);
  testHandles(checker, ctx);
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
  return checker.finish();
}
