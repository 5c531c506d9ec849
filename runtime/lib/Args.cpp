//===- Args.cpp - Kernel argument lists and memref descriptors ------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Builds cuLaunchKernel's `void **` parameter array. Under MLIR's default GPU
// calling convention a rank-N memref argument becomes 3 + 2N kernel
// parameters: allocated pointer, aligned pointer, offset, N sizes and N
// strides (all i64), which moertArgsAddMemRef appends in that order. Host
// logic only: nothing here needs a device.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <cstring> // defines: std::memcpy

using namespace moert;

/// The largest rank whose parameter count fits intptr_t.
static constexpr intptr_t kMaxRank = (INTPTR_MAX - 3) / 2;

intptr_t moertMemRefParamCount(intptr_t rank) {
  if (rank < 0 || rank > kMaxRank)
    return -1;
  return 3 + 2 * rank;
}

void **moert::buildParams(moertArgs_ &args) {
  args.params.resize(args.slots.size());
  for (size_t i = 0; i < args.slots.size(); ++i)
    args.params[i] = &args.slots[i];
  return args.params.empty() ? nullptr : args.params.data();
}

/// Appends a 4- or 8-byte parameter. The value sits at the
/// start of its 8-byte slot, which is where cuLaunchKernel reads it.
template <typename T>
static void push(moertArgs_ &args, T value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "parameters are 4 or 8 B");
  uint64_t slot = 0;
  std::memcpy(&slot, &value, sizeof(T));
  args.slots.push_back(slot);
  args.sizes.push_back(uint8_t(sizeof(T)));
}

moertStatus moertArgsCreate(moertContext ctx, moertArgs *args) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!args)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "args is null");
    *args = ctx->args.add(std::make_unique<moertArgs_>());
    return MOERT_SUCCESS;
  });
}

moertStatus moertArgsDestroy(moertContext ctx, moertArgs args) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!args)
      return MOERT_SUCCESS;
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    ctx->args.erase(args);
    return MOERT_SUCCESS;
  });
}

moertStatus moertArgsClear(moertContext ctx, moertArgs args) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    args->slots.clear();
    args->sizes.clear();
    args->params.clear();
    return MOERT_SUCCESS;
  });
}

/// The body of the scalar and pointer adders.
template <typename T>
static moertStatus addScalar(moertContext ctx, const char *apiName,
                             moertArgs args, T value) {
  return apiCall(ctx, apiName, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    push(*args, value);
    return MOERT_SUCCESS;
  });
}

moertStatus moertArgsAddPointer(moertContext ctx, moertArgs args,
                                const void *value) {
  return addScalar(ctx, __func__, args, uint64_t(uintptr_t(value)));
}

moertStatus moertArgsAddI32(moertContext ctx, moertArgs args, int32_t value) {
  return addScalar(ctx, __func__, args, value);
}

moertStatus moertArgsAddI64(moertContext ctx, moertArgs args, int64_t value) {
  return addScalar(ctx, __func__, args, value);
}

moertStatus moertArgsAddF32(moertContext ctx, moertArgs args, float value) {
  return addScalar(ctx, __func__, args, value);
}

moertStatus moertArgsAddF64(moertContext ctx, moertArgs args, double value) {
  return addScalar(ctx, __func__, args, value);
}

moertStatus moertArgsAddMemRef(moertContext ctx, moertArgs args,
                               void *allocated, void *aligned, intptr_t offset,
                               intptr_t rank, const intptr_t *sizes,
                               const intptr_t *strides) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    if (rank < 0 || rank > kMaxRank)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "rank must be in [0, {}] (got {})", kMaxRank, rank);
    if (rank > 0 && (!sizes || !strides))
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "a rank-{} memref needs sizes and strides (sizes is {}, "
                  "strides is {})",
                  rank, sizes ? "set" : "null", strides ? "set" : "null");
    if (offset < 0)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "offset must not be negative (got {})", offset);
    bool hasElements = true;
    for (intptr_t dim = 0; dim < rank; ++dim) {
      if (sizes[dim] < 0)
        return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                    "sizes[{}] must not be negative (got {})", dim, sizes[dim]);
      hasElements = hasElements && sizes[dim] > 0;
    }
    if (!aligned && hasElements)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "the aligned pointer of a rank-{} memref with elements is "
                  "null",
                  rank);
    // Reserve first, so that a failure appends nothing.
    size_t count = size_t(moertMemRefParamCount(rank));
    args->slots.reserve(args->slots.size() + count);
    args->sizes.reserve(args->sizes.size() + count);
    push(*args, uint64_t(uintptr_t(allocated)));
    push(*args, uint64_t(uintptr_t(aligned)));
    push(*args, int64_t(offset));
    for (intptr_t dim = 0; dim < rank; ++dim)
      push(*args, int64_t(sizes[dim]));
    for (intptr_t dim = 0; dim < rank; ++dim)
      push(*args, int64_t(strides[dim]));
    return MOERT_SUCCESS;
  });
}

moertStatus moertArgsGetParams(moertContext ctx, moertArgs args, void ***params,
                               intptr_t *count) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    if (!params || !count)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "params and count must not be null");
    *params = buildParams(*args);
    *count = intptr_t(args->slots.size());
    return MOERT_SUCCESS;
  });
}

moertStatus moertArgsGetParamSize(moertContext ctx, moertArgs args,
                                  intptr_t index, intptr_t *sizeBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    if (!sizeBytes)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "sizeBytes is null");
    if (index < 0 || index >= intptr_t(args->sizes.size()))
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "index {} is out of range: the list has {} parameter(s)",
                  index, args->sizes.size());
    *sizeBytes = args->sizes[size_t(index)];
    return MOERT_SUCCESS;
  });
}
