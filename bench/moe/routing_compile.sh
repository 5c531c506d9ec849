#!/usr/bin/env bash
# bench/moe/routing_compile.sh - compile bench/moe/routing.mlir (moe.route +
# moe.dispatch, lowered by -moe-generate-routing-kernels inside
# moe-lower-to-nvvm) to bench/moe/out/routing.o on the build machine (MLIR 22
# is here, not on the GPU machine). bench/moe/routing_run.sh links and runs it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/moe/out
mkdir -p "$out"
moe_bench_compile "$root/bench/moe/routing.mlir" "$out/routing.o"
grep -o 'route GPU kernels.*\|route left to.*' "$out/routing.remarks.txt" || true
