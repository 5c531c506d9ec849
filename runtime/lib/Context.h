//===- Context.h - The context object and the handles it owns ---*- C++ -*-===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// Defines the structs behind moert.h's opaque handles. A moertContext_ holds
// everything: the loaded driver, the device and its primary context, the
// error of the current call, and a registry per handle kind. The registries
// own the handle objects and let every call check a handle by its address
// alone, so a destroyed or foreign handle is reported, never dereferenced.
//
//===----------------------------------------------------------------------===//

#ifndef MOERT_LIB_CONTEXT_H
#define MOERT_LIB_CONTEXT_H

#include "Driver.h"
#include "moert/moert.h"

#include <cstdint>       // defines: uint8_t, uint64_t
#include <memory>        // defines: std::unique_ptr
#include <string>        // defines: std::string
#include <unordered_map> // defines: std::unordered_map
#include <vector>        // defines: std::vector

namespace moert {

/// Owns the live objects of one handle kind, keyed by their address.
template <typename T>
class Registry {
public:
  /// Takes ownership of `object` and returns its handle.
  T *add(std::unique_ptr<T> object) {
    T *handle = object.get();
    objects.emplace(handle, std::move(object));
    return handle;
  }
  /// Whether `handle` is a live object here; compares addresses only.
  bool contains(const T *handle) const {
    return objects.count(const_cast<T *>(handle)) != 0;
  }
  /// Destroys the object behind a live `handle`.
  void erase(T *handle) { objects.erase(handle); }
  /// The live handles, in no particular order.
  std::vector<T *> handles() const {
    std::vector<T *> result;
    result.reserve(objects.size());
    for (const auto &entry : objects)
      result.push_back(entry.first);
    return result;
  }

private:
  std::unordered_map<T *, std::unique_ptr<T>> objects;
};

} // namespace moert

struct moertFunction_;

struct moertModule_ {
  CUmodule module = nullptr;
  /// The JIT info log of a PTX module; empty for a cubin.
  std::string infoLog;
  /// Functions looked up so far, by name; the context's registry owns them.
  std::unordered_map<std::string, moertFunction_ *> functions;
};

struct moertFunction_ {
  moertModule_ *module = nullptr;
  CUfunction function = nullptr;
  std::string name;
  /// Byte size of each kernel parameter, from cuFuncGetParamInfo.
  std::vector<size_t> paramSizes;
  moertFunctionAttributes attributes = {};
  /// The dynamic shared memory the kernel is opted in to; 0 until a launch
  /// asks for more than the default per-block limit.
  intptr_t optedInSharedBytes = 0;
};

struct moertStream_ {
  CUstream stream = nullptr;
};

struct moertEvent_ {
  CUevent event = nullptr;
};

struct moertArgs_ {
  /// One 8-byte slot per parameter; 4-byte values use the first 4 bytes.
  std::vector<uint64_t> slots;
  /// Byte size of each parameter: 4 or 8.
  std::vector<uint8_t> sizes;
  /// cuLaunchKernel's array, rebuilt by moertArgsGetParams.
  std::vector<void *> params;
};

struct moertContext_ {
  /// The driver, resolved by moert::loadDriver; all null if it did not load.
  moert::DriverApi api;
  void *driverHandle = nullptr;
  bool driverInitialized = false;

  /// MOERT_SUCCESS once the device is usable; otherwise the creation status,
  /// which calls that need the device return, with `deviceError`.
  moertStatus deviceStatus = MOERT_ERROR_NO_DRIVER;
  std::string deviceError;
  CUdevice device = 0;
  CUcontext cuContext = nullptr;
  moertDeviceProperties properties = {};

  /// The error of the current call: the public function's name (__func__),
  /// the message and the driver result, reset when a call starts.
  const char *apiName = "";
  std::string lastError;
  int lastDriverResult = 0;

  moert::Registry<moertArgs_> args;
  moert::Registry<moertEvent_> events;
  moert::Registry<moertStream_> streams;
  moert::Registry<moertFunction_> functions;
  moert::Registry<moertModule_> modules;
};

namespace moert {

/// Fills ctx->properties for ctx->device; called once by context creation.
moertStatus queryDeviceProperties(moertContext ctx, int ordinal,
                                  int deviceCount);

/// Resolves a stream handle: null is the default stream; anything else must
/// be a live stream of `ctx`.
moertStatus lookupStream(moertContext ctx, moertStream stream,
                         CUstream *cuStream);

/// Rebuilds and returns cuLaunchKernel's parameter array of `args` (null
/// when empty); valid until `args` changes.
void **buildParams(moertArgs_ &args);

/// Destroy a live object and drop it from its registry. They call the
/// driver, so the primary context must be current (see onDevice). The
/// object is dropped even when the driver call fails.
moertStatus destroyModule(moertContext ctx, moertModule_ *module);
moertStatus destroyStream(moertContext ctx, moertStream_ *stream);
moertStatus destroyEvent(moertContext ctx, moertEvent_ *event);

} // namespace moert

#endif // MOERT_LIB_CONTEXT_H
