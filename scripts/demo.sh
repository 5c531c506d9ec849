#!/usr/bin/env bash
# demo.sh - install, build and run moe-mlir on its example models.
#
# Usage: scripts/demo.sh [MODEL.mlir ...]      (as root, or with sudo)
#
# Installs the missing Debian 12 packages, configures the build (once), builds
# with ninja and prints the summary of each model: layers, parameters and
# active parameters per token. Without arguments it runs the embedded default
# model, examples/models/kimi-tiny.mlir, and then the full-size
# examples/models/kimi-linear-48b.mlir. A second run only checks that nothing
# changed and is fast.
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
