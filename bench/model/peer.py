#!/usr/bin/env python3
# bench/model/peer.py - times the PyTorch + flash-linear-attention forward
# pass of the example models on the GPU: the peer of the compiled models.
#
# usage: python3 bench/model/peer.py [--model kimi-tiny|kimi-small|all]
#            [--params DIR] [--tokens FILE] [--batch-size B] [--seq-len T]
#            [--iters N] [--expect-npy FILE] [--out DIR] [--fla DIR]
#
# Per model (default both: kimi-tiny at B = 16, T = 2048, kimi-small at
# B = 4, T = 8192) it loads the weights from --params DIR (<name>.npy, the
# compiled executable's --dump-params; one model only) or draws them on the
# GPU from --seed by the same initialisation rules, and reads the batch from
# --tokens FILE (little-endian uint32, the executable's --tokens, sequence b
# = tokens [b*T, b*T + T), labels one later) or draws token ids from the
# seed. The model is bench/model/torch_model.py: fla's chunk_kda (the gate,
# beta's sigmoid and the q/k L2 norms in its kernels), fla's short
# convolution and gated RMSNorm, SDPA for MLA, torch._grouped_mm for the
# experts, bf16 matmul operands with fp32 accumulation and fp32 norms,
# softmaxes, router, residual stream and loss.
#
# Before timing it checks the result: the bf16 fla forward's loss against
# the same model in fp32 with the chunked KDA of torch_model.py and the
# expert loop (an independent path; the difference is bf16 rounding), per
# sub-layer too, and against --expect-npy (a loss the compiled model wrote
# with --loss-npy on the same weights and tokens) when given. Then it warms
# up (fla autotunes its kernels at the first call: 1-4 minutes) and times
# --iters forward passes with CUDA events, reporting the median (and the
# minimum and mean) in ms, tokens/s, the peak memory of the timed passes
# (torch.cuda.max_memory_allocated, the weights included) and, measured in
# the same process, the bf16 GEMM ceiling (8192^3 torch.matmul, TFLOP/s)
# and the device-to-device copy bandwidth. Writes $OUT/peer-<model>.json
# (--out, else $OUT, else bench/model/out).
#
# flash-linear-attention travels as source: its fla/ package in .peers/fla
# (git-ignored; see bench/model/README.md), put on sys.path here. When fla
# cannot be imported or one of its kernels fails at the first call, the
# script says so, records it in the JSON and goes on with fewer fla pieces
# (the conv and norm kernels first, then chunk_kda), so that one run always
# reports something; "kda" in the JSON says what ran.

import argparse
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import torch_model as tm  # noqa: E402  (bench/model/torch_model.py)
from common import copy_bandwidth  # noqa: E402  (bench/common.py)

SHAPES = {"kimi-tiny": (16, 2048), "kimi-small": (4, 8192)}


def gemm_8192():
    """bf16 torch.matmul of two 8192 x 8192 matrices, TFLOP/s (median of 10
    after 3 warm-ups)."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    ms = time_cuda(lambda: torch.matmul(a, b, out=c), iters=10, warmup=3)["median_ms"]
    del a, b, c
    torch.cuda.empty_cache()
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def time_cuda(fn, iters, warmup=1, cuda=True):
    """Per-call CUDA-event times of fn() after warm-up calls (wall-clock
    times for the CPU smoke test)."""
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if not cuda:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
            continue
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times),
            "mean_ms": statistics.fmean(times), "runs": len(times)}


def make_batch(args, cfg, batch, length, device):
    if args.tokens:
        ns = argparse.Namespace(batch=None, tokens=args.tokens, batch_size=batch, seq_len=length)
        return tm.read_batch(ns, cfg, device)
    gen = torch.Generator(device=device).manual_seed(args.seed + 1)
    stream = torch.randint(0, cfg.vocab, (batch * length + 1,), generator=gen, device=device,
                           dtype=torch.int32)
    return stream[:-1].view(batch, length), stream[1:].view(batch, length)


def trace_errors(a_trace, b_trace):
    """Per sub-layer, ||a - b|| / ||b|| over the whole output (a norm, not a
    maximum: in bf16 a few tokens whose scores sit at the top-k boundary
    pick another expert, and their rows differ entirely)."""
    return {name: float((a - b).norm() / b.norm().clamp(min=1e-30))
            for (name, a), (_, b) in zip(a_trace, b_trace)}


def run_model(args, model, device):
    batch, length = SHAPES[model]
    batch = args.batch_size or batch
    length = args.seq_len or length
    config, mlir = tm.model_paths(model)
    cfg = tm.load_config(config)
    problems = tm.check_against_mlir(cfg, mlir) if mlir else []
    if problems:
        raise SystemExit(f"{model}: the config disagrees with {mlir}: {problems}")
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    result = {"model": model, "batch": batch, "seq_len": length, "tokens": batch * length,
              "device": torch.cuda.get_device_name(0) if cuda else "cpu",
              "torch": torch.__version__}
    try:
        import triton
        result["triton"] = triton.__version__
    except ImportError:
        result["triton"] = None
    t0 = time.time()
    params = (tm.load_params(cfg, args.params, device) if args.params
              else tm.init_params(cfg, args.seed, device))
    result["weights"] = args.params or f"seed {args.seed} (torch_model.init_params)"
    result["parameters"] = sum(t.numel() for t in params.values())
    tokens, labels = make_batch(args, cfg, batch, length, device)
    result["batch_source"] = args.tokens or f"random ids, seed {args.seed + 1}"
    print(f"== {model}: B={batch}, T={length}, {result['parameters']:,} parameters "
          f"({result['weights']}), loaded in {time.time() - t0:.1f} s", flush=True)

    # The fp32 reference: this file's chunked KDA, the expert loop, fp32
    # matmuls; the same weights and tokens.
    with torch.inference_mode():
        ref_impl, _ = tm.make_impl(device, "chunk", "loop", args.fla, torch.float32,
                                   fla_kernels=False, trace_inputs=True)
        t0 = time.time()
        ref_loss = float(tm.forward_loss(cfg, tm.compute_params(params, torch.float32),
                                         tokens, labels, ref_impl))
        sync()
        result["reference"] = {"what": "fp32, torch chunked KDA, expert loop",
                               "loss": ref_loss, "seconds": time.time() - t0}
        print(f"fp32 reference loss {ref_loss:.6f} ({time.time() - t0:.1f} s)", flush=True)

    P = tm.compute_params(params, torch.bfloat16)
    del params
    if cuda:
        torch.cuda.empty_cache()
    attempts = [dict(kda="auto", fla_kernels=True), dict(kda="auto", fla_kernels=False),
                dict(kda="chunk", fla_kernels=False)]
    result["fallbacks"] = []
    impl = None
    for attempt in attempts:
        impl, fla_note = tm.make_impl(device, attempt["kda"], "auto", args.fla, torch.bfloat16,
                                      fla_kernels=attempt["fla_kernels"], trace=True)
        result["fla"] = fla_note
        what = f"kda {impl.kda}, fla conv/norm {impl.fla_conv}, experts {impl.experts}"
        try:
            # The first call autotunes fla's kernels.
            t0 = time.time()
            with torch.inference_mode():
                loss = float(tm.forward_loss(cfg, P, tokens, labels, impl))
            sync()
            result["first_call_seconds"] = time.time() - t0
            print(f"first call ({what}): {time.time() - t0:.1f} s, loss {loss:.6f}", flush=True)
            break
        except Exception as e:
            msg = f"{what}: {type(e).__name__}: {e}"
            print(f"error: {msg}\n{traceback.format_exc()}", flush=True)
            result["fallbacks"].append(msg)
            impl = None
            sync()
    if impl is None:
        raise SystemExit(f"{model}: no implementation ran")
    result["kda"], result["fla_conv_norm"], result["experts"] = \
        impl.kda, impl.fla_conv, impl.experts
    result["loss"] = loss
    result["rel_error_vs_fp32_reference"] = abs(loss - ref_loss) / abs(ref_loss)
    # Each sub-layer alone on the reference's fp32 input: the bf16 / fla /
    # grouped_mm implementation against the fp32 one (the routing, in fp32
    # in both, then picks the same experts).
    errors = {}
    with torch.inference_mode():
        for name, x, y_ref in ref_impl.trace:
            y = tm.sublayer_fn(cfg, P, name, impl)(x).float()
            errors[name] = float((y - y_ref).norm() / y_ref.norm().clamp(min=1e-30))
    result["sublayer_rel_error"] = errors
    # Through the whole model the differences grow: bf16 moves some tokens'
    # routing scores across the top-k boundary.
    result["sublayer_drift"] = trace_errors(impl.trace, [(n, y) for n, _, y in ref_impl.trace])
    worst = max(errors, key=errors.get)
    print(f"bf16 loss {loss:.6f} vs fp32 reference: relative error "
          f"{result['rel_error_vs_fp32_reference']:.2e}; sub-layers alone on the reference's "
          f"inputs: largest ||bf16 - fp32|| / ||fp32|| {errors[worst]:.2e} ({worst})",
          flush=True)
    del ref_impl
    impl.trace = None
    if cuda:
        torch.cuda.empty_cache()
    ok = result["rel_error_vs_fp32_reference"] <= args.rtol and errors[worst] <= args.layer_tol
    if args.expect_npy:
        expected = float(np.load(args.expect_npy))
        result["expected_loss"] = expected
        result["rel_error_vs_expected"] = abs(loss - expected) / abs(expected)
        ok = ok and result["rel_error_vs_expected"] <= args.rtol
        print(f"expected (compiled model) {expected:.6f}: relative error "
              f"{result['rel_error_vs_expected']:.2e}", flush=True)
    result["check_rtol"], result["check_layer_tol"] = args.rtol, args.layer_tol
    result["check_passed"] = ok
    if not ok:
        print(f"error: {model}: the check failed (loss rtol {args.rtol:g}, sub-layer "
              f"tolerance {args.layer_tol:g})", flush=True)

    def step():
        with torch.inference_mode():
            return tm.forward_loss(cfg, P, tokens, labels, impl)

    step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    timing = time_cuda(step, iters=args.iters, warmup=1, cuda=cuda)
    result.update(timing)
    result["ms_per_forward"] = timing["median_ms"]
    result["tokens_per_s"] = batch * length / (timing["median_ms"] * 1e-3)
    result["peak_memory_bytes"] = torch.cuda.max_memory_allocated() if cuda else None
    result["resident_bytes_before"] = before
    result["peak_memory_gib"] = (result["peak_memory_bytes"] or 0) / 2 ** 30
    print(f"forward: median {timing['median_ms']:.3f} ms (min {timing['min_ms']:.3f}, mean "
          f"{timing['mean_ms']:.3f}, {timing['runs']} runs), {result['tokens_per_s']:,.0f} "
          f"tokens/s, peak memory {result['peak_memory_gib']:.2f} GiB "
          f"(weights and batch {before / 2 ** 30:.2f} GiB)", flush=True)
    del P, tokens, labels
    if cuda:
        torch.cuda.empty_cache()
    return result, ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="all", choices=("all",) + tuple(SHAPES))
    ap.add_argument("--params", help="<name>.npy directory (one --model only)")
    ap.add_argument("--tokens", help="uint32 token file (the executable's --tokens)")
    ap.add_argument("--batch-size", type=int, help="default: 16 for kimi-tiny, 4 for kimi-small")
    ap.add_argument("--seq-len", type=int, help="default: 2048 for kimi-tiny, 8192 for kimi-small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--iters", type=int, default=20, help="timed forward passes (>= 10)")
    ap.add_argument("--expect-npy", help="the compiled model's loss (--loss-npy), one model")
    ap.add_argument("--rtol", type=float, default=5e-3,
                    help="loss check: bf16 against fp32 and the expected loss (default 5e-3)")
    ap.add_argument("--layer-tol", type=float, default=3e-2,
                    help="sub-layer check, each on the reference's input: "
                         "||bf16 - fp32|| / ||fp32|| (default 3e-2)")
    ap.add_argument("--device", default="cuda",
                    help="cpu: a smoke test of this script (no fla, no ceilings)")
    ap.add_argument("--fla", help="directory holding the fla package (default .peers/fla)")
    ap.add_argument("--out", help="result directory (default $OUT, else bench/model/out)")
    args = ap.parse_args()
    if args.iters < 10:
        ap.error("--iters must be at least 10")
    models = list(SHAPES) if args.model == "all" else [args.model]
    if len(models) > 1 and (args.params or args.expect_npy):
        ap.error("--params and --expect-npy name one model's files: give --model")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("peer.py times the GPU: no CUDA device (--device=cpu: a smoke test)")
    out = args.out or os.environ.get("OUT") or os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    gemm = bandwidth = None
    if device.type == "cuda":
        gemm = gemm_8192()
        bandwidth = copy_bandwidth()
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: bf16 GEMM 8192^3 "
              f"{gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s", flush=True)
    all_ok = True
    for model in models:
        result, ok = run_model(args, model, device)
        result["gemm_bf16_8192_tflops"] = gemm
        result["copy_tb_per_s"] = bandwidth
        path = os.path.join(out, f"peer-{model}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {path}", flush=True)
        all_ok = all_ok and ok
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
