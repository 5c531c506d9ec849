#!/usr/bin/env bash
# bench/train/run.sh - step 2 of 2 of the training-step benchmark, on the GPU
# machine with bench/train/out from compile.sh (and .peers/fla) carried
# along: the compiled training program and the PyTorch + fla peer
# (peer.py) train the same model from the same weights on the same batches,
# in one call.
#
#   1. train-cuda --steps=0 --dump-params: the seeded initial weights;
#   2. train-cuda --steps=N: N steps on the embedded corpus, every batch
#      written with --dump-batches, each step's loss in --metrics, the
#      kernels of step 2 timed (--kernel-profile-step; MOERT_KERNEL_PROFILE
#      lists them by name in ours.err);
#   3. peer.py --params --batches: the peer's N steps on those weights and
#      batches, then its timed steps, with the bf16 GEMM ceiling and the copy
#      bandwidth measured in the same process;
#   4. one table: ms/step and tokens/s of both (ours: the median of the
#      steps after the first, whose time includes loading the kernels, as
#      the peer's is the median of its timed steps), their
#      ratio, peak memory, and the largest gap between the two loss curves.
#
# Environment: MOE_TRAIN_OUT (default bench/train/out), MOE_TRAIN_BATCH /
# MOE_TRAIN_SEQ_LEN (default 16 x 2048), MOE_TRAIN_STEPS (200),
# MOE_TRAIN_TIMEOUT (seconds for our run, default 480), MOE_TRAIN_PEER_TIMEOUT
# (seconds for the peer, default 600: fla autotunes for minutes on its first
# call; past it the table gives ours alone), MOE_TRAIN_PEER_ITERS
# (the peer's timed steps, 20), MOE_TRAIN_GRAPH (on: our step replayed as a
# CUDA graph after step 2, --cuda-graph; off), MOE_TRAIN_KEEP_INPUTS (1:
# keep the weights and batches both trained on, params0/ and batches.bin;
# by default they go at the end: hundreds of files that a device call's
# returned results have no room for), MOE_FLA (fla's source tree, default
# .peers/fla or .peers/flash-linear-attention: without one the peer is not
# run, MOE_TRAIN_PEER_WITHOUT_FLA=1 runs it with PyTorch's chunked KDA and no
# ratio). Results in $OUT (if set) or MOE_TRAIN_OUT.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${MOE_TRAIN_OUT:-$root/bench/train/out}
results=${OUT:-$out}
batch=${MOE_TRAIN_BATCH:-16}
length=${MOE_TRAIN_SEQ_LEN:-2048}
steps=${MOE_TRAIN_STEPS:-200}
limit=${MOE_TRAIN_TIMEOUT:-480}
peer_limit=${MOE_TRAIN_PEER_TIMEOUT:-600}
iters=${MOE_TRAIN_PEER_ITERS:-20}
graph=${MOE_TRAIN_GRAPH:-on}
exe=$out/train-cuda
model=$(cat "$out/model.txt" 2>/dev/null || echo kimi-tiny)

if [[ ! -x $exe ]]; then
  echo "error: $exe is missing: run bench/train/compile.sh where MLIR is and carry bench/train/out" >&2
  exit 2
fi
mkdir -p "$results"
if [[ ${MOE_TRAIN_KEEP_INPUTS:-0} != 1 ]]; then
  trap 'rm -rf "$results/params0" "$results/batches.bin"' EXIT
fi
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
shape=(--batch="$batch" --seq-len="$length")

rm -rf "$results/params0" "$results/batches.bin" "$results/ours-metrics.jsonl"
"$exe" "${shape[@]}" --steps=0 --dump-params="$results/params0" > /dev/null ||
  { echo "error: could not dump the initial weights" >&2; exit 1; }
MOERT_KERNEL_PROFILE=1 timeout "$limit" "$exe" "${shape[@]}" --steps="$steps" \
  --log-every=1 --cuda-graph="$graph" --dump-batches="$results/batches.bin" \
  --metrics="$results/ours-metrics.jsonl" --kernel-profile-step=2 \
  > "$results/ours.out" 2> "$results/ours.err"
ours_rc=$?
[[ $ours_rc == 124 ]] && echo "our run stopped at the time limit ($limit s)"
done_steps=$(wc -l < "$results/ours-metrics.jsonl" 2>/dev/null || echo 0)
echo "ours: $done_steps of $steps steps (exit status $ours_rc)"
if ((done_steps == 0)); then
  tail -20 "$results/ours.err"
  exit 1
fi

# The peer is PyTorch + fla: without fla's source its KDA would be the
# chunked PyTorch reference, whose time is not the peer's. It is not run
# then (MOE_TRAIN_PEER_WITHOUT_FLA=1 runs it anyway, and the table below
# says so instead of giving a ratio).
if [[ -n ${MOE_FLA:-} ]]; then
  fla_dirs=("$MOE_FLA")
else
  fla_dirs=("$root/.peers/fla" "$root/.peers/flash-linear-attention")
fi
have_fla=0
for dir in "${fla_dirs[@]}"; do [[ -d $dir/fla ]] && have_fla=1; done
rm -f "$results/train-peer-$model.json"
if ((have_fla)) || [[ ${MOE_TRAIN_PEER_WITHOUT_FLA:-0} == 1 ]]; then
  fla_arg=()
  [[ -n ${MOE_FLA:-} ]] && fla_arg=(--fla "$MOE_FLA")
  timeout "$peer_limit" python3 "$root/bench/train/peer.py" --model "$model" --batch-size "$batch" \
    --seq-len "$length" --params "$results/params0" --batches "$results/batches.bin" \
    --steps "$done_steps" --iters "$iters" --out "$results" "${fla_arg[@]}" \
    > "$results/peer.out" 2>&1
  peer_rc=$?
  tail -25 "$results/peer.out"
  if [[ $peer_rc == 124 ]]; then
    echo "the peer stopped at its time limit ($peer_limit s, MOE_TRAIN_PEER_TIMEOUT): no peer figures"
  elif [[ $peer_rc != 0 ]]; then
    echo "peer.py exited with $peer_rc"
  fi
else
  echo "error: the peer was not run: no fla source in ${fla_dirs[*]} (carry .peers/fla," \
    "or set MOE_FLA; MOE_TRAIN_PEER_WITHOUT_FLA=1 runs it with PyTorch's chunked KDA)" >&2
fi

python3 - "$results" "$model" "$batch" "$length" <<'PY'
import json, os, re, statistics, sys
results, model, batch, length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ours = [json.loads(l) for l in open(os.path.join(results, "ours-metrics.jsonl")) if l.strip()]
tokens = batch * length
# The first step also loads (JIT-compiles) the kernels.
later = [tokens / s["tokens_per_s"] for s in ours[1:]] or [tokens / ours[0]["tokens_per_s"]]
our_ms = statistics.median(later) * 1e3
text = open(os.path.join(results, "ours.out")).read()
peak = re.search(r"^peak GPU memory: (\S+) GiB", text, re.M)
err = open(os.path.join(results, "ours.err")).read()
kernels = re.search(r"^kernels of step 2: (\d+) launches, (\S+) ms", err, re.M)
summary = {"model": model, "batch": batch, "seq_len": length, "steps": len(ours),
           "ours": {"ms_per_step": our_ms, "tokens_per_s": tokens / our_ms * 1e3,
                    "peak_GiB": float(peak.group(1)) if peak else None,
                    "step2_kernel_ms": float(kernels.group(2)) if kernels else None,
                    "step2_launches": int(kernels.group(1)) if kernels else None,
                    "ms_per_step_each": [tokens / s["tokens_per_s"] * 1e3 for s in ours],
                    "cuda_graph": (re.search(r"^cuda graph: .*", text, re.M) or [None])[0],
                    "loss": [s["loss"] for s in ours],
                    "grad_norm": [s["grad_norm"] for s in ours]}}
peer_path = os.path.join(results, f"train-peer-{model}.json")
print(f"\n{'':18} {'ms/step':>10} {'tokens/s':>12} {'peak GiB':>9}")
print(f"{'ours':18} {our_ms:10.2f} {tokens / our_ms * 1e3:12.0f} "
      f"{summary['ours']['peak_GiB'] or float('nan'):9.3f}")
print("ours, ms per step: " + " ".join(f"{ms:.2f}" for ms in summary["ours"]["ms_per_step_each"])
      + f" ({summary['ours']['cuda_graph'] or 'no CUDA graph'})")
if os.path.exists(peer_path):
    peer = json.load(open(peer_path))
    summary["peer"] = {k: peer.get(k) for k in (
        "ms_per_step", "tokens_per_s", "peak_memory_gib", "model_tflops_per_s", "mfu",
        "gemm_bf16_8192_tflops", "copy_tb_per_s")}
    summary["peer"]["loss"] = peer["curve"]["loss"]
    peer_ms = peer["ms_per_step"]
    with_fla = peer.get("kda") == "fla"
    summary["peer"]["kda"] = peer.get("kda")
    label = "PyTorch + fla" if with_fla else f"PyTorch, kda {peer.get('kda')}"
    print(f"{label:18} {peer_ms:10.2f} {peer['tokens_per_s']:12.0f} "
          f"{peer['peak_memory_gib']:9.3f}")
    if not with_fla:
        print(f"WARNING: the peer's KDA ran as '{peer.get('kda')}' ({peer.get('fla')}), "
              f"not fla's chunk_kda: its time is not PyTorch + fla's, and there is no ratio")
    summary["ratio"] = peer_ms / our_ms if with_fla else None
    flops = peer["model_flops_per_step"]["total"]
    gemm = peer.get("gemm_bf16_8192_tflops")
    ours_mfu = flops / (our_ms * 1e-3) / 1e12 / gemm if gemm else None
    summary["ours"]["mfu"] = ours_mfu
    ratio = f"{peer_ms / our_ms:.4f}x" if with_fla else "none (no fla)"
    print(f"ratio (peer ms / our ms): {ratio}; MFU ours "
          f"{ours_mfu if ours_mfu is not None else float('nan'):.4f}, peer "
          f"{peer['mfu'] if peer.get('mfu') is not None else float('nan'):.4f} "
          f"(model {flops / 1e12:.3f} TFLOP per step)")
    print(f"ceilings (same call): bf16 GEMM {gemm} TFLOP/s, copy "
          f"{peer.get('copy_tb_per_s')} TB/s")
    losses = peer["curve"]["loss"]
    n = min(len(losses), len(ours))
    gaps = [abs(ours[i]["loss"] - losses[i]) for i in range(n)]
    if gaps:
        summary["loss_gap_max"] = max(gaps)
        print(f"loss curves over {n} steps: ours {ours[0]['loss']:.4f} -> "
              f"{ours[n - 1]['loss']:.4f}, peer {losses[0]:.4f} -> {losses[n - 1]:.4f}, "
              f"largest gap {max(gaps):.4f} (step {gaps.index(max(gaps)) + 1})")
json.dump(summary, open(os.path.join(results, f"train-{model}.json"), "w"), indent=1)
PY
