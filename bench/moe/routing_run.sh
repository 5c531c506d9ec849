#!/usr/bin/env bash
# bench/moe/routing_run.sh - the routing benchmark, on the GPU machine.
#
# Needs bench/moe/out/routing.o from bench/moe/routing_compile.sh. Builds
# moert's MLIR adapter with this machine's compiler, links the kernels into
# bench/moe/out/librouting.so and runs bench/moe/routing_bench.py, which
# checks every result against a float64 reference and times our route +
# dispatch against the same steps in PyTorch.
# Usage: bench/moe/routing_run.sh [OUTDIR] [routing_bench.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/moe/out}
shift || true
lib=$root/bench/moe/out
mkdir -p "$out"
moe_bench_link "$lib/routing.o" "$lib/librouting.so"
python3 "$root/bench/moe/routing_bench.py" --lib "$lib/librouting.so" \
  --adapter "$lib/libmoert_mlir.so" --out "$out" "$@"
