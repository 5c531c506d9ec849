#!/usr/bin/env bash
# bench/mla/compile_grad.sh - compile the MLA attention forward + backward
# benchmark's kernels on the build machine (where MLIR 22 is).
#
# Lowers bench/mla/mla_train.mlir (@mla_train_forward: y and the log-sum-exp;
# @mla_train_backward: moe.mla_attention_grad -> dq, dk, dv, dgate; H = 32,
# d_qk = 192, d_v = 128, batch and length dynamic) with moe-lower-to-nvvm
# into host code plus embedded sm_90 PTX:
#   bench/mla/out/mla_train.o       fp32 operands (converted to bf16 by the
#                                   generated kernels' prep steps);
#   bench/mla/out/mla_train_bf16.o  the same functions with bf16 q, k, v,
#                                   gate, y, dy and gradients (the lse stays
#                                   fp32), as the GPU suite's mla_grad_bf16.
# Both with the pipeline's defaults (forward: 256 query rows per block;
# backward: prep, dK dV per key tile, dQ per query tile). Fails unless both
# ops got the generated tensor-core kernels.
# bench/mla/run_grad.sh links them on the GPU machine.
# Usage: bench/mla/compile_grad.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/mla/out
mkdir -p "$out"

cp "$root/bench/mla/mla_train.mlir" "$out/mla_train.mlir"
sed -e 's/x192xf32/x192xbf16/g' -e 's/x128xf32/x128xbf16/g' \
    "$root/bench/mla/mla_train.mlir" > "$out/mla_train_bf16.mlir"
if grep -q 'x192xf32\|x128xf32' "$out/mla_train_bf16.mlir"; then
  echo "bench/mla: the bf16 rewrite left an f32 operand:" >&2
  grep -n 'x192xf32\|x128xf32' "$out/mla_train_bf16.mlir" >&2
  exit 1
fi

for name in mla_train mla_train_bf16; do
  moe_bench_compile "$out/$name.mlir" "$out/$name.o"
  remarks=$out/$name.remarks.txt
  grep -o 'mla_attention GPU kernel:.*\|mla_attention_grad GPU kernels:.*' "$remarks" || true
  if ! grep -q 'mla_attention GPU kernel:' "$remarks" ||
     ! grep -q 'mla_attention_grad GPU kernels:' "$remarks"; then
    echo "bench/mla: $name.mlir did not get the generated forward and backward" \
         "kernels (see $remarks)" >&2
    exit 1
  fi
done
