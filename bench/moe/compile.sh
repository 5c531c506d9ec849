#!/usr/bin/env bash
# bench/moe/compile.sh - compile the benchmark's MoE FFN kernel on the build
# machine.
#
# MLIR 22 is here, not on the GPU machine: this lowers @moe_ffn_forward
# (examples/kernels/moe_ffn.mlir as it is: d = 64, E = 16, top-4, F = 32,
# exact quantile balancing; token count dynamic) with moe-lower-to-nvvm into
# host code plus embedded sm_90 PTX, and compiles the host code to
# bench/moe/out/moe_ffn_forward.o. bench/moe/run.sh links it on the GPU
# machine. The peer runs at the issue's shape in PyTorch alone; our kernel
# stays at the example's small shape.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/moe/out
mkdir -p "$out"

moe_bench_compile "$root/examples/kernels/moe_ffn.mlir" "$out/moe_ffn_forward.o"
# A bf16 layer small enough for the CPU back end, and the CPU back end's
# results on seeded inputs (exact in bf16) for it and for the f32 example:
# bench.py checks our GPU kernels against them on the GPU machine.
moe_bench_compile "$root/bench/moe/moe_ffn_bf16_small.mlir" "$out/moe_ffn_bf16_small.o"
rm -rf "$out/cpu"
build=${MOE_BUILD_DIR:-$root/build}
for n in 1 300 1000; do
  python3 "$root/bench/cpu_reference.py" --moe-run "$build/bin/moe-run" \
    --kernel "$root/bench/moe/moe_ffn_bf16_small.mlir" --entry moe_ffn_bf16 \
    --out "$out/cpu/bf16_$n" --seed "$n" --input "$n,256:-1:1" \
    --input 8,256:-0.11:0.11 --input 8:-0.05:0.05 \
    --input 8,256,128:-0.11:0.11 --input 8,256,128:-0.11:0.11 \
    --input 8,128,256:-0.15:0.15 --input 256,128:-0.11:0.11 \
    --input 256,128:-0.11:0.11 --input 128,256:-0.15:0.15
done
for n in 1 256 1000; do
  python3 "$root/bench/cpu_reference.py" --moe-run "$build/bin/moe-run" \
    --kernel "$root/examples/kernels/moe_ffn.mlir" --entry moe_ffn_forward \
    --out "$out/cpu/f32_$n" --seed "$n" --input "$n,64:-1:1" \
    --input 16,64:-0.22:0.22 --input 16:-0.05:0.05 \
    --input 16,64,32:-0.22:0.22 --input 16,64,32:-0.22:0.22 \
    --input 16,32,64:-0.3:0.3 --input 64,32:-0.22:0.22 \
    --input 64,32:-0.22:0.22 --input 32,64:-0.3:0.3
done
# The whole layer at the issue's shape (bf16): routing, grouped experts,
# shared expert and combine, each from its kernel generator.
moe_bench_compile "$root/bench/moe/moe_ffn_large.mlir" "$out/moe_ffn_large.o"
# The routed experts alone at the issue's shape (bf16, grouped GEMMs).
moe_bench_compile "$root/bench/moe/experts.mlir" "$out/experts.o"
# Pipeline variants of the expert GEMMs (reduction step, stages), timed
# beside the default by run.sh.
# MOE_EXPERT_VARIANTS: NAME=OPTIONS entries, e.g.
# "c256=expert-block-cols=256 k64s3=expert-reduction-step=64,expert-stages=3"
# (commas between the options of one entry).
for variant in ${MOE_EXPERT_VARIANTS:-}; do
  name=${variant%%=*} options=${variant#*=}
  moe_bench_compile "$root/bench/moe/experts.mlir" "$out/experts_$name.o" \
    "${options//,/ }"
done
