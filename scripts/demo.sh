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
# moe-compile into $MOE_BUILD_DIR/demo/<model> and runs its forward pass on
# the executable's embedded sample text, which prints `loss <value>` (about
# ln(256) = 5.55 for the untrained kimi-tiny). The CPU back end is used: the
# CUDA target of moe-compile does not exist yet, even where a GPU is present.
# A second run only checks that nothing changed (the executable is rebuilt
# only when the model or moe-compile is newer) and is fast.
#
# Environment: MOE_BUILD_DIR (default: build/), MOE_JOBS (default: 2).
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

# Compile the first model and run it on the embedded data.
model=$1
name=$(basename "$model" .mlir)
exe="$MOE_BUILD_DIR/demo/$name"
mkdir -p "$MOE_BUILD_DIR/demo"
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  moe_log "a GPU is present, but moe-compile --target=cuda is not supported yet; using the CPU"
fi
if [[ ! -x "$exe" || "$model" -nt "$exe" || "$MOE_BUILD_DIR/bin/moe-compile" -nt "$exe" ]]; then
  moe_log "moe-compile ${model#"$MOE_ROOT"/} -o ${exe#"$MOE_ROOT"/} (CPU, about a minute)"
  "$MOE_BUILD_DIR/bin/moe-compile" "$model" -o "$exe" ||
    moe_die "moe-compile failed on $model"
fi
moe_log "forward pass of $name on the embedded sample text"
"$exe" --verbose || moe_die "$exe failed"
