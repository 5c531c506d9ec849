#!/usr/bin/env bash
# same-step-lines.sh ONE.txt OTHER.txt
#
# Checks that two training runs printed the same step lines: equal, once
# the loss and tokens/s are removed, except the gradient norm, which may
# differ by one unit in its last printed (sixth significant) digit. A
# sharded run sums the gradients in another order, and a norm that agrees
# to 1e-7 relative can still round the other way at %.6g. Parameters are
# compared to 1e-7 by the tests themselves.
set -eu
strip() {
  grep '^step' "$1" | sed -e 's/ loss [0-9.e+-]*//; s/ tok\/s [0-9.]*//'
}
paste -d '\n' <(strip "$1") <(strip "$2") | awk '
  NR % 2 == 1 { one = $0; next }
  {
    other = $0
    a = one; b = other
    na = match(a, / grad-norm [0-9.e+-]+/); ga = substr(a, RSTART + 11, RLENGTH - 11)
    sub(/ grad-norm [0-9.e+-]+/, "", a)
    nb = match(b, / grad-norm [0-9.e+-]+/); gb = substr(b, RSTART + 11, RLENGTH - 11)
    sub(/ grad-norm [0-9.e+-]+/, "", b)
    if (a != b || (na == 0) != (nb == 0)) {
      print "step lines differ:\n  " one "\n  " other; bad = 1; next
    }
    if (na) {
      m = (ga + 0 > gb + 0) ? ga + 0 : gb + 0
      unit = (m > 0) ? exp(log(10) * (int(log(m) / log(10) + 100) - 100 - 5)) : 0
      d = ga - gb; if (d < 0) d = -d
      if (d > unit * 1.0001) {
        print "grad-norm differs by more than one unit in the last digit:\n  " one "\n  " other
        bad = 1
      }
    }
    steps++
  }
  END {
    if (NR % 2 != 0 || NR == 0) { print "different numbers of step lines"; exit 1 }
    if (bad) exit 1
    print steps " step lines agree"
  }'
