#!/usr/bin/env bash
# bench/moe/compile_grad.sh - compile the MoE layer's forward + backward
# benchmark kernels on the build machine.
#
# MLIR 22 is here, not on the GPU machine: this lowers
# bench/moe/moe_ffn_train.mlir (@moe_ffn_train_forward and
# @moe_ffn_train_backward at the issue's shape: d = 2048, E = 64 experts of
# F = 1024, top-8, a shared expert of 1024, SwiGLU, bf16, exact quantile
# balancing; token count dynamic) with moe-lower-to-nvvm into host code plus
# embedded sm_90 PTX, and compiles the host code to
# bench/moe/out/moe_ffn_train.o. bench/moe/run_grad.sh links it on the GPU
# machine and runs bench/moe/bench_grad.py.
# Usage: bench/moe/compile_grad.sh [moe-lower-to-nvvm options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/moe/out
mkdir -p "$out"

moe_bench_compile "$root/bench/moe/moe_ffn_train.mlir" "$out/moe_ffn_train.o" "${1:-}"
# What the generators took and left (the remarks file keeps the IR notes).
grep -o 'remark: .*' "$out/moe_ffn_train.remarks.txt" | sort | uniq -c || true
