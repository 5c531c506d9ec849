#!/usr/bin/env bash
# bench/moe/run_grad.sh - the MoE layer forward + backward benchmark, on the
# GPU machine, in one command.
#
# Needs bench/moe/out/moe_ffn_train.o from bench/moe/compile_grad.sh (run
# where MLIR 22 is installed). Builds moert's MLIR adapter with the machine's
# compiler, links the kernels into a shared library and runs
# bench/moe/bench_grad.py: our forward and backward at the issue's shape
# checked against a float64 layer routed as ours (y and every gradient),
# our routing against float64, both timed beside the PyTorch layer's
# forward + backward (torch._grouped_mm, autograd, CUDA-graph replay), with
# the bf16 GEMM ceiling and the copy bandwidth of the same run. Writes
# OUTDIR/moe_grad_bench.json; exits non-zero when ours misses a bar.
# Usage: bench/moe/run_grad.sh [OUTDIR] [bench_grad.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/moe/out}
shift || true
lib=$root/bench/moe/out
mkdir -p "$out"
moe_bench_link "$lib/moe_ffn_train.o" "$lib/libmoe_ffn_train.so"
python3 "$root/bench/moe/bench_grad.py" --lib "$lib/libmoe_ffn_train.so" \
  --adapter "$lib/libmoert_mlir.so" --out "$out" "$@"
