//===- ArgsTest.cpp - Kernel argument lists and memref packing ------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Host logic only; runs in CI. Checks that argument lists hold what
// cuLaunchKernel reads: one pointer per parameter, at a value of the right
// size, with memref descriptors expanded as MLIR's GPU calling convention
// does (allocated, aligned, offset, sizes..., strides...).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstdint> // defines: int32_t, int64_t, uintptr_t
#include <cstring> // defines: std::memcpy

using namespace moert::test;

/// Reads the `T` that parameter `index` points at.
template <typename T>
static T valueAt(void **params, intptr_t index) {
  T value;
  std::memcpy(&value, params[index], sizeof(T));
  return value;
}

static void testParamCount(Checker &checker) {
  CHECK(checker, moertMemRefParamCount(0) == 3);
  CHECK(checker, moertMemRefParamCount(1) == 5);
  CHECK(checker, moertMemRefParamCount(2) == 7);
  CHECK(checker, moertMemRefParamCount(4) == 11);
  CHECK(checker, moertMemRefParamCount(-1) == -1);
  CHECK(checker, moertMemRefParamCount(INTPTR_MAX) == -1);
}

/// The vecadd kernel's list: three rank-1 memrefs and an index, 16 params.
static void testVecAddLayout(Checker &checker, moertContext ctx) {
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  float a[8], b[8], c[8];
  intptr_t size = 8, stride = 1;
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, a, a, 0, 1, &size, &stride));
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, b, b + 2, 3, 1, &size, &stride));
  intptr_t stride2 = 2;
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, c, c, 1, 1, &size, &stride2));
  CHECK_OK(checker, ctx, moertArgsAddI64(ctx, args, 8));

  void **params = nullptr;
  intptr_t count = 0;
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 3 * moertMemRefParamCount(1) + 1);
  CHECK(checker, valueAt<void *>(params, 0) == a);
  CHECK(checker, valueAt<void *>(params, 1) == a);
  CHECK(checker, valueAt<int64_t>(params, 2) == 0);
  CHECK(checker, valueAt<int64_t>(params, 3) == 8);
  CHECK(checker, valueAt<int64_t>(params, 4) == 1);
  CHECK(checker, valueAt<void *>(params, 5) == b);
  CHECK(checker, valueAt<void *>(params, 6) == b + 2);
  CHECK(checker, valueAt<int64_t>(params, 7) == 3);
  CHECK(checker, valueAt<void *>(params, 10) == c);
  CHECK(checker, valueAt<int64_t>(params, 12) == 1);
  CHECK(checker, valueAt<int64_t>(params, 14) == 2);
  CHECK(checker, valueAt<int64_t>(params, 15) == 8);
  for (intptr_t i = 0; i < count; ++i) {
    intptr_t bytes = 0;
    CHECK_OK(checker, ctx, moertArgsGetParamSize(ctx, args, i, &bytes));
    CHECK(checker, bytes == 8);
  }
  CHECK(checker, moertArgsDestroy(ctx, args) == MOERT_SUCCESS);
}

/// Rank 2 and rank 0, with scalars of both sizes between them.
static void testMixedLayout(Checker &checker, moertContext ctx) {
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  double data[64];
  intptr_t sizes[2] = {4, 6};
  intptr_t strides[2] = {8, 1}; // A 4x6 window of an 8-wide buffer.
  CHECK_OK(checker, ctx, moertArgsAddI32(ctx, args, -7));
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, data, data + 1, 9, 2, sizes, strides));
  CHECK_OK(checker, ctx, moertArgsAddF32(ctx, args, 1.5f));
  CHECK_OK(checker, ctx,
           moertArgsAddMemRef(ctx, args, data, data, 5, 0, nullptr, nullptr));
  CHECK_OK(checker, ctx, moertArgsAddF64(ctx, args, -2.25));
  CHECK_OK(checker, ctx, moertArgsAddPointer(ctx, args, data + 3));

  void **params = nullptr;
  intptr_t count = 0;
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 1 + 7 + 1 + 3 + 1 + 1);
  CHECK(checker, valueAt<int32_t>(params, 0) == -7);
  CHECK(checker, valueAt<double *>(params, 1) == data);
  CHECK(checker, valueAt<double *>(params, 2) == data + 1);
  CHECK(checker, valueAt<int64_t>(params, 3) == 9);
  CHECK(checker, valueAt<int64_t>(params, 4) == 4);
  CHECK(checker, valueAt<int64_t>(params, 5) == 6);
  CHECK(checker, valueAt<int64_t>(params, 6) == 8);
  CHECK(checker, valueAt<int64_t>(params, 7) == 1);
  CHECK(checker, valueAt<float>(params, 8) == 1.5f);
  CHECK(checker, valueAt<double *>(params, 9) == data);
  CHECK(checker, valueAt<double *>(params, 10) == data);
  CHECK(checker, valueAt<int64_t>(params, 11) == 5);
  CHECK(checker, valueAt<double>(params, 12) == -2.25);
  CHECK(checker, valueAt<double *>(params, 13) == data + 3);
  const intptr_t expectedSizes[] = {4, 8, 8, 8, 8, 8, 8, 8, 4, 8, 8, 8, 8, 8};
  for (intptr_t i = 0; i < count; ++i) {
    intptr_t bytes = 0;
    CHECK_OK(checker, ctx, moertArgsGetParamSize(ctx, args, i, &bytes));
    checker.check(bytes == expectedSizes[i], "parameter size", __FILE__,
                  __LINE__, fmt::format("parameter {}: {} bytes", i, bytes));
  }

  // The array is rebuilt after a change, and stays consistent.
  CHECK_OK(checker, ctx, moertArgsAddI64(ctx, args, 42));
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 15);
  CHECK(checker, valueAt<int32_t>(params, 0) == -7);
  CHECK(checker, valueAt<int64_t>(params, 14) == 42);

  CHECK_OK(checker, ctx, moertArgsClear(ctx, args));
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 0 && params == nullptr);
  CHECK(checker, moertArgsDestroy(ctx, args) == MOERT_SUCCESS);
}

static void testInvalidMemRefs(Checker &checker, moertContext ctx) {
  const moertStatus kBad = MOERT_ERROR_INVALID_ARGUMENT;
  moertArgs args = nullptr;
  REQUIRE_OK(checker, ctx, moertArgsCreate(ctx, &args));
  float data[4];
  intptr_t sizes[2] = {2, 2}, strides[2] = {2, 1};
  CHECK_ERROR(checker, ctx, kBad,
              moertArgsAddMemRef(ctx, args, data, data, 0, -1, sizes, strides),
              "moertArgsAddMemRef: rank must be in [0, ");
  CHECK_ERROR(checker, ctx, kBad,
              moertArgsAddMemRef(ctx, args, data, data, 0, 2, nullptr, strides),
              "a rank-2 memref needs sizes and strides (sizes is null, strides "
              "is set)");
  CHECK_ERROR(checker, ctx, kBad,
              moertArgsAddMemRef(ctx, args, data, data, 0, 1, sizes, nullptr),
              "strides is null");
  CHECK_ERROR(checker, ctx, kBad,
              moertArgsAddMemRef(ctx, args, data, data, -4, 2, sizes, strides),
              "offset must not be negative (got -4)");
  intptr_t negative[2] = {2, -3};
  CHECK_ERROR(
      checker, ctx, kBad,
      moertArgsAddMemRef(ctx, args, data, data, 0, 2, negative, strides),
      "sizes[1] must not be negative (got -3)");
  CHECK_ERROR(
      checker, ctx, kBad,
      moertArgsAddMemRef(ctx, args, data, nullptr, 0, 2, sizes, strides),
      "the aligned pointer of a rank-2 memref with elements is null");
  // Nothing was appended by the failures.
  void **params = nullptr;
  intptr_t count = -1;
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 0);
  // An empty memref may have null pointers; strides may be negative.
  intptr_t empty[2] = {0, 5}, reversed[2] = {-1, 1};
  CHECK_OK(
      checker, ctx,
      moertArgsAddMemRef(ctx, args, nullptr, nullptr, 0, 2, empty, reversed));
  REQUIRE_OK(checker, ctx, moertArgsGetParams(ctx, args, &params, &count));
  CHECK(checker, count == 7 && valueAt<int64_t>(params, 5) == -1);

  intptr_t bytes = 0;
  CHECK_ERROR(checker, ctx, kBad, moertArgsGetParamSize(ctx, args, 7, &bytes),
              "index 7 is out of range: the list has 7 parameter(s)");
  CHECK_ERROR(checker, ctx, kBad, moertArgsGetParamSize(ctx, args, 0, nullptr),
              "sizeBytes is null");
  CHECK_ERROR(checker, ctx, kBad,
              moertArgsGetParams(ctx, args, nullptr, &count),
              "params and count must not be null");
  CHECK(checker, moertArgsDestroy(ctx, args) == MOERT_SUCCESS);
}

int main() {
  Checker checker("moert-args-test");
  testParamCount(checker);
  // Argument lists need no device: a context without a driver serves them.
  moertContext ctx = nullptr;
  moertContextCreateWithDriver("/nonexistent/libcuda.so.1", 0, &ctx);
  if (!CHECK(checker, ctx != nullptr))
    return checker.finish();
  testVecAddLayout(checker, ctx);
  testMixedLayout(checker, ctx);
  testInvalidMemRefs(checker, ctx);
  CHECK(checker, moertContextDestroy(ctx) == MOERT_SUCCESS);
  return checker.finish();
}
