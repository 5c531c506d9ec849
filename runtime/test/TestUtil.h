//===- TestUtil.h - Checks and device setup for the moert tests -*- C++ -*-===//
//
// Part of the moe-mlir project. See LICENSE for terms.
//
//===----------------------------------------------------------------------===//
//
// The tests are plain programs: each check prints a line when it fails, and
// main returns finish(), non-zero when any check failed. GPU tests open the
// device with openDeviceOrSkip, which prints "UNSUPPORTED: no CUDA device
// (<reason>)" and makes the test exit 0 only when the machine has no driver
// or no device; any other failure fails the test.
//
//===----------------------------------------------------------------------===//

#ifndef MOERT_TEST_TESTUTIL_H
#define MOERT_TEST_TESTUTIL_H

#include "moert/moert.h"

#include <fmt/format.h> // defines: fmt::print, fmt::format

#include <cstdio>  // defines: stdout, std::fflush
#include <cstdlib> // defines: std::exit
#include <string>  // defines: std::string

namespace moert::test {

/// Counts checks and failures of one test program.
class Checker {
public:
  explicit Checker(const char *program) : program(program) {}

  /// Records one check; prints where and why when it fails.
  bool check(bool ok, const char *expression, const char *file, int line,
             const std::string &detail = {}) {
    ++checks;
    if (ok)
      return true;
    ++failures;
    fmt::print("FAIL {}:{}: {}\n", file, line, expression);
    if (!detail.empty())
      fmt::print("  {}\n", detail);
    std::fflush(stdout);
    return false;
  }

  /// Prints the summary line and returns the exit status.
  int finish() const {
    if (failures == 0)
      fmt::print("{}: all {} checks passed\n", program, checks);
    else
      fmt::print("{}: {} of {} checks failed\n", program, failures, checks);
    return failures == 0 ? 0 : 1;
  }

private:
  const char *program;
  int checks = 0;
  int failures = 0;
};

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Describes the outcome of a call: its status and the context's message.
inline std::string outcome(moertContext ctx, moertStatus status) {
  return fmt::format("status {}, message \"{}\"", moertStatusName(status),
                     moertGetLastError(ctx));
}

} // namespace moert::test

/// Checks a condition.
#define CHECK(checker, condition)                                              \
  (checker).check(bool(condition), #condition, __FILE__, __LINE__)

/// Checks that `call` on `ctx` returns `expected`; on a mismatch prints the
/// status and message it gave.
#define CHECK_STATUS(checker, ctx, expected, call)                             \
  [&]() -> bool {                                                              \
    moertStatus status_ = (call);                                              \
    return (checker).check(status_ == (expected), #call " == " #expected,      \
                           __FILE__, __LINE__,                                 \
                           ::moert::test::outcome((ctx), status_));            \
  }()

/// Checks that `call` succeeds.
#define CHECK_OK(checker, ctx, call)                                           \
  CHECK_STATUS(checker, ctx, MOERT_SUCCESS, call)

/// Checks that `call` fails with `expected` and a message containing `part`.
#define CHECK_ERROR(checker, ctx, expected, call, part)                        \
  [&]() -> bool {                                                              \
    moertStatus status_ = (call);                                              \
    std::string message_ = moertGetLastError(ctx);                             \
    return (checker).check(                                                    \
        status_ == (expected) && ::moert::test::contains(message_, (part)),    \
        #call " fails with " #expected " and \"" part "\"", __FILE__,          \
        __LINE__, ::moert::test::outcome((ctx), status_));                     \
  }()

/// Stops the test when `call` fails: later checks depend on it.
#define REQUIRE_OK(checker, ctx, call)                                         \
  do {                                                                         \
    if (!CHECK_OK(checker, ctx, call))                                         \
      std::exit((checker).finish());                                           \
  } while (false)

namespace moert::test {

/// Creates a context on device 0. Without a driver or device, prints the
/// UNSUPPORTED line and exits 0; on any other failure, exits 1.
inline moertContext openDeviceOrSkip(const char *program) {
  moertContext ctx = nullptr;
  moertStatus status = moertContextCreate(/*deviceOrdinal=*/0, &ctx);
  if (status == MOERT_SUCCESS)
    return ctx;
  std::string reason = moertGetLastError(ctx);
  moertContextDestroy(ctx);
  if (status == MOERT_ERROR_NO_DRIVER || status == MOERT_ERROR_NO_DEVICE) {
    fmt::print("UNSUPPORTED: no CUDA device ({})\n", reason);
    std::exit(0);
  }
  fmt::print("FAIL {}: moertContextCreate: {}: {}\n", program,
             moertStatusName(status), reason);
  std::exit(1);
}

} // namespace moert::test

#endif // MOERT_TEST_TESTUTIL_H
