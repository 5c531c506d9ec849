//===- Device.cpp - Device properties and memory information --------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Queries the device facts once, when a context is created; launches check
// against them without asking the driver again.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <cstring> // defines: std::memset

using namespace moert;

moertStatus moert::queryDeviceProperties(moertContext ctx, int ordinal,
                                         int deviceCount) {
  moertDeviceProperties &props = ctx->properties;
  std::memset(&props, 0, sizeof(props));
  props.ordinal = ordinal;
  props.deviceCount = deviceCount;
  CUdevice device = ctx->device;
  MOERT_CU_CHECK(
      ctx, cuDeviceGetName(props.name, int(sizeof(props.name)) - 1, device));
  size_t totalBytes = 0;
  MOERT_CU_CHECK(ctx, cuDeviceTotalMem(&totalBytes, device));
  props.totalMemoryBytes = intptr_t(totalBytes);
  MOERT_CU_CHECK(ctx, cuDriverGetVersion(&props.driverVersion));

  struct Query {
    int *value;
    CUdevice_attribute attribute;
  };
  const Query queries[] = {
      {&props.computeCapabilityMajor,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&props.computeCapabilityMinor,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&props.multiprocessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&props.warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&props.maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&props.maxBlockDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&props.maxBlockDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&props.maxBlockDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&props.maxGridDim[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&props.maxGridDim[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&props.maxGridDim[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&props.sharedMemoryPerBlockBytes,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&props.sharedMemoryPerBlockOptinBytes,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&props.sharedMemoryPerMultiprocessorBytes,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&props.registersPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&props.l2CacheBytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
  };
  for (const Query &query : queries)
    MOERT_CU_CHECK(ctx,
                   cuDeviceGetAttribute(query.value, query.attribute, device));
  return MOERT_SUCCESS;
}

moertStatus moertDeviceGetProperties(moertContext ctx,
                                     moertDeviceProperties *props) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!props)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "props is null");
    if (ctx->deviceStatus != MOERT_SUCCESS)
      return fail(ctx, ctx->deviceStatus,
                  "the context has no usable device: {}", ctx->deviceError);
    *props = ctx->properties;
    return MOERT_SUCCESS;
  });
}

moertStatus moertDeviceGetMemoryInfo(moertContext ctx, intptr_t *freeBytes,
                                     intptr_t *totalBytes) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!freeBytes || !totalBytes)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "freeBytes and totalBytes must not be null");
    return onDevice(ctx, [&]() -> moertStatus {
      size_t free = 0, total = 0;
      MOERT_CU_CHECK(ctx, cuMemGetInfo(&free, &total));
      *freeBytes = intptr_t(free);
      *totalBytes = intptr_t(total);
      return MOERT_SUCCESS;
    });
  });
}
