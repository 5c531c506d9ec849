//===- Module.cpp - Load PTX and cubin modules, look up kernels -----------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// PTX goes through the driver's JIT (cuModuleLoadDataEx) with its error and
// info logs captured: the error log goes into the failure message, the
// verbose info log (registers, spills, shared memory per kernel) stays with
// the module. A kernel's parameter layout is read once, at lookup, so that a
// launch can check its arguments against it.
//
//===----------------------------------------------------------------------===//

#include "Error.h"

#include <cstring>  // defines: std::memcmp, std::strlen
#include <iterator> // defines: std::size

using namespace moert;

/// Room for each JIT log; ptxas output for one module fits easily.
static constexpr size_t kJitLogBytes = size_t(1) << 16;
/// The most parameters a kernel can have: CUDA allows 32764 bytes of them.
static constexpr size_t kMaxKernelParams = 32764 / 4;

/// Trims a NUL-padded log buffer to its text, without the trailing newline.
static std::string trimLog(std::string log) {
  log.resize(std::strlen(log.c_str()));
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return log;
}

static std::string jitErrorDetail(const std::string &errorLog) {
  std::string log = trimLog(errorLog);
  return log.empty() ? std::string("JIT error log: (empty)")
                     : "JIT error log:\n" + log;
}

/// Loads a PTX, cubin or fatbin image (the driver tells them apart).
static moertStatus loadImage(moertContext ctx, const void *image,
                             moertModule *module) {
  auto object = std::make_unique<moertModule_>();
  std::string errorLog(kJitLogBytes, '\0');
  std::string infoLog(kJitLogBytes, '\0');
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_LOG_VERBOSE};
  void *values[] = {
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(errorLog.size())),
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(infoLog.size())),
      reinterpret_cast<void *>(uintptr_t(1))};
  MOERT_CU_CHECK_DETAIL(ctx,
                        cuModuleLoadDataEx(&object->module, image,
                                           unsigned(std::size(options)),
                                           options, values),
                        jitErrorDetail(errorLog));
  object->infoLog = trimLog(std::move(infoLog));
  *module = ctx->modules.add(std::move(object));
  return MOERT_SUCCESS;
}

static bool startsWith(const void *image, intptr_t sizeBytes,
                       const unsigned char *magic, size_t magicBytes) {
  return sizeBytes >= intptr_t(magicBytes) &&
         std::memcmp(image, magic, magicBytes) == 0;
}

static const unsigned char kElfMagic[] = {0x7f, 'E', 'L', 'F'};
/// 0xBA55ED50 in little-endian order, the first word of a fatbin.
static const unsigned char kFatbinMagic[] = {0x50, 0xed, 0x55, 0xba};

moertStatus moertModuleLoadPTX(moertContext ctx, const char *ptx,
                               moertModule *module) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!module)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "module is null");
    *module = nullptr;
    if (!ptx || !*ptx)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "ptx is {}",
                  ptx ? "empty" : "null");
    if (startsWith(ptx, intptr_t(std::strlen(ptx)), kElfMagic,
                   sizeof(kElfMagic)))
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "ptx is an ELF image, not PTX text: load cubins with "
                  "moertModuleLoadCubin");
    return onDevice(ctx, [&] { return loadImage(ctx, ptx, module); });
  });
}

moertStatus moertModuleLoadCubin(moertContext ctx, const void *image,
                                 intptr_t sizeBytes, moertModule *module) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!module)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "module is null");
    *module = nullptr;
    if (!image)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "image is null");
    if (sizeBytes <= 0)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "sizeBytes must be positive (got {})", sizeBytes);
    if (!startsWith(image, sizeBytes, kElfMagic, sizeof(kElfMagic)) &&
        !startsWith(image, sizeBytes, kFatbinMagic, sizeof(kFatbinMagic)))
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT,
                  "image ({} bytes) is neither a cubin (ELF) nor a fatbin: "
                  "load PTX text with moertModuleLoadPTX",
                  sizeBytes);
    return onDevice(ctx, [&] { return loadImage(ctx, image, module); });
  });
}

moertStatus moertModuleGetInfoLog(moertContext ctx, moertModule module,
                                  const char **log) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(checkHandle(ctx, ctx->modules, module, "module", "module"));
    if (!log)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "log is null");
    *log = module->infoLog.c_str();
    return MOERT_SUCCESS;
  });
}

moertStatus moert::destroyModule(moertContext ctx, moertModule_ *module) {
  for (const auto &entry : module->functions)
    ctx->functions.erase(entry.second);
  CUmodule cuModule = module->module;
  ctx->modules.erase(module);
  MOERT_CU_CHECK(ctx, cuModuleUnload(cuModule));
  return MOERT_SUCCESS;
}

moertStatus moertModuleUnload(moertContext ctx, moertModule module) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!module)
      return MOERT_SUCCESS;
    MOERT_TRY(checkHandle(ctx, ctx->modules, module, "module", "module"));
    return onDevice(ctx, [&] { return destroyModule(ctx, module); });
  });
}

/// Reads the size of each parameter of `function`. cuFuncGetParamInfo
/// answers CUDA_ERROR_INVALID_VALUE for the first index past the last
/// parameter, which ends the walk (compute-sanitizer lists that answer as an
/// API error); any other failure is an error.
static moertStatus readParamLayout(moertContext ctx, moertFunction_ &function) {
  for (size_t index = 0; index <= kMaxKernelParams; ++index) {
    size_t offset = 0, size = 0;
    CUresult result =
        ctx->api.cuFuncGetParamInfo(function.function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) {
      function.attributes.numParams = int(index);
      return MOERT_SUCCESS;
    }
    if (result != CUDA_SUCCESS)
      return failCuda(
          ctx, MOERT_ERROR_CUDA, result,
          "cuFuncGetParamInfo(function, index, &offset, &size)", __FILE__,
          __LINE__,
          fmt::format("kernel {}, parameter {}", function.name, index));
    function.paramSizes.push_back(size);
    function.attributes.paramBytes = int(offset + size);
  }
  return fail(ctx, MOERT_ERROR_CUDA,
              "kernel {} reports more than {} parameters", function.name,
              kMaxKernelParams);
}

static moertStatus readAttributes(moertContext ctx, moertFunction_ &function) {
  moertFunctionAttributes &attrs = function.attributes;
  struct Query {
    int *value;
    CUfunction_attribute attribute;
  };
  const Query queries[] = {
      {&attrs.numRegisters, CU_FUNC_ATTRIBUTE_NUM_REGS},
      {&attrs.staticSharedBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
      {&attrs.localBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES},
      {&attrs.constBytes, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES},
      {&attrs.maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&attrs.ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION},
      {&attrs.binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION},
  };
  for (const Query &query : queries)
    MOERT_CU_CHECK(ctx, cuFuncGetAttribute(query.value, query.attribute,
                                           function.function));
  return MOERT_SUCCESS;
}

moertStatus moertModuleGetFunction(moertContext ctx, moertModule module,
                                   const char *name, moertFunction *function) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    if (!function)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "function is null");
    *function = nullptr;
    MOERT_TRY(checkHandle(ctx, ctx->modules, module, "module", "module"));
    if (!name || !*name)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "name is {}",
                  name ? "empty" : "null");
    auto found = module->functions.find(name);
    if (found != module->functions.end()) {
      *function = found->second;
      return MOERT_SUCCESS;
    }
    return onDevice(ctx, [&]() -> moertStatus {
      auto object = std::make_unique<moertFunction_>();
      object->module = module;
      object->name = name;
      MOERT_CU_CHECK_DETAIL(
          ctx, cuModuleGetFunction(&object->function, module->module, name),
          fmt::format("looking up kernel \"{}\"", name));
      MOERT_TRY(readParamLayout(ctx, *object));
      MOERT_TRY(readAttributes(ctx, *object));
      moertFunction_ *handle = ctx->functions.add(std::move(object));
      module->functions.emplace(handle->name, handle);
      *function = handle;
      return MOERT_SUCCESS;
    });
  });
}

moertStatus moertFunctionGetAttributes(moertContext ctx, moertFunction function,
                                       moertFunctionAttributes *attrs) {
  return apiCall(ctx, __func__, [&]() -> moertStatus {
    MOERT_TRY(
        checkHandle(ctx, ctx->functions, function, "function", "function"));
    if (!attrs)
      return fail(ctx, MOERT_ERROR_INVALID_ARGUMENT, "attrs is null");
    *attrs = function->attributes;
    return MOERT_SUCCESS;
  });
}
