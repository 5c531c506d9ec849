#!/usr/bin/env bash
# checkpoint-kill.sh DRIVER MOE-SAFETENSORS WORKDIR
#
# kill -9 trials against the checkpoint save of a training executable (see
# train-checkpoint.test): each trial kills a run inside a save, at a stage
# that the MOE_TEST_SAVE_PAUSE hook holds (Checkpoint.cpp) or after a random
# delay, then checks that every checkpoint directory that exists is
# complete and valid, that `latest` names one of them, and that resuming
# from `latest` reproduces the uninterrupted run bit for bit: its step lines
# and its final parameters. Exits non-zero on the first failure.
set -u
driver=$1
check_tool=$2
work=$3
args=(--steps=8 --seq-len=8 --batch=2 --lr=0.05 --eval-every=4)

die() {
  echo "FAIL: $*" >&2
  exit 1
}
steps() { grep '^step' "$1" | sed -e 's/ tok\/s [0-9.]*//'; }

mkdir -p "$work"
"$driver" "${args[@]}" --dump-params="$work/ref-params" > "$work/ref.txt" ||
  die "the reference run failed"
steps "$work/ref.txt" > "$work/ref.steps"

# Checks the save directory of trial $1 after the kill, then resumes.
check() {
  local dir=$1 save=$1/save checkpoint step
  for checkpoint in "$save"/step-*; do
    [ -d "$checkpoint" ] || continue
    for file in model.safetensors optimizer.safetensors state.json; do
      [ -f "$checkpoint/$file" ] || die "$checkpoint looks complete but lacks $file"
    done
    "$check_tool" check "$checkpoint/model.safetensors" > /dev/null ||
      die "$checkpoint/model.safetensors is invalid"
    "$check_tool" check "$checkpoint/optimizer.safetensors" > /dev/null ||
      die "$checkpoint/optimizer.safetensors is invalid"
  done
  if [ ! -e "$save/latest" ]; then
    # No save completed: resuming says so, and a fresh run is the remedy.
    "$driver" "${args[@]}" --resume=latest --save-dir="$save" 2> "$dir/resume.err" &&
      die "$dir: --resume=latest succeeded without a checkpoint"
    grep -q "error: no checkpoint to resume: '.*/latest' does not exist" "$dir/resume.err" ||
      die "$dir: unexpected error: $(cat "$dir/resume.err")"
    echo "trial $(basename "$dir"): no checkpoint yet"
    return
  fi
  [ -d "$save/$(cat "$save/latest")" ] || die "$save/latest names a missing checkpoint"
  "$driver" --resume=latest --save-dir="$save" --dump-params="$dir/params" \
    > "$dir/resume.txt" 2>&1 || die "$dir: resuming failed: $(cat "$dir/resume.txt")"
  step=$(sed -n 's/^resumed from .* at step \([0-9]*\)$/\1/p' "$dir/resume.txt")
  [ -n "$step" ] || die "$dir: the resumed run does not say where it resumed"
  { steps "$dir/run.txt" | head -n "$step"; steps "$dir/resume.txt"; } > "$dir/all.steps"
  diff "$work/ref.steps" "$dir/all.steps" > /dev/null ||
    die "$dir: the resumed trajectory differs from the uninterrupted one"
  for file in "$work"/ref-params/*.npy; do
    cmp -s "$file" "$dir/params/$(basename "$file")" ||
      die "$dir: $(basename "$file") differs from the uninterrupted run's"
  done
  # The resumed run's saves removed what the interrupted save left.
  if ls -A "$save" | grep -q '^\.tmp-'; then
    die "$save still holds $(ls -A "$save" | grep '^\.tmp-')"
  fi
  echo "trial $(basename "$dir"): resumed at step $step, bit for bit"
}

# Kills a run when the save of step $2 reaches stage $3.
trial_at() {
  local dir=$work/$1 pid
  rm -rf "$dir"
  mkdir -p "$dir"
  MOE_TEST_SAVE_PAUSE="$2:$3:$dir/paused" "$driver" "${args[@]}" \
    --save-dir="$dir/save" --save-every=2 --keep=2 > "$dir/run.txt" 2>&1 &
  pid=$!
  while [ ! -e "$dir/paused" ] && kill -0 "$pid" 2> /dev/null; do
    sleep 0.01
  done
  kill -9 "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  [ -e "$dir/paused" ] || die "$dir: the save of step $2 never reached stage $3"
  check "$dir"
}

# Kills a run after a random delay (anywhere: inside a write, a step, ...).
trial_random() {
  local dir=$work/$1 pid
  rm -rf "$dir"
  mkdir -p "$dir"
  "$driver" "${args[@]}" --save-dir="$dir/save" --save-every=1 --keep=2 \
    > "$dir/run.txt" 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))"
  kill -9 "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
  check "$dir"
}

# Every stage of the second save (the first one complete), the pruning of
# step 2 by the save of step 6, the pruning by the last save (the run
# resumed there has no step left, and must still clear what it left: a
# random delay once killed a run there), two stages of the first save, one
# random stage, and random delays.
for stage in 0 1 2 3 4 5 6 7; do
  trial_at "step4-stage$stage" 4 "$stage"
done
trial_at step6-stage8 6 8
trial_at step8-stage8 8 8
trial_at step2-stage2 2 2
trial_at step2-stage6 2 6
random_step=$((2 * (RANDOM % 3 + 1)))
random_stage=$((RANDOM % 8))
trial_at "random-step$random_step-stage$random_stage" "$random_step" "$random_stage"
for i in 1 2 3; do
  trial_random "delay$i"
done
echo "all kill -9 trials passed"
