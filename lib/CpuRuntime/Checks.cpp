//===- Checks.cpp - Run-time checks of the compiled programs --------------===//
//
// Part of the moe-mlir project.
//
// moe_check_dim, which -moe-insert-shape-checks calls before each moe op
// whose operands tie dynamic sizes together.
//
//===----------------------------------------------------------------------===//

#include "CpuRuntime.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

extern "C" void moe_check_dim(int64_t actual, int64_t expected,
                              const char *what, const char *against) {
  if (actual == expected)
    return;
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s is %" PRId64 ", but %s is %" PRId64 "\n",
               what, actual, against, expected);
  std::exit(1);
}

// moe-lower-to-cpu requests C wrappers for every function of the module,
// this declaration included (see Profile.cpp); with scalar and pointer
// arguments only, the wrapper has the same signature.
extern "C" void _mlir_ciface_moe_check_dim(int64_t actual, int64_t expected,
                                           const char *what,
                                           const char *against) {
  moe_check_dim(actual, expected, what, against);
}
