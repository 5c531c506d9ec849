#!/usr/bin/env python3
# bench/kda/bench.py - check and time moe-mlir's @kda_forward on the GPU
# against flash-linear-attention's chunk_kda, in one run on one GPU.
#
# Our kernel comes from bench/kda/compile.sh (host code + PTX, linked by
# run.sh). PyTorch is used here only for inputs, the float64 reference, the
# peer and the ceilings; moe-mlir itself has no Python dependency.
#
# Per T it prints and records (JSON in --out):
#   * our relative error against a float64 recurrence (and FLA's);
#   * our time and FLA's (CUDA-graph replay of chunk_kda), and the ratio;
#   * the bf16 GEMM ceiling and the copy bandwidth measured in this run.

import argparse
import json
import os
import sys
import time
import types

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, copy_bandwidth, gemm_ceiling, graph_time, read_result, rel_error)

H, K, V = 16, 128, 128
G_MIN = -5.0


class OurKernel(CompiledKernel):
    def __init__(self, lib_path, adapter_path):
        super().__init__(lib_path, adapter_path, "kda_forward")

    def __call__(self, q, k, v, z, beta, a_log, dt_bias):
        result = MEMREF[4]()
        self.call(result, (q, k, v, z, beta, a_log, dt_bias))
        out = read_result(result)
        self.free_results(result)
        return out


def reference(q, k, v, z, beta, a_log, dt_bias):
    """The per-token recurrence of ALGORITHMS.md 1.3 in float64 (on the GPU)."""
    d = torch.device("cuda")
    q, k, v, z, beta = (torch.from_numpy(x).to(d, torch.float64) for x in (q, k, v, z, beta))
    a_log = torch.from_numpy(a_log).to(d, torch.float64)
    dt_bias = torch.from_numpy(dt_bias).to(d, torch.float64)
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    g = G_MIN * torch.sigmoid(torch.exp(a_log)[None, None, :, None] * (z + dt_bias[None, None]))
    B, T = q.shape[:2]
    s = K ** -0.5
    S = torch.zeros(B, H, K, V, dtype=torch.float64, device=d)
    out = torch.empty(B, T, H, V, dtype=torch.float64, device=d)
    for t in range(T):
        S = torch.exp(g[:, t])[..., None] * S
        u = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhk,bhkv->bhv", k[:, t], S))
        S = S + k[:, t, :, :, None] * u[:, :, None, :]
        out[:, t] = torch.einsum("bhk,bhkv->bhv", s * q[:, t], S)
    return out.cpu().numpy()


def load_fla(path):
    """Imports fla.ops.kda without running fla/ops/__init__.py (which imports
    every op family and their optional dependencies)."""
    sys.path.insert(0, path)
    import fla  # noqa: F401
    ops = types.ModuleType("fla.ops")
    ops.__path__ = [os.path.join(path, "fla", "ops")]
    sys.modules["fla.ops"] = ops
    from fla.ops.kda import chunk_kda
    return chunk_kda


def kda_flops(T):
    # ALGORITHMS.md 1.4: 6 T K^2 + 3 T C K + T C^2 per head (K = V, C = 64).
    return H * (6 * T * K * K + 3 * T * 64 * K + T * 64 * 64)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--adapter", required=True)
    p.add_argument("--fla", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lengths", default="1024,4096,16384,65536")
    p.add_argument("--ours-max-t", type=int, default=65536,
                   help="skip our kernel above this T (its time is reported as absent)")
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    gemm, _ = gemm_ceiling()
    bandwidth = copy_bandwidth()
    print(f"ceilings: bf16 GEMM {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s", flush=True)
    ours = OurKernel(args.lib, args.adapter)
    try:
        chunk_kda = load_fla(args.fla)
        fla_error = None
    except Exception as e:  # reported, not hidden
        chunk_kda, fla_error = None, f"{type(e).__name__}: {e}"
        print("flash-linear-attention unavailable:", fla_error, flush=True)

    rows = []
    for T in [int(t) for t in args.lengths.split(",")]:
        B = 1
        f32 = np.float32
        q = rng.standard_normal((B, T, H, K), dtype=f32)
        k = rng.standard_normal((B, T, H, K), dtype=f32)
        v = rng.standard_normal((B, T, H, V), dtype=f32)
        z = rng.uniform(-3, 3, (B, T, H, K)).astype(f32)
        beta = rng.uniform(0.05, 0.95, (B, T, H)).astype(f32)
        a_log = rng.uniform(0, 1, (H,)).astype(f32)
        dt_bias = rng.standard_normal((H, K), dtype=f32)
        ref = reference(q, k, v, z, beta, a_log, dt_bias)
        row = {"T": T, "B": B, "H": H, "K": K, "V": V}

        if T <= args.ours_max_t:
            t0 = time.perf_counter()
            o = ours(q, k, v, z, beta, a_log, dt_bias)
            row["ours_ms"] = (time.perf_counter() - t0) * 1e3
            row["ours_rel_error"] = rel_error(o, ref)
            row["ours_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())

        if chunk_kda is not None:
            d = torch.device("cuda")
            tq, tk, tv = (torch.from_numpy(x).to(d, torch.bfloat16) for x in (q, k, v))
            tz = torch.from_numpy(z).to(d, torch.bfloat16)
            tb = torch.from_numpy(beta).to(d, torch.bfloat16)
            ta = torch.from_numpy(a_log).to(d, torch.float32)
            tdt = torch.from_numpy(dt_bias).to(d, torch.float32).reshape(-1)

            def fla_call():
                return chunk_kda(tq, tk, tv, tz, tb, scale=K ** -0.5,
                                 use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                                 safe_gate=True, lower_bound=G_MIN, A_log=ta,
                                 dt_bias=tdt)[0]
            t0 = time.perf_counter()
            fo = fla_call()  # the first call autotunes
            torch.cuda.synchronize()
            row["fla_first_call_s"] = time.perf_counter() - t0
            row["fla_rel_error"] = rel_error(fo.float().cpu().numpy(), ref)
            row["fla_ms"], row["fla_timing"] = graph_time(fla_call, 20)
            if "ours_ms" in row:
                row["ours_over_fla_throughput"] = row["fla_ms"] / row["ours_ms"]
            row["fla_tflops"] = kda_flops(T) / (row["fla_ms"] * 1e-3) / 1e12
        if "ours_ms" in row:
            row["ours_tflops"] = kda_flops(T) / (row["ours_ms"] * 1e-3) / 1e12
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "copy_tb_s": bandwidth,
              "fla_error": fla_error, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kda_bench.json"), "w") as f:
        json.dump(result, f, indent=2)
    print("| T | ours ms | FLA ms | ours/FLA throughput | ours rel err | FLA rel err |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        fmt = lambda x, f: (f.format(x) if x is not None else "-")
        print(f"| {r['T']} | {fmt(r.get('ours_ms'), '{:.3f}')} | {fmt(r.get('fla_ms'), '{:.3f}')} | "
              f"{fmt(r.get('ours_over_fla_throughput'), '{:.2e}')} | "
              f"{fmt(r.get('ours_rel_error'), '{:.2e}')} | {fmt(r.get('fla_rel_error'), '{:.2e}')} |")


if __name__ == "__main__":
    main()
