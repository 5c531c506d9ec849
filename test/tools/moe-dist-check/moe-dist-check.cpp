//===- moe-dist-check.cpp - Checks of the distributed runtime -------------===//
//
// Part of the moe-mlir project.
//
// Run once per rank (scripts/launch-local.sh N moe-dist-check --expect N):
// initializes libMoEDistRuntime from the environment, then checks its
// collectives against what this process computes by itself. Every rank
// generates the seeded random data of EVERY rank (the seed of rank r's
// data depends on r and the case only), so each knows the exact inputs of
// the others:
//  * all_reduce_sum of f32, i64 and f64 at 1, 1000 and 1 << 20 elements
//    against the fp64 sum of the inputs (f32 and f64 within the worst-case
//    error of summing the world's values in any order in that type; i64
//    exact), and the f32 results of all ranks identical to the bit (one
//    all_gather of them);
//  * all_gather of random bytes at 1, 1000 and (1 << 20) + 3 bytes per rank
//    against the concatenation, exactly.
// With --suite=a2a instead (and --ep E: moe_dist_init_groups with EP groups
// of E consecutive ranks, else moe_dist_init):
//  * the group ranks and sizes of the world (group 0) and of the EP group
//    (group 1), and the idempotence of init;
//  * all_to_all on both groups at 0, 1, 1000 and (1 << 20) + 3 bytes per
//    rank, and all_to_all_v on both groups with ragged random block sizes
//    (zeros among them), with no bytes at all, with one sender only and
//    with ~1 MiB blocks: block p -> q is seeded by (case, world rank p,
//    world rank q), so a block from the wrong rank or from another group
//    differs; each rank compares what it received byte for byte, and checks
//    that the bytes past dst and src are untouched.
// Prints `rank R: ok <case> ...` per case on stdout. --fault=<kind> makes
// rank 1 (or every rank) misbehave before the first collective, for the
// tests of the failure paths:
//   exit           rank 1 exits with status 3
//   hang           rank 1 stops itself (SIGSTOP)
//   gather-size    rank 1 passes a different bytesPerRank to all_gather
//   absent-rank0   rank 0 exits with status 0 before moe_dist_init
//   absent-rank1   rank 1 exits with status 0 before moe_dist_init
//   late-rank0     rank 0 sleeps 2 s before moe_dist_init (not a fault)
//   after-finalize every rank calls a collective after moe_dist_finalize
// and in the a2a suite:
//   a2a-size       rank 1 passes another bytesPerRank to all_to_all
//   a2av-size      rank 1 expects 8 more bytes from group rank 0 in the
//                  first all_to_all_v (on the EP group)
//   a2av-kill      rank 1 kills itself (SIGKILL) as its group calls the
//                  first all_to_all_v
//   bad-group      every rank calls all_to_all with group 2
//
//===----------------------------------------------------------------------===//

#include "DistRuntime.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

namespace {

const char *kTool = "moe-dist-check";

[[noreturn]] void fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", kTool, message.c_str());
  std::exit(1);
}

// splitmix64: one stream per (case, rank).
struct Random {
  uint64_t state;
  Random(uint64_t caseId, uint64_t rank)
      : state(0x9e3779b97f4a7c15ull * (caseId + 1) ^
              (0xd1b54a32d192ed03ull * (rank + 7))) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double uniform() { return (next() >> 11) * 0x1.0p-52 - 1.0; }
};

int64_t rank, world, ep = 1;
std::string fault;

template <typename T>
std::vector<T> generate(uint64_t caseId, int64_t ofRank, size_t count) {
  Random random(caseId, static_cast<uint64_t>(ofRank));
  std::vector<T> values(count);
  for (T &value : values) {
    if constexpr (std::is_same_v<T, int64_t>)
      // Large values, so that a wrong order or a lost rank shows, without
      // overflow at any world size below 2^20.
      value = static_cast<int64_t>(random.next() >> 24) - (int64_t(1) << 39);
    else
      // Magnitudes from 2^-8 to 2^8, so that the sums round.
      value = static_cast<T>(std::ldexp(
          random.uniform(), static_cast<int>(random.next() % 17) - 8));
  }
  return values;
}

// Checks all_reduce_sum of `count` elements of T (dtype code `dtype`).
template <typename T>
void checkAllReduce(const char *name, int64_t dtype, uint64_t caseId,
                    size_t count) {
  std::vector<T> data = generate<T>(caseId, rank, count);
  moe_dist_all_reduce_sum(data.data(), static_cast<int64_t>(count), dtype);

  // The sum in long double (x87's 64-bit significand: its own rounding
  // error is far below the bound for f32 and f64) and the sum of magnitudes.
  std::vector<long double> sum(count, 0.0), magnitude(count, 0.0);
  std::vector<int64_t> exact(count, 0);
  for (int64_t r = 0; r < world; ++r) {
    std::vector<T> theirs = generate<T>(caseId, r, count);
    for (size_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, int64_t>) {
        exact[i] += theirs[i];
      } else {
        sum[i] += static_cast<long double>(theirs[i]);
        magnitude[i] += std::fabs(static_cast<long double>(theirs[i]));
      }
    }
  }
  // Summing W values in any order in a type with unit roundoff u errs by at
  // most gamma(W - 1) * sum |x| with gamma(n) = n u / (1 - n u).
  double unit = std::is_same_v<T, float> ? 0x1.0p-24 : 0x1.0p-53;
  double n = static_cast<double>(world - 1);
  double gamma = n * unit / (1.0 - n * unit);
  double worst = 0.0; // max |error| / bound
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<T, int64_t>) {
      if (data[i] != exact[i])
        fail("rank " + std::to_string(rank) + ": all_reduce_sum " + name +
             " n=" + std::to_string(count) + ": element " + std::to_string(i) +
             " is " + std::to_string(data[i]) + ", expected " +
             std::to_string(exact[i]));
    } else {
      double error = static_cast<double>(
          std::fabs(static_cast<long double>(data[i]) - sum[i]));
      double bound = gamma * static_cast<double>(magnitude[i]);
      if (error > bound) {
        char text[256];
        std::snprintf(text, sizeof(text),
                      "rank %" PRId64 ": all_reduce_sum %s n=%zu: element "
                      "%zu is %.17g, expected %.17g (error %.3g > bound %.3g)",
                      rank, name, count, i, static_cast<double>(data[i]),
                      static_cast<double>(sum[i]), error, bound);
        fail(text);
      }
      if (bound > 0)
        worst = std::max(worst, error / bound);
    }
  }

  // Every rank holds the same bits: gather them and compare with ours.
  size_t bytes = count * sizeof(T);
  std::vector<char> all(bytes * static_cast<size_t>(world));
  moe_dist_all_gather(data.data(), all.data(), static_cast<int64_t>(bytes));
  for (int64_t r = 0; r < world; ++r)
    if (std::memcmp(all.data() + r * bytes, data.data(), bytes) != 0)
      fail("rank " + std::to_string(rank) + ": all_reduce_sum " + name +
           " n=" + std::to_string(count) + ": rank " + std::to_string(r) +
           " got other bits");
  std::printf("rank %" PRId64 ": ok all_reduce_sum %s n=%zu", rank, name,
              count);
  if constexpr (!std::is_same_v<T, int64_t>)
    std::printf(" max error / bound %.3g", worst);
  std::printf("\n");
}

void checkAllGather(uint64_t caseId, size_t bytes) {
  std::vector<char> mine(bytes);
  Random random(caseId, static_cast<uint64_t>(rank));
  for (char &byte : mine)
    byte = static_cast<char>(random.next() >> 56);
  // Filled with a pattern the gather must overwrite everywhere.
  std::vector<char> all(bytes * static_cast<size_t>(world), 0x5a);
  moe_dist_all_gather(mine.data(), all.data(), static_cast<int64_t>(bytes));
  for (int64_t r = 0; r < world; ++r) {
    Random theirs(caseId, static_cast<uint64_t>(r));
    for (size_t i = 0; i < bytes; ++i)
      if (all[r * bytes + i] != static_cast<char>(theirs.next() >> 56))
        fail("rank " + std::to_string(rank) + ": all_gather " +
             std::to_string(bytes) + " bytes: byte " + std::to_string(i) +
             " of rank " + std::to_string(r) + "'s part differs");
  }
  std::printf("rank %" PRId64 ": ok all_gather bytes=%zu\n", rank, bytes);
}

// The n bytes of the block that world rank `from` sends world rank `to`.
std::vector<char> block(uint64_t caseId, int64_t from, int64_t to, size_t n) {
  Random random(caseId, static_cast<uint64_t>(from * 4096 + to));
  std::vector<char> bytes(n);
  for (char &byte : bytes)
    byte = static_cast<char>(random.next() >> 56);
  return bytes;
}

// Fails unless `where` holds `expected`, naming the block.
void expectBytes(const char *where, const std::vector<char> &expected,
                 const std::string &what) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (where[i] != expected[i])
      fail("rank " + std::to_string(rank) + ": " + what + ": byte " +
           std::to_string(i) + " of " + std::to_string(expected.size()) +
           " differs");
}

// Bytes after a buffer that a collective must leave alone.
constexpr size_t kGuard = 64;
constexpr char kFill = 0x5a;

void expectGuard(const std::vector<char> &buffer, size_t used,
                 const std::string &what) {
  for (size_t i = used; i < buffer.size(); ++i)
    if (buffer[i] != kFill)
      fail("rank " + std::to_string(rank) + ": " + what + ": wrote byte " +
           std::to_string(i - used) + " past the end of dst");
}

void checkGroups() {
  int64_t expect[2][2] = {{rank, world}, {rank % ep, ep}};
  for (int64_t group = 0; group < 2; ++group) {
    int64_t groupRank = moe_dist_group_rank(group);
    int64_t groupSize = moe_dist_group_size(group);
    if (groupRank != expect[group][0] || groupSize != expect[group][1])
      fail("rank " + std::to_string(rank) + ": group " + std::to_string(group) +
           ": rank " + std::to_string(groupRank) + " of " +
           std::to_string(groupSize) + ", expected " +
           std::to_string(expect[group][0]) + " of " +
           std::to_string(expect[group][1]));
  }
  std::printf("rank %" PRId64 ": ok groups: world %" PRId64 " of %" PRId64
              ", EP group %" PRId64 " (ranks %" PRId64 " to %" PRId64
              "), group rank %" PRId64 " of %" PRId64 "\n",
              rank, rank, world, rank / ep, rank / ep * ep,
              rank / ep * ep + ep - 1, rank % ep, ep);
}

void checkAllToAll(uint64_t caseId, size_t bytes, int64_t group) {
  int64_t size = moe_dist_group_size(group);
  int64_t first = rank - moe_dist_group_rank(group);
  size_t total = bytes * static_cast<size_t>(size);
  std::vector<char> src(total + kGuard, kFill), dst(total + kGuard, kFill);
  for (int64_t q = 0; q < size; ++q) {
    std::vector<char> mine = block(caseId, rank, first + q, bytes);
    std::copy(mine.begin(), mine.end(), src.begin() + q * bytes);
  }
  std::vector<char> before = src;
  int64_t passed = static_cast<int64_t>(bytes);
  if (fault == "a2a-size" && rank == 1)
    passed += 8;
  if (fault == "bad-group")
    group = 2;
  moe_dist_all_to_all(src.data(), dst.data(), passed, group);
  // Rank 1's group fails; the others go on (and fail later, in a world
  // collective with rank 1).
  bool withRank1 = first <= 1 && 1 < first + size;
  if ((fault == "a2a-size" && withRank1) || fault == "bad-group")
    fail("all_to_all returned after --fault=" + fault);
  std::string what = "all_to_all group " + std::to_string(group) +
                     " bytes=" + std::to_string(bytes);
  for (int64_t p = 0; p < size; ++p)
    expectBytes(dst.data() + p * bytes, block(caseId, first + p, rank, bytes),
                what + ", the block of rank " + std::to_string(first + p));
  expectGuard(dst, total, what);
  if (src != before)
    fail("rank " + std::to_string(rank) + ": " + what + ": src changed");
  std::printf("rank %" PRId64 ": ok all_to_all group %" PRId64
              " bytes=%zu from ranks %" PRId64 " to %" PRId64 "\n",
              rank, group, bytes, first, first + size - 1);
}

// The byte count of the block from world rank `from` to `to` in an
// all_to_all_v case of `kind` in the group whose rank 0 is `first`.
int64_t raggedBytes(uint64_t caseId, const std::string &kind, int64_t first,
                    int64_t from, int64_t to) {
  Random random(caseId + 1000, static_cast<uint64_t>(from * 4096 + to));
  uint64_t draw = random.next();
  if (kind == "empty")
    return 0;
  if (kind == "one-sender")
    return from == first ? static_cast<int64_t>(draw % 70000) : 0;
  if (kind == "large")
    return (int64_t(1) << 20) + static_cast<int64_t>(draw % 4096);
  // ragged: a quarter of the blocks empty, the others 1 to 3000 bytes.
  return draw % 4 == 0 ? 0 : 1 + static_cast<int64_t>(draw / 4 % 3000);
}

void checkAllToAllV(uint64_t caseId, const std::string &kind, int64_t group) {
  int64_t size = moe_dist_group_size(group);
  int64_t first = rank - moe_dist_group_rank(group);
  std::vector<int64_t> sendBytes(size), recvBytes(size);
  size_t sendTotal = 0, recvTotal = 0, zeros = 0;
  for (int64_t q = 0; q < size; ++q) {
    sendBytes[q] = raggedBytes(caseId, kind, first, rank, first + q);
    recvBytes[q] = raggedBytes(caseId, kind, first, first + q, rank);
    sendTotal += static_cast<size_t>(sendBytes[q]);
    recvTotal += static_cast<size_t>(recvBytes[q]);
    zeros += recvBytes[q] == 0;
  }
  std::vector<char> src(sendTotal + kGuard, kFill);
  size_t offset = 0;
  for (int64_t q = 0; q < size; ++q) {
    std::vector<char> mine = block(caseId, rank, first + q, sendBytes[q]);
    std::copy(mine.begin(), mine.end(), src.begin() + offset);
    offset += mine.size();
  }
  std::vector<char> before = src;
  bool firstCall = caseId == 0;
  if (firstCall && fault == "a2av-size" && rank == 1) {
    recvBytes[0] += 8;
    recvTotal += 8;
  }
  std::vector<char> dst(recvTotal + kGuard, kFill);
  if (firstCall && fault == "a2av-kill" && rank == 1) {
    std::fflush(stdout);
    ::raise(SIGKILL);
  }
  moe_dist_all_to_all_v(src.data(), sendBytes.data(), dst.data(),
                        recvBytes.data(), group);
  if (firstCall && fault == "a2av-size" && first <= 1 && 1 < first + size)
    fail("all_to_all_v accepted mismatched sizes");
  std::string what = "all_to_all_v group " + std::to_string(group) + " " + kind;
  offset = 0;
  for (int64_t p = 0; p < size; ++p) {
    expectBytes(dst.data() + offset,
                block(caseId, first + p, rank, recvBytes[p]),
                what + ", the block of rank " + std::to_string(first + p));
    offset += static_cast<size_t>(recvBytes[p]);
  }
  expectGuard(dst, recvTotal, what);
  if (src != before)
    fail("rank " + std::to_string(rank) + ": " + what + ": src changed");
  std::printf("rank %" PRId64 ": ok all_to_all_v group %" PRId64
              " %s from ranks %" PRId64 " to %" PRId64
              ": sent %zu, received %zu bytes, %zu empty blocks in\n",
              rank, group, kind.c_str(), first, first + size - 1, sendTotal,
              recvTotal, zeros);
}

// The all-to-all suite.
void runAllToAll() {
  checkGroups();
  // A second init with the same arguments is a no-op; with others, an error.
  char error[512];
  if (moe_dist_init_groups(world, ep, error, sizeof(error)) != 0)
    fail(std::string("second init_groups: ") + error);
  if (ep != 1 && moe_dist_init(world, error, sizeof(error)) == 0)
    fail("moe_dist_init(" + std::to_string(world) + ") after init_groups(" +
         std::to_string(world) + ", " + std::to_string(ep) + ") succeeded");
  // The all_to_all_v cases first, for the faults in the first one: case 0
  // is on the EP group.
  uint64_t caseId = 0;
  for (const char *kind :
       {"ragged", "ragged", "ragged", "empty", "one-sender", "large"})
    for (int64_t group : {1, 0})
      checkAllToAllV(caseId++, kind, group);
  for (size_t bytes :
       {size_t(0), size_t(1), size_t(1000), (size_t(1) << 20) + 3})
    for (int64_t group : {1, 0})
      checkAllToAll(++caseId, bytes, group);
}

} // namespace

int main(int argc, char **argv) {
  int64_t expect = -1;
  std::string suite = "basic";
  bool groups = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--expect" && i + 1 < argc) {
      expect = std::atoll(argv[++i]);
    } else if (arg == "--ep" && i + 1 < argc) {
      ep = std::atoll(argv[++i]);
      groups = true;
    } else if (arg.rfind("--fault=", 0) == 0) {
      fault = arg.substr(8);
    } else if (arg == "--suite=basic" || arg == "--suite=a2a") {
      suite = arg.substr(8);
    } else {
      fail("usage: moe-dist-check --expect N [--ep E] [--suite=basic|a2a] "
           "[--fault=KIND]");
    }
  }
  if (expect < 1)
    fail("--expect N (the world size the program is built for) is required");
  const char *known[] = {"",
                         "exit",
                         "hang",
                         "gather-size",
                         "absent-rank0",
                         "absent-rank1",
                         "late-rank0",
                         "after-finalize",
                         "a2a-size",
                         "a2av-size",
                         "a2av-kill",
                         "bad-group"};
  bool valid = false;
  for (const char *kind : known)
    valid |= fault == kind;
  if (!valid)
    fail("unknown --fault=" + fault);

  // The rank from the environment, before init, for the faults of rank 0.
  const char *envRank = std::getenv("RANK");
  bool isRank0 = !envRank || std::string(envRank) == "0";
  if (fault == "absent-rank0" && isRank0)
    return 0;
  if (fault == "absent-rank1" && envRank && std::string(envRank) == "1")
    return 0;
  if (fault == "late-rank0" && isRank0)
    ::sleep(2);

  char error[512];
  int status = groups ? moe_dist_init_groups(expect, ep, error, sizeof(error))
                      : moe_dist_init(expect, error, sizeof(error));
  if (status != 0)
    fail(error);
  // A second init is a no-op.
  if (moe_dist_init_groups(expect, ep, error, sizeof(error)) != 0)
    fail(std::string("second init: ") + error);
  rank = moe_dist_rank();
  world = moe_dist_world_size();
  if (world != expect || rank < 0 || rank >= world || moe_dist_local_rank() < 0)
    fail("rank " + std::to_string(rank) + " of " + std::to_string(world) +
         " after init for " + std::to_string(expect));
  if (envRank && std::to_string(rank) != envRank)
    fail("moe_dist_rank is " + std::to_string(rank) + ", RANK is " + envRank);

  if (fault == "exit" && rank == 1) {
    std::fflush(stdout);
    _exit(3);
  }
  if (fault == "hang" && rank == 1)
    ::raise(SIGSTOP);
  if (fault == "gather-size") {
    std::vector<char> src(16), dst(32 * static_cast<size_t>(world));
    moe_dist_all_gather(src.data(), dst.data(), rank == 1 ? 16 : 8);
    fail("all_gather accepted different sizes");
  }
  if (fault == "after-finalize") {
    moe_dist_finalize();
    double value = 1.0;
    moe_dist_all_reduce_sum(&value, 1, 2);
    if (world > 1)
      fail("all_reduce_sum after finalize returned");
  }

  if (suite == "a2a") {
    runAllToAll();
    moe_dist_finalize();
    std::printf("rank %" PRId64 ": ok all-to-all checks, world size %" PRId64
                ", ep %" PRId64 "\n",
                rank, world, ep);
    return 0;
  }

  const size_t sizes[] = {1, 1000, size_t(1) << 20};
  uint64_t caseId = 0;
  for (size_t count : sizes) {
    checkAllReduce<float>("f32", 0, ++caseId, count);
    checkAllReduce<int64_t>("i64", 1, ++caseId, count);
    checkAllReduce<double>("f64", 2, ++caseId, count);
  }
  for (size_t bytes : {size_t(1), size_t(1000), (size_t(1) << 20) + 3})
    checkAllGather(++caseId, bytes);
  moe_dist_finalize();
  moe_dist_finalize(); // safe twice
  std::printf("rank %" PRId64 ": ok all checks, world size %" PRId64 "\n", rank,
              world);
  return 0;
}
