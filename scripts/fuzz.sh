#!/usr/bin/env bash
# fuzz.sh - run one libFuzzer target of moe-mlir for a given time.
#
# Usage: scripts/fuzz.sh TARGET SECONDS [JOBS]
#
# TARGET names a seed corpus fuzz/corpus/TARGET and the program
# moe-fuzz-TARGET of the sanitizer build (MOE_FUZZ_BUILD_DIR, default
# build-asan/, which scripts/sanitize.sh configures and builds). The
# committed seeds are read, never written: what the fuzzer finds goes to a
# scratch corpus, MOE_FUZZ_BUILD_DIR/fuzz-runs/TARGET, which later runs
# continue from, and a crashing (hanging, memory-hungry) input to
# MOE_FUZZ_BUILD_DIR/fuzz-runs/TARGET-crash-* (-timeout-*, -oom-*).
# JOBS > 1 runs that many fuzzing processes on the shared corpus.
# MOE_FUZZ_SEED fixes libFuzzer's random seed (scripts/sanitize.sh uses 1,
# so that CI's run is the same on every run of the same code); without it
# every run explores differently.
# Prints one summary line (executions, new corpus size, crashes); the exit
# status is non-zero when the target crashed, hung or tripped a sanitizer.
#
# The longer run of the release checklist: scripts/fuzz.sh TARGET 1200.
set -uo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 2)) || moe_die "usage: scripts/fuzz.sh TARGET SECONDS [JOBS]"
target="$1"
seconds="$2"
jobs="${3:-1}"
build="${MOE_FUZZ_BUILD_DIR:-$MOE_ROOT/build-asan}"
seeds="$MOE_ROOT/fuzz/corpus/$target"
program="$build/bin/moe-fuzz-$target"
[[ -d "$seeds" ]] || moe_die "no seed corpus $seeds"
[[ -x "$program" ]] ||
  moe_die "no $program: build the fuzz targets first (scripts/sanitize.sh)"

# ASan's user poisoning is off: LLVM's allocators, inlined into our
# instrumented code, poison memory that Debian's uninstrumented libMLIR then
# writes (a false use-after-poison).
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_user_poisoning=0:detect_leaks=1}"
scratch="$build/fuzz-runs/$target"
mkdir -p "$scratch"
log="$build/fuzz-runs/$target.log"
moe_log "fuzz: $target for ${seconds}s ($jobs job(s)), seeds $seeds"
# -max_len: the seeds (whole test files) are up to a few KiB.
args=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096
  -max_len=16384 -print_final_stats=1
  -artifact_prefix="$build/fuzz-runs/$target-")
if [[ -n "${MOE_FUZZ_SEED:-}" ]]; then
  args+=(-seed="$MOE_FUZZ_SEED")
fi
if ((jobs > 1)); then
  args+=(-fork="$jobs" -ignore_crashes=0)
fi
"$program" "${args[@]}" "$scratch" "$seeds" >"$log" 2>&1
status=$?
runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" |
  awk '{s += $2} END {print s + 0}')"
if ((runs == 0)); then
  # -fork prints its own totals.
  runs="$(grep -o 'exec/s: [0-9]*.*' "$log" | tail -1)"
fi
units="$(find "$scratch" -type f | wc -l)"
crashes="$(find "$build/fuzz-runs" -maxdepth 1 \( -name "$target-crash-*" -o \
  -name "$target-timeout-*" -o -name "$target-oom-*" \) | wc -l)"
if ((status == 0)); then
  echo "fuzz $target: ${seconds}s, $runs executions, corpus $units inputs, no crash"
else
  echo "fuzz $target: FAILED (exit status $status) after $runs executions; $crashes crash input(s) in $build/fuzz; log $log"
  tail -40 "$log" >&2
fi
exit "$status"
