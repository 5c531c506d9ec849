#!/usr/bin/env bash
# bench/mla/run_grad.sh - the MLA attention forward + backward benchmark, on
# the GPU machine, in one command: links bench/mla/out/mla_train.o and
# mla_train_bf16.o (from bench/mla/compile_grad.sh, run where MLIR 22 is)
# against moert's MLIR adapter and runs bench/mla/bench_grad.py, which checks
# them and PyTorch SDPA forward + backward against float64 autograd and times
# them against each other, the bf16 GEMM ceiling and the copy bandwidth in
# the same run.
# Usage: bench/mla/run_grad.sh [OUTDIR] [bench_grad.py options]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/mla/out}
shift || true
lib=$root/bench/mla/out
mkdir -p "$out"
moe_bench_build_adapter "$lib"
libs=()
for name in mla_train mla_train_bf16; do
  [[ -f $lib/$name.o ]] || continue
  moe_bench_link_object "$lib/$name.o" "$lib/lib$name.so"
  libs+=(--lib "ours${name#mla_train}=$lib/lib$name.so")
done
if [[ ${#libs[@]} -eq 0 ]]; then
  echo "bench/mla: no mla_train*.o in $lib (run bench/mla/compile_grad.sh)" >&2
  exit 1
fi
python3 "$root/bench/mla/bench_grad.py" "${libs[@]}" --adapter "$lib/libmoert_mlir.so" \
  --out "$out" "$@"
