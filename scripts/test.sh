#!/usr/bin/env bash
# test.sh - install, build and run every moe-mlir test.
#
# Usage: scripts/test.sh      (as root, or with sudo, when packages are missing)
#
# Installs the missing Debian 12 packages, configures the build (once), builds
# everything, runs the lit suite (check-moe) and builds the generated
# documentation (moe-doc). The last line of output is always
#
#   N passed, M failed
#
# where the lit tests count one each and the documentation build counts as one
# more test; unsupported tests count as neither, expectedly failing (XFAIL)
# tests as passed. A failed build counts as one failure in place of the tests
# it prevents. The exit status is non-zero when M > 0.
#
# Environment: MOE_BUILD_DIR (default: build/), MOE_JOBS (default: 2).
set -uo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# moe_die exits the subshell only, so that the summary line is still printed.
if ! (moe_install_packages && moe_configure); then
  echo "0 passed, 1 failed"
  exit 1
fi

passed=0
failed=0

if moe_ninja; then
  # lit appends LIT_OPTS to the arguments that check-moe passes it.
  xml="$MOE_BUILD_DIR/test/check-moe.xunit.xml"
  rm -f "$xml"
  LIT_OPTS="${LIT_OPTS:-} --xunit-xml-output=$xml" moe_ninja check-moe
  lit_status=$?
  if [[ -f "$xml" ]]; then
    read -r lit_passed lit_failed lit_skipped < <(moe_count_xunit "$xml") ||
      { lit_passed=0; lit_failed=0; lit_skipped=0; }
    moe_log "lit: $lit_passed passed, $lit_failed failed, $lit_skipped unsupported"
    passed=$((passed + lit_passed))
    failed=$((failed + lit_failed))
    # A non-zero status with no failed test (a crash of lit itself, or no test
    # found) is still a failure.
    if ((lit_status != 0 && lit_failed == 0)); then
      moe_log "lit: exited with status $lit_status"
      failed=$((failed + 1))
    fi
  else
    moe_log "lit: no results (exit status $lit_status)"
    failed=$((failed + 1))
  fi
else
  moe_log "build: failed; the lit tests did not run"
  failed=$((failed + 1))
fi

if moe_ninja moe-doc; then
  moe_log "docs: generated under ${MOE_BUILD_DIR}/docs"
  passed=$((passed + 1))
else
  moe_log "docs: moe-doc failed"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
((failed == 0))
