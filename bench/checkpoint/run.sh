#!/usr/bin/env bash
# bench/checkpoint/run.sh - issue #15 part 2, step 2 of 2. Runs on the GPU
# machine with bench/checkpoint/out from prepare.sh carried along: loads the
# checkpoint's model.safetensors and optimizer.safetensors with PyTorch onto
# the GPU (load_torch.py) and checks every tensor against the .npy files of
# the same run. Writes load-torch.json to $OUT (if set) or
# bench/checkpoint/out. Exit status 0 when everything matches.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python3 "$root/bench/checkpoint/load_torch.py" "$root/bench/checkpoint/out" \
  "${OUT:-$root/bench/checkpoint/out}"
