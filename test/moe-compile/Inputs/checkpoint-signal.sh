#!/usr/bin/env bash
# checkpoint-signal.sh DRIVER WORKDIR SIGNAL
#
# Sends SIGNAL (INT or TERM) to a training run with --save-dir once it has
# printed step 3 (see train-checkpoint.test): the run must save a
# checkpoint of the step it finished, say so and exit with 0; resuming it
# for three more steps must give the same step lines and the same
# checkpoint files, byte for byte, as a run that was never interrupted.
set -u
driver=$1
work=$2
signal=$3
args=(--steps=100000 --seq-len=8 --batch=2 --lr=0.05)

die() {
  echo "FAIL: $*" >&2
  exit 1
}
steps() { grep '^step' "$1" | sed -e 's/ tok\/s [0-9.]*//'; }

rm -rf "$work"
mkdir -p "$work"
"$driver" "${args[@]}" --save-dir="$work/save" > "$work/run.txt" 2>&1 &
pid=$!
while ! grep -q '^step 3 ' "$work/run.txt" && kill -0 "$pid" 2> /dev/null; do
  sleep 0.01
done
kill "-$signal" "$pid"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || die "the run exited with $status after SIG$signal: $(tail -3 "$work/run.txt")"
step=$(sed -n "s/^stopped by SIG$signal after step \([0-9]*\): checkpoint .*step-0*\([0-9]*\)$/\1/p" "$work/run.txt")
[ -n "$step" ] || die "the run did not report its checkpoint: $(tail -3 "$work/run.txt")"
[ "$(cat "$work/save/latest")" = "$(printf 'step-%08d' "$step")" ] ||
  die "latest does not name the checkpoint of step $step"
echo "SIG$signal after step $step: checkpoint saved, exit status 0"

end=$((step + 3))
"$driver" --resume=latest --save-dir="$work/save" --stop-after="$end" \
  > "$work/resume.txt" 2>&1 || die "resuming failed: $(cat "$work/resume.txt")"
"$driver" "${args[@]}" --save-dir="$work/ref" --stop-after="$end" \
  > "$work/ref.txt" 2>&1 || die "the reference run failed"
{ steps "$work/run.txt"; steps "$work/resume.txt"; } > "$work/all.steps"
steps "$work/ref.txt" > "$work/ref.steps"
diff "$work/ref.steps" "$work/all.steps" > /dev/null ||
  die "the resumed trajectory differs from the uninterrupted one"
name=$(printf 'step-%08d' "$end")
for file in model.safetensors optimizer.safetensors; do
  cmp "$work/ref/$name/$file" "$work/save/$name/$file" ||
    die "$file of step $end differs from the uninterrupted run's"
done
echo "resumed to step $end: the same trajectory and checkpoint, byte for byte"
