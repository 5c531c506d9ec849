//===- Profile.cpp - Where the time of a CPU program went -----------------===//
//
// Part of the moe-mlir project.
//
// The timer runtime of the CPU back end. Code instrumented by
// -moe-profile-ops calls moe_prof_begin / moe_prof_end around each moe op
// (forward and gradient ops, named by op kind); the contraction runtime
// reports its calls here too. At exit, when anything was recorded, a table
// goes to stderr: per op kind, its calls, total and mean time and share of
// the instrumented time, then the contractions' count, multiply-adds,
// time and rate. Setting MOE_CPU_PROFILE=1 in the environment records the
// contractions of a program that was not instrumented.
//
//===----------------------------------------------------------------------===//

#include "Profile.h"
#include "CpuRuntime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Region {
  std::string name;
  int64_t calls = 0;
  double seconds = 0;
  /// Start of the open call, if one is open.
  Clock::time_point start;
  int depth = 0;
};

struct Profile {
  std::mutex mutex;
  std::vector<Region> regions;
  int64_t contractions = 0;
  double macs = 0;
  double contractionSeconds = 0;
  bool registered = false;
  bool fromEnvironment = false;

  Profile() {
    const char *env = std::getenv("MOE_CPU_PROFILE");
    fromEnvironment = env && *env && std::strcmp(env, "0") != 0;
  }

  void registerAtExit();
  void print();
};

Profile &profile() {
  static Profile *instance = new Profile(); // never destroyed: atexit uses it
  return *instance;
}

void printAtExit() { profile().print(); }

void Profile::registerAtExit() {
  if (!registered) {
    registered = true;
    std::atexit(printAtExit);
  }
}

void Profile::print() {
  std::lock_guard<std::mutex> lock(mutex);
  double total = 0;
  for (const Region &region : regions)
    total += region.seconds;
  if (!regions.empty()) {
    std::vector<const Region *> sorted;
    for (const Region &region : regions)
      sorted.push_back(&region);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Region *l, const Region *r) {
                       return l->seconds > r->seconds;
                     });
    std::fprintf(stderr, "moe profile: time per op kind (all calls)\n");
    std::fprintf(stderr, "  %-32s %10s %12s %12s %7s\n", "op", "calls",
                 "total ms", "mean ms", "share");
    for (const Region *region : sorted)
      std::fprintf(stderr, "  %-32s %10lld %12.3f %12.4f %6.1f%%\n",
                   region->name.c_str(), (long long)region->calls,
                   region->seconds * 1e3,
                   region->calls ? region->seconds * 1e3 / region->calls : 0.0,
                   total > 0 ? 100.0 * region->seconds / total : 0.0);
    std::fprintf(stderr, "  %-32s %10s %12.3f\n", "total instrumented", "",
                 total * 1e3);
  }
  if (contractions > 0)
    std::fprintf(stderr,
                 "moe profile: contractions (moe_cpu_contract_f32): %lld "
                 "calls, %.4g G multiply-adds, %.3f ms, %.2f GFLOP/s\n",
                 (long long)contractions, macs / 1e9, contractionSeconds * 1e3,
                 contractionSeconds > 0 ? 2.0 * macs / contractionSeconds / 1e9
                                        : 0.0);
}

} // namespace

bool moe::cpu::contractionProfiling() {
  static bool enabled = profile().fromEnvironment;
  return enabled;
}

double moe::cpu::now() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

void moe::cpu::recordContraction(double macs, double seconds) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.registerAtExit();
  ++p.contractions;
  p.macs += macs;
  p.contractionSeconds += seconds;
}

extern "C" void moe_prof_begin(int64_t id, const char *name) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.registerAtExit();
  if (id < 0)
    return;
  if (size_t(id) >= p.regions.size())
    p.regions.resize(id + 1);
  Region &region = p.regions[id];
  if (region.name.empty() && name)
    region.name = name;
  // A region that encloses itself counts its outermost call only.
  if (region.depth++ == 0)
    region.start = Clock::now();
}

extern "C" void moe_prof_end(int64_t id) {
  Clock::time_point end = Clock::now();
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (id < 0 || size_t(id) >= p.regions.size())
    return;
  Region &region = p.regions[id];
  if (region.depth == 0 || --region.depth != 0)
    return;
  ++region.calls;
  region.seconds += std::chrono::duration<double>(end - region.start).count();
}

// moe-lower-to-cpu requests C wrappers for every function of the module,
// the declarations that -moe-profile-ops adds included, so the compiled
// code calls these names; with scalar arguments only, they have the same
// signature.
extern "C" void _mlir_ciface_moe_prof_begin(int64_t id, const char *name) {
  moe_prof_begin(id, name);
}

extern "C" void _mlir_ciface_moe_prof_end(int64_t id) { moe_prof_end(id); }
