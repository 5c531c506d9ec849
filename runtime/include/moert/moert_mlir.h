/*===- moert_mlir.h - moert's adapter for MLIR's GPU host ABI -----*- C -*-===*
 *
 * Part of the moe-mlir project.
 *
 * MLIR's GPU-to-LLVM lowering makes host code call a fixed set of `mgpu*`
 * functions (module load, kernel launch, streams, allocation). The adapter
 * library `libmoert_mlir.so` implements them on the CUDA driver API so that
 * JIT-compiled host code (moe-run --target=cuda) can run its kernels.
 *
 * That ABI has no context or status parameter, so the adapter keeps one
 * process-wide context (device 0's primary context) and records the first
 * failure instead of printing it; after the first failure every call does
 * nothing. Callers check moertMlirGetError() after running JIT code.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MOERT_MOERT_MLIR_H
#define MOERT_MOERT_MLIR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An unranked memref as MLIR passes it: the rank and a pointer to the ranked
/// descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
typedef struct {
  int64_t rank;
  void *descriptor;
} moertUnrankedMemRef;

/// Copies the elements of `src` into `dst` (same shape, any strides), as
/// MLIR's `memrefCopy` does; `elementSize` is in bytes.
void memrefCopy(int64_t elementSize, moertUnrankedMemRef *src,
                moertUnrankedMemRef *dst);

/// The first failure since the last clear ("" if none): the driver call, its
/// CUresult name and, for a module load, the JIT log.
const char *moertMlirGetError(void);

/// Forgets the recorded failure.
void moertMlirClearError(void);

/// Allocates `sizeBytes` of memory that host and device share (managed
/// memory); returns null on failure (and records it).
void *moertMlirAllocShared(unsigned long long sizeBytes);

/// Frees memory from moertMlirAllocShared or from a host-shared gpu.alloc.
void moertMlirFree(void *ptr);

/// Host-shared buffers that compiled code frees (gpu.dealloc) are kept for
/// reuse by a later allocation of the same size, and the driver's
/// stream-ordered pool keeps freed device buffers, as PyTorch's caching
/// allocator does; this returns both to the driver.
void moertMlirReleaseCachedBuffers(void);

/// The most memory in use since the last moertMlirResetPeakBytes (or the
/// start): `devicePool` the device buffers of compiled code (the
/// stream-ordered pool's high-water mark), `managed` the managed memory of
/// moertMlirAllocShared and host-shared gpu.alloc (the caller's parameters
/// and inputs included). Either pointer may be null. Returns 0, or -1 after
/// a failure (recorded).
int moertMlirPeakBytes(unsigned long long *devicePool,
                       unsigned long long *managed);
void moertMlirResetPeakBytes(void);

/// Kernel timing: while enabled, every launch is bracketed by CUDA events
/// on its stream. moertMlirKernelMilliseconds() returns the summed GPU time
/// of the launches since the last call (waiting for them) and forgets them.
void moertMlirSetKernelTiming(int enabled);
double moertMlirKernelMilliseconds(void);

/// The per-launch milliseconds behind the last moertMlirKernelMilliseconds()
/// (at most `capacity` of them, in launch order); returns their count.
int moertMlirLastKernelTimes(double *milliseconds, int capacity);

/// CUDA graphs of one call of compiled code (docs/Runtime.md). After
/// moertMlirGraphCaptureBegin, the next stream the compiled code creates is
/// captured (nothing runs) until the code synchronizes it: its kernels,
/// copies, fills and stream-ordered allocations (graph memory nodes) become
/// a graph. The call must queue all its GPU work on that one stream and
/// wait for it once, at its end; anything else (a second stream, work after
/// the wait, a release of a host-shared buffer, a call the capture cannot
/// hold) fails the capture, and the rest of the call's GPU work is skipped:
/// its results are garbage, and the caller runs it again uncaptured. The
/// host-shared buffers the captured call returns are the graph's: each
/// replay writes them again, so keep them while the graph lives.
/// Returns 0, or -1 (moertMlirGraphFailure says why).
int moertMlirGraphCaptureBegin(void);

/// Ends the capture once the captured call has returned and instantiates
/// the graph. Returns its node count, or -1 when the capture failed
/// (moertMlirGraphFailure says why; the adapter's error is not set).
long long moertMlirGraphCaptureEnd(void);

/// Why the last capture failed ("" if it did not).
const char *moertMlirGraphFailure(void);

/// Launches the captured graph and waits for it. Returns 0, or -1 after a
/// failure (recorded: moertMlirGetError).
int moertMlirGraphLaunch(void);

/// Releases the graph and its graph memory.
void moertMlirGraphDestroy(void);

/// The most memory the graph's allocation nodes held at once (beside
/// moertMlirPeakBytes' stream-ordered pool). Returns 0, or -1 (recorded).
int moertMlirGraphPeakBytes(unsigned long long *bytes);

/// Copies `bytes` from `src` to `dst` (device or host-shared memory) on the
/// graph's stream, when there is one, and waits. Not during a capture.
/// Returns 0, or -1 after a failure (recorded: moertMlirGetError).
int moertMlirCopy(void *dst, const void *src, unsigned long long bytes);

/// How often the host has waited for a stream (mgpuStreamSynchronize and
/// releases of host-shared buffers) outside captures: a call that waits
/// more than once reads its results mid-way and cannot be a graph.
unsigned long long moertMlirStreamSyncCount(void);

/// The waits of compiled code for a stream that reached it through a call
/// (-moe-async-gpu-stream: an outlined kind runs on its caller's stream).
/// moertMlirStreamWait synchronizes `stream` as mgpuStreamSynchronize does
/// (a captured stream's wait completes the capture) and keeps it for more
/// work; moertMlirStreamRelease gives it back as mgpuStreamDestroy does.
void moertMlirStreamWait(void *stream);
void moertMlirStreamRelease(void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MOERT_MOERT_MLIR_H */
