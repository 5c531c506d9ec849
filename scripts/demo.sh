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
# ln(256) = 5.55 for the untrained kimi-tiny). Where a GPU is present
# (nvidia-smi lists one) it compiles with --target=cuda and runs on GPU 0,
# falling back to the CPU if that fails; otherwise it uses the CPU.
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
mkdir -p "$MOE_BUILD_DIR/demo"

# demo_run TARGET: compiles the model for TARGET (cpu or cuda) unless the
# executable is up to date, then runs it on the embedded sample text.
demo_run() {
  local target=$1
  local exe="$MOE_BUILD_DIR/demo/$name-$target"
  if [[ ! -x "$exe" || "$model" -nt "$exe" || "$MOE_BUILD_DIR/bin/moe-compile" -nt "$exe" ]]; then
    moe_log "moe-compile ${model#"$MOE_ROOT"/} --target=$target -o ${exe#"$MOE_ROOT"/} (about a minute)"
    "$MOE_BUILD_DIR/bin/moe-compile" "$model" --target="$target" -o "$exe" ||
      return 1
  fi
  moe_log "forward pass of $name on the embedded sample text ($target)"
  "$exe" --verbose
}

if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  demo_run cuda && exit 0
  moe_log "the cuda run failed; using the CPU"
fi
demo_run cpu || moe_die "$name failed on the CPU"
