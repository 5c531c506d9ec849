#!/usr/bin/env python3
# bench/mla/bench_grad.py - check and time moe-mlir's gated MLA attention
# forward + backward (bench/mla/mla_train.mlir: @mla_train_forward ->
# y, lse; @mla_train_backward: moe.mla_attention_grad -> dq, dk, dv, dgate)
# against PyTorch SDPA forward + backward (bf16, is_causal=True, then the
# sigmoid gate; its autograd), in one run on one GPU: issue #14's floor
# "MLA forward + backward >= 0.5x SDPA forward + backward at T = 8K".
# B = 1, H = 32, d_qk = 192, d_v = 128, the default scale 192^-1/2.
#
#   y = softmax(q k^T / sqrt(192) + causal mask) v * sigmoid(gate)
#   q, k: [B, T, H, 192]; v, gate, y, dy: [B, T, H, 128]; lse: [B, H, T]
#
# Our kernels come from bench/mla/compile_grad.sh (linked by run_grad.sh):
# the generated tensor-core forward (-moe-generate-attention-kernels) and
# backward (-moe-generate-attention-grad-kernels: prep, dK dV per key tile,
# dQ per query tile), with fp32 operands ("ours") and with bf16 q, k, v,
# gate, y, dy and gradients ("ours_bf16": fed the bf16-rounded inputs, like
# the peer; the lse stays fp32). The backward gets our forward's own y and
# lse (copied to device tensors) and a seeded random dy. Per T it prints and
# records (JSON in --out/mla_grad_bench.json):
#   * the relative error (max |x - ref| / max |ref|, inf when x holds a
#     non-finite value) of y, dq, dk, dv and dgate, ours and SDPA's, and the
#     largest absolute error of our lse, against float64 torch autograd of
#     the plain math (the T x T softmax materialised, a few heads at a time,
#     so that every element is checked at every length, T = 8192 included;
#     --no-check-timed skips it at the timed lengths) on the same inputs
#     (the bf16-rounded ones for ours_bf16 and SDPA); also every element at
#     --check-lengths with B = 2 (ragged last tiles, two batches). The bar
#     is --tolerance (2e-2, the bf16 bar of bench/mla);
#   * our times: CUDA events around each launch, summed (libmoert_mlir.so),
#     of the forward call and of the backward call, their sum (fwd + bwd),
#     the wall time of each call, and each launch's time;
#   * SDPA's times by CUDA-graph replay (CUDA events when the capture fails;
#     the method is recorded): the forward (with autograd on, as in
#     training) and forward + backward (torch.autograd.grad of y with dy), for
#     SDPA's own backend choice ("auto") and each backend forced (flash
#     also with v zero-padded to d_qk, as the HF Kimi code does);
#   * ours / SDPA throughput = SDPA ms / our ms, fwd + bwd, against "auto"
#     and the fastest SDPA backend;
#   * TFLOP/s with the matrix-product count of the causal attention (the
#     lower triangle, T^2 / 2 score entries per batch and head):
#       forward  2 B H T^2 (d_qk + d_v) / 2       (S = Q K^T, O = P V)
#       backward 2 B H T^2 (3 d_qk + 2 d_v) / 2   (S again, dP = dO V^T,
#                                                  dV = P^T dO, dQ = dS K,
#                                                  dK = dS^T Q)
#     i.e. fwd + bwd = 3.6x the forward at these widths (FlashAttention-2's
#     usual "3.5x" assumes d_qk = d_v); our dQ pass recomputes S and dP,
#     which this count does not credit;
#   * the bf16 GEMM ceiling and the copy bandwidth measured in this run.
#
# Usage (GPU machine; bench/mla/run_grad.sh links the libraries):
#   bench/mla/run_grad.sh OUTDIR [--lengths 2048,8192] [--check-lengths 300,1024]

import argparse
import ctypes
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, copy_bandwidth, gemm_ceiling, graph_time, result_tensor)
from bench import DQK, DV, H, sdpa_variants  # noqa: E402  (bench/mla/bench.py)

GRADS = ("dq", "dk", "dv", "dgate")
CHECKED = ("y",) + GRADS


class ForwardResults(ctypes.Structure):
    """The results of @mla_train_forward: y [B, T, H, d_v], lse [B, H, T]."""
    _fields_ = [("y", MEMREF[4]), ("lse", MEMREF[3])]


class BackwardResults(ctypes.Structure):
    """The results of @mla_train_backward, in order."""
    _fields_ = [(n, MEMREF[4]) for n in GRADS]


def device_copy(result, dtype):
    """A CUDA tensor copied from a contiguous result descriptor."""
    shape, stride = list(result.sizes), list(result.strides)
    expect, step = [0] * len(shape), 1
    for i in reversed(range(len(shape))):
        expect[i] = step
        step *= shape[i]
    if any(n > 1 and s != e for n, s, e in zip(shape, stride, expect)):
        raise RuntimeError(f"result of shape {shape} has strides {stride}, not contiguous")
    return result_tensor(result, dtype)


class OurTrain:
    """@mla_train_forward and @mla_train_backward of one library; bf16: the
    variant with bf16 q, k, v, gate, y, dy and gradients."""

    def __init__(self, lib_path, adapter_path, bf16):
        self.fwd = CompiledKernel(lib_path, adapter_path, "mla_train_forward")
        self.bwd = CompiledKernel(lib_path, adapter_path, "mla_train_backward")
        self.bf16 = bf16
        self.dtype = torch.bfloat16 if bf16 else torch.float32

    def forward(self, q, k, v, gate):
        """(y, lse) as CUDA tensors (y in the variant's type, lse fp32)."""
        r = ForwardResults()
        self.fwd.call_in_place(r, [q, k, v, gate])
        try:
            return device_copy(r.y, self.dtype), device_copy(r.lse, torch.float32)
        finally:
            self.fwd.free_results(r.y, r.lse)

    def backward(self, q, k, v, gate, y, lse, dy):
        """{dq, dk, dv, dgate} as CUDA tensors in the variant's type."""
        r = BackwardResults()
        self.bwd.call_in_place(r, [q, k, v, gate, y, lse, dy])
        try:
            return {n: device_copy(getattr(r, n), self.dtype) for n in GRADS}
        finally:
            self.bwd.free_results(*[getattr(r, n) for n in GRADS])

    def time(self, q, k, v, gate, y, lse, dy, iters):
        """{fwd,bwd}_{ms,call_ms,launch_ms}: the summed GPU time of each
        call's launches, its wall time, and the last call's launches."""
        out = {}
        out["fwd_ms"], out["fwd_call_ms"] = self.fwd.time_in_place(
            ForwardResults, [q, k, v, gate], iters)
        out["fwd_launch_ms"] = self.fwd.last_launch_ms
        out["bwd_ms"], out["bwd_call_ms"] = self.bwd.time_in_place(
            BackwardResults, [q, k, v, gate, y, lse, dy], iters)
        out["bwd_launch_ms"] = self.bwd.last_launch_ms
        return out


def flops(B, T):
    """(forward, backward) matrix-product FLOPs of the causal attention."""
    tri = 2 * B * H * T * T / 2
    return tri * (DQK + DV), tri * (3 * DQK + 2 * DV)


def reference(q, k, v, gate, dy, budget=1 << 30):
    """float64 torch autograd of the plain math on the GPU: {y, lse, dq,
    dk, dv, dgate} (float64 CUDA tensors; lse [B, H, T]). The heads are
    independent, so they go a few at a time: each chunk's T x T scores take
    at most `budget` bytes."""
    dev, f64 = torch.device("cuda"), torch.float64
    B, T = q.shape[:2]
    per_head = B * T * T * 8
    chunk = max(1, min(H, budget // per_head))
    mask = torch.ones(T, T, dtype=torch.bool, device=dev).triu(1)
    scale = DQK ** -0.5
    parts = {n: [] for n in ("y", "lse") + GRADS}
    for h0 in range(0, H, chunk):
        heads = slice(h0, min(H, h0 + chunk))
        leaves = [x[:, :, heads].to(dev, f64).requires_grad_() for x in (q, k, v, gate)]
        ql, kl, vl, gl = leaves
        with torch.enable_grad():
            s = scale * (ql.transpose(1, 2) @ kl.transpose(1, 2).transpose(-1, -2))
            s = s.masked_fill(mask, float("-inf"))             # [B, h, T, T]
            with torch.no_grad():
                parts["lse"].append(torch.logsumexp(s, dim=-1))  # [B, h, T]
            o = torch.softmax(s, dim=-1) @ vl.transpose(1, 2)   # [B, h, T, d_v]
            y = o.transpose(1, 2) * torch.sigmoid(gl)           # [B, T, h, d_v]
            grads = torch.autograd.grad(y, leaves, dy[:, :, heads].to(dev, f64))
        parts["y"].append(y.detach())
        for n, g in zip(GRADS, grads):
            parts[n].append(g)
        del s, o, y, grads, leaves
    out = {n: torch.cat(p, dim=1 if n == "lse" else 2) for n, p in parts.items()}
    torch.cuda.empty_cache()
    return out


def rel_err(x, ref):
    """max |x - ref| / max |ref| (inf when x holds a non-finite value)."""
    x = x.to(torch.float64)
    if not bool(torch.isfinite(x).all()):
        return float("inf")
    return float((x - ref).abs().max() / ref.abs().max())


def nonfinite(x):
    return int(x.numel() - torch.isfinite(x.float()).sum())


def record_errors(row, prefix, got, ref):
    """got: {y, dq, dk, dv, dgate[, lse]} CUDA tensors."""
    worst, bad = 0.0, 0
    for n in CHECKED:
        row[f"{prefix}_err_{n}"] = rel_err(got[n], ref[n])
        worst = max(worst, row[f"{prefix}_err_{n}"])
        bad += nonfinite(got[n])
    if "lse" in got:
        row[f"{prefix}_lse_abs_err"] = (float((got["lse"].double() - ref["lse"]).abs().max())
                                        if bool(torch.isfinite(got["lse"]).all()) else float("inf"))
        bad += nonfinite(got["lse"])
    row[f"{prefix}_err_worst"] = worst
    row[f"{prefix}_nonfinite"] = bad


def peer_calls(q, k, v, gate, dy, backend_ctx, pad_v):
    """(forward, train) of SDPA (bf16, is_causal) + the gate on bf16 leaves
    [B, T, H, D]: forward() -> y with autograd on; train() -> (y, dq, dk,
    dv, dgate) by torch.autograd.grad of y with dy. pad_v: v zero-padded to
    d_qk and the output sliced (flash attention wants equal head dims)."""
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v, gate)]

    def forward():
        ql, kl, vl, gl = leaves
        vh = (F.pad(vl, (0, DQK - DV)) if pad_v else vl).transpose(1, 2)
        with backend_ctx():
            o = F.scaled_dot_product_attention(ql.transpose(1, 2), kl.transpose(1, 2), vh,
                                               is_causal=True)
        if pad_v:
            o = o[..., :DV]
        return o.transpose(1, 2) * torch.sigmoid(gl)

    def train():
        y = forward()
        return (y,) + torch.autograd.grad(y, leaves, dy)
    return forward, train


def short(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", action="append", required=True,
                   help="NAME=PATH of a library of bench/mla/compile_grad.sh; a NAME "
                        "containing bf16 is the bf16 variant")
    p.add_argument("--adapter", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lengths", default="2048,8192", help="timed T (B = --batch)")
    p.add_argument("--check-lengths", default="300,1024",
                   help="T at which every element is checked with B = 2 (not timed)")
    p.add_argument("--no-check-timed", action="store_true",
                   help="skip the float64 check at the timed lengths")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--iters", type=int, default=10, help="our timed calls")
    p.add_argument("--peer-iters", type=int, default=20, help="SDPA graph replays")
    p.add_argument("--tolerance", type=float, default=2e-2)
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")

    gemm, gemm_shapes = gemm_ceiling()
    bandwidth = copy_bandwidth()
    print(f"ceilings: bf16 cuBLAS GEMM {gemm:.0f} TFLOP/s "
          f"({', '.join(f'{n}^3: {t:.0f}' for n, t in gemm_shapes.items())}), "
          f"copy {bandwidth:.2f} TB/s", flush=True)
    variants = []
    for spec in args.lib:
        name, path = spec.split("=", 1)
        variants.append((name, OurTrain(path, args.adapter, bf16="bf16" in name)))

    def inputs(B, T):
        """q, k, v, gate, dy: float32 CUDA tensors, standard normal."""
        return [torch.randn(B, T, H, d, device=dev) for d in (DQK, DQK, DV, DV, DV)]

    def run_ours(kernel, given):
        q, k, v, gate, dy = given
        y, lse = kernel.forward(q, k, v, gate)
        got = kernel.backward(q, k, v, gate, y, lse, dy)
        got["y"], got["lse"] = y, lse
        return got

    def ok(row, prefix):
        return bool(row.get(f"{prefix}_err_worst", float("inf")) <= args.tolerance
                    and row.get(f"{prefix}_nonfinite", 1) == 0)

    # Every element at the check lengths, two batches.
    checks = []
    for T in [int(t) for t in args.check_lengths.split(",") if t]:
        x32 = inputs(2, T)
        x16 = [x.to(torch.bfloat16) for x in x32]
        row = {"T": T, "B": 2}
        for bf16 in (False, True):
            chosen = [(n, kern) for n, kern in variants if kern.bf16 == bf16]
            if not chosen:
                continue
            given = x16 if bf16 else x32
            ref = reference(*given)
            for name, kernel in chosen:
                try:
                    record_errors(row, name, run_ours(kernel, given), ref)
                except Exception as e:  # reported, not hidden
                    row[name + "_error"] = short(e)
                row[name + "_ok"] = ok(row, name)
            del ref
        checks.append(row)
        print(json.dumps(row), flush=True)
        del x32, x16
        torch.cuda.empty_cache()

    rows = []
    for T in [int(t) for t in args.lengths.split(",") if t]:
        B = args.batch
        fwd_flops, bwd_flops = flops(B, T)
        total_flops = fwd_flops + bwd_flops
        row = {"T": T, "B": B, "H": H, "d_qk": DQK, "d_v": DV, "fwd_flops": fwd_flops,
               "bwd_flops": bwd_flops, "checked": not args.no_check_timed}
        x32 = inputs(B, T)
        x16 = [x.to(torch.bfloat16) for x in x32]
        ref16 = None
        for bf16 in (False, True):
            chosen = [(n, kern) for n, kern in variants if kern.bf16 == bf16]
            if not chosen and not bf16:
                continue
            given = x16 if bf16 else x32
            ref = None if args.no_check_timed else reference(*given)
            for name, kernel in chosen:
                try:
                    got = run_ours(kernel, given)
                    if ref is not None:
                        record_errors(row, name, got, ref)
                        row[name + "_ok"] = ok(row, name)
                    else:
                        row[name + "_nonfinite"] = sum(nonfinite(x) for x in got.values())
                    t = kernel.time(*given[:4], got["y"], got["lse"], given[4], args.iters)
                    for key, value in t.items():
                        row[f"{name}_{key}"] = value
                    row[name + "_ms"] = t["fwd_ms"] + t["bwd_ms"]
                    row[name + "_call_ms"] = t["fwd_call_ms"] + t["bwd_call_ms"]
                    row[name + "_tflops"] = total_flops / (row[name + "_ms"] * 1e-3) / 1e12
                    row[name + "_fwd_tflops"] = fwd_flops / (t["fwd_ms"] * 1e-3) / 1e12
                    row[name + "_bwd_tflops"] = bwd_flops / (t["bwd_ms"] * 1e-3) / 1e12
                    row[name + "_over_gemm_ceiling"] = row[name + "_tflops"] / gemm
                    del got
                except Exception as e:  # reported, not hidden
                    row[name + "_error"] = short(e)
                torch.cuda.synchronize()
            if bf16:
                ref16 = ref  # the peer's inputs are the bf16-rounded ones too
            del ref
            torch.cuda.empty_cache()

        # The peer: SDPA in bf16 on the bf16-rounded inputs, bf16 dy.
        q, k, v, gate, dy = x16
        del x32
        peer = {}
        for key, ctx, pad_v in sdpa_variants():
            entry = {}
            try:
                forward, train = peer_calls(q, k, v, gate, dy, ctx, pad_v)
                outs = train()
                torch.cuda.synchronize()
                if ref16 is not None:
                    record_errors(entry, "sdpa", dict(zip(CHECKED, (o.detach() for o in outs))),
                                  ref16)
                    entry = {kk[len("sdpa_"):]: vv for kk, vv in entry.items()}
                del outs
                entry["fwd_ms"], entry["fwd_timing"] = graph_time(forward, args.peer_iters)
                entry["ms"], entry["timing"] = graph_time(train, args.peer_iters)
                entry["bwd_ms"] = entry["ms"] - entry["fwd_ms"]
                entry["tflops"] = total_flops / (entry["ms"] * 1e-3) / 1e12
                entry["over_gemm_ceiling"] = entry["tflops"] / gemm
            except Exception as e:  # a backend that refuses is reported, not hidden
                entry = {"error": short(e)}
            torch.cuda.synchronize()
            peer[key] = entry
        row["peer"] = peer
        del ref16, q, k, v, gate, dy, x16
        torch.cuda.empty_cache()
        if "ms" in peer.get("auto", {}):
            row["peer_ms"] = peer["auto"]["ms"]
            row["peer_fwd_ms"] = peer["auto"]["fwd_ms"]
        timed = {n: r for n, r in peer.items() if "ms" in r}
        if timed:
            best = min(timed, key=lambda n: timed[n]["ms"])
            row["peer_best"], row["peer_best_ms"] = best, timed[best]["ms"]
        for name, _ in variants:
            if name + "_ms" in row and "peer_ms" in row:
                row[name + "_over_sdpa"] = row["peer_ms"] / row[name + "_ms"]
                row[name + "_fwd_over_sdpa"] = row["peer_fwd_ms"] / row[name + "_fwd_ms"]
            if name + "_ms" in row and "peer_best_ms" in row:
                row[name + "_over_best_sdpa"] = row["peer_best_ms"] / row[name + "_ms"]
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "gemm_bf16_tflops_by_shape": gemm_shapes,
              "copy_tb_s": bandwidth, "tolerance": args.tolerance,
              "flops": "forward 2 B H T^2 (d_qk + d_v) / 2, backward 2 B H T^2 "
                       "(3 d_qk + 2 d_v) / 2",
              "reference": "float64 torch autograd of the materialised softmax, every "
                           "element; bf16-rounded inputs for bf16 variants and SDPA",
              "checks": checks, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "mla_grad_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    fmt = lambda x, f: (f.format(x) if x is not None and not (
        isinstance(x, float) and math.isnan(x)) else "-")
    names = [n for n, _ in variants]
    print()
    print(f"checks (every element, B = 2, float64 autograd reference, bar {args.tolerance:g}):")
    for r in checks:
        print(f"  T={r['T']}: " + "; ".join(
            f"{n} " + (r[n + "_error"] if n + "_error" in r else
                       ", ".join(f"{c} {r[f'{n}_err_{c}']:.2e}" for c in CHECKED)
                       + f", lse abs {r[n + '_lse_abs_err']:.1e}, "
                       f"{r[n + '_nonfinite']} non-finite, {'ok' if r[n + '_ok'] else 'FAIL'}")
            for n in names))
    print(f"bf16 GEMM ceiling {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s. Peer = SDPA"
          "(is_causal) bf16 + gate, forward + backward by autograd ('auto': SDPA's own "
          "backend choice). Ours: GPU time of the launches. FLOPs: forward 2BHT^2(d_qk+d_v)/2, "
          "backward 2BHT^2(3d_qk+2d_v)/2. Errors: max|x-ref|/max|ref| against float64 "
          + ("on every element." if not args.no_check_timed else "(not checked at these T)."))
    print("| T | variant | fwd ms | bwd ms | fwd+bwd ms | SDPA fwd+bwd ms | ours/SDPA | "
          "ours/best SDPA | TFLOP/s (/ceiling) | err y | dq | dk | dv | dgate |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        for n in names:
            if n + "_error" in r:
                print(f"| {r['T']} | {n} | {r[n + '_error']} |" + " - |" * 11)
                continue
            print(f"| {r['T']} | {n} | {fmt(r.get(n + '_fwd_ms'), '{:.3f}')} | "
                  f"{fmt(r.get(n + '_bwd_ms'), '{:.3f}')} | {fmt(r.get(n + '_ms'), '{:.3f}')} | "
                  f"{fmt(r.get('peer_ms'), '{:.3f}')} | {fmt(r.get(n + '_over_sdpa'), '{:.3f}')} | "
                  f"{fmt(r.get(n + '_over_best_sdpa'), '{:.3f}')} | "
                  f"{fmt(r.get(n + '_tflops'), '{:.0f}')} "
                  f"({fmt(r.get(n + '_over_gemm_ceiling'), '{:.2f}')}) | "
                  + " | ".join(fmt(r.get(f"{n}_err_{c}"), "{:.1e}") for c in CHECKED) + " |")
        for key, e in r["peer"].items():
            if "ms" not in e:
                print(f"| {r['T']} | SDPA {key} | {e.get('error', '-')} |" + " - |" * 11)
                continue
            print(f"| {r['T']} | SDPA {key} | {e['fwd_ms']:.3f} | {e['bwd_ms']:.3f} | "
                  f"{e['ms']:.3f} | - | - | - | {e['tflops']:.0f} ({e['over_gemm_ceiling']:.2f}) | "
                  + " | ".join(fmt(e.get(f"err_{c}"), "{:.1e}") for c in CHECKED) + " |")
    print("(SDPA rows: fwd timed with autograd on, bwd = fwd+bwd - fwd; "
          "timing method per row in the JSON.)")
    failed = [f"T={r['T']} {n}" for r in checks + rows for n in names
              if r.get("checked", True) and n + "_ok" in r and not r[n + "_ok"]]
    if failed:
        print("FAILED the bar: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
