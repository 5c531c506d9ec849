#!/usr/bin/env bash
# bench/model/compile.sh [MODEL.mlir] - the whole-model check of issue #7
# part 5, step 1 of 2. Runs where MLIR 22 is installed (not on the GPU
# machine): compiles MODEL (default examples/models/kimi-tiny.mlir) with
# `moe-compile --target=cuda` into bench/model/out/model-cuda (PTX, which
# the driver compiles at start; model-cuda-cubin: cubin), runs the CPU
# executable of the same model on the embedded sample text for each batch
# configuration below and writes its losses to bench/model/out/cpu-losses.txt
# (the CPU executable needs MLIR's runtime libraries, which the GPU machine
# lacks). Step 2, bench/model/run.sh, runs on the GPU machine with
# bench/model/out carried along.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MOE_BUILD_DIR:-$root/build}
model=${1:-$root/examples/models/kimi-tiny.mlir}
# MOE_MODEL_OUT: the output folder (default bench/model/out; kimi-small goes
# to bench/model/out-small so that both can be carried). MOE_MODEL_CONFIGS:
# ';'-separated "batch seq_len seed tokens [nocpu]" entries instead of the
# list below; nocpu leaves the CPU loss out ('-': a timed shape that the CPU
# back end would take hours over, which run.sh times without a check).
out=${MOE_MODEL_OUT:-$root/bench/model/out}
# batch, sequence length, seed, tokens: "-" reads the embedded sample text
# (B*T + 1 <= 837 bytes); tokens.bin is a seeded random byte stream of
# 16 * 2048 + 1 tokens for the timed shapes. 64 is one KDA chunk; 128 and
# 512 carry the state across chunks.
configs=("2 64 0 -" "4 128 0 -" "1 512 1 -" "4 2048 0 tokens.bin"
  "16 2048 0 tokens.bin")
if [[ -n ${MOE_MODEL_CONFIGS:-} ]]; then
  IFS=';' read -ra configs <<< "$MOE_MODEL_CONFIGS"
fi

rm -rf "$out"
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "compiling $model for cuda"
"$build/bin/moe-compile" "$model" --forward-only --target=cuda -o "$out/model-cuda" \
  --remarks 2> "$out/remarks.txt"
# The same with the kernels assembled here by ptxas (cubin): no JIT at start.
"$build/bin/moe-compile" "$model" --forward-only --target=cuda --gpu-format=bin \
  -o "$out/model-cuda-cubin"
python3 -c "
import random, struct, sys
random.seed(1234)
n = 16 * 2048 + 1
sys.stdout.buffer.write(struct.pack('<%dI' % n, *(random.randrange(256) for _ in range(n))))
" > "$out/tokens.bin"
grep -o 'kda GPU kernels[^(]*\|mla_attention GPU kernel[^(]*' "$out/remarks.txt" |
  sort | uniq -c || true
echo "compiling $model for cpu"
"$build/bin/moe-compile" "$model" --forward-only -o "$scratch/model-cpu"

# Only the CUDA driver may be needed at run time.
if ldd "$out"/model-cuda* | grep -E 'mlir|LLVM|moert'; then
  echo "error: model-cuda depends on MLIR/LLVM/moert libraries" >&2
  exit 1
fi

{
  echo "# batch seq_len seed tokens cpu_loss cpu_tokens_per_s (model $(basename "$model"), commit $(git -C "$root" rev-parse --short HEAD))"
  for config in "${configs[@]}"; do
    read -r batch length seed tokens cpu <<< "$config"
    if [[ ${cpu:-} == nocpu ]]; then
      echo "$batch $length $seed $tokens - -"
      continue
    fi
    source=()
    [[ $tokens != - ]] && source=(--tokens="$out/$tokens")
    "$scratch/model-cpu" --batch="$batch" --seq-len="$length" --seed="$seed" \
      "${source[@]}" --verbose > "$scratch/cpu.out" 2> "$scratch/cpu.err"
    loss=$(awk '$1 == "loss" { print $2 }' "$scratch/cpu.out")
    rate=$(sed -n 's/^forward .* s, \(.*\) tokens\/s$/\1/p' "$scratch/cpu.err")
    echo "$batch $length $seed $tokens $loss $rate"
  done
} > "$out/cpu-losses.txt"
cat "$out/cpu-losses.txt"
du -sh "$out"
echo "carry bench/model/out and run bench/model/run.sh on the GPU machine"
