#!/usr/bin/env bash
# launch-local.sh - starts N processes of a distributed moe-mlir program on
# this machine, the way torchrun does (docs/Distributed.md).
#
# Usage: scripts/launch-local.sh N EXE [ARGS...]
#        scripts/launch-local.sh --help
#
# Starts N copies of EXE ARGS with RANK=r, WORLD_SIZE=N, LOCAL_RANK=r,
# MASTER_ADDR=127.0.0.1 and MASTER_PORT (from the environment, or else
# 20000 + this script's PID % 10000: below Linux's ephemeral ports, 32768 and
# up, which Gloo's connections use; a port in use makes rank 0 fail with
# EADDRINUSE: set MASTER_PORT then). The processes share this terminal's
# stdout and stderr (only rank 0 is expected to print results). Waits for
# all of them. When one exits with a non-zero status, the others get
# MOE_LAUNCH_GRACE seconds (default 3) to finish (the runtime reports the
# failure it sees), then SIGTERM and, after one more second, SIGKILL
# (stopped processes too). Exits with the status of the first process seen
# failing (polled every 0.1 s; 128 + signal for a signal), or 0 when all
# succeeded. SIGINT and SIGTERM of this script are passed on to the
# processes.
set -uo pipefail

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

if [[ $# -ge 1 && ("$1" == --help || "$1" == -h) ]]; then
  usage
  exit 0
fi
if [[ $# -lt 2 ]]; then
  echo "launch-local.sh: error: expected N EXE [ARGS...] (see --help)" >&2
  exit 2
fi
count="$1"
shift
if ! [[ "$count" =~ ^[1-9][0-9]*$ ]] || ((count > 1024)); then
  echo "launch-local.sh: error: N is '$count', not a process count in [1, 1024]" >&2
  exit 2
fi
grace="${MOE_LAUNCH_GRACE:-3}"
if ! [[ "$grace" =~ ^[0-9]+$ ]]; then
  echo "launch-local.sh: error: MOE_LAUNCH_GRACE is '$grace', not a number of seconds" >&2
  exit 2
fi
port="${MASTER_PORT:-$((20000 + $$ % 10000))}"

pids=()
for ((rank = 0; rank < count; rank++)); do
  RANK=$rank WORLD_SIZE=$count LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$port "$@" &
  pids+=($!)
done

# Sends `signal` to every process of `pids` (stopped ones are continued
# after a SIGTERM, so that it takes effect). Exited ones ignore it.
signal_all() {
  local pid
  for pid in "${pids[@]}"; do
    kill "-$1" "$pid" 2>/dev/null
    [[ "$1" == TERM ]] && kill -CONT "$pid" 2>/dev/null
  done
  return 0
}

stop_all() {
  signal_all TERM
  sleep 1
  signal_all KILL
}

trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# The processes not reaped yet, by pid.
declare -A live
for pid in "${pids[@]}"; do
  live[$pid]=1
done
first_status=0
stopper=""
# Polls instead of `wait -n`: bash 5.2's `wait -n PIDS` skips a child that
# bash reaped already (one killed by a signal, reported as "Killed"), and
# then fails with "no such job". `wait PID` still returns its status.
while ((${#live[@]} > 0)); do
  for pid in "${!live[@]}"; do
    kill -0 "$pid" 2>/dev/null && continue
    wait "$pid"
    status=$?
    unset "live[$pid]"
    if ((status != 0 && first_status == 0)); then
      first_status=$status
      # Lets the others report what they see, then ends them.
      (
        trap - INT TERM
        sleep "$grace"
        stop_all
      ) &
      stopper=$!
    fi
  done
  ((${#live[@]} > 0)) && sleep 0.1
done
if [[ -n "$stopper" ]]; then
  kill "$stopper" 2>/dev/null
  wait "$stopper" 2>/dev/null
fi
exit "$first_status"
