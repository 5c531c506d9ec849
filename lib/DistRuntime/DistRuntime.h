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
/// compiled dp x ep degree). With `expertParallel` = ep > 1, also connects
/// the expert-parallel (EP) groups: ep consecutive ranks each, the group of
/// rank r being ranks [(r / ep) * ep, (r / ep) * ep + ep), in which r has
/// rank r % ep. ep must be positive and divide the world size (checked on
/// every rank before any networking). Returns 0 on success; otherwise
/// writes a one-line message (no "error: " prefix, no newline) into
/// error[0..errorSize) and returns nonzero. Idempotent: a later call with
/// the same arguments returns 0 at once; other arguments are an error.
int moe_dist_init_groups(int64_t expectedWorldSize, int64_t expertParallel,
                         char *error, size_t errorSize);

/// moe_dist_init_groups(expectedWorldSize, 1, error, errorSize).
int moe_dist_init(int64_t expectedWorldSize, char *error, size_t errorSize);

/// This process's rank; 0 before init.
int64_t moe_dist_rank(void);
/// The number of processes; 1 before init.
int64_t moe_dist_world_size(void);
/// The rank among the processes of this host; 0 before init.
int64_t moe_dist_local_rank(void);

/// The `group` argument of the functions below: 0 = the world, 1 = this
/// rank's EP group (the world when ep is the world size; this rank alone
/// when ep is 1). Another value fails like a collective (below).

/// This process's rank in the group (0 before init).
int64_t moe_dist_group_rank(int64_t group);
/// The number of processes of the group (1 before init).
int64_t moe_dist_group_size(int64_t group);

/// Barrier-free teardown (closes the connections to the other ranks); safe
/// without init and when called twice.
void moe_dist_finalize(void);

/// The collectives, called by compiled code on contiguous buffers. They do
/// not return errors: on any failure (a peer died, timeout, a size mismatch,
/// a call before init when the environment says world size > 1) they print
/// `<program>: error: rank R of W: <what> failed: <why>` on stderr and
/// _exit(1). At world size 1 (no init, or init at 1), and in a group of one
/// rank, they are local: a no-op or a copy. Every rank (of the group) calls
/// the same collectives in the same order, from one thread at a time (the
/// functions are not thread-safe).

/// In-place sum over all ranks of `count` elements of `dtype`:
/// 0 = f32, 1 = i64, 2 = f64. Every rank gets the same bits.
void moe_dist_all_reduce_sum(void *data, int64_t count, int64_t dtype);

/// dst[r * bytesPerRank .. (r + 1) * bytesPerRank) = src of rank r. Every rank
/// must pass the same bytesPerRank (checked: a mismatch is a failure).
void moe_dist_all_gather(const void *src, void *dst, int64_t bytesPerRank);

/// Over the G ranks of `group` (with p, q group ranks, `me` this one's):
/// dst[p * bytesPerRank ..) = the block src[me * bytesPerRank ..) of rank p,
/// for G blocks in src and in dst, which must not overlap. Every rank of the
/// group passes the same bytesPerRank (checked; 0 is allowed).
void moe_dist_all_to_all(const void *src, void *dst, int64_t bytesPerRank,
                         int64_t group);

/// Ragged all-to-all over the G ranks of `group`: this rank sends
/// sendBytes[q] bytes to rank q, the blocks consecutive in src in q order,
/// and receives recvBytes[p] bytes from rank p into dst, consecutive in p
/// order (sendBytes, recvBytes: G int64 each; zeros allowed; src and dst
/// must not overlap). What p sends q must be what q expects from p: one
/// exchange of the sizes checks it first, and a mismatch fails both ranks
/// of the pair with a message naming the sizes (the group's other ranks
/// then fail on the closed connections).
void moe_dist_all_to_all_v(const void *src, const int64_t *sendBytes, void *dst,
                           const int64_t *recvBytes, int64_t group);
}

#endif // MOE_DISTRUNTIME_DISTRUNTIME_H
