#!/usr/bin/env bash
# bench/checkpoint/prepare.sh - issue #15 part 2, step 1 of 2: checkpoints
# that PyTorch must load. Runs where the project is built: compiles the
# MoE toy model of test/moe-compile/train-program.mlir (a router bias, an
# expert FFN) with moe-compile, trains it 20 steps with --save-dir, and
# writes the final parameters as .npy files next to the checkpoint, into
# bench/checkpoint/out (carry it to the GPU machine). Step 2,
# bench/checkpoint/run.sh, loads the checkpoint there with PyTorch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MOE_BUILD_DIR:-$root/build}
out=$root/bench/checkpoint/out
rm -rf "$out"
mkdir -p "$out"
"$build/bin/moe-compile" "$root/test/moe-compile/train-program.mlir" -o "$out/toy"
"$out/toy" --steps=20 --seq-len=8 --batch=2 --lr=0.05 --save-dir="$out/save" \
  --dump-params="$out/params" > "$out/train.txt"
rm "$out/toy"
tail -n 4 "$out/train.txt"
echo "checkpoint: $out/save/$(cat "$out/save/latest")"
