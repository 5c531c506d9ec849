#!/usr/bin/env bash
# bench/mla/compile.sh - compile the benchmark's gated MLA attention kernel on
# the build machine.
#
# MLIR 22 is here, not on the GPU machine: this lowers @mla_attention_forward
# at the real model's shapes (H = 32, d_qk = 192, d_v = 128; batch and length
# dynamic) with moe-lower-to-nvvm into host code plus embedded sm_90 PTX, and
# compiles the host code to bench/mla/out/mla_attention_forward.o (and the
# variants below).
# bench/mla/run.sh links it on the GPU machine. The kernel is
# examples/kernels/mla.mlir with its shapes rewritten (4 -> 32 heads,
# 96 -> 192, 64 -> 128), so the benchmark runs exactly the example's code;
# the default scale D_qk^-1/2 follows the new d_qk.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/bench/mla/out
mkdir -p "$out"

sed -e 's/?x?x4x96xf32/?x?x32x192xf32/g' -e 's/?x?x4x64xf32/?x?x32x128xf32/g' \
    -e 's/?x4x?xf32/?x32x?xf32/g' \
    "$root/examples/kernels/mla.mlir" > "$out/mla_h32_qk192_v128.mlir"
if grep -q 'x4x' "$out/mla_h32_qk192_v128.mlir"; then
  echo "bench/mla: shape rewrite left a 4-head type:" >&2
  grep -n 'x4x' "$out/mla_h32_qk192_v128.mlir" >&2
  exit 1
fi
# The generated tensor-core kernel (-moe-generate-attention-kernels) with the
# pipeline's defaults (256 query rows per block, fp32 K and V converted to
# bf16 once), and variants mla_attention_forward_<name>.o that run.sh also
# links: 64 rows (four warps of 16, Q fragments in registers) and, from the
# same kernel with bf16 q, k, v, gate and output
# (mla_h32_qk192_v128_bf16.mlir; bench.py feeds variants named *bf16* bf16
# tensors), 256, 128 and 64 rows.
moe_bench_compile "$out/mla_h32_qk192_v128.mlir" "$out/mla_attention_forward.o"
moe_bench_compile "$out/mla_h32_qk192_v128.mlir" "$out/mla_attention_forward_qt64.o" \
  "attention-query-tile=64"
sed -e 's/x192xf32/x192xbf16/g' -e 's/x128xf32/x128xbf16/g' \
    "$out/mla_h32_qk192_v128.mlir" > "$out/mla_h32_qk192_v128_bf16.mlir"
moe_bench_compile "$out/mla_h32_qk192_v128_bf16.mlir" \
  "$out/mla_attention_forward_bf16.o"
for tile in 128 64; do
  moe_bench_compile "$out/mla_h32_qk192_v128_bf16.mlir" \
    "$out/mla_attention_forward_bf16_qt$tile.o" "attention-query-tile=$tile"
done
# The example as it is (H = 4, d_qk = 96, d_v = 64, fp32) and the CPU back
# end's results on seeded inputs at the lengths of issue #6's CPU test:
# bench.py checks the GPU kernel against them on the GPU machine.
moe_bench_compile "$root/examples/kernels/mla.mlir" "$out/mla_example.o"
rm -rf "$out/cpu"
build=${MOE_BUILD_DIR:-$root/build}
for t in 1 17 64 130 300; do
  python3 "$root/bench/cpu_reference.py" --moe-run "$build/bin/moe-run" \
    --kernel "$root/examples/kernels/mla.mlir" --entry mla_attention_forward \
    --out "$out/cpu/t$t" --seed "$t" --input "2,$t,4,96:-1:1" \
    --input "2,$t,4,96:-1:1" --input "2,$t,4,64:-1:1" --input "2,$t,4,64:-2:2"
done
