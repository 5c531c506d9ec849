#!/usr/bin/env bash
# bench/kda/compile.sh - compile the benchmark's KDA kernel on the build machine.
#
# MLIR 22 is here, not on the GPU machine: this lowers @kda_forward at the
# benchmark's shapes (H = 16, K = V = 128; batch and length dynamic) with
# moe-lower-to-nvvm into host code plus embedded sm_90 PTX, and compiles the
# host code to bench/kda/out/kda_forward.o, and once more with the diagonal
# tiles forced per position (kda_forward_per_position.o) for the
# dense/per-position ratio, and bench/kda/kda_train.mlir (forward +
# backward) to kda_train.o. bench/kda/run.sh and run_grad.sh link them on the
# GPU machine.
# The kernel is examples/kernels/kda.mlir with its shapes rewritten, so the
# benchmark runs exactly the example's code.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/kda/out
mkdir -p "$out"

sed -e 's/?x?x4x64x/?x?x16x128x/g' -e 's/?x?x4xf32/?x?x16xf32/g' \
    -e 's/<4xf32>/<16xf32>/g' -e 's/<4x64xf32>/<16x128xf32>/g' \
    -e 's/?x4x64x64x/?x16x128x128x/g' \
    "$root/examples/kernels/kda.mlir" > "$out/kda_h16_k128.mlir"
moe_bench_compile "$out/kda_h16_k128.mlir" "$out/kda_forward.o"
moe_bench_compile "$out/kda_h16_k128.mlir" "$out/kda_forward_per_position.o" \
  "kda-diagonal=per-position"
# The forward + backward of bench/kda/bench_grad.py (bench/kda/run_grad.sh).
moe_bench_compile "$root/bench/kda/kda_train.mlir" "$out/kda_train.o"
