#!/usr/bin/env bash
# demo.sh - install, build and run moe-mlir on its example models.
#
# Usage: scripts/demo.sh [MODEL.mlir ...]      (as root, or with sudo)
#
# Installs the missing Debian 12 packages, configures the build (once), builds
# with ninja and prints the summary of each model: layers, parameters and
# active parameters per token. Without arguments it summarizes the default
# model, examples/models/kimi-tiny.mlir, and the full-size
# examples/models/kimi-linear-48b.mlir. Then it compiles the first model with
# moe-compile into the training program $MOE_BUILD_DIR/demo/<model>-cpu and
# trains it on the CPU on the corpus embedded in the executable (Debian's
# fortune databases, bytes as tokens) with the executable's defaults: 300
# AdamW steps of 4 x 128 tokens, warm-up then stable then decaying learning
# rate, one line per step (`step <n> loss <v> lr <v> grad-norm <v> max-vio
# <v> ... tok/s <v>`), the held-out loss every 50 steps, and at the end where
# the time went. The loss starts near ln 256 = 5.55 and falls by more than 2
# nats. The GPU back end cannot train yet, so training runs on the CPU even
# where a GPU is present.
# A second run only checks that nothing changed (the executable is rebuilt
# only when the model or moe-compile is newer) and trains again.
#
# Environment: MOE_BUILD_DIR (default: build/), MOE_JOBS (default: 2),
# MOE_DEMO_STEPS (training steps, default: 300), MOE_DEMO_ARGS (more options
# for the executable, e.g. "--lr=1e-3 --seed=1"; run it with --help).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

moe_setup

if (($# == 0)); then
  set -- "$MOE_ROOT/examples/models/kimi-tiny.mlir" \
    "$MOE_ROOT/examples/models/kimi-linear-48b.mlir"
fi

for model in "$@"; do
  [[ -f "$model" ]] || moe_die "no such model: $model"
  moe_log "model summary: ${model#"$MOE_ROOT"/}"
  # The pass prints the summary to stdout; the IR itself is not wanted.
  "$MOE_BUILD_DIR/bin/moe-opt" --moe-print-model-summary "$model" -o /dev/null ||
    moe_die "moe-opt failed on $model"
done

# Compile the first model and train it on the embedded corpus.
model=$1
name=$(basename "$model" .mlir)
mkdir -p "$MOE_BUILD_DIR/demo"
steps=${MOE_DEMO_STEPS:-300}
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || moe_die "MOE_DEMO_STEPS must be a positive integer, got '$steps'"

exe="$MOE_BUILD_DIR/demo/$name-cpu"
if [[ ! -x "$exe" || "$model" -nt "$exe" || "$MOE_BUILD_DIR/bin/moe-compile" -nt "$exe" ]]; then
  moe_log "moe-compile ${model#"$MOE_ROOT"/} -o ${exe#"$MOE_ROOT"/} (the training program; a few minutes)"
  "$MOE_BUILD_DIR/bin/moe-compile" "$model" -o "$exe" ||
    moe_die "moe-compile failed on $model"
fi
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  moe_log "a GPU is present, but the GPU back end cannot train yet: training on the CPU"
fi
moe_log "training $name on the embedded corpus for $steps steps (cpu)"
# shellcheck disable=SC2086 # MOE_DEMO_ARGS is a list of options.
"$exe" --steps="$steps" --eval-every=50 ${MOE_DEMO_ARGS:-} ||
  moe_die "training $name failed"
