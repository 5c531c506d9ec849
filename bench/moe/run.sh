#!/usr/bin/env bash
# bench/moe/run.sh - the MoE FFN benchmark, on the GPU machine, in one
# command.
#
# Needs bench/moe/out/moe_ffn_forward.o from bench/moe/compile.sh (run
# where MLIR 22 is installed). Builds moert's MLIR adapter with the machine's
# compiler, links the kernel into a shared library and runs
# bench/moe/bench.py, which checks our kernel (small N only: the GPU path is
# v0, one thread per block) against a float64 reference (output, exact load
# counts, exact quantile-balancing bias) and times a PyTorch MoE layer of the
# same math at the issue's shape (grouped GEMM) against cuBLAS bf16 GEMM.
# Usage: bench/moe/run.sh [OUTDIR] [bench.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/moe/out}
shift || true
lib=$root/bench/moe/out
mkdir -p "$out"
moe_bench_link "$lib/moe_ffn_forward.o" "$lib/libmoe_ffn_forward.so"
if [[ -f $lib/experts.o ]]; then
  # One process per build (each prints its own table).
  for object in "$lib"/experts.o "$lib"/experts_*.o; do
    [[ -f $object ]] || continue
    name=$(basename "$object" .o)
    moe_bench_link "$object" "$lib/lib$name.so"
    mkdir -p "$out/$name"
    python3 "$root/bench/moe/experts_bench.py" --lib "$lib/lib$name.so" \
      --adapter "$lib/libmoert_mlir.so" --out "$out/$name"
  done
fi
large=()
if [[ -f $lib/moe_ffn_large.o ]]; then
  moe_bench_link "$lib/moe_ffn_large.o" "$lib/libmoe_ffn_large.so"
  large=(--large-lib "$lib/libmoe_ffn_large.so")
fi
# Against the CPU back end: the f32 example and the bf16 layer, each in its
# own process.
if [[ -f $lib/moe_ffn_bf16_small.o && -d $lib/cpu ]]; then
  moe_bench_link "$lib/moe_ffn_bf16_small.o" "$lib/libmoe_ffn_bf16_small.so"
  for kind in f32 bf16; do
    python3 "$root/bench/moe/bench.py" --lib "$lib/libmoe_ffn_forward.so" \
      --bf16-small-lib "$lib/libmoe_ffn_bf16_small.so" --cpu-cases "$lib/cpu" \
      --cpu-checks-only "$kind" --adapter "$lib/libmoert_mlir.so" --out "$out"
  done
fi
python3 "$root/bench/moe/bench.py" --lib "$lib/libmoe_ffn_forward.so" "${large[@]}" \
  --adapter "$lib/libmoert_mlir.so" --out "$out" "$@"
