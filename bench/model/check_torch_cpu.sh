#!/usr/bin/env bash
# bench/model/check_torch_cpu.sh - the self-check of bench/model/torch_model.py
# on the CPU: the PyTorch models must reproduce the compiled models' losses on
# the same weights and tokens, and a broken layer must fail the check.
#
# usage: bench/model/check_torch_cpu.sh            (PYTHON=... to pick the
#        interpreter; it needs torch and numpy; MOE_BUILD_DIR, default
#        build/, holds moe-compile)
#
# Not part of check-moe or CI (they have no torch). Steps:
#  1. examples/models/kimi-tiny.mlir, compiled for the CPU with --forward-only,
#     runs three batches (B x T = 2 x 128, 1 x 256, 3 x 200: KDA over 2-4
#     chunks of 64 and a partial chunk) with three weight seeds, writing its
#     weights (--dump-params), batch (--dump-batch) and loss (--loss-npy);
#     torch_model.py on those files must give the same loss within 2e-5
#     relative (the CPU back end and torch both compute in fp32).
#  2. The KDA of torch_model.py (chunked, section 1.4) against the per-token
#     recurrence (section 1.3) and, where fla's source is in .peers/fla,
#     against fla's naive_recurrent_kda, per sub-layer.
#  3. The bf16 policy path on the CPU (bf16 matmul operands, the experts
#     through torch._grouped_mm) within 5e-3 of the fp32 loss.
#  4. --break=<sub-layer> (one sign flip) must make the check fail.
#  5. A reduced kimi-small (the same structure: a dense SiTU-GLU FFN in layer
#     0, SiTU-GLU experts, MLA in every fourth layer, Block AttnRes in blocks
#     of 8 sub-layers; smaller widths), compiled from a config.json, matches
#     too.
# Prints one line per check and ends with 'N passed, N failed'; exit status 1
# if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${MOE_BUILD_DIR:-$root/build}
py=${PYTHON:-python3}
model=$root/bench/model/torch_model.py
if ! "$py" -c 'import torch, numpy' 2> /dev/null; then
  echo "error: $py has no torch (PYTHON=/path/to/python with torch and numpy)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check NAME COMMAND...: the command must exit 0
  local name=$1
  shift
  if "$@" > "$work/log" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $name: $(grep -E '^(expected|loss [a-z])' "$work/log" | tail -1)"
  else
    failed=$((failed + 1))
    echo "FAIL $name"
    sed 's/^/    /' "$work/log"
  fi
}
must_fail() { # must_fail NAME COMMAND...: the command must exit 1
  local name=$1 status=0
  shift
  "$@" > "$work/log" 2>&1 || status=$?
  # Exit status 1 from the loss check itself, not from a crash.
  if [[ $status == 1 ]] && grep -q 'OUTSIDE rtol' "$work/log"; then
    passed=$((passed + 1))
    echo "PASS $name fails as it must: $(grep '^expected' "$work/log")"
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit status $status, expected 1 from a failed loss check"
    sed 's/^/    /' "$work/log"
  fi
}

echo "compiling examples/models/kimi-tiny.mlir for the CPU"
"$build/bin/moe-compile" "$root/examples/models/kimi-tiny.mlir" --forward-only \
  -o "$work/tiny" 2> "$work/compile.log" || { cat "$work/compile.log"; exit 1; }
for config in "2 128 3" "1 256 7" "3 200 11"; do
  read -r b t seed <<< "$config"
  run=$work/tiny-$b-$t
  mkdir -p "$run"
  "$work/tiny" --batch="$b" --seq-len="$t" --seed="$seed" --dump-params="$run/params" \
    --dump-batch="$run/batch" --loss-npy="$run/loss.npy" > /dev/null
  check "kimi-tiny B=$b T=$t seed $seed, fp32" \
    "$py" "$model" kimi-tiny --params "$run/params" --batch "$run/batch" \
    --expect-npy "$run/loss.npy" --rtol 2e-5
done
run=$work/tiny-1-256
check "kimi-tiny chunked KDA vs the per-token recurrence" \
  "$py" "$model" kimi-tiny --params "$run/params" --batch "$run/batch" \
  --expect-npy "$run/loss.npy" --rtol 2e-5 --compare-kda recurrent
if "$py" -c "import sys; sys.path.insert(0, '$root/.peers/fla'); import fla.ops.kda" 2> /dev/null; then
  run=$work/tiny-3-200
  check "kimi-tiny chunked KDA vs fla's naive_recurrent_kda" \
    "$py" "$model" kimi-tiny --params "$run/params" --batch "$run/batch" \
    --expect-npy "$run/loss.npy" --rtol 2e-5 --compare-kda fla-naive
else
  echo "SKIP fla's naive_recurrent_kda: fla is not importable from .peers/fla"
fi
run=$work/tiny-2-128
check "kimi-tiny bf16 operands, torch._grouped_mm experts" \
  "$py" "$model" kimi-tiny --params "$run/params" --batch "$run/batch" \
  --expect-npy "$run/loss.npy" --rtol 5e-3 --precision bf16 --experts grouped_mm
for broken in layers.0.mixer layers.2.mixer layers.3.mixer layers.1.ffn; do
  must_fail "kimi-tiny with $broken negated" \
    "$py" "$model" kimi-tiny --params "$run/params" --batch "$run/batch" \
    --expect-npy "$run/loss.npy" --rtol 2e-5 --break "$broken"
done

# A reduced kimi-small: kimi-small.json's structure with smaller widths.
"$py" - "$root/examples/configs/kimi-small.json" "$work/small-mini.json" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(vocab_size=512, hidden_size=128, num_hidden_layers=8, num_attention_heads=2,
         kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
         intermediate_size=256, num_experts=8, num_experts_per_token=2,
         moe_intermediate_size=64)
c["linear_attn_config"].update(kda_layers=[1, 2, 3, 5, 6, 7], full_attn_layers=[4, 8],
                               num_heads=2, head_dim=64)
c["moe_mlir"]["model_name"] = "kimi_small_mini"
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
echo "compiling a reduced kimi-small (config.json) for the CPU"
"$build/bin/moe-compile" "$work/small-mini.json" --forward-only -o "$work/small" \
  2> "$work/compile.log" || { cat "$work/compile.log"; exit 1; }
run=$work/small-2-160
mkdir -p "$run"
"$work/small" --batch=2 --seq-len=160 --seed=5 --dump-params="$run/params" \
  --dump-batch="$run/batch" --loss-npy="$run/loss.npy" > /dev/null
check "reduced kimi-small B=2 T=160, fp32" \
  "$py" "$model" "$work/small-mini.json" --params "$run/params" --batch "$run/batch" \
  --expect-npy "$run/loss.npy" --rtol 2e-5
must_fail "reduced kimi-small with layers.0.ffn (dense SiTU-GLU) negated" \
  "$py" "$model" "$work/small-mini.json" --params "$run/params" --batch "$run/batch" \
  --expect-npy "$run/loss.npy" --rtol 2e-5 --break layers.0.ffn

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
