#!/usr/bin/env bash
# bench/train/compile.sh [MODEL.mlir] - step 1 of 2 of the training-step
# benchmark: where MLIR 22 and the build are (not the GPU machine), compiles
# MODEL (default examples/models/kimi-tiny.mlir) into its CUDA training
# program bench/train/out/train-cuda (moe-compile --target=cuda, PTX that
# the driver compiles at start). Step 2, bench/train/run.sh, runs on the GPU
# machine with bench/train/out (and .peers/fla) carried along.
# Environment: MOE_BUILD_DIR (default build/), MOE_TRAIN_OUT (default
# bench/train/out).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MOE_BUILD_DIR:-$root/build}
model=${1:-$root/examples/models/kimi-tiny.mlir}
out=${MOE_TRAIN_OUT:-$root/bench/train/out}

mkdir -p "$out"
echo "compiling $model's training program for cuda"
"$build/bin/moe-compile" "$model" --target=cuda -o "$out/train-cuda" --timing \
  2> "$out/compile-timing.txt"
grep -E "Total|lower \(|LLVM" "$out/compile-timing.txt" | head -5
basename "$model" .mlir > "$out/model.txt"
# Only the CUDA driver may be needed at run time.
if ldd "$out/train-cuda" | grep -E 'mlir|LLVM|moert'; then
  echo "error: train-cuda depends on MLIR/LLVM/moert libraries" >&2
  exit 1
fi
ls -la "$out/train-cuda"
