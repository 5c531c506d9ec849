//===- Launch.cpp - Kernel launch with its preconditions checked ----------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Checks a launch against the device and kernel limits before calling
// cuLaunchKernel, so that a bad configuration is named ("a block of 2048
// threads exceeds ...") rather than reported as CUDA_ERROR_INVALID_VALUE, and
// opts a kernel in to more than 48 KiB of dynamic shared memory when asked.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

using namespace moert;

namespace {
/// One launch configuration.
struct LaunchConfig {
  intptr_t grid[3];
  intptr_t block[3];
  intptr_t sharedBytes;
};
} // namespace

static moertStatus checkDims(moertContext ctx, const char *what,
                             const intptr_t dims[3], const int limits[3]) {
  static const char *const kAxes[] = {"x", "y", "z"};
  for (int axis = 0; axis < 3; ++axis)
    if (dims[axis] < 1 || dims[axis] > limits[axis])
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "{}.{} must be in [1, {}] (got {})", what, kAxes[axis],
                  limits[axis], dims[axis]);
  return MOERT_SUCCESS;
}

static moertStatus checkLaunch(moertContext ctx, const moertFunction_ &function,
                               const LaunchConfig &config) {
  const moertDeviceProperties &props = ctx->properties;
  const moertFunctionAttributes &attrs = function.attributes;
  MOERT_TRY(checkDims(ctx, "grid", config.grid, props.maxGridDim));
  MOERT_TRY(checkDims(ctx, "block", config.block, props.maxBlockDim));
  // Each dimension is at most 1024 here, so the product cannot overflow.
  intptr_t threads = config.block[0] * config.block[1] * config.block[2];
  if (threads > attrs.maxThreadsPerBlock)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "a block of {} threads ({}x{}x{}) exceeds kernel {}'s limit "
                "of {} threads per block (it uses {} registers per thread)",
                threads, config.block[0], config.block[1], config.block[2],
                function.name, attrs.maxThreadsPerBlock, attrs.numRegisters);
  if (config.sharedBytes < 0)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "sharedMemoryBytes must not be negative (got {})",
                config.sharedBytes);
  intptr_t totalShared = attrs.staticSharedBytes + config.sharedBytes;
  if (totalShared > props.sharedMemoryPerBlockOptinBytes)
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "kernel {} needs {} bytes of shared memory per block ({} "
                "static + {} dynamic), more than the device allows ({} "
                "bytes after opting in)",
                function.name, totalShared, attrs.staticSharedBytes,
                config.sharedBytes, props.sharedMemoryPerBlockOptinBytes);
  return MOERT_SUCCESS;
}

/// Raises the kernel's dynamic shared memory limit when the launch needs more
/// than a block gets by default. The primary context must be current.
static moertStatus optInSharedMemory(moertContext ctx, moertFunction_ &function,
                                     intptr_t sharedBytes) {
  intptr_t total = function.attributes.staticSharedBytes + sharedBytes;
  if (total <= ctx->properties.sharedMemoryPerBlockBytes ||
      sharedBytes <= function.optedInSharedBytes)
    return MOERT_SUCCESS;
  MOERT_CU_CHECK_DETAIL(
      ctx,
      cuFuncSetAttribute(function.function,
                         CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         int(sharedBytes)),
      fmt::format("opting kernel {} in to {} bytes of dynamic shared memory",
                  function.name, sharedBytes));
  function.optedInSharedBytes = sharedBytes;
  return MOERT_SUCCESS;
}

static moertStatus launch(moertContext ctx, moertFunction_ &function,
                          const LaunchConfig &config, CUstream stream,
                          void **params) {
  return onDevice(ctx, [&]() -> moertStatus {
    MOERT_TRY(optInSharedMemory(ctx, function, config.sharedBytes));
    MOERT_CU_CHECK_DETAIL(
        ctx,
        cuLaunchKernel(function.function, unsigned(config.grid[0]),
                       unsigned(config.grid[1]), unsigned(config.grid[2]),
                       unsigned(config.block[0]), unsigned(config.block[1]),
                       unsigned(config.block[2]), unsigned(config.sharedBytes),
                       stream, params, /*extra=*/nullptr),
        fmt::format("kernel {}, grid ({}, {}, {}), block ({}, {}, {}), {} "
                    "bytes of dynamic shared memory",
                    function.name, config.grid[0], config.grid[1],
                    config.grid[2], config.block[0], config.block[1],
                    config.block[2], config.sharedBytes));
    return MOERT_SUCCESS;
  });
}

moertStatus moertLaunchKernel(moertContext ctx, moertFunction function,
                              intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                              intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                              intptr_t sharedMemoryBytes, moertStream stream,
                              void **params) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(
        checkHandle(ctx, ctx->functions, function, "function", "function"));
    LaunchConfig config = {
        {gridX, gridY, gridZ}, {blockX, blockY, blockZ}, sharedMemoryBytes};
    MOERT_TRY(checkLaunch(ctx, *function, config));
    if (!params && function->attributes.numParams > 0)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "params is null but kernel {} has {} parameter(s)",
                  function->name, function->attributes.numParams);
    CUstream cuStream = nullptr;
    MOERT_TRY(lookupStream(ctx, stream, &cuStream));
    return launch(ctx, *function, config, cuStream, params);
  });
}

/// Checks that `args` matches the parameters of `function`, one by one.
static moertStatus checkArgs(moertContext ctx, const moertFunction_ &function,
                             const moertArgs_ &args) {
  if (args.sizes.size() != function.paramSizes.size())
    return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                "kernel {} takes {} parameter(s) but the argument list has {} "
                "(a rank-N memref is 3 + 2N parameters)",
                function.name, function.paramSizes.size(), args.sizes.size());
  for (size_t i = 0; i < args.sizes.size(); ++i)
    if (args.sizes[i] != function.paramSizes[i])
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "parameter {} of kernel {} is {} bytes but argument {} is {} "
                  "bytes",
                  i, function.name, function.paramSizes[i], i, args.sizes[i]);
  return MOERT_SUCCESS;
}

moertStatus moertLaunchKernelWithArgs(moertContext ctx, moertFunction function,
                                      intptr_t gridX, intptr_t gridY,
                                      intptr_t gridZ, intptr_t blockX,
                                      intptr_t blockY, intptr_t blockZ,
                                      intptr_t sharedMemoryBytes,
                                      moertStream stream, moertArgs args) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(
        checkHandle(ctx, ctx->functions, function, "function", "function"));
    MOERT_TRY(checkHandle(ctx, ctx->args, args, "argument list", "args"));
    LaunchConfig config = {
        {gridX, gridY, gridZ}, {blockX, blockY, blockZ}, sharedMemoryBytes};
    MOERT_TRY(checkLaunch(ctx, *function, config));
    MOERT_TRY(checkArgs(ctx, *function, *args));
    CUstream cuStream = nullptr;
    MOERT_TRY(lookupStream(ctx, stream, &cuStream));
    return launch(ctx, *function, config, cuStream, buildParams(*args));
  });
}
