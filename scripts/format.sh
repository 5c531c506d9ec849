#!/usr/bin/env bash
# format.sh - format every C and C++ file of moe-mlir in place.
#
# Usage: scripts/format.sh
#
# Runs clang-format-22 -i (LLVM style, see .clang-format) on the files that
# .ci/run checks: the tracked *.c, *.cpp and *.h files plus new, not yet
# committed ones. TableGen files are not formatted.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v clang-format-22 >/dev/null 2>&1 ||
  moe_die "clang-format-22 not found; scripts/test.sh installs it"
moe_cxx_files | xargs -0 -r clang-format-22 -i
