//===- Event.cpp - CUDA events: ordering and timing -----------------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Events are created with timing enabled: they time kernels without launch
// gaps (record, launch, record, elapsed time) and order streams.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

using namespace moert;

moertStatus moert::destroyEvent(moertContext ctx, moertEvent_ *event) {
  CUevent cuEvent = event->event;
  ctx->events.erase(event);
  MOERT_CU_CHECK(ctx, cuEventDestroy(cuEvent));
  return MOERT_SUCCESS;
}

moertStatus moertEventCreate(moertContext ctx, moertEvent *event) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!event)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "event is null");
    *event = nullptr;
    return onDevice(ctx, [&]() -> moertStatus {
      auto object = std::make_unique<moertEvent_>();
      MOERT_CU_CHECK(ctx, cuEventCreate(&object->event, CU_EVENT_DEFAULT));
      *event = ctx->events.add(std::move(object));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertEventDestroy(moertContext ctx, moertEvent event) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!event)
      return MOERT_SUCCESS;
    MOERT_TRY(checkHandle(ctx, ctx->events, event, "event", "event"));
    return onDevice(ctx, [&] { return destroyEvent(ctx, event); });
  });
}

moertStatus moertEventRecord(moertContext ctx, moertEvent event,
                             moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    CUstream cuStream = nullptr;
    MOERT_TRY(checkHandle(ctx, ctx->events, event, "event", "event"));
    MOERT_TRY(lookupStream(ctx, stream, &cuStream));
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuEventRecord(event->event, cuStream));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertEventSynchronize(moertContext ctx, moertEvent event) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->events, event, "event", "event"));
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuEventSynchronize(event->event));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertEventElapsedTime(moertContext ctx, moertEvent start,
                                  moertEvent end, float *milliseconds) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->events, start, "event", "start"));
    MOERT_TRY(checkHandle(ctx, ctx->events, end, "event", "end"));
    if (!milliseconds)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "milliseconds is null");
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(
          ctx, cuEventElapsedTime(milliseconds, start->event, end->event));
      return MOERT_SUCCESS;
    });
  });
}
