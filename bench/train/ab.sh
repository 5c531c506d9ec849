#!/usr/bin/env bash
# bench/train/ab.sh VARIANT... - A/B of compiled training executables on the
# GPU machine, without the peer: each bench/train/out-ab/train-VARIANT runs
# 4 steps of kimi-tiny's batch (B = 16, T = 2048) with the kernel profile of
# step 2 (MOERT_KERNEL_PROFILE), and $OUT/ab.txt (or ab.txt in the folder)
# gets its step lines, kernel time, peak memory and the profile's top 22.
# Build the variants where MLIR is:
#   moe-compile examples/models/kimi-tiny.mlir --target=cuda --no-cache \
#     --gpu-pipeline-options='...' -o bench/train/out-ab/train-VARIANT
# and carry bench/train/out-ab, or pack the executables into
# bench/train/out-ab/ab.tar.xz (about 1.5 MB each instead of 9), which this
# script unpacks with Python when an executable is missing.
# Environment: MOE_AB_DIR (default bench/train/out-ab).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${MOE_AB_DIR:-$root/bench/train/out-ab}
out=${OUT:-$dir}
(($# > 0)) || { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cd "$dir" || exit 2
for v in "$@"; do
  if [[ ! -x train-$v && -f ab.tar.xz ]]; then
    python3 -c "import tarfile; tarfile.open('ab.tar.xz').extractall('.', filter='data')"
  fi
  log=$(mktemp -d)
  MOERT_KERNEL_PROFILE=1 timeout 120 "./train-$v" --batch=16 --seq-len=2048 \
    --steps=4 --log-every=1 --kernel-profile-step=2 \
    --metrics="$log/metrics.jsonl" > "$log/out" 2> "$log/err"
  rc=$?
  {
    echo "== $v rc=$rc"
    grep -hE "^step|kernels of step|peak GPU" "$log/out" "$log/err"
    grep -A22 "kernel profile" "$log/err" | head -24
    grep -iE "error|fail" "$log/err" | head -5
  } >> "$out/ab.txt"
  rm -rf "$log"
done
