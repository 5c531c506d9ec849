//===- Environment.cpp - The process environment of a rank ----------------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "Environment.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace moe::dist {
namespace {

// The names of one launcher's three variables.
struct Launcher {
  const char *name;
  const char *rank;
  const char *worldSize;
  const char *localRank;
};

const Launcher kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

// Parses a whole non-negative decimal integer of at most `max`.
bool parseInt(const char *text, long max, int &value) {
  if (!text || !*text)
    return false;
  long result = 0;
  for (const char *c = text; *c; ++c) {
    if (*c < '0' || *c > '9')
      return false;
    result = result * 10 + (*c - '0');
    if (result > max)
      return false;
  }
  value = static_cast<int>(result);
  return true;
}

bool readInt(const char *name, long max, int &value, std::string &error) {
  const char *text = std::getenv(name);
  if (!text) {
    error = std::string(name) + " is not set";
    return false;
  }
  if (!parseInt(text, max, value)) {
    error = std::string(name) + " is '" + text + "', not an integer in [0, " +
            std::to_string(max) + "]";
    return false;
  }
  return true;
}

} // namespace

bool readEnvironment(Environment &env, std::string &error) {
  env = Environment();
  if (const char *text = std::getenv("MOE_DIST_TIMEOUT")) {
    char *end = nullptr;
    errno = 0;
    double seconds = std::strtod(text, &end);
    if (!*text || *end || errno || !std::isfinite(seconds) || seconds <= 0 ||
        seconds > 1e6) {
      error = std::string("MOE_DIST_TIMEOUT is '") + text +
              "', not a number of seconds in (0, 1e6]";
      return false;
    }
    env.timeout = std::chrono::milliseconds(
        static_cast<long long>(std::ceil(seconds * 1000.0)));
  }

  const Launcher *launcher = nullptr;
  for (const Launcher &candidate : kLaunchers)
    if (std::getenv(candidate.rank)) {
      launcher = &candidate;
      break;
    }
  if (!launcher) {
    // WORLD_SIZE without RANK is a partial torchrun environment.
    if (std::getenv("WORLD_SIZE")) {
      error = "WORLD_SIZE is set but RANK is not";
      return false;
    }
    return true;
  }
  env.source = launcher->name;
  const long kMaxRanks = 1 << 20;
  if (!readInt(launcher->worldSize, kMaxRanks, env.worldSize, error) ||
      !readInt(launcher->rank, kMaxRanks, env.rank, error) ||
      !readInt(launcher->localRank, kMaxRanks, env.localRank, error))
    return false;
  if (env.worldSize < 1) {
    error = std::string(launcher->worldSize) + " is 0";
    return false;
  }
  if (env.rank >= env.worldSize) {
    error = std::string(launcher->rank) + " is " + std::to_string(env.rank) +
            ", but " + launcher->worldSize + " is " +
            std::to_string(env.worldSize) + " (ranks are 0 to " +
            std::to_string(env.worldSize - 1) + ")";
    return false;
  }
  if (env.localRank >= env.worldSize) {
    error = std::string(launcher->localRank) + " is " +
            std::to_string(env.localRank) + ", but " + launcher->worldSize +
            " is " + std::to_string(env.worldSize);
    return false;
  }
  if (env.worldSize == 1)
    return true;

  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr) {
    error = std::string("MASTER_ADDR is not set (needed when ") +
            launcher->worldSize + " is " + std::to_string(env.worldSize) + ")";
    return false;
  }
  env.masterAddr = addr;
  const char *port = std::getenv("MASTER_PORT");
  if (!port) {
    error = std::string("MASTER_PORT is not set (needed when ") +
            launcher->worldSize + " is " + std::to_string(env.worldSize) + ")";
    return false;
  }
  if (!parseInt(port, 65535, env.masterPort) || env.masterPort == 0) {
    error = std::string("MASTER_PORT is '") + port +
            "', not a port number in [1, 65535]";
    return false;
  }
  return true;
}

} // namespace moe::dist
