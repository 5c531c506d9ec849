#!/usr/bin/env bash
# bench/kda/run_grad.sh - the KDA forward + backward benchmark, on the GPU
# machine, in one command: links bench/kda/out/kda_train.o (from
# bench/kda/compile.sh, run where MLIR 22 is) against moert's MLIR adapter
# and runs bench/kda/bench_grad.py against flash-linear-attention's source
# in .peers/fla (git-ignored, never committed; carry it).
# Usage: bench/kda/run_grad.sh [OUTDIR] [bench_grad.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/kda/out}
shift || true
lib=$root/bench/kda/out
mkdir -p "$out"
moe_bench_link "$lib/kda_train.o" "$lib/libkda_train.so"
python3 "$root/bench/kda/bench_grad.py" --lib "$lib/libkda_train.so" \
  --adapter "$lib/libmoert_mlir.so" --fla "${MOE_FLA:-$root/.peers/fla}" \
  --out "$out" "$@"
