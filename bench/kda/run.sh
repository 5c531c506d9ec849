#!/usr/bin/env bash
# bench/kda/run.sh - the KDA benchmark, on the GPU machine, in one command.
#
# Needs bench/kda/out/kda_forward{,_per_position}.o from bench/kda/compile.sh (run where
# MLIR 22 is installed) and flash-linear-attention's source in
# .peers/flash-linear-attention (git-ignored, never committed). Builds
# moert's MLIR adapter with the machine's compiler, links the kernel into a
# shared library and runs bench/kda/bench.py, which checks the results
# against a float64 reference and times both implementations.
# Usage: bench/kda/run.sh [OUTDIR] [bench.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/kda/out}
shift || true
lib=$root/bench/kda/out
mkdir -p "$out"
moe_bench_link "$lib/kda_forward.o" "$lib/libkda_forward.so"
moe_bench_link "$lib/kda_forward_per_position.o" \
  "$lib/libkda_forward_per_position.so"
python3 "$root/bench/kda/bench.py" --lib "$lib/libkda_forward.so" \
  --lib-per-position "$lib/libkda_forward_per_position.so" \
  --adapter "$lib/libmoert_mlir.so" \
  --fla "$root/.peers/flash-linear-attention" --out "$out" "$@"
