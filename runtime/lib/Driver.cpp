//===- Driver.cpp - Load libcuda and resolve its functions ----------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// dlopen/dlsym of the driver functions that Driver.h lists.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <dlfcn.h> // defines: dlopen, dlsym, dlclose, dlerror

#include <fmt/format.h> // defines: fmt::format

using namespace moert;

std::string moert::loadDriver(const char *library, void **handle,
                              DriverApi &api) {
  *handle = nullptr;
  dlerror(); // Clears a stale error so that the one below is ours.
  void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *reason = dlerror();
    return fmt::format("cannot load the CUDA driver: dlopen({}) failed: {}",
                       library, reason ? reason : "no reason given");
  }
  // A symbol the driver lacks means it is older than the cuda.h that moert
  // was compiled with (CUDA_VERSION), whose versioned names we ask for.
#define MOERT_RESOLVE_DRIVER_FUNCTION(fn)                                      \
  api.fn =                                                                     \
      reinterpret_cast<decltype(api.fn)>(dlsym(lib, MOERT_STRINGIFY(fn)));     \
  if (!api.fn) {                                                               \
    dlclose(lib);                                                              \
    api = DriverApi();                                                         \
    return fmt::format("the CUDA driver {} has no symbol {}: it is older "     \
                       "than the CUDA {}.{} headers moert was built with",     \
                       library, MOERT_STRINGIFY(fn), CUDA_VERSION / 1000,      \
                       CUDA_VERSION % 1000 / 10);                              \
  }
  MOERT_DRIVER_FUNCTIONS(MOERT_RESOLVE_DRIVER_FUNCTION)
#undef MOERT_RESOLVE_DRIVER_FUNCTION
  *handle = lib;
  return {};
}

void moert::unloadDriver(void *handle) {
  if (handle)
    dlclose(handle);
}
