#!/usr/bin/env bash
# dp-kill-rank.sh EXE WORKDIR KILL|STOP
#
# Starts the two ranks of a data-parallel training executable (see
# train-data-parallel-balancers.test) by hand, waits until rank 0 has
# finished its first step, then kills rank 1 (KILL) or stops it (STOP, a
# hang). Rank 0 must then end on its own, with a non-zero status and an
# error line, within MOE_DIST_TIMEOUT plus a margin; its standard error
# goes to our standard output. Exits non-zero when it does not.
set -u
exe=$1
work=$2
signal=$3
timeout=${MOE_DIST_TIMEOUT:?set MOE_DIST_TIMEOUT}
port=$((20000 + $$ % 10000))
args=(--steps=100000 --batch=4 --seq-len=32 --log-every=1)

die() {
  echo "FAIL: $*"
  kill -KILL "${pids[@]}" 2> /dev/null
  exit 1
}

mkdir -p "$work"
pids=()
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$port "$exe" "${args[@]}" > "$work/out.$rank" \
    2> "$work/err.$rank" &
  pids+=($!)
done

# Rank 0 prints its step lines; wait for the first (at most 60 s).
for _ in $(seq 600); do
  grep -q '^step 1 ' "$work/out.0" 2> /dev/null && break
  kill -0 "${pids[0]}" 2> /dev/null || die "rank 0 ended before step 1"
  sleep 0.1
done
grep -q '^step 1 ' "$work/out.0" || die "rank 0 did not finish step 1"

kill "-$signal" "${pids[1]}"
start=$(date +%s)
# Rank 0 must end by itself: wait up to the timeout plus 30 s.
limit=$((${timeout%.*} + 30))
while kill -0 "${pids[0]}" 2> /dev/null; do
  (($(date +%s) - start > limit)) && die "rank 0 still runs ${limit} s after rank 1 got SIG$signal"
  sleep 0.2
done
wait "${pids[0]}"
status=$?
kill -KILL "${pids[1]}" 2> /dev/null
wait "${pids[1]}" 2> /dev/null
((status != 0)) || die "rank 0 exited with status 0 after rank 1 got SIG$signal"
echo "rank 0 exited with status $status"
cat "$work/err.0"
