//===- LaunchTest.cpp - Load kernels and launch them on a GPU -------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Needs a CUDA device; prints "UNSUPPORTED: no CUDA device (...)" and exits 0
// without one. Loads the hand-written kernels of kernels.ptx through the JIT
// (and as a cubin when the build assembled one), launches them with memref
// descriptors packed by moertArgs and compares with host results. Also checks
// the failures a caller meets first: bad PTX (with the JIT log), a missing
// kernel, argument lists that do not match, and launch limits.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstdlib>  // defines: std::getenv
#include <cstring>  // defines: std::memcmp, std::memcpy
#include <fstream>  // defines: std::ifstream
#include <iterator> // defines: std::istreambuf_iterator
#include <vector>   // defines: std::vector

// defines: kKernelsPtx, the text of kernels.ptx.
#include "KernelsPtx.inc"

using namespace moert::test;

namespace {
/// A device buffer of `count` floats, freed with its context.
struct DeviceFloats {
  void *ptr = nullptr;
  intptr_t count = 0;
  intptr_t bytes() const { return count * intptr_t(sizeof(float)); }
};
} // namespace

static DeviceFloats upload(Checker &checker, moertContext ctx,
                           const std::vector<float> &host) {
  DeviceFloats buffer;
  buffer.count = intptr_t(host.size());
  REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, buffer.bytes(), &buffer.ptr));
  REQUIRE_OK(checker, ctx,
             moertMemcpyHtoD(ctx, buffer.ptr, host.data(), buffer.bytes()));
  return buffer;
}

static std::vector<float> download(Checker &checker, moertContext ctx,
                                   const DeviceFloats &buffer) {
  std::vector<float> host(size_t(buffer.count));
  REQUIRE_OK(checker, ctx,
             moertMemcpyDtoH(ctx, host.data(), buffer.ptr, buffer.bytes()));
  return host;
}

/// Appends a rank-1 memref over `buffer` to `args`.
static void addMemRef1D(Checker &checker, moertContext ctx, moertArgs args,
                        const DeviceFloats &buffer, intptr_t offset,
                        intptr_t size, intptr_t stride) {
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, buffer.ptr, buffer.ptr, offset, 1,
                              &size, &stride));
}

/// c = a + b through vecadd, with the given offsets and strides; checks c
/// and that the elements of c outside the memref keep their sentinel.
static void runVecAdd(Checker &checker, moertContext ctx, moertFunction vecadd,
                      intptr_t n, intptr_t offset, intptr_t stride,
                      bool rawLaunch) {
  intptr_t span = offset + (n - 1) * stride + 1;
  std::vector<float> a(static_cast<size_t>(span), 0.0f);
  std::vector<float> b(static_cast<size_t>(n));
  std::vector<float> c(static_cast<size_t>(span), -1.0f);
  for (intptr_t i = 0; i < n; ++i) {
    a[size_t(offset + i * stride)] = float(i);
    b[size_t(i)] = float(2 * i);
  }
  DeviceFloats da = upload(checker, ctx, a), db = upload(checker, ctx, b),
               dc = upload(checker, ctx, c);
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  addMemRef1D(checker, ctx, args, da, offset, n, stride);
  addMemRef1D(checker, ctx, args, db, 0, n, 1);
  addMemRef1D(checker, ctx, args, dc, offset, n, stride);
  CHECK_OK(checker, ctx, moertArgsAddI64(ctx, args, n));
  const intptr_t block = 256, grid = (n + block - 1) / block;
  if (rawLaunch) {
    void **params = nullptr;
    intptr_t count = 0;
    CHECK_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
    CHECK_OK(checker, ctx,
             moertLaunchKernel(ctx, vecadd, grid, 1, 1, block, 1, 1, 0, nullptr,
                               params));
  } else {
    CHECK_OK(checker, ctx,
             moertLaunchKernelWithArgs(ctx, vecadd, grid, 1, 1, block, 1, 1, 0,
                                       nullptr, args));
  }
  CHECK_OK(checker, ctx, moertContextSynchronize(ctx));
  std::vector<float> result = download(checker, ctx, dc);
  intptr_t wrong = 0;
  for (intptr_t k = 0; k < span; ++k) {
    bool inside = k >= offset && (k - offset) % stride == 0;
    float expected = inside ? float(3 * ((k - offset) / stride)) : -1.0f;
    wrong += result[size_t(k)] != expected;
  }
  checker.check(wrong == 0, "vecadd result", __FILE__, __LINE__,
                fmt::format("n {}, offset {}, stride {}: {} wrong elements", n,
                            offset, stride, wrong));
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, args));
  for (void *ptr : {da.ptr, db.ptr, dc.ptr})
    CHECK_OK(checker, ctx, moertMemFree(ctx, ptr));
}

/// out = alpha * in on rank-2 memrefs: in is a rows x cols window of a wider
/// row-major buffer, out is column-major.
static void runScale2D(Checker &checker, moertContext ctx,
                       moertFunction scale2d) {
  const intptr_t rows = 37, cols = 45, pitch = 64, offset = 3;
  std::vector<float> in(size_t(offset + rows * pitch), 0.0f),
      out(size_t(rows * cols), 0.0f);
  for (intptr_t i = 0; i < rows; ++i)
    for (intptr_t j = 0; j < cols; ++j)
      in[size_t(offset + i * pitch + j)] = float(i * 100 + j);
  DeviceFloats din = upload(checker, ctx, in), dout = upload(checker, ctx, out);
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  intptr_t sizes[2] = {rows, cols};
  intptr_t inStrides[2] = {pitch, 1}, outStrides[2] = {1, rows};
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, din.ptr, din.ptr, offset, 2, sizes,
                              inStrides));
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, dout.ptr, dout.ptr, 0, 2, sizes,
                              outStrides));
  CHECK_OK(checker, ctx, moertArgsAddF32(ctx, args, 0.5f));
  CHECK_OK(checker, ctx,
           moertLaunchKernelWithArgs(ctx, scale2d, (cols + 15) / 16,
                                     (rows + 7) / 8, 1, 16, 8, 1, 0, nullptr,
                                     args));
  CHECK_OK(checker, ctx, moertContextSynchronize(ctx));
  std::vector<float> result = download(checker, ctx, dout);
  intptr_t wrong = 0;
  for (intptr_t i = 0; i < rows; ++i)
    for (intptr_t j = 0; j < cols; ++j)
      wrong += result[size_t(i + j * rows)] != 0.5f * float(i * 100 + j);
  checker.check(wrong == 0, "scale2d result", __FILE__, __LINE__,
                fmt::format("{} wrong elements", wrong));
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, args));
  CHECK_OK(checker, ctx, moertMemFree(ctx, din.ptr));
  CHECK_OK(checker, ctx, moertMemFree(ctx, dout.ptr));
}

/// reverse_blocks with all the shared memory a block can opt in to.
static void runReverseBlocks(Checker &checker, moertContext ctx,
                             moertFunction reverse) {
  moertDeviceProperties props;
  moertFunctionAttributes attrs;
  REQUIRE_OK(checker, ctx, moertDeviceGetProperties(ctx, &props));
  REQUIRE_OK(checker, ctx, moertFunctionGetAttributes(ctx, reverse, &attrs));
  const intptr_t block = 256, blocks = 8, n = block * blocks;
  const intptr_t shared =
      props.sharedMemoryPerBlockOptinBytes - attrs.staticSharedBytes;
  CHECK(checker, shared > 48 * 1024);
  std::vector<float> in(static_cast<size_t>(n));
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (intptr_t i = 0; i < n; ++i)
    in[size_t(i)] = float(i);
  DeviceFloats din = upload(checker, ctx, in), dout = upload(checker, ctx, out);
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  addMemRef1D(checker, ctx, args, din, 0, n, 1);
  addMemRef1D(checker, ctx, args, dout, 0, n, 1);
  CHECK_OK(checker, ctx,
           moertLaunchKernelWithArgs(ctx, reverse, blocks, 1, 1, block, 1, 1,
                                     shared, nullptr, args));
  CHECK_OK(checker, ctx, moertContextSynchronize(ctx));
  std::vector<float> result = download(checker, ctx, dout);
  intptr_t wrong = 0;
  for (intptr_t b = 0; b < blocks; ++b)
    for (intptr_t t = 0; t < block; ++t)
      wrong +=
          result[size_t(b * block + t)] != float(b * block + block - 1 - t);
  checker.check(wrong == 0, "reverse_blocks result", __FILE__, __LINE__,
                fmt::format("{} bytes of dynamic shared memory: {} wrong "
                            "elements",
                            shared, wrong));
  // One byte more than the device allows is refused before launching.
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_ARGUMENT,
              moertLaunchKernelWithArgs(ctx, reverse, blocks, 1, 1, block, 1, 1,
                                        shared + 1, nullptr, args),
              "more than the device allows");
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, args));
  CHECK_OK(checker, ctx, moertMemFree(ctx, din.ptr));
  CHECK_OK(checker, ctx, moertMemFree(ctx, dout.ptr));
}

/// Launches that must be refused, each with its own message.
static void testLaunchChecks(Checker &checker, moertContext ctx,
                             moertFunction vecadd) {
  const moertStatus kBad = MOERT_ERROR_INVALID_ARGUMENT;
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  float *fake = reinterpret_cast<float *>(uintptr_t(256));
  intptr_t size = 4, stride = 1;
  for (int i = 0; i < 3; ++i)
    CHECK_OK(checker, ctx,
             moertArgsAddMemRef(ctx, args, fake, fake, 0, 1, &size, &stride));
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 32, 1, 1, 0,
                                        nullptr, args),
              "kernel vecadd takes 16 parameter(s) but the argument list has "
              "15");
  CHECK_OK(checker, ctx, moertArgsAddI32(ctx, args, 4));
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 32, 1, 1, 0,
                                        nullptr, args),
              "parameter 15 of kernel vecadd is 8 bytes but argument 15 is 4 "
              "bytes");
  CHECK_ERROR(
      checker, ctx, kBad,
      moertLaunchKernel(ctx, vecadd, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr),
      "params is null but kernel vecadd has 16 parameter(s)");
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 0, 1, 1, 32, 1, 1, 0,
                                        nullptr, args),
              "grid.x must be in [1, 2147483647] (got 0)");
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 70000, 1, 32, 1, 1, 0,
                                        nullptr, args),
              "grid.y must be in [1, 65535] (got 70000)");
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 2048, 1, 1, 0,
                                        nullptr, args),
              "block.x must be in [1, 1024] (got 2048)");
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 32, 32, 2, 0,
                                        nullptr, args),
              "a block of 2048 threads (32x32x2) exceeds kernel vecadd's "
              "limit of 1024 threads per block");
  CHECK_ERROR(checker, ctx, kBad,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 32, 1, 1, -1,
                                        nullptr, args),
              "sharedMemoryBytes must not be negative (got -1)");
  CHECK_OK(checker, ctx, moertArgsDestroy(ctx, args));
}

static void testPtxModule(Checker &checker, moertContext ctx) {
  moertModule module = nullptr;
  REQUIRE_OK(checker, ctx, moertModuleLoadPTX(ctx, kKernelsPtx, &module));
  const char *log = nullptr;
  CHECK_OK(checker, ctx, moertModuleGetInfoLog(ctx, module, &log));
  fmt::print("JIT info log of kernels.ptx:\n{}\n", log);
  // The driver's verbose log names each kernel; under compute-sanitizer,
  // which compiles the PTX itself, the log is empty.
  CHECK(checker, log && (!*log || contains(log, "vecadd")));

  moertFunction vecadd = nullptr, again = nullptr, scale2d = nullptr,
                reverse = nullptr;
  REQUIRE_OK(checker, ctx,
             moertModuleGetFunction(ctx, module, "vecadd", &vecadd));
  CHECK_OK(checker, ctx, moertModuleGetFunction(ctx, module, "vecadd", &again));
  CHECK(checker, again == vecadd);
  REQUIRE_OK(checker, ctx,
             moertModuleGetFunction(ctx, module, "scale2d", &scale2d));
  REQUIRE_OK(checker, ctx,
             moertModuleGetFunction(ctx, module, "reverse_blocks", &reverse));
  moertFunctionAttributes attrs;
  CHECK_OK(checker, ctx, moertFunctionGetAttributes(ctx, vecadd, &attrs));
  fmt::print("vecadd: {} params ({} bytes), {} registers, PTX {}, SASS {}\n",
             attrs.numParams, attrs.paramBytes, attrs.numRegisters,
             attrs.ptxVersion, attrs.binaryVersion);
  CHECK(checker, attrs.numParams == 16 && attrs.paramBytes == 128);
  CHECK(checker, attrs.numRegisters > 0 && attrs.maxThreadsPerBlock == 1024);
  CHECK(checker, attrs.ptxVersion >= 80 && attrs.binaryVersion >= 90);
  CHECK_OK(checker, ctx, moertFunctionGetAttributes(ctx, scale2d, &attrs));
  CHECK(checker, attrs.numParams == 15 && attrs.paramBytes == 7 * 8 * 2 + 4);

  moertFunction missing = nullptr;
  CHECK_ERROR(checker, ctx, MOERT_ERROR_CUDA,
              moertModuleGetFunction(ctx, module, "no_such_kernel", &missing),
              "CUDA_ERROR_NOT_FOUND");
  CHECK(checker, moertGetLastDriverResult(ctx) == 500);
  CHECK(checker, contains(moertGetLastError(ctx),
                          "looking up kernel \"no_such_kernel\""));

  runVecAdd(checker, ctx, vecadd, 1000, 0, 1, /*rawLaunch=*/false);
  runVecAdd(checker, ctx, vecadd, 777, 5, 3, /*rawLaunch=*/true);
  runScale2D(checker, ctx, scale2d);
  runReverseBlocks(checker, ctx, reverse);
  testLaunchChecks(checker, ctx, vecadd);

  // Timing a launch with events.
  const intptr_t n = intptr_t(1) << 24;
  moertEvent start = nullptr, end = nullptr;
  moertStream stream = nullptr;
  void *buffers[3] = {};
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertStreamCreate(ctx, &stream));
  REQUIRE_OK(checker, ctx, moertEventCreate(ctx, &start));
  REQUIRE_OK(checker, ctx, moertEventCreate(ctx, &end));
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  intptr_t stride = 1;
  for (void *&buffer : buffers) {
    REQUIRE_OK(checker, ctx, moertMemAlloc(ctx, n * 4, &buffer));
    CHECK_OK(checker, ctx, moertMemsetAsync(ctx, buffer, 0, n * 4, stream));
    CHECK_OK(checker, ctx,
             moertArgsAddMemRef(ctx, args, buffer, buffer, 0, 1, &n, &stride));
  }
  CHECK_OK(checker, ctx, moertArgsAddI64(ctx, args, n));
  CHECK_OK(checker, ctx, moertEventRecord(ctx, start, stream));
  CHECK_OK(checker, ctx,
           moertLaunchKernelWithArgs(ctx, vecadd, n / 256, 1, 1, 256, 1, 1, 0,
                                     stream, args));
  CHECK_OK(checker, ctx, moertEventRecord(ctx, end, stream));
  CHECK_OK(checker, ctx, moertEventSynchronize(ctx, end));
  float ms = -1;
  CHECK_OK(checker, ctx, moertEventElapsedTime(ctx, start, end, &ms));
  fmt::print("vecadd of 2^24 floats: {:.3f} ms ({:.0f} GB/s)\n", ms,
             3.0 * 4 * double(n) / (double(ms) * 1e6));
  CHECK(checker, ms > 0.0f);
  for (void *buffer : buffers)
    CHECK_OK(checker, ctx, moertMemFree(ctx, buffer));

  // Unloading invalidates the module's functions.
  CHECK_OK(checker, ctx, moertModuleUnload(ctx, module));
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertLaunchKernelWithArgs(ctx, vecadd, 1, 1, 1, 32, 1, 1, 0,
                                        nullptr, args),
              "not a live function");
  CHECK_ERROR(checker, ctx, MOERT_ERROR_INVALID_HANDLE,
              moertModuleUnload(ctx, module), "not a live module");
}

static void testBadPtx(Checker &checker, moertContext ctx) {
  const char *broken = ".version 8.0\n"
                       ".target sm_90\n"
                       ".address_size 64\n"
                       "\n"
                       ".visible .entry broken()\n"
                       "{\n"
                       "\tfrobnicate.u32 %r1;\n"
                       "\tret;\n"
                       "}\n";
  moertModule module = nullptr;
  moertStatus status = moertModuleLoadPTX(ctx, broken, &module);
  std::string message = moertGetLastError(ctx);
  fmt::print("broken PTX gives: {}\n", message);
  CHECK(checker, status == MOERT_ERROR_CUDA && module == nullptr);
  CHECK(checker, contains(message, "moertModuleLoadPTX: cuModuleLoadDataEx("));
  CHECK(checker, contains(message, "CUDA_ERROR_INVALID_PTX"));
  CHECK(checker, contains(message, "\nJIT error log:\n"));
  CHECK(checker,
        contains(message, "line 7") && contains(message, "frobnicate"));
}

static void testCubinModule(Checker &checker, moertContext ctx) {
#ifdef MOERT_TEST_CUBIN
  moertDeviceProperties props;
  REQUIRE_OK(checker, ctx, moertDeviceGetProperties(ctx, &props));
  if (props.computeCapabilityMajor != 9) {
    fmt::print("note: the sm_90 cubin needs a compute capability 9.x device; "
               "this one is {}.{}\n",
               props.computeCapabilityMajor, props.computeCapabilityMinor);
    return;
  }
  // The build's cubin, or (on a machine the test was copied to, as the GPU
  // suite does) the copy that MOERT_TEST_CUBIN names.
  const char *path = std::getenv("MOERT_TEST_CUBIN");
  if (!path || !*path)
    path = MOERT_TEST_CUBIN;
  std::ifstream file(path, std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  if (!CHECK(checker, !image.empty())) {
    fmt::print("the cubin {} is missing or empty\n", path);
    return;
  }
  moertModule module = nullptr;
  REQUIRE_OK(
      checker, ctx,
      moertModuleLoadCubin(ctx, image.data(), intptr_t(image.size()), &module));
  const char *log = nullptr;
  CHECK_OK(checker, ctx, moertModuleGetInfoLog(ctx, module, &log));
  moertFunction vecadd = nullptr;
  REQUIRE_OK(checker, ctx,
             moertModuleGetFunction(ctx, module, "vecadd", &vecadd));
  runVecAdd(checker, ctx, vecadd, 4099, 2, 2, /*rawLaunch=*/false);
  CHECK_OK(checker, ctx, moertModuleUnload(ctx, module));
#else
  fmt::print("note: ptxas was not found at build time; the cubin case is not "
             "run\n");
#endif
}

int main() {
  Checker checker("moert-launch-test");
  moertContext ctx = openDeviceOrSkip("moert-launch-test");
  testPtxModule(checker, ctx);
  testBadPtx(checker, ctx);
  testCubinModule(checker, ctx);
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
  return checker.finish();
}
