//===- DistRuntime.cpp - Process start and collectives on Gloo ------------===//
//
// Part of the moe-mlir project.
//
// moe_dist_init_groups reads the environment (Environment.cpp), meets the
// other ranks through the TCP store of rank 0 (TcpStore.cpp) and connects
// Gloo's TCP pairs between every two ranks (the world context), then
// between every two ranks of each expert-parallel group (one more context
// per group, its keys under "ep<g>/" in the same store). The collectives run
// Gloo's algorithms, bounded by MOE_DIST_TIMEOUT, and end the process with a
// clear message on any failure, since compiled code has no error path.
//
//===----------------------------------------------------------------------===//

#include "DistRuntime.h"

#include "Environment.h"
#include "TcpStore.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace moe::dist;

namespace {

struct State {
  bool initialized = false;
  Environment env;
  // The expert-parallel degree: the size of this rank's group.
  int ep = 1;
  // Null at world size 1.
  std::shared_ptr<gloo::rendezvous::Context> context;
  // This rank's expert-parallel group: null when ep is 1, the world's
  // context when ep is the world size, its own context otherwise.
  std::shared_ptr<gloo::rendezvous::Context> groupContext;
};

using ReduceFn = void (*)(void *, const void *, const void *, size_t);

// The largest byte count of a buffer that the collectives accept.
constexpr int64_t kMaxBytes = int64_t(1) << 60;

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

// The ranks of a collective's `group` argument (0 = the world, 1 = this
// rank's expert-parallel group). `context` is null when the group is this
// rank alone.
struct Group {
  std::shared_ptr<gloo::rendezvous::Context> context;
  bool isWorld = true;
  int rank = 0;      // of this process in the group
  int size = 1;      // of the group
  int firstRank = 0; // the world rank of group rank 0
};

// Collectives (`forCollective`) fail before init when the environment says
// world size > 1; the queries then describe one process.
Group groupFor(const char *what, int64_t group, bool forCollective = true) {
  if (forCollective)
    contextFor(what);
  if (group != 0 && group != 1)
    die(what, "unknown group " + std::to_string(group) +
                  " (0 = the world, 1 = the expert-parallel group)");
  const State &s = state();
  Group result;
  if (!s.initialized)
    return result;
  result.isWorld = group == 0 || s.ep == s.env.worldSize;
  result.context = group == 0 ? s.context : s.groupContext;
  result.size = group == 0 ? s.env.worldSize : s.ep;
  result.rank = s.env.rank % result.size;
  result.firstRank = s.env.rank - result.rank;
  return result;
}

// Names group rank `p` in messages: "rank 3", or "EP group rank 1 (rank 3)".
std::string peerName(const Group &group, int p) {
  std::string world = "rank " + std::to_string(group.firstRank + p);
  if (group.isWorld)
    return world;
  return "EP group rank " + std::to_string(p) + " (" + world + ")";
}

// Fails unless every rank of `group` passes the same `value` (one
// all-reduce of it and of its negation, whose maxima are the largest and
// the smallest value).
void checkSameOnAllRanks(const Group &group, const char *what, const char *name,
                         int64_t value) {
  int64_t bounds[2] = {value, -value};
  gloo::AllreduceOptions check(group.context);
  check.setOutput(bounds, 2);
  check.setReduceFunction(static_cast<ReduceFn>(&gloo::max<int64_t>));
  gloo::allreduce(check);
  if (bounds[0] != -bounds[1])
    die(what, std::string("the ranks") +
                  (group.isWorld ? "" : " of the group") + " pass different " +
                  name + " (from " + std::to_string(-bounds[1]) + " to " +
                  std::to_string(bounds[0]) + "; this rank " +
                  std::to_string(value) + ")");
}

// Whether [a, a + n) and [b, b + m) share a byte.
bool overlap(const void *a, int64_t n, const void *b, int64_t m) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return n > 0 && m > 0 && x < y + static_cast<uintptr_t>(m) &&
         y < x + static_cast<uintptr_t>(n);
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

} // namespace

extern "C" int moe_dist_init_groups(int64_t expectedWorldSize,
                                    int64_t expertParallel, char *error,
                                    size_t errorSize) {
  State &s = state();
  if (s.initialized) {
    if (expectedWorldSize != s.env.worldSize || expertParallel != s.ep)
      return report(error, errorSize,
                    "the distributed runtime was initialized for " +
                        std::to_string(s.env.worldSize) +
                        " processes with expert parallelism " +
                        std::to_string(s.ep) + ", and is asked again for " +
                        std::to_string(expectedWorldSize) +
                        " processes with expert parallelism " +
                        std::to_string(expertParallel));
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
  if (expertParallel < 1)
    return report(error, errorSize,
                  "the expert-parallel degree (ep) is " +
                      std::to_string(expertParallel) + ", not positive");
  if (expectedWorldSize % expertParallel != 0)
    return report(error, errorSize,
                  "the expert-parallel degree (ep) " +
                      std::to_string(expertParallel) +
                      " does not divide the world size " +
                      std::to_string(expectedWorldSize) +
                      " (an EP group is ep consecutive ranks)");
  // What the world size was compiled from, for the messages below.
  std::string degrees =
      expertParallel == 1
          ? "its dp degree"
          : "dp " + std::to_string(expectedWorldSize / expertParallel) +
                " x ep " + std::to_string(expertParallel);
  if (env.worldSize != expectedWorldSize) {
    if (env.source.empty())
      return report(
          error, errorSize,
          "the program was compiled for " + std::to_string(expectedWorldSize) +
              " processes (" + degrees +
              "), but no launcher variables are set "
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
            std::to_string(expectedWorldSize) + " processes (" + degrees + ")");
  }
  int ep = static_cast<int>(expertParallel);
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
      // The expert-parallel group: its own pairs on the same device, their
      // addresses under the group's prefix while the store is still up.
      std::shared_ptr<gloo::rendezvous::Context> groupContext;
      if (ep == env.worldSize) {
        groupContext = context;
      } else if (ep > 1) {
        gloo::rendezvous::PrefixStore groupStore(
            "ep" + std::to_string(env.rank / ep), *store);
        groupContext =
            std::make_shared<gloo::rendezvous::Context>(env.rank % ep, ep);
        groupContext->setTimeout(env.timeout);
        groupContext->connectFullMesh(groupStore, device);
      }
      store->closeClient();
      // Init is collective: a rank returns once every rank is connected, so
      // that one which finalizes or exits right away cannot break the
      // rendezvous of the others. After it, nobody needs the store.
      gloo::BarrierOptions barrier(context);
      gloo::barrier(barrier);
      store->shutdown();
      s.context = std::move(context);
      s.groupContext = std::move(groupContext);
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
  s.ep = ep;
  s.initialized = true;
  return 0;
}

extern "C" int moe_dist_init(int64_t expectedWorldSize, char *error,
                             size_t errorSize) {
  return moe_dist_init_groups(expectedWorldSize, 1, error, errorSize);
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

extern "C" int64_t moe_dist_group_rank(int64_t group) {
  return groupFor("group_rank", group, false).rank;
}

extern "C" int64_t moe_dist_group_size(int64_t group) {
  return groupFor("group_size", group, false).size;
}

extern "C" void moe_dist_finalize(void) {
  State &s = state();
  try {
    s.groupContext.reset();
    s.context.reset();
  } catch (const std::exception &) {
    // Teardown errors (a peer gone already) do not matter any more.
  }
  s.env = Environment();
  s.ep = 1;
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
    checkSameOnAllRanks(groupFor(what, 0), what, "bytesPerRank", bytesPerRank);
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

extern "C" void moe_dist_all_to_all(const void *src, void *dst,
                                    int64_t bytesPerRank, int64_t group) {
  const char *what = "all_to_all";
  Group g = groupFor(what, group);
  if (bytesPerRank < 0 || bytesPerRank > kMaxBytes / g.size)
    die(what, "invalid bytesPerRank " + std::to_string(bytesPerRank));
  int64_t total = bytesPerRank * g.size;
  if (total > 0 && (!src || !dst))
    die(what, "null buffer");
  if (!g.context) {
    if (total > 0)
      std::memmove(dst, src, static_cast<size_t>(total));
    return;
  }
  if (overlap(src, total, dst, total))
    die(what, "the source and destination buffers overlap");
  try {
    checkSameOnAllRanks(g, what, "bytesPerRank", bytesPerRank);
    if (bytesPerRank == 0)
      return;
    gloo::AlltoallOptions options(g.context);
    options.setInput(static_cast<char *>(const_cast<void *>(src)),
                     static_cast<size_t>(total));
    options.setOutput(static_cast<char *>(dst), static_cast<size_t>(total));
    gloo::alltoall(options);
  } catch (const std::exception &e) {
    die(what, clean(e.what()));
  }
}

extern "C" void moe_dist_all_to_all_v(const void *src, const int64_t *sendBytes,
                                      void *dst, const int64_t *recvBytes,
                                      int64_t group) {
  const char *what = "all_to_all_v";
  Group g = groupFor(what, group);
  if (!sendBytes || !recvBytes)
    die(what, "null byte-count array");
  int64_t sendTotal = 0, recvTotal = 0;
  for (int p = 0; p < g.size; ++p) {
    if (sendBytes[p] < 0 || sendBytes[p] > kMaxBytes - sendTotal)
      die(what, "invalid sendBytes[" + std::to_string(p) +
                    "] = " + std::to_string(sendBytes[p]));
    if (recvBytes[p] < 0 || recvBytes[p] > kMaxBytes - recvTotal)
      die(what, "invalid recvBytes[" + std::to_string(p) +
                    "] = " + std::to_string(recvBytes[p]));
    sendTotal += sendBytes[p];
    recvTotal += recvBytes[p];
  }
  if ((sendTotal > 0 && !src) || (recvTotal > 0 && !dst))
    die(what, "null buffer");
  if (overlap(src, sendTotal, dst, recvTotal))
    die(what, "the source and destination buffers overlap");
  if (sendBytes[g.rank] != recvBytes[g.rank])
    die(what, "this rank sends " + std::to_string(sendBytes[g.rank]) +
                  " bytes to itself, but expects " +
                  std::to_string(recvBytes[g.rank]));
  if (!g.context) {
    if (sendTotal > 0)
      std::memmove(dst, src, static_cast<size_t>(sendTotal));
    return;
  }
  try {
    // Every rank tells every other one what it sends it and what it expects
    // from it, so that both ends of a pair that disagree see it. (The other
    // ranks then fail in the exchange below, on the closed connections.)
    std::vector<int64_t> mine(2 * static_cast<size_t>(g.size));
    std::vector<int64_t> theirs(mine.size());
    for (int p = 0; p < g.size; ++p) {
      mine[2 * p] = sendBytes[p];
      mine[2 * p + 1] = recvBytes[p];
    }
    gloo::AlltoallOptions sizes(g.context);
    sizes.setInput(mine.data(), mine.size());
    sizes.setOutput(theirs.data(), theirs.size());
    gloo::alltoall(sizes);
    for (int p = 0; p < g.size; ++p) {
      if (theirs[2 * p] != recvBytes[p])
        die(what, peerName(g, p) + " sends " + std::to_string(theirs[2 * p]) +
                      " bytes to this rank, which expects " +
                      std::to_string(recvBytes[p]));
      if (theirs[2 * p + 1] != sendBytes[p])
        die(what, "this rank sends " + std::to_string(sendBytes[p]) +
                      " bytes to " + peerName(g, p) + ", which expects " +
                      std::to_string(theirs[2 * p + 1]));
    }
    // Gloo copies this rank's own block with memcpy, also when it is empty:
    // give it a valid address then.
    static char empty;
    gloo::AlltoallvOptions options(g.context);
    options.setInput(
        sendTotal > 0 ? static_cast<char *>(const_cast<void *>(src)) : &empty,
        std::vector<int64_t>(sendBytes, sendBytes + g.size));
    options.setOutput(recvTotal > 0 ? static_cast<char *>(dst) : &empty,
                      std::vector<int64_t>(recvBytes, recvBytes + g.size));
    gloo::alltoallv(options);
  } catch (const std::exception &e) {
    die(what, clean(e.what()));
  }
}
