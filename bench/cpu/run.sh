#!/usr/bin/env bash
# bench/cpu/run.sh - the CPU back end's speed on this machine, in one run.
#
# Compiles kimi-tiny (examples/models/kimi-tiny.mlir) twice with moe-compile:
# "loops" (--blas=false: every linalg op as scalar loops, the back end before
# the contraction runtime) and "blas" (the default: fp32 contractions through
# lib/CpuRuntime and OpenBLAS). Runs each executable's forward pass at
# B=4, T=128 (the issue's training shape) RUNS times, alternating the two so
# that both see the same load; each run reports the mean time of its
# REPEAT-1 forward passes after the first. Then times OpenBLAS's sgemm
# (bench/cpu/sgemm.cpp) at the shape of the model's projections
# (512 x 256 x 256, tokens x out x in) and at 1024^3, and prints a table:
# tokens/s (best, median, worst of the runs) and, from the multiply-adds the
# contraction runtime counts (MOE_CPU_PROFILE=1), the forward pass's
# contraction GFLOP/s over its whole forward time, as a fraction of the
# sgemm rate. The machine is shared: read the best and the spread.
#
# Environment: MOE_BUILD_DIR (default build), RUNS (default 5), REPEAT
# (default 4), OUT (where executables and logs go; default
# bench/cpu/out).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MOE_BUILD_DIR:-$root/build}
out=${OUT:-$root/bench/cpu/out}
runs=${RUNS:-5}
repeat=${REPEAT:-4}
model=$root/examples/models/kimi-tiny.mlir
batch=4
seq=128
mkdir -p "$out"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bin/moe-compile" "$model" --blas=false -o "$out/kimi-tiny-loops"
"$build/bin/moe-compile" "$model" -o "$out/kimi-tiny-blas"
g++ -O2 -std=c++17 "$root/bench/cpu/sgemm.cpp" -lopenblas -o "$out/sgemm"

# forward EXE LOG: one run, appends its tokens/s to LOG.
forward() {
  local exe=$1 log=$2
  MOE_CPU_PROFILE=1 "$out/$exe" --batch=$batch --seq-len=$seq \
    --repeat="$repeat" --verbose > "$out/$exe.stdout" 2> "$out/$exe.stderr"
  local line
  line=$(grep 'forward, mean' "$out/$exe.stderr")
  # "forward, mean of the N later runs: X ms, Y tokens/s"
  echo "$line" | sed 's/.*: \([0-9.]*\) ms, \([0-9.]*\) tokens.*/\1 \2/' >> "$log"
  # Contraction multiply-adds of all REPEAT passes.
  grep 'contractions' "$out/$exe.stderr" |
    sed 's/.*calls, \([0-9.e+]*\) G multiply-adds.*/\1/' > "$out/$exe.gmacs" || true
  grep -h '^loss' "$out/$exe.stdout" > "$out/$exe.loss"
}

rm -f "$out"/*.times
for ((r = 0; r < runs; ++r)); do
  forward kimi-tiny-loops "$out/loops.times"
  forward kimi-tiny-blas "$out/blas.times"
done
"$out/sgemm" --repeat=20 512 256 256 1024 1024 1024 > "$out/sgemm.txt" 2> /dev/null

if ! cmp -s "$out/kimi-tiny-loops.loss" "$out/kimi-tiny-blas.loss"; then
  echo "note: losses differ (summation order): $(cat "$out/kimi-tiny-loops.loss") vs $(cat "$out/kimi-tiny-blas.loss")"
fi
python3 - "$out" "$repeat" "$((batch * seq))" <<'PY'
import statistics, sys
out, repeat, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def times(name):
    rows = [tuple(map(float, l.split())) for l in open(f"{out}/{name}.times")]
    return [r[1] for r in rows], [r[0] for r in rows]
sgemm = {}
for line in open(f"{out}/sgemm.txt"):
    f = line.split()
    sgemm[(int(f[1]), int(f[2]), int(f[3]))] = tuple(map(float, f[4:7]))
print(f"{'kimi-tiny forward, B=4 T=128':34s} {'best tok/s':>11s} {'median':>8s} {'worst':>8s} {'best ms':>8s}")
best = {}
for name in ("loops", "blas"):
    tps, ms = times(name)
    best[name] = (max(tps), min(ms))
    print(f"  {name:32s} {max(tps):11.1f} {statistics.median(tps):8.1f} {min(tps):8.1f} {min(ms):8.1f}")
print(f"  speed-up (best / best)           {best['blas'][0] / best['loops'][0]:11.2f}x")
gmacs = float(open(f"{out}/kimi-tiny-blas.gmacs").read() or 0) / repeat
print(f"\ncontraction work per forward: {gmacs * 2:.3f} GFLOP ({gmacs:.3f} G multiply-adds)")
for key, (b, med, w) in sgemm.items():
    print(f"OpenBLAS sgemm {key[0]}x{key[1]}x{key[2]}: best {b:.1f} GFLOP/s, median {med:.1f}, worst {w:.1f}")
ref = sgemm[(512, 256, 256)][0]
for name in ("loops", "blas"):
    rate = gmacs * 2 / (best[name][1] / 1e3)
    print(f"  {name:6s} forward: {rate:6.2f} GFLOP/s of contractions over its whole time = {100 * rate / ref:5.1f}% of the best 512x256x256 sgemm rate")
PY
