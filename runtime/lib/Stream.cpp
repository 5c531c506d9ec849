//===- Stream.cpp - CUDA streams ------------------------------------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Streams are created non-blocking, so they never wait on the legacy default
// stream; ordering between them is explicit, through events.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

using namespace moert;

moertStatus moert::lookupStream(moertContext ctx, moertStream stream,
                                CUstream *cuStream) {
  *cuStream = nullptr;
  if (!stream)
    return MOERT_SUCCESS;
  MOERT_TRY(checkHandle(ctx, ctx->streams, stream, "stream", "stream"));
  *cuStream = stream->stream;
  return MOERT_SUCCESS;
}

moertStatus moert::destroyStream(moertContext ctx, moertStream_ *stream) {
  CUstream cuStream = stream->stream;
  ctx->streams.erase(stream);
  MOERT_CU_CHECK(ctx, cuStreamDestroy(cuStream));
  return MOERT_SUCCESS;
}

moertStatus moertStreamCreate(moertContext ctx, moertStream *stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!stream)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "stream is null");
    *stream = nullptr;
    return onDevice(ctx, [&]() -> moertStatus {
      auto object = std::make_unique<moertStream_>();
      MOERT_CU_CHECK(ctx,
                     cuStreamCreate(&object->stream, CU_STREAM_NON_BLOCKING));
      *stream = ctx->streams.add(std::move(object));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertStreamDestroy(moertContext ctx, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!stream)
      return MOERT_SUCCESS;
    MOERT_TRY(checkHandle(ctx, ctx->streams, stream, "stream", "stream"));
    return onDevice(ctx, [&] { return destroyStream(ctx, stream); });
  });
}

moertStatus moertStreamSynchronize(moertContext ctx, moertStream stream) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    CUstream cuStream = nullptr;
    MOERT_TRY(lookupStream(ctx, stream, &cuStream));
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuStreamSynchronize(cuStream));
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertStreamWaitEvent(moertContext ctx, moertStream stream,
                                 moertEvent event) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    CUstream cuStream = nullptr;
    MOERT_TRY(lookupStream(ctx, stream, &cuStream));
    MOERT_TRY(checkHandle(ctx, ctx->events, event, "event", "event"));
    return onDevice(ctx, [&]() -> moertStatus {
      MOERT_CU_CHECK(ctx, cuStreamWaitEvent(cuStream, event->event,
                                            CU_EVENT_WAIT_DEFAULT));
      return MOERT_SUCCESS;
    });
  });
}
