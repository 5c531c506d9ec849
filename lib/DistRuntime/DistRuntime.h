//===- DistRuntime.h - The distributed run-time library ---------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The C ABI of libMoEDistRuntime.a: process start from the environment
// (torchrun, Open MPI or Slurm variables, docs/Distributed.md) and the
// collectives that compiled distributed programs call, executed by Gloo over
// TCP. Plain C++17 on Gloo; no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DISTRUNTIME_DISTRUNTIME_H
#define MOE_DISTRUNTIME_DISTRUNTIME_H

#include <cstddef>
#include <cstdint>

extern "C" {

/// Reads the process environment (docs/Distributed.md), bootstraps Gloo (TCP
/// transport) and checks that the world size equals `expectedWorldSize` (the
/// compiled dp degree). Returns 0 on success; otherwise writes a one-line
/// message (no "error: " prefix, no newline) into error[0..errorSize) and
/// returns nonzero. Idempotent: a later call with the same expected size
/// returns 0 at once.
int moe_dist_init(int64_t expectedWorldSize, char *error, size_t errorSize);

/// This process's rank; 0 before init.
int64_t moe_dist_rank(void);
/// The number of processes; 1 before init.
int64_t moe_dist_world_size(void);
/// The rank among the processes of this host; 0 before init.
int64_t moe_dist_local_rank(void);

/// Barrier-free teardown (closes the connections to the other ranks); safe
/// without init and when called twice.
void moe_dist_finalize(void);

/// The collectives, called by compiled code on contiguous buffers. They do
/// not return errors: on any failure (a peer died, timeout, a size mismatch,
/// a call before init when the environment says world size > 1) they print
/// `<program>: error: rank R of W: <what> failed: <why>` on stderr and
/// _exit(1). At world size 1 (no init, or init at 1) they are local: a no-op
/// or a copy. Every rank calls the same collectives in the same order, from
/// one thread at a time (the functions are not thread-safe).

/// In-place sum over all ranks of `count` elements of `dtype`:
/// 0 = f32, 1 = i64, 2 = f64. Every rank gets the same bits.
void moe_dist_all_reduce_sum(void *data, int64_t count, int64_t dtype);

/// dst[r * bytesPerRank .. (r + 1) * bytesPerRank) = src of rank r. Every rank
/// must pass the same bytesPerRank (checked: a mismatch is a failure).
void moe_dist_all_gather(const void *src, void *dst, int64_t bytesPerRank);
}

#endif // MOE_DISTRUNTIME_DISTRUNTIME_H
