#!/usr/bin/env bash
# sanitize.sh - the sanitizer build of moe-mlir, its tests and the fuzz smoke run.
#
# Usage: scripts/sanitize.sh      (as root, or with sudo, when packages are missing)
#
# Configures MOE_ASAN_BUILD_DIR (default build-asan/) with clang-22, every
# file of the project built with AddressSanitizer and UndefinedBehaviorSanitizer
# (MLIR and LLVM stay Debian's libraries) and libFuzzer's coverage
# (cmake/Sanitizers.cmake); builds it; runs the lit suite with the
# sanitized tools, except the tests listed in MOE_ASAN_SKIP (slow ones, see
# below); then runs every fuzz target for MOE_FUZZ_SECONDS (default 60) from
# its committed seed corpus (scripts/fuzz.sh, libFuzzer seed MOE_FUZZ_SEED,
# default 1, so that a run is repeatable). Any sanitizer report fails
# the test that triggered it. The last line of output is
#
#   N passed, M failed
#
# counting each lit test and each fuzz target; the exit status is non-zero
# when M > 0.
set -uo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MOE_ASAN_BUILD_DIR="${MOE_ASAN_BUILD_DIR:-$MOE_ROOT/build-asan}"
[[ "$MOE_ASAN_BUILD_DIR" == /* ]] || MOE_ASAN_BUILD_DIR="$PWD/$MOE_ASAN_BUILD_DIR"
MOE_FUZZ_SECONDS="${MOE_FUZZ_SECONDS:-60}"
# The slowest numeric tests (whole-model gradient checks and the tiled KDA
# backward at several shapes): minutes each at full speed, and the same
# code paths are covered under the sanitizers by the smaller tests of the
# same ops (kda-grad-adjoints, common-grad-*, attention-grad-adjoints,
# kimi-tiny-model-reference at one step).
MOE_ASAN_SKIP="${MOE_ASAN_SKIP:-Integration/CPU/(kda-grad\.mlir|kimi-tiny-grad-check\.test)}"

# Reports go to stderr; the first one stops the program (the lit test fails).
# User poisoning is off: LLVM's allocators (BumpPtrAllocator, ...), inlined
# into our instrumented code, poison memory that Debian's uninstrumented
# libMLIR then uses as its own, which ASan would report as use-after-poison.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:allow_user_poisoning=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$MOE_ROOT/scripts/lsan.supp:print_suppressions=0}"

if ! moe_install_packages; then
  echo "0 passed, 1 failed"
  exit 1
fi

if [[ ! -f "$MOE_ASAN_BUILD_DIR/build.ninja" ]]; then
  moe_log "configure: $MOE_ASAN_BUILD_DIR (clang-22, address + undefined, fuzzers)"
  if ! cmake -G Ninja -S "$MOE_ROOT" -B "$MOE_ASAN_BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR="$MOE_LLVM_DIR/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$MOE_LLVM_DIR/bin/lit" \
    '-DMOE_SANITIZERS=address;undefined' -DMOE_ENABLE_FUZZERS=ON; then
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

passed=0
failed=0

moe_log "build: ninja -j$MOE_JOBS (sanitized)"
if ninja -C "$MOE_ASAN_BUILD_DIR" -j "$MOE_JOBS" "${MOE_BUILD_TARGETS[@]}" moe-fuzzers; then
  xml="$MOE_ASAN_BUILD_DIR/test/check-moe.xunit.xml"
  rm -f "$xml"
  moe_log "lit: the suite under the sanitizers, without ${MOE_ASAN_SKIP}"
  "$MOE_LLVM_DIR/bin/lit" -sv --xunit-xml-output="$xml" \
    --filter-out "$MOE_ASAN_SKIP" "$MOE_ASAN_BUILD_DIR/test"
  lit_status=$?
  read -r lit_passed lit_failed lit_skipped < <(moe_count_xunit "$xml") ||
    { lit_passed=0; lit_failed=0; lit_skipped=0; }
  moe_log "lit (sanitized): $lit_passed passed, $lit_failed failed, $lit_skipped unsupported"
  passed=$((passed + lit_passed))
  failed=$((failed + lit_failed))
  if ((lit_status != 0 && lit_failed == 0)); then
    moe_log "lit: exited with status $lit_status"
    failed=$((failed + 1))
  fi

  for target in "$MOE_ROOT"/fuzz/corpus/*/; do
    name="$(basename "$target")"
    if MOE_FUZZ_BUILD_DIR="$MOE_ASAN_BUILD_DIR" MOE_FUZZ_SEED="${MOE_FUZZ_SEED:-1}" \
      "$MOE_ROOT/scripts/fuzz.sh" "$name" "$MOE_FUZZ_SECONDS"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  done
else
  moe_log "build: the sanitized build failed; its tests did not run"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
((failed == 0))
