//===- ContextTest.cpp - Context creation without a usable driver ---------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Host logic only; runs in CI. A missing driver, the toolkit's link stub (whose
// cuInit fails with CUDA_ERROR_STUB_LIBRARY) and bad ordinals must each give
// a context that says why, serves host-only calls and refuses device calls
// with the original reason. Loading the stub also checks that every driver
// symbol moert resolves exists under its CUDA 13 name.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <string> // defines: std::string

using namespace moert::test;

static void testMissingDriver(Checker &checker) {
  moertContext ctx = nullptr;
  CHECK_ERROR(
      checker, ctx, MOERT_ERROR_NO_DRIVER,
      moertContextCreateWithDriver("/nonexistent/libcuda.so.1", 0, &ctx),
      "moertContextCreateWithDriver: cannot load the CUDA driver: "
      "dlopen(/nonexistent/libcuda.so.1) failed");
  if (!CHECK(checker, ctx != nullptr))
    return;
  CHECK(checker, moertGetLastDriverResult(ctx) == 0);

  // Device calls give the creation status and reason.
  void *ptr = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER, moertMemAlloc(ctx, 64, &ptr),
              "moertMemAlloc: the context has no usable device: "
              "moertContextCreateWithDriver: cannot load the CUDA driver");
  CHECK(checker, ptr == nullptr);
  moertDeviceProperties props;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertDeviceGetProperties(ctx, &props), "no usable device");
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER, moertContextSynchronize(ctx),
              "no usable device");
  moertStream stream = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertStreamCreate(ctx, &stream), "no usable device");
  CHECK(checker, stream == nullptr);

  // Host-only calls work.
  moertArgs args = nullptr;
  CHECK_OK(checker, ctx, moertArgsCreate(ctx, &args));
  CHECK_OK(checker, ctx, moertArgsAddI64(ctx, args, 7));
  CHECK(checker, std::string(moertGetLastError(ctx)).empty());
  // The context destroys the argument list it still owns.
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
}

static void testBadArguments(Checker &checker) {
  CHECK(checker,
        moertContextCreate(0, nullptr) == MOERT_ERROR_INVALID_ARGUMENT);
  moertContext ctx = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_ARGUMENT,
              moertContextCreate(-1, &ctx),
              "moertContextCreate: device ordinal must be >= 0 (got -1)");
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_ARGUMENT,
              moertMemset(ctx, &ctx, 0, 8), "no usable device");
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
}

static void testStubDriver(Checker &checker) {
#ifdef MOERT_TEST_CUDA_STUB
  moertContext ctx = nullptr;
  moertStatus status =
      moertContextCreateWithDriver(MOERT_TEST_CUDA_STUB, 0, &ctx);
  std::string message = moertGetLastError(ctx);
  checker.check(status == MOERT_ERROR_NO_DRIVER, "the stub is no driver",
                __FILE__, __LINE__, outcome(ctx, status));
  CHECK(checker,
        moertGetLastDriverResult(ctx) == 34); // CUDA_ERROR_STUB_LIBRARY
  checker.check(contains(message, "moertContextCreateWithDriver: cuInit(0) "
                                  "failed: CUDA_ERROR_STUB_LIBRARY") &&
                    contains(message, "at Context.cpp:"),
                "stub message names cuInit, the CUresult and the line",
                __FILE__, __LINE__, message);
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_ARGUMENT,
              moertEventCreate(ctx, nullptr), "event is null");
  moertEvent event = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_NO_DRIVER,
              moertEventCreate(ctx, &event), "CUDA_ERROR_STUB_LIBRARY");
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
#else
  fmt::print("note: no CUDA link stub was found at configure time; the stub "
             "case is not run\n");
#endif
}

/// The default driver: on CI there is none, on a GPU machine it works. Either
/// way the outcome is consistent with the message.
static void testDefaultDriver(Checker &checker) {
  moertContext ctx = nullptr;
  moertStatus status = moertContextCreate(0, &ctx);
  std::string message = moertGetLastError(ctx);
  fmt::print("note: moertContextCreate(0): {}{}{}\n", moertStatusName(status),
             message.empty() ? "" : ": ", message);
  checker.check(status == MOERT_SUCCESS ? message.empty() : !message.empty(),
                "a message exactly when creation fails", __FILE__, __LINE__,
                outcome(ctx, status));
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
}

int main() {
  Checker checker("moert-context-test");
  testMissingDriver(checker);
  testBadArguments(checker);
  // Before the stub: a loaded stub would answer for "libcuda.so.1" too.
  testDefaultDriver(checker);
  testStubDriver(checker);
  return checker.finish();
}
