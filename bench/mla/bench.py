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
# Our kernel is the tensor-core flash-attention forward that
# -moe-generate-attention-kernels generates (bf16 mma.sync, fp32 softmax and
# accumulation; CUDA tensors read in place: float32 ones for the example's
# kernel, bfloat16 ones for its bf16 variants). Per T it prints and
# records (JSON in --out):
#   * our relative error (max |ours - ref| / max |ref|) against a float64
#     reference on the same float32 inputs -- every row at the check lengths
#     (--check-lengths), sampled first and last query rows at the timed ones
#     -- and the count of non-finite outputs; the bar is 2e-2 (bf16 operands);
#   * our kernel time (CUDA events around the launches, summed, by
#     libmoert_mlir.so; each launch's time in <variant>_launch_ms) with the
#     pipeline's defaults and, with --lib-alt, for variants; a variant
#     whose name contains "bf16" is the kernel compiled for bf16 q, k, v,
#     gate and output, fed the bf16-rounded inputs (like the peer) and
#     checked against the float64 reference on those;
#   * the peer's time (SDPA is_causal=True in bf16 + the gate multiply, by
#     CUDA-graph replay) for SDPA's own backend choice and for each backend
#     forced, and its error against a float64 reference on the same
#     bf16-rounded inputs;
#   * TFLOP/s with causal FLOPs = 2 B H T^2 (d_qk + d_v) / 2 (the QK^T and
#     PV products over the lower triangle), the ratio to the bf16 GEMM
#     ceiling measured in this run, and ours/SDPA throughput.

import argparse
import ctypes
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, gemm_ceiling, graph_time, read_result, rel_error)

H, DQK, DV = 32, 192, 128


class OurKernel(CompiledKernel):
    """Ours; with bf16, the kernel compiled for bf16 q, k, v, gate and
    output (fed the bf16-rounded inputs, like the peer)."""

    def __init__(self, lib_path, adapter_path, bf16=False):
        super().__init__(lib_path, adapter_path, "mla_attention_forward")
        self.bf16 = bf16

    def __call__(self, tensors):
        result = MEMREF[4]()
        self.call_in_place(result, tensors)
        if self.bf16:
            bits = read_result(result, ctypes.c_uint16, np.uint16)
            out = (bits.astype(np.uint32) << 16).view(np.float32)
        else:
            out = read_result(result)
        self.free_results(result)
        return out

    def time(self, tensors, iters):
        return self.time_in_place(lambda: MEMREF[4](), tensors, iters)


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


def sdpa_variants():
    """(key, context factory, pad_v) for each backend of sdpa_backends(), and
    flash attention once more with v zero-padded to d_qk (its kernels need
    d_qk == d_v)."""
    for name, ctx in sdpa_backends():
        yield name, ctx, False
        if name == "flash_attention":
            yield name + "_pad_v", ctx, True


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


def check_rows_of(T, n):
    n = min(n, T)
    return np.unique(np.concatenate([np.arange(n // 2), np.arange(T - (n - n // 2), T)]))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True, help="ours, the pipeline's defaults")
    p.add_argument("--lib-alt", action="append", default=[],
                   help="NAME=PATH: a variant of ours (other pipeline options)")
    p.add_argument("--adapter", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--check-lengths", default="1,17,64,130,300,1000",
                   help="T at which every output row is checked (B=2)")
    p.add_argument("--lengths", default="8192,32768")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--ref-rows", type=int, default=512,
                   help="query rows (half first, half last) checked against float64 "
                        "at the timed lengths")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--tolerance", type=float, default=2e-2)
    p.add_argument("--example-lib",
                   help="examples/kernels/mla.mlir as it is (H = 4, d_qk = 96, "
                        "d_v = 64, fp32), built by compile.sh")
    p.add_argument("--cpu-cases", help="the directory of bench/cpu_reference.py's "
                                       "cases for the example (CPU back-end results)")
    args = p.parse_args()
    torch.manual_seed(0)
    B = args.batch
    d = torch.device("cuda")

    gemm, gemm_shapes = gemm_ceiling()
    print(f"ceiling: bf16 cuBLAS GEMM {gemm:.0f} TFLOP/s "
          f"({', '.join(f'{n}^3: {t:.0f}' for n, t in gemm_shapes.items())})", flush=True)
    variants = [("ours", OurKernel(args.lib, args.adapter))]
    for alt in args.lib_alt:
        name, path = alt.split("=", 1)
        variants.append((name, OurKernel(path, args.adapter, bf16="bf16" in name)))
    is_bf16 = {name: kernel.bf16 for name, kernel in variants}

    def inputs(b, T):
        q = torch.randn(b, T, H, DQK, device=d)
        k = torch.randn(b, T, H, DQK, device=d)
        v = torch.randn(b, T, H, DV, device=d)
        g = torch.randn(b, T, H, DV, device=d)
        return q, k, v, g

    # The example kernel on the GPU against the CPU back end's results on the
    # same inputs (bench/cpu_reference.py, run where MLIR is).
    cpu_checks = []
    if args.example_lib and args.cpu_cases:
        example = OurKernel(args.example_lib, args.adapter)
        for case in sorted(os.listdir(args.cpu_cases)):
            case_dir = os.path.join(args.cpu_cases, case)
            arrays = [np.load(os.path.join(case_dir, f"in{i}.npy")) for i in range(4)]
            cpu_out = np.load(os.path.join(case_dir, "result0.npy"))
            o = example([torch.from_numpy(a).to(d) for a in arrays])
            row = {"case": case, "shape": list(arrays[0].shape),
                   "rel_error_vs_cpu": rel_error(o, cpu_out.astype(np.float64)),
                   "nonfinite": int(np.size(o) - np.isfinite(o).sum())}
            row["ok"] = bool(row["rel_error_vs_cpu"] <= args.tolerance and not row["nonfinite"])
            cpu_checks.append(row)
            print(json.dumps(row), flush=True)

    checks = []
    for T in [int(t) for t in args.check_lengths.split(",") if t]:
        tensors = inputs(2, T)
        ref = reference(*tensors)
        tensors16 = [x.to(torch.bfloat16) for x in tensors]
        ref16 = reference(*tensors16) if any(is_bf16.values()) else None
        row = {"T": T, "B": 2}
        for name, kernel in variants:
            o = kernel(tensors16 if kernel.bf16 else tensors)
            row[name + "_rel_error"] = rel_error(o, ref16 if kernel.bf16 else ref)
            row[name + "_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())
            row[name + "_ok"] = bool(row[name + "_rel_error"] <= args.tolerance
                                     and row[name + "_nonfinite"] == 0)
        checks.append(row)
        print(json.dumps(row), flush=True)
        del tensors, tensors16

    rows = []
    for T in [int(t) for t in args.lengths.split(",") if t]:
        tensors = inputs(B, T)
        row = {"T": T, "B": B, "H": H, "d_qk": DQK, "d_v": DV,
               "causal_flops": causal_flops(B, T)}
        check_rows = check_rows_of(T, args.ref_rows)
        row["checked_rows"] = int(len(check_rows))
        ref = reference(*tensors, rows=check_rows)
        tensors16 = [x.to(torch.bfloat16) for x in tensors]
        ref16 = reference(*tensors16, rows=check_rows) if any(is_bf16.values()) else None
        for name, kernel in variants:
            try:
                given = tensors16 if kernel.bf16 else tensors
                o = kernel(given)[:, check_rows]
                row[name + "_rel_error"] = rel_error(o, ref16 if kernel.bf16 else ref)
                row[name + "_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())
                ms, call_ms = kernel.time(given, args.iters)
                row[name + "_ms"], row[name + "_call_ms"] = ms, call_ms
                row[name + "_launch_ms"] = kernel.last_launch_ms
                row[name + "_tflops"] = row["causal_flops"] / (ms * 1e-3) / 1e12
                row[name + "_over_gemm_ceiling"] = row[name + "_tflops"] / gemm
            except Exception as e:  # reported, not hidden
                row[name + "_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            torch.cuda.synchronize()
        del ref

        # The peer, in bf16 (its reference uses the same bf16-rounded inputs).
        tq, tk, tv, tg = tensors16
        del tensors, tensors16
        torch.cuda.empty_cache()
        ref_rows = ref16 if ref16 is not None else reference(tq, tk, tv, tg, rows=check_rows)
        peer = {}
        for key, ctx, pad_v in sdpa_variants():
            try:
                call = run_peer(tq, tk, tv, tg, ctx, pad_v)
                out = call()
                torch.cuda.synchronize()
                err = rel_error(out[:, torch.as_tensor(check_rows, device=d)].double().cpu().numpy(),
                                ref_rows)
                ms, method = graph_time(call, 20)
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
            row["peer_best_ms"] = timed[best]["ms"]
            row["peer_best_tflops"] = timed[best]["tflops"]
        for name, _ in variants:
            if name + "_ms" in row and "peer_ms" in row:
                row[name + "_over_sdpa"] = row["peer_ms"] / row[name + "_ms"]
            if name + "_ms" in row and "peer_best_ms" in row:
                row[name + "_over_best_sdpa"] = row["peer_best_ms"] / row[name + "_ms"]
        del tq, tk, tv, tg
        torch.cuda.empty_cache()
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "gemm_bf16_tflops_by_shape": gemm_shapes,
              "flops": "2 B H T^2 (d_qk + d_v) / 2", "tolerance": args.tolerance,
              "checks": checks, "example_vs_cpu_back_end": cpu_checks, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "mla_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    fmt = lambda x, f: (f.format(x) if x is not None else "-")
    print()
    print(f"checks (every row, B=2, float64 reference, bar {args.tolerance:g}):")
    for r in checks:
        print("  T=%d: " % r["T"] + ", ".join(
            f"{n} {r.get(n + '_rel_error', float('nan')):.2e} "
            f"({r.get(n + '_nonfinite')} non-finite, {'ok' if r.get(n + '_ok') else 'FAIL'})"
            for n, _ in variants))
    print(f"bf16 GEMM ceiling: {gemm:.0f} TFLOP/s. Peer = SDPA(is_causal) bf16 + gate "
          "(SDPA's own backend choice, 'auto'). FLOPs = 2 B H T^2 (d_qk + d_v) / 2.")
    print("| T | variant | ms | TFLOP/s | /GEMM ceiling | rel err (sampled rows) | "
          "/SDPA auto | /best SDPA |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        for name, _ in variants:
            print(f"| {r['T']} | {name} | {fmt(r.get(name + '_ms'), '{:.3f}')} | "
                  f"{fmt(r.get(name + '_tflops'), '{:.0f}')} | "
                  f"{fmt(r.get(name + '_over_gemm_ceiling'), '{:.2f}')} | "
                  f"{fmt(r.get(name + '_rel_error'), '{:.2e}')} | "
                  f"{fmt(r.get(name + '_over_sdpa'), '{:.2f}')} | "
                  f"{fmt(r.get(name + '_over_best_sdpa'), '{:.2f}')} |")
        for name, pr in r["peer"].items():
            if "ms" in pr:
                print(f"| {r['T']} | SDPA {name} | {pr['ms']:.3f} | {pr['tflops']:.0f} | "
                      f"{pr['over_gemm_ceiling']:.2f} | {pr['rel_error']:.2e} | - | - |")
            else:
                print(f"| {r['T']} | SDPA {name} | - | - | - | - | {pr['error']} | - |")


if __name__ == "__main__":
    main()
