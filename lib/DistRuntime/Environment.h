//===- Environment.h - The process environment of a rank --------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Reads rank, world size, local rank, master address and port and the
// timeout from the variables that torchrun, Open MPI's mpirun and Slurm's
// srun set (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DISTRUNTIME_ENVIRONMENT_H
#define MOE_DISTRUNTIME_ENVIRONMENT_H

#include <chrono>
#include <string>

namespace moe::dist {

struct Environment {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  /// The launcher whose variables were read: "torchrun" (RANK, ...),
  /// "Open MPI", "Slurm", or "" when none is set (world size 1).
  std::string source;
  /// MASTER_ADDR and MASTER_PORT; read when worldSize > 1.
  std::string masterAddr;
  int masterPort = 0;
  /// MOE_DIST_TIMEOUT (seconds, default 300).
  std::chrono::milliseconds timeout{300000};
};

/// Fills `env` from the process environment. Returns false with a one-line
/// message naming the offending variable in `error` on partial or invalid
/// values.
bool readEnvironment(Environment &env, std::string &error);

} // namespace moe::dist

#endif // MOE_DISTRUNTIME_ENVIRONMENT_H
