#!/usr/bin/env bash
# bench/mla/run.sh - the gated MLA attention benchmark, on the GPU machine, in
# one command.
#
# Needs bench/mla/out/mla_attention_forward.o from bench/mla/compile.sh (run
# where MLIR 22 is installed). Builds moert's MLIR adapter with the machine's
# compiler, links the kernel into a shared library and runs
# bench/mla/bench.py, which checks our tensor-core kernel (the pipeline's
# defaults and the variants compile.sh builds: other query tiles, bf16
# inputs and output) and PyTorch SDPA against a float64 reference and times
# them at the real shapes against the bf16 GEMM ceiling measured in the same
# run.
# Usage: bench/mla/run.sh [OUTDIR] [bench.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/mla/out}
shift || true
lib=$root/bench/mla/out
mkdir -p "$out"
moe_bench_link "$lib/mla_attention_forward.o" "$lib/libmla_attention_forward.so"
alt=()
for object in "$lib"/mla_attention_forward_*.o; do
  [[ -f $object ]] || continue
  name=$(basename "$object" .o)
  moe_bench_link "$object" "$lib/lib$name.so"
  alt+=(--lib-alt "ours_${name#mla_attention_forward_}=$lib/lib$name.so")
done
example=()
if [[ -f $lib/mla_example.o && -d $lib/cpu ]]; then
  moe_bench_link "$lib/mla_example.o" "$lib/libmla_example.so"
  example=(--example-lib "$lib/libmla_example.so" --cpu-cases "$lib/cpu")
fi
python3 "$root/bench/mla/bench.py" --lib "$lib/libmla_attention_forward.so" "${example[@]}" \
  "${alt[@]}" --adapter "$lib/libmoert_mlir.so" --out "$out" "$@"
