#!/usr/bin/env python3
# bench/mla/bench.py - check and time moe-mlir's @mla_attention_forward on the
# GPU against PyTorch's scaled_dot_product_attention, in one run on one GPU.
#
# Our kernel comes from bench/mla/compile.sh (examples/kernels/mla.mlir at
# H = 32, d_qk = 192, d_v = 128; host code + PTX, linked by run.sh). PyTorch
# is used here only for inputs, the float64 reference, the peer and the GEMM
# ceiling; moe-mlir itself has no Python dependency.
#
#   y = softmax(q k^T / sqrt(d_qk) + causal mask) v * sigmoid(gate)
#   q, k: [B, T, H, d_qk]; v, gate: [B, T, H, d_v]
#
# Per T it prints and records (JSON in --out):
#   * our relative error against a float64 reference (full, only at
#     T <= --ours-max-t) and the peer's (on sampled query rows);
#   * our time (wall clock of one call, the GPU path is v0: every scf.forall
#     iteration is ONE block of ONE thread, so our numbers only say that it
#     runs and is correct, not how fast the compiler can be);
#   * the peer's time (SDPA is_causal=True in bf16 + the gate multiply, by
#     CUDA-graph replay) for SDPA's own backend choice and for each backend
#     forced, its TFLOP/s and the ratio to the bf16 GEMM ceiling measured in
#     this run.

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, gemm_ceiling, graph_time, read_result, rel_error)

H, DQK, DV = 32, 192, 128


class OurKernel(CompiledKernel):
    def __init__(self, lib_path, adapter_path):
        super().__init__(lib_path, adapter_path, "mla_attention_forward")

    def __call__(self, q, k, v, gate):
        result = MEMREF[4]()
        self.call(result, (q, k, v, gate))
        out = read_result(result)
        self.free_results(result)
        return out


def reference(q, k, v, gate, rows=None, chunk=512):
    """float64 causal softmax attention with the sigmoid gate, on the GPU.

    q, k: [B, T, H, d_qk], v, gate: [B, T, H, d_v] (numpy or torch, any
    float type). rows: the query positions to compute (all when None).
    Returns float64 numpy [B, len(rows), H, d_v].
    """
    dev = torch.device("cuda")
    f64 = torch.float64
    q, k, v, gate = (torch.as_tensor(x).to(dev, f64) for x in (q, k, v, gate))
    T = q.shape[1]
    rows = torch.arange(T, device=dev) if rows is None else torch.as_tensor(rows, device=dev)
    scale = q.shape[-1] ** -0.5
    kh = k.permute(0, 2, 1, 3)  # [B, H, T, d_qk]
    vh = v.permute(0, 2, 1, 3)  # [B, H, T, d_v]
    outs = []
    for start in range(0, rows.numel(), chunk):
        r = rows[start:start + chunk]
        last = int(r.max()) + 1                       # keys after the last row are masked anyway
        qh = q[:, r].permute(0, 2, 1, 3)              # [B, H, R, d_qk]
        s = scale * qh @ kh[:, :, :last].transpose(-1, -2)  # [B, H, R, last]
        mask = torch.arange(last, device=dev)[None, :] > r[:, None]
        s = s.masked_fill(mask, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = (p @ vh[:, :, :last]).permute(0, 2, 1, 3)  # [B, R, H, d_v]
        outs.append(o * torch.sigmoid(gate[:, r]))
    return torch.cat(outs, dim=1).cpu().numpy()


def causal_flops(B, T):
    # QK^T and PV over the lower triangle: 2 B H T^2 (d_qk + d_v) / 2.
    return 2 * B * H * T * T * (DQK + DV) / 2


def sdpa_backends():
    """(name, context factory) for SDPA's own choice and each forced backend."""
    from contextlib import nullcontext
    out = [("auto", nullcontext)]
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return out
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        if hasattr(SDPBackend, name):
            backend = getattr(SDPBackend, name)
            out.append((name.lower(), lambda b=backend: sdpa_kernel([b])))
    return out


def run_peer(q, k, v, gate, backend_ctx, pad_v):
    """SDPA (bf16, is_causal) + gate. q, k, v, gate: torch bf16 [B, T, H, D].
    pad_v: pad v with zeros to d_qk and slice the output (what the HF Kimi
    code does for flash-attention-2, which wants equal head dims)."""
    qh, kh = q.transpose(1, 2), k.transpose(1, 2)
    vh = v.transpose(1, 2)
    if pad_v:
        vh = F.pad(v, (0, DQK - DV)).transpose(1, 2)

    def call():
        with backend_ctx():
            o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
        if pad_v:
            o = o[..., :DV]
        return o.transpose(1, 2) * torch.sigmoid(gate)
    return call


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--adapter", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lengths", default="128,512,8192,32768")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--ours-max-t", type=int, default=512,
                   help="skip our (v0, one thread per block) kernel above this T")
    p.add_argument("--ref-rows", type=int, default=512,
                   help="query rows (half first, half last) checked against float64 "
                        "for the peer at T above --ours-max-t")
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    B = args.batch

    print("NOTE: our GPU path is v0 (each scf.forall iteration = one block of one "
          "thread); our times are tiny-T sanity numbers, not performance.", flush=True)
    gemm, gemm_shapes = gemm_ceiling()
    print(f"ceiling: bf16 cuBLAS GEMM {gemm:.0f} TFLOP/s "
          f"({', '.join(f'{n}^3: {t:.0f}' for n, t in gemm_shapes.items())})", flush=True)
    ours = OurKernel(args.lib, args.adapter)

    rows = []
    for T in [int(t) for t in args.lengths.split(",")]:
        f32 = np.float32
        q = rng.standard_normal((B, T, H, DQK), dtype=f32)
        k = rng.standard_normal((B, T, H, DQK), dtype=f32)
        v = rng.standard_normal((B, T, H, DV), dtype=f32)
        gate = rng.standard_normal((B, T, H, DV), dtype=f32)
        row = {"T": T, "B": B, "H": H, "d_qk": DQK, "d_v": DV,
               "causal_flops": causal_flops(B, T)}

        if T <= args.ours_max_t:
            ref = reference(q, k, v, gate)
            check_rows = np.arange(T)
            t0 = time.perf_counter()
            o = ours(q, k, v, gate)
            row["ours_first_call_ms"] = (time.perf_counter() - t0) * 1e3  # includes the PTX JIT
            row["ours_rel_error"] = rel_error(o, ref)
            row["ours_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())
            if row["ours_first_call_ms"] < 5000:
                t0 = time.perf_counter()
                ours(q, k, v, gate)
                row["ours_ms"] = (time.perf_counter() - t0) * 1e3
            else:
                row["ours_ms"] = row["ours_first_call_ms"]
            row["ours_tflops"] = row["causal_flops"] / (row["ours_ms"] * 1e-3) / 1e12
        else:
            n = min(args.ref_rows, T)
            check_rows = np.unique(np.concatenate([np.arange(n // 2), np.arange(T - (n - n // 2), T)]))

        # The peer, in bf16 (the reference below uses the same bf16-rounded inputs).
        d = torch.device("cuda")
        tq, tk, tv, tg = (torch.from_numpy(x).to(d, torch.bfloat16) for x in (q, k, v, gate))
        ref_rows = reference(tq, tk, tv, tg, rows=check_rows)
        row["peer_checked_rows"] = int(len(check_rows))
        peer = {}
        for name, ctx in sdpa_backends():
            for pad_v in (False, True):
                if pad_v and name != "flash_attention":
                    continue
                key = name + ("_pad_v" if pad_v else "")
                try:
                    call = run_peer(tq, tk, tv, tg, ctx, pad_v)
                    out = call()
                    torch.cuda.synchronize()
                    err = rel_error(out[:, torch.as_tensor(check_rows, device=d)].double().cpu().numpy(),
                                    ref_rows)
                    ms, method = graph_time(call, args.iters)
                    peer[key] = {"ms": ms, "timing": method, "rel_error": err,
                                 "tflops": row["causal_flops"] / (ms * 1e-3) / 1e12}
                    peer[key]["over_gemm_ceiling"] = peer[key]["tflops"] / gemm
                    del out
                except Exception as e:  # a backend that refuses is reported, not hidden
                    peer[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                torch.cuda.synchronize()
        row["peer"] = peer
        if "ms" in peer.get("auto", {}):
            row["peer_ms"] = peer["auto"]["ms"]
            row["peer_tflops"] = peer["auto"]["tflops"]
            row["peer_over_gemm_ceiling"] = peer["auto"]["over_gemm_ceiling"]
            row["peer_rel_error"] = peer["auto"]["rel_error"]
        timed = {n: r for n, r in peer.items() if "ms" in r}
        if timed:
            best = min(timed, key=lambda n: timed[n]["ms"])
            row["peer_best"] = best
            row["peer_best_tflops"] = timed[best]["tflops"]
        if "ours_ms" in row and "peer_ms" in row:
            row["ours_over_peer_throughput"] = row["peer_ms"] / row["ours_ms"]
        del tq, tk, tv, tg
        torch.cuda.empty_cache()
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "gemm_bf16_tflops_by_shape": gemm_shapes,
              "note": "ours = v0 GPU path (one thread per scf.forall iteration), small T only",
              "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "mla_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    fmt = lambda x, f: (f.format(x) if x is not None else "-")
    print()
    print(f"bf16 GEMM ceiling: {gemm:.0f} TFLOP/s. Peer = SDPA(is_causal) bf16 + gate, "
          "SDPA's own backend choice ('auto'). Ours = v0 (1 thread/block), f32.")
    print("| T | ours ms | ours rel err | peer ms | peer TFLOP/s | peer/GEMM ceiling | "
          "peer rel err | best peer variant (TFLOP/s) | ours/peer throughput |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        best = (f"{r['peer_best']} ({r['peer_best_tflops']:.0f})" if "peer_best" in r else "-")
        print(f"| {r['T']} | {fmt(r.get('ours_ms'), '{:.2f}')} | {fmt(r.get('ours_rel_error'), '{:.2e}')} | "
              f"{fmt(r.get('peer_ms'), '{:.3f}')} | {fmt(r.get('peer_tflops'), '{:.0f}')} | "
              f"{fmt(r.get('peer_over_gemm_ceiling'), '{:.2f}')} | {fmt(r.get('peer_rel_error'), '{:.2e}')} | "
              f"{best} | {fmt(r.get('ours_over_peer_throughput'), '{:.2e}')} |")
    print()
    print("| T | SDPA variant | ms | TFLOP/s | /GEMM ceiling | rel err | timing |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for name, pr in r["peer"].items():
            if "ms" in pr:
                print(f"| {r['T']} | {name} | {pr['ms']:.3f} | {pr['tflops']:.0f} | "
                      f"{pr['over_gemm_ceiling']:.2f} | {pr['rel_error']:.2e} | {pr['timing']} |")
            else:
                print(f"| {r['T']} | {name} | - | - | - | - | {pr['error']} |")


if __name__ == "__main__":
    main()
