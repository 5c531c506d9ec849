//===- DistRuntime.cpp - Process start and collectives on Gloo ------------===//
//
// Part of the moe-mlir project.
//
// moe_dist_init reads the environment (Environment.cpp), meets the other
// ranks through the TCP store of rank 0 (TcpStore.cpp) and connects Gloo's
// TCP pairs between every two ranks. The collectives run Gloo's ring
// algorithms, bounded by MOE_DIST_TIMEOUT, and end the process with a clear
// message on any failure, since compiled code has no error path.
//
//===----------------------------------------------------------------------===//

#include "DistRuntime.h"

#include "Environment.h"
#include "TcpStore.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace moe::dist;

namespace {

struct State {
  bool initialized = false;
  Environment env;
  // Null at world size 1.
  std::shared_ptr<gloo::rendezvous::Context> context;
};

// Never destroyed: a program that exits without moe_dist_finalize leaves the
// sockets and Gloo's threads to the kernel instead of tearing them down
// from a static destructor.
State &state() {
  static State *instance = new State();
  return *instance;
}

// Gloo's messages start with "[file:line] "; the location says nothing to
// the user of a compiled program.
std::string clean(const char *message) {
  std::string text = message ? message : "unknown error";
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find("] ");
    if (close != std::string::npos && text.find(':') < close)
      text = text.substr(close + 2);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  for (char &c : text)
    if (c == '\n')
      c = ' ';
  if (text.find("closed by peer") != std::string::npos ||
      text.find("reset by peer") != std::string::npos)
    text += " (another rank exited or was killed)";
  return text;
}

[[noreturn]] void die(int rank, int worldSize, const char *what,
                      const std::string &why) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: rank %d of %d: %s failed: %s\n",
               program_invocation_short_name, rank, worldSize, what,
               why.c_str());
  std::fflush(stderr);
  _exit(1);
}

[[noreturn]] void die(const char *what, const std::string &why) {
  const State &s = state();
  die(s.env.rank, s.env.worldSize, what, why);
}

// The context of a collective, or null when it is local (world size 1).
// Fails when the environment asks for several ranks but init did not run.
gloo::rendezvous::Context *contextFor(const char *what) {
  State &s = state();
  if (s.initialized)
    return s.context.get();
  Environment env;
  std::string error;
  if (!readEnvironment(env, error))
    die(0, 1, what, error);
  if (env.worldSize > 1)
    die(env.rank, env.worldSize, what,
        "called before moe_dist_init, while the environment (" + env.source +
            ") says world size " + std::to_string(env.worldSize));
  return nullptr;
}

// The numeric address of this host on the route to `host`: the interface
// that Gloo's pairs listen on. Falls back to the host name.
std::string localAddressTowards(const std::string &host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo *found = nullptr;
  std::string result;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                    &found) == 0) {
    for (addrinfo *entry = found; entry && result.empty();
         entry = entry->ai_next) {
      int fd = ::socket(entry->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0)
        continue;
      // A datagram connect sends nothing; it only picks the route.
      sockaddr_storage local{};
      socklen_t length = sizeof(local);
      char text[NI_MAXHOST];
      if (::connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length) ==
              0 &&
          ::getnameinfo(reinterpret_cast<sockaddr *>(&local), length, text,
                        sizeof(text), nullptr, 0, NI_NUMERICHOST) == 0)
        result = text;
      ::close(fd);
    }
    ::freeaddrinfo(found);
  }
  if (result.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0)
      result = name;
  }
  return result;
}

int report(char *error, size_t errorSize, const std::string &message) {
  if (error && errorSize > 0)
    std::snprintf(error, errorSize, "%s", message.c_str());
  return 1;
}

using ReduceFn = void (*)(void *, const void *, const void *, size_t);

} // namespace

extern "C" int moe_dist_init(int64_t expectedWorldSize, char *error,
                             size_t errorSize) {
  State &s = state();
  if (s.initialized) {
    if (expectedWorldSize != s.env.worldSize)
      return report(error, errorSize,
                    "moe_dist_init was called for " +
                        std::to_string(expectedWorldSize) +
                        " processes after an init for " +
                        std::to_string(s.env.worldSize));
    return 0;
  }
  Environment env;
  std::string message;
  if (!readEnvironment(env, message))
    return report(error, errorSize, message);
  if (expectedWorldSize < 1)
    return report(error, errorSize,
                  "the expected world size is " +
                      std::to_string(expectedWorldSize) + ", not positive");
  if (env.worldSize != expectedWorldSize) {
    if (env.source.empty())
      return report(
          error, errorSize,
          "the program was compiled for " + std::to_string(expectedWorldSize) +
              " processes (its dp degree), but no launcher variables are set "
              "(RANK and WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_*): start it "
              "with torchrun, mpirun, srun or scripts/launch-local.sh " +
              std::to_string(expectedWorldSize));
    const char *variable = env.source == "torchrun"   ? "WORLD_SIZE"
                           : env.source == "Open MPI" ? "OMPI_COMM_WORLD_SIZE"
                                                      : "SLURM_NTASKS";
    return report(
        error, errorSize,
        std::string(variable) + " is " + std::to_string(env.worldSize) +
            ", but the program was compiled for " +
            std::to_string(expectedWorldSize) + " processes (its dp degree)");
  }
  if (env.worldSize > 1) {
    // Gloo writes with writev(2): without this, a write to a rank that died
    // would kill this process with SIGPIPE instead of reporting the error.
    struct sigaction current{};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 &&
        current.sa_handler == SIG_DFL)
      std::signal(SIGPIPE, SIG_IGN);
    try {
      auto store = std::make_unique<TcpStore>(
          env.masterAddr, env.masterPort, env.rank, env.worldSize, env.timeout);
      gloo::transport::tcp::attr attr;
      attr.hostname = localAddressTowards(env.masterAddr, env.masterPort);
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context =
          std::make_shared<gloo::rendezvous::Context>(env.rank, env.worldSize);
      context->setTimeout(env.timeout);
      context->connectFullMesh(*store, device);
      store->closeClient();
      // Init is collective: a rank returns once every rank is connected, so
      // that one which finalizes or exits right away cannot break the
      // rendezvous of the others. After it, nobody needs the store.
      gloo::BarrierOptions barrier(context);
      gloo::barrier(barrier);
      store->shutdown();
      s.context = std::move(context);
    } catch (const std::exception &e) {
      return report(error, errorSize,
                    "rank " + std::to_string(env.rank) + " of " +
                        std::to_string(env.worldSize) +
                        ": rendezvous at MASTER_ADDR=" + env.masterAddr +
                        " MASTER_PORT=" + std::to_string(env.masterPort) +
                        " failed: " + clean(e.what()));
    }
  }
  s.env = env;
  s.initialized = true;
  return 0;
}

extern "C" int64_t moe_dist_rank(void) {
  return state().initialized ? state().env.rank : 0;
}

extern "C" int64_t moe_dist_world_size(void) {
  return state().initialized ? state().env.worldSize : 1;
}

extern "C" int64_t moe_dist_local_rank(void) {
  return state().initialized ? state().env.localRank : 0;
}

extern "C" void moe_dist_finalize(void) {
  State &s = state();
  try {
    s.context.reset();
  } catch (const std::exception &) {
    // Teardown errors (a peer gone already) do not matter any more.
  }
  s.env = Environment();
  s.initialized = false;
}

extern "C" void moe_dist_all_reduce_sum(void *data, int64_t count,
                                        int64_t dtype) {
  const char *what = "all_reduce_sum";
  int64_t elementSize = dtype == 0 ? 4 : dtype == 1 || dtype == 2 ? 8 : 0;
  gloo::rendezvous::Context *context = contextFor(what);
  if (elementSize == 0)
    die(what, "unknown dtype " + std::to_string(dtype) +
                  " (0 = f32, 1 = i64, 2 = f64)");
  if (count < 0 || count > (int64_t(1) << 60) / elementSize)
    die(what, "invalid element count " + std::to_string(count));
  if (!context || count == 0)
    return;
  if (!data)
    die(what, "null buffer");
  try {
    gloo::AllreduceOptions options(state().context);
    size_t elements = static_cast<size_t>(count);
    if (dtype == 0) {
      options.setOutput(static_cast<float *>(data), elements);
      options.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
    } else if (dtype == 1) {
      options.setOutput(static_cast<int64_t *>(data), elements);
      options.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<int64_t>));
    } else {
      options.setOutput(static_cast<double *>(data), elements);
      options.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<double>));
    }
    gloo::allreduce(options);
  } catch (const std::exception &e) {
    die(what, clean(e.what()));
  }
}

extern "C" void moe_dist_all_gather(const void *src, void *dst,
                                    int64_t bytesPerRank) {
  const char *what = "all_gather";
  gloo::rendezvous::Context *context = contextFor(what);
  if (bytesPerRank < 0 || bytesPerRank > (int64_t(1) << 60))
    die(what, "invalid bytesPerRank " + std::to_string(bytesPerRank));
  if (!context) {
    if (bytesPerRank > 0)
      std::memmove(dst, src, static_cast<size_t>(bytesPerRank));
    return;
  }
  try {
    // Every rank must pass the same size: the maxima of it and of its
    // negation give the largest and the smallest size of all ranks.
    int64_t bounds[2] = {bytesPerRank, -bytesPerRank};
    gloo::AllreduceOptions check(state().context);
    check.setOutput(bounds, 2);
    check.setReduceFunction(static_cast<ReduceFn>(&gloo::max<int64_t>));
    gloo::allreduce(check);
    if (bounds[0] != -bounds[1])
      die(what, "the ranks pass different bytesPerRank (from " +
                    std::to_string(-bounds[1]) + " to " +
                    std::to_string(bounds[0]) + "; this rank " +
                    std::to_string(bytesPerRank) + ")");
    if (bytesPerRank == 0)
      return;
    if (!src || !dst)
      die(what, "null buffer");
    size_t bytes = static_cast<size_t>(bytesPerRank);
    gloo::AllgatherOptions options(state().context);
    options.setInput(static_cast<char *>(const_cast<void *>(src)), bytes);
    options.setOutput(static_cast<char *>(dst),
                      bytes * static_cast<size_t>(context->size));
    gloo::allgather(options);
  } catch (const std::exception &e) {
    die(what, clean(e.what()));
  }
}
