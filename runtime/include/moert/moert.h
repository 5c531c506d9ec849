//===- moert.h - The moe-mlir CUDA runtime, C ABI
//--------------------------===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// moert is the small runtime that runs what the compiler emits on an NVIDIA
// GPU: it loads PTX or cubin modules, allocates and copies device memory,
// packs kernel arguments (including MLIR memref descriptors) and launches
// kernels on streams, timed by events. It uses the CUDA driver API only and
// loads the driver (libcuda.so.1) at run time, so a program linked with moert
// starts on a machine without a GPU and learns so from a status code.
//
// Conventions:
//  * Every function returns a moertStatus. A failure leaves a message in the
//    context that says what failed: the moert function, the driver call with
//    its CUresult name, and the source file and line. moertGetLastError reads
//    it. The runtime never prints.
//  * All state lives in an explicit moertContext passed to every call; there
//    are no globals. A context is used by one thread at a time.
//  * Handles are opaque and belong to the context that created them. A null,
//    destroyed or foreign handle is rejected with MOERT_ERROR_INVALID_HANDLE;
//    the runtime checks this without dereferencing the handle.
//  * Sizes, offsets, strides and launch dimensions are intptr_t, the type MLIR
//    passes for `index`.
//  * A null moertStream means the context's default (legacy NULL) stream.
//  * Destroy, unload and free functions accept null (and do nothing).
//
//===----------------------------------------------------------------------===//

#ifndef MOERT_MOERT_H
#define MOERT_MOERT_H

#include <stddef.h> // defines: size_t
#include <stdint.h> // defines: intptr_t, int32_t, int64_t

#if defined(__GNUC__)
#define MOERT_EXPORT __attribute__((visibility("default")))
#else
#define MOERT_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

//===----------------------------------------------------------------------===//
// Status and errors
//===----------------------------------------------------------------------===//

/// What a moert call returns. Values are stable across versions.
typedef enum moertStatus {
  /// The call did what it says.
  MOERT_SUCCESS = 0,
  /// An argument is out of range: a null output pointer, a size that is not
  /// positive, a launch dimension over the device limit, a malformed image.
  MOERT_ERROR_INVALID_ARGUMENT = 1,
  /// A null context, or a handle that is not a live object of this context.
  MOERT_ERROR_INVALID_HANDLE = 2,
  /// The CUDA driver cannot be used: libcuda.so.1 is missing, lacks a needed
  /// symbol, or is the toolkit's link stub.
  MOERT_ERROR_NO_DRIVER = 3,
  /// The driver loaded but there is no usable device (cuInit failed, or
  /// cuDeviceGetCount returned 0).
  MOERT_ERROR_NO_DEVICE = 4,
  /// A driver call failed; moertGetLastDriverResult gives its CUresult.
  MOERT_ERROR_CUDA = 5,
  /// Host memory ran out inside the runtime.
  MOERT_ERROR_OUT_OF_HOST_MEMORY = 6,
  /// Not a status: it makes every value of a 32-bit int a valid moertStatus
  /// (in C++ too), so that a code this header does not name, from a newer
  /// runtime, can be passed around and to moertStatusName.
  MOERT_STATUS_MAX_ENUM_ = 0x7fffffff,
} moertStatus;

/// A device, its primary CUDA context, and the runtime's bookkeeping.
typedef struct moertContext_ *moertContext;
/// A loaded PTX or cubin module.
typedef struct moertModule_ *moertModule;
/// A kernel of a module; valid until its module is unloaded.
typedef struct moertFunction_ *moertFunction;
/// A CUDA stream (created non-blocking).
typedef struct moertStream_ *moertStream;
/// A CUDA event with timing enabled.
typedef struct moertEvent_ *moertEvent;
/// A growable kernel argument list (scalars, pointers, memref descriptors).
typedef struct moertArgs_ *moertArgs;

/// Returns the enumerator name of `status` ("MOERT_ERROR_CUDA"), or
/// "MOERT_STATUS_UNKNOWN" for a value outside the enum. Never null.
MOERT_EXPORT const char *moertStatusName(moertStatus status);

/// Returns the message of the last call on `ctx` that failed, or "" when the
/// last call succeeded (every call except the getters in this section resets
/// it). Valid until the next call on `ctx`. For a null `ctx` it returns a
/// fixed message saying so. Never null.
MOERT_EXPORT const char *moertGetLastError(moertContext ctx);

/// Returns the CUresult of the driver call that made the last call on `ctx`
/// fail (for example 2, CUDA_ERROR_OUT_OF_MEMORY), or 0 when the last call
/// succeeded or failed without a driver error. Returns 0 for a null `ctx`.
MOERT_EXPORT int moertGetLastDriverResult(moertContext ctx);

//===----------------------------------------------------------------------===//
// Context and device
//===----------------------------------------------------------------------===//

/// Loads the CUDA driver (libcuda.so.1), initializes it and retains the
/// primary context of device `deviceOrdinal`.
///
/// Like sqlite3_open, this stores a context in `*ctx` even when it fails
/// (unless host memory runs out or `ctx` is null), so that the caller can read
/// the reason with moertGetLastError and must moertContextDestroy it. A
/// context without a device still serves the calls that need no device
/// (errors, argument lists, argument validation); calls that need the device
/// return the creation status (MOERT_ERROR_NO_DRIVER or MOERT_ERROR_NO_DEVICE)
/// with the original reason. A negative ordinal or one past the device count
/// gives MOERT_ERROR_INVALID_ARGUMENT.
MOERT_EXPORT moertStatus moertContextCreate(int deviceOrdinal,
                                            moertContext *ctx);

/// As moertContextCreate, but loads the driver from `driverLibrary` (a path or
/// a soname passed to dlopen); null means "libcuda.so.1".
MOERT_EXPORT moertStatus moertContextCreateWithDriver(const char *driverLibrary,
                                                      int deviceOrdinal,
                                                      moertContext *ctx);

/// Destroys what the context still owns (argument lists, events, streams,
/// modules, in that order), releases the primary context and unloads the
/// driver. Device memory from moertMemAlloc is not tracked; free it first.
/// Returns the first failure, after releasing everything it can. Null: no-op.
MOERT_EXPORT moertStatus moertContextDestroy(moertContext ctx);

/// Waits until all work on the device, on every stream, has finished.
MOERT_EXPORT moertStatus moertContextSynchronize(moertContext ctx);

/// Device facts, queried once when the context is created.
typedef struct moertDeviceProperties {
  /// The device name, NUL-terminated ("NVIDIA H200").
  char name[256];
  /// The ordinal the context was created for, and how many devices there are.
  int ordinal;
  int deviceCount;
  /// Compute capability, 9 and 0 for sm_90.
  int computeCapabilityMajor;
  int computeCapabilityMinor;
  int multiprocessorCount;
  int warpSize;
  int maxThreadsPerBlock;
  int maxBlockDim[3];
  int maxGridDim[3];
  /// Shared memory a block gets without opting in, and the most it can get
  /// after opting in (moertLaunchKernel opts in when asked for more than the
  /// former).
  int sharedMemoryPerBlockBytes;
  int sharedMemoryPerBlockOptinBytes;
  int sharedMemoryPerMultiprocessorBytes;
  int registersPerBlock;
  int l2CacheBytes;
  /// The driver's CUDA version, 13000 for 13.0.
  int driverVersion;
  intptr_t totalMemoryBytes;
} moertDeviceProperties;

/// Copies the device facts of `ctx` to `*props`.
MOERT_EXPORT moertStatus moertDeviceGetProperties(moertContext ctx,
                                                  moertDeviceProperties *props);

/// Free and total device memory now, in bytes (cuMemGetInfo).
MOERT_EXPORT moertStatus moertDeviceGetMemoryInfo(moertContext ctx,
                                                  intptr_t *freeBytes,
                                                  intptr_t *totalBytes);

//===----------------------------------------------------------------------===//
// Modules and functions
//===----------------------------------------------------------------------===//

/// Compiles NUL-terminated PTX text with the driver's JIT for the context's
/// device and loads it. On a JIT failure the error message carries the JIT
/// error log (ptxas's messages with line numbers). The JIT info log (verbose:
/// registers, spills, shared memory per kernel) is kept with the module.
/// An ELF image is rejected: load cubins with moertModuleLoadCubin.
MOERT_EXPORT moertStatus moertModuleLoadPTX(moertContext ctx, const char *ptx,
                                            moertModule *module);

/// Loads a cubin (an ELF image from ptxas or `gpu-module-to-binary
/// format=bin`) or a fatbin of `sizeBytes` bytes. The image must start with
/// the ELF or fatbin magic number.
MOERT_EXPORT moertStatus moertModuleLoadCubin(moertContext ctx,
                                              const void *image,
                                              intptr_t sizeBytes,
                                              moertModule *module);

/// Sets `*log` to the JIT info log of a module loaded from PTX ("" for a
/// cubin). Valid until the module is unloaded.
MOERT_EXPORT moertStatus moertModuleGetInfoLog(moertContext ctx,
                                               moertModule module,
                                               const char **log);

/// Unloads `module` and invalidates its functions. Null: no-op.
MOERT_EXPORT moertStatus moertModuleUnload(moertContext ctx,
                                           moertModule module);

/// Looks up kernel `name` (the `.entry` name in the PTX) in `module`. A
/// missing name fails with MOERT_ERROR_CUDA (CUDA_ERROR_NOT_FOUND).
MOERT_EXPORT moertStatus moertModuleGetFunction(moertContext ctx,
                                                moertModule module,
                                                const char *name,
                                                moertFunction *function);

/// What the driver knows about a compiled kernel.
typedef struct moertFunctionAttributes {
  /// Kernel parameters and their total size in bytes (cuFuncGetParamInfo).
  int numParams;
  int paramBytes;
  int numRegisters;
  int staticSharedBytes;
  int localBytes;
  int constBytes;
  /// The most threads a block of this kernel can have (registers limit it).
  int maxThreadsPerBlock;
  /// PTX and binary (SASS) versions, 90 for sm_90 / PTX 9.0.
  int ptxVersion;
  int binaryVersion;
} moertFunctionAttributes;

/// Copies the attributes of `function` to `*attrs`.
MOERT_EXPORT moertStatus moertFunctionGetAttributes(
    moertContext ctx, moertFunction function, moertFunctionAttributes *attrs);

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Allocates `sizeBytes` (> 0) bytes of device memory (cuMemAlloc, 256-byte
/// aligned) and stores the device address in `*devicePtr`.
MOERT_EXPORT moertStatus moertMemAlloc(moertContext ctx, intptr_t sizeBytes,
                                       void **devicePtr);

/// Frees device memory from moertMemAlloc. Null: no-op.
MOERT_EXPORT moertStatus moertMemFree(moertContext ctx, void *devicePtr);

/// Allocates `sizeBytes` (> 0) bytes of page-locked host memory, which makes
/// the *Async copies asynchronous.
MOERT_EXPORT moertStatus moertHostAlloc(moertContext ctx, intptr_t sizeBytes,
                                        void **hostPtr);

/// Frees memory from moertHostAlloc. Null: no-op.
MOERT_EXPORT moertStatus moertHostFree(moertContext ctx, void *hostPtr);

/// Sets `sizeBytes` bytes at `devicePtr` to the byte `value` (0..255),
/// synchronously. Zero bytes: no-op. Negative sizes and null pointers (with a
/// positive size) are invalid arguments, here and in the copies below.
MOERT_EXPORT moertStatus moertMemset(moertContext ctx, void *devicePtr,
                                     int value, intptr_t sizeBytes);

/// As moertMemset, ordered on `stream`.
MOERT_EXPORT moertStatus moertMemsetAsync(moertContext ctx, void *devicePtr,
                                          int value, intptr_t sizeBytes,
                                          moertStream stream);

/// Copies host to device; returns when the source may be reused.
MOERT_EXPORT moertStatus moertMemcpyHtoD(moertContext ctx, void *dst,
                                         const void *src, intptr_t sizeBytes);
/// Copies device to host; returns when the data is in `dst`.
MOERT_EXPORT moertStatus moertMemcpyDtoH(moertContext ctx, void *dst,
                                         const void *src, intptr_t sizeBytes);
/// Copies device to device.
MOERT_EXPORT moertStatus moertMemcpyDtoD(moertContext ctx, void *dst,
                                         const void *src, intptr_t sizeBytes);

/// Asynchronous copies ordered on `stream`; with pageable host memory the
/// driver may complete them before returning.
MOERT_EXPORT moertStatus moertMemcpyHtoDAsync(moertContext ctx, void *dst,
                                              const void *src,
                                              intptr_t sizeBytes,
                                              moertStream stream);
MOERT_EXPORT moertStatus moertMemcpyDtoHAsync(moertContext ctx, void *dst,
                                              const void *src,
                                              intptr_t sizeBytes,
                                              moertStream stream);
MOERT_EXPORT moertStatus moertMemcpyDtoDAsync(moertContext ctx, void *dst,
                                              const void *src,
                                              intptr_t sizeBytes,
                                              moertStream stream);

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

/// Creates a stream that does not synchronize with the default stream.
MOERT_EXPORT moertStatus moertStreamCreate(moertContext ctx,
                                           moertStream *stream);
/// Destroys `stream` once its work is done. Null: no-op.
MOERT_EXPORT moertStatus moertStreamDestroy(moertContext ctx,
                                            moertStream stream);
/// Waits until all work on `stream` has finished.
MOERT_EXPORT moertStatus moertStreamSynchronize(moertContext ctx,
                                                moertStream stream);
/// Makes later work on `stream` wait for `event` (for example a compute stream
/// waiting for a communication stream).
MOERT_EXPORT moertStatus moertStreamWaitEvent(moertContext ctx,
                                              moertStream stream,
                                              moertEvent event);

/// Creates an event with timing enabled.
MOERT_EXPORT moertStatus moertEventCreate(moertContext ctx, moertEvent *event);
/// Destroys `event`. Null: no-op.
MOERT_EXPORT moertStatus moertEventDestroy(moertContext ctx, moertEvent event);
/// Records `event` on `stream`.
MOERT_EXPORT moertStatus moertEventRecord(moertContext ctx, moertEvent event,
                                          moertStream stream);
/// Waits until `event` has completed.
MOERT_EXPORT moertStatus moertEventSynchronize(moertContext ctx,
                                               moertEvent event);
/// Stores the time between two completed events in `*milliseconds`
/// (resolution about 0.5 us).
MOERT_EXPORT moertStatus moertEventElapsedTime(moertContext ctx,
                                               moertEvent start, moertEvent end,
                                               float *milliseconds);

//===----------------------------------------------------------------------===//
// Kernel arguments
//===----------------------------------------------------------------------===//

/// Number of kernel parameters a rank-`rank` memref expands to under MLIR's
/// default GPU calling convention: allocated pointer, aligned pointer,
/// offset, `rank` sizes, `rank` strides, so 3 + 2 * rank. -1 if rank < 0.
MOERT_EXPORT intptr_t moertMemRefParamCount(intptr_t rank);

/// Creates an empty argument list. Argument lists need no device.
MOERT_EXPORT moertStatus moertArgsCreate(moertContext ctx, moertArgs *args);
/// Destroys `args`. Null: no-op.
MOERT_EXPORT moertStatus moertArgsDestroy(moertContext ctx, moertArgs args);
/// Removes all arguments from `args`.
MOERT_EXPORT moertStatus moertArgsClear(moertContext ctx, moertArgs args);

/// Appends one parameter: a pointer (8 bytes), i32, i64 (also `index`), f32
/// or f64 value.
MOERT_EXPORT moertStatus moertArgsAddPointer(moertContext ctx, moertArgs args,
                                             const void *value);
MOERT_EXPORT moertStatus moertArgsAddI32(moertContext ctx, moertArgs args,
                                         int32_t value);
MOERT_EXPORT moertStatus moertArgsAddI64(moertContext ctx, moertArgs args,
                                         int64_t value);
MOERT_EXPORT moertStatus moertArgsAddF32(moertContext ctx, moertArgs args,
                                         float value);
MOERT_EXPORT moertStatus moertArgsAddF64(moertContext ctx, moertArgs args,
                                         double value);

/// Appends the moertMemRefParamCount(rank) parameters of a memref descriptor,
/// in the order MLIR's kernels expect them: `allocated`, `aligned`, `offset`,
/// `sizes[0..rank)`, `strides[0..rank)` (offset, sizes and strides in
/// elements, as i64). `sizes` and `strides` may be null only when rank is 0.
/// Rejected: rank < 0, offset < 0, a negative size, and a null `aligned`
/// pointer for a memref with elements. Nothing is appended on failure.
MOERT_EXPORT moertStatus moertArgsAddMemRef(moertContext ctx, moertArgs args,
                                            void *allocated, void *aligned,
                                            intptr_t offset, intptr_t rank,
                                            const intptr_t *sizes,
                                            const intptr_t *strides);

/// Stores the parameter array for cuLaunchKernel in `*params` (entry i
/// points at the value of parameter i) and its length in `*count`. Valid
/// until `args` is changed or destroyed. `*params` is null when empty.
MOERT_EXPORT moertStatus moertArgsGetParams(moertContext ctx, moertArgs args,
                                            void ***params, intptr_t *count);

/// Stores the size in bytes (4 or 8) of parameter `index` in `*sizeBytes`.
MOERT_EXPORT moertStatus moertArgsGetParamSize(moertContext ctx, moertArgs args,
                                               intptr_t index,
                                               intptr_t *sizeBytes);

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

/// Launches `function` on a grid of grid* blocks of block* threads with
/// `sharedMemoryBytes` of dynamic shared memory, ordered on `stream`.
/// `params` is cuLaunchKernel's array: entry i points at the value of
/// parameter i (it may be null for a kernel without parameters).
///
/// Checked before launching, each with its own message: every dimension is
/// >= 1 and within the device's limits, the block has at most as many threads
/// as the kernel allows (its registers may lower the device limit), and the
/// static plus dynamic shared memory fits the device's opt-in limit. Above the
/// default per-block limit (48 KiB) the kernel is opted in to the larger size
/// first. Launch errors surface here; errors inside the kernel surface at the
/// next synchronizing call.
MOERT_EXPORT moertStatus moertLaunchKernel(
    moertContext ctx, moertFunction function, intptr_t gridX, intptr_t gridY,
    intptr_t gridZ, intptr_t blockX, intptr_t blockY, intptr_t blockZ,
    intptr_t sharedMemoryBytes, moertStream stream, void **params);

/// As moertLaunchKernel with the parameters of `args`, after checking that
/// their number and sizes match the kernel's parameters.
MOERT_EXPORT moertStatus moertLaunchKernelWithArgs(
    moertContext ctx, moertFunction function, intptr_t gridX, intptr_t gridY,
    intptr_t gridZ, intptr_t blockX, intptr_t blockY, intptr_t blockZ,
    intptr_t sharedMemoryBytes, moertStream stream, moertArgs args);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // MOERT_MOERT_H
