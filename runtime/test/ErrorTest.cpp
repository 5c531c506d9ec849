//===- ErrorTest.cpp - Status names, error messages, the check macro ------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Host logic only; runs in CI. Drives MOERT_CU_CHECK with stand-in driver
// functions to check the message a failing driver call leaves: the moert
// function, the call as written, the CUresult name and the file and line.
//
//===----------------------------------------------------------------------===//

#include "../lib/Error.h"
#include "TestUtil.h"

#include <cstring> // defines: std::strcmp

using namespace moert;
using namespace moert::test;

/// A context with no driver: the driver path does not exist.
static moertContext makeDriverlessContext(Checker &checker) {
  moertContext ctx = nullptr;
  moertStatus status = moertContextCreateWithDriver(
      "/nonexistent/moert-test/libcuda.so.1", 0, &ctx);
  checker.check(status == MOERT_ERROR_NO_DRIVER && ctx, "driverless context",
                __FILE__, __LINE__, outcome(ctx, status));
  return ctx;
}

// Stand-ins for driver functions, with the prototypes cuda.h gives them.
static CUresult failingMemAlloc(CUdeviceptr *, size_t) {
  return CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult succeedingMemAlloc(CUdeviceptr *ptr, size_t) {
  *ptr = 256;
  return CUDA_SUCCESS;
}
static CUresult fakeErrorName(CUresult, const char **name) {
  *name = "NAME_FROM_DRIVER";
  return CUDA_SUCCESS;
}
static CUresult fakeErrorString(CUresult, const char **text) {
  *text = "text from driver";
  return CUDA_SUCCESS;
}

static void testStatusNames(Checker &checker) {
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_SUCCESS), "MOERT_SUCCESS"));
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_ERROR_INVALID_ARGUMENT),
                              "MOERT_ERROR_INVALID_ARGUMENT"));
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_ERROR_INVALID_HANDLE),
                              "MOERT_ERROR_INVALID_HANDLE"));
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_ERROR_NO_DRIVER),
                              "MOERT_ERROR_NO_DRIVER"));
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_ERROR_NO_DEVICE),
                              "MOERT_ERROR_NO_DEVICE"));
  CHECK(checker,
        !std::strcmp(moertStatusName(MOERT_ERROR_CUDA), "MOERT_ERROR_CUDA"));
  CHECK(checker, !std::strcmp(moertStatusName(MOERT_ERROR_OUT_OF_HOST_MEMORY),
                              "MOERT_ERROR_OUT_OF_HOST_MEMORY"));
  CHECK(checker,
        !std::strcmp(moertStatusName(moertStatus(77)), "MOERT_STATUS_UNKNOWN"));
}

static void testNullContext(Checker &checker) {
  CHECK(checker, contains(moertGetLastError(nullptr), "null moertContext"));
  CHECK(checker, moertGetLastDriverResult(nullptr) == 0);
  void *ptr = nullptr;
  CHECK(checker,
        moertMemAlloc(nullptr, 16, &ptr) == MOERT_ERROR_INVALID_HANDLE);
  CHECK(checker,
        moertContextSynchronize(nullptr) == MOERT_ERROR_INVALID_HANDLE);
  CHECK(checker, moertContextDestroy(nullptr) == MOERT_SUCCESS);
}

static void testCuResultNames(Checker &checker) {
  CHECK(checker, !std::strcmp(cuResultName(CUDA_SUCCESS), "CUDA_SUCCESS"));
  CHECK(checker, !std::strcmp(cuResultName(2), "CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(checker, !std::strcmp(cuResultName(34), "CUDA_ERROR_STUB_LIBRARY"));
  CHECK(checker, !std::strcmp(cuResultName(100), "CUDA_ERROR_NO_DEVICE"));
  CHECK(checker, !std::strcmp(cuResultName(218), "CUDA_ERROR_INVALID_PTX"));
  CHECK(checker, !std::strcmp(cuResultName(500), "CUDA_ERROR_NOT_FOUND"));
  CHECK(checker, !std::strcmp(cuResultName(999), "CUDA_ERROR_UNKNOWN"));
  CHECK(checker, cuResultName(12345) == nullptr);

  // Without a driver the table names the result; unknown ones get a number.
  DriverApi none;
  CHECK(checker, describeCuResult(none, CUDA_ERROR_OUT_OF_MEMORY) ==
                     "CUDA_ERROR_OUT_OF_MEMORY");
  // 1001 has no name but, unlike 12345, lies in the range of CUresult's
  // values (its enumerators go up to 999): a valid CUresult to pass.
  CHECK(checker, describeCuResult(none, CUresult(1001)) == "CUresult 1001");
  // With one, the driver's name and description win.
  DriverApi fake;
  fake.cuGetErrorName = fakeErrorName;
  fake.cuGetErrorString = fakeErrorString;
  CHECK(checker, describeCuResult(fake, CUDA_ERROR_OUT_OF_MEMORY) ==
                     "NAME_FROM_DRIVER (text from driver)");
}

static void testFormat(Checker &checker) {
  CHECK(checker,
        formatCudaFailure("cuInit(0)", "CUDA_ERROR_NO_DEVICE",
                          "/src/runtime/lib/Context.cpp", 42) ==
            "cuInit(0) failed: CUDA_ERROR_NO_DEVICE at Context.cpp:42");
  CHECK(checker, formatCudaFailure("f()", "X", "Plain.cpp", 7) ==
                     "f() failed: X at Plain.cpp:7");
}

/// Runs MOERT_CU_CHECK on cuMemAlloc as a moert function body would, and
/// stores the line of the check in `*line`.
static moertStatus allocThroughMacro(moertContext ctx, CUdeviceptr *ptr,
                                     int *line) {
  *line = __LINE__ + 1;
  MOERT_CU_CHECK(ctx, cuMemAlloc(ptr, 1024));
  return MOERT_SUCCESS;
}

static void testCheckMacro(Checker &checker) {
  moertContext ctx = makeDriverlessContext(checker);
  if (!ctx)
    return;
  CUdeviceptr ptr = 0;
  ctx->api.cuMemAlloc = failingMemAlloc; // Becomes the member cuMemAlloc_v2.
  int allocLine = 0;
  moertStatus status = apiCall(ctx, "moertTestAlloc", [&] {
    return allocThroughMacro(ctx, &ptr, &allocLine);
  });
  std::string message = moertGetLastError(ctx);
  CHECK(checker, status == MOERT_ERROR_CUDA);
  CHECK(checker, moertGetLastDriverResult(ctx) == CUDA_ERROR_OUT_OF_MEMORY);
  std::string expected = fmt::format(
      "moertTestAlloc: cuMemAlloc(ptr, 1024) failed: CUDA_ERROR_OUT_OF_MEMORY "
      "at ErrorTest.cpp:{}",
      allocLine);
  checker.check(message == expected, "message of a failed MOERT_CU_CHECK",
                __FILE__, __LINE__,
                fmt::format("got \"{}\", expected \"{}\"", message, expected));

  // A later successful call clears the error.
  ctx->api.cuMemAlloc = succeedingMemAlloc;
  status = apiCall(ctx, "moertTestAlloc",
                   [&] { return allocThroughMacro(ctx, &ptr, &allocLine); });
  CHECK(checker, status == MOERT_SUCCESS && ptr == 256);
  CHECK(checker, std::string(moertGetLastError(ctx)).empty());
  CHECK(checker, moertGetLastDriverResult(ctx) == 0);

  // failCuda appends a detail line; fail() formats argument errors.
  ctx->apiName = "moertTest";
  failCuda(ctx, MOERT_ERROR_CUDA, CUDA_ERROR_INVALID_PTX,
           "cuModuleLoadDataEx(...)", "Module.cpp", 9,
           "JIT error log:\nline 3: bad");
  CHECK(checker, std::string(moertGetLastError(ctx)) ==
                     "moertTest: cuModuleLoadDataEx(...) failed: "
                     "CUDA_ERROR_INVALID_PTX at Module.cpp:9\n"
                     "JIT error log:\nline 3: bad");
  CHECK(checker, fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "size {} < {}", 1,
                      2) == MOERT_ERROR_INVALID_ARGUMENT);
  CHECK(checker,
        std::string(moertGetLastError(ctx)) == "moertTest: size 1 < 2");
  ctx->api = DriverApi(); // Leaves nothing fake for moertContextDestroy.
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
}

int main() {
  Checker checker("moert-error-test");
  testStatusNames(checker);
  testNullContext(checker);
  testCuResultNames(checker);
  testFormat(checker);
  testCheckMacro(checker);
  return checker.finish();
}
