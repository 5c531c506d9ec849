#!/usr/bin/env python3
# bench/kda/bench.py - check and time moe-mlir's @kda_forward on the GPU
# against flash-linear-attention's chunk_kda, in one run on one GPU.
#
# Our kernel comes from bench/kda/compile.sh (host code + PTX, linked by
# run.sh). PyTorch is used here only for inputs, the float64 reference, the
# peer and the ceilings; moe-mlir itself has no Python dependency.
#
# Per T it prints and records (JSON in --out):
#   * our relative error against a float64 recurrence (and FLA's), and the
#     count of non-finite outputs;
#   * our time (CUDA events around each kernel launch, summed; the wall time
#     of the whole call too) and FLA's (CUDA-graph replay of chunk_kda), and
#     the throughput ratio;
#   * the same for our kernels with the diagonal tiles forced per position
#     (--lib-per-position), and the dense/per-position ratio;
#   * the bf16 GEMM ceiling and the copy bandwidth measured in this run.
# Our inputs are float32 CUDA tensors read in place (bf16 inside the
# kernels); FLA gets bf16 copies of the same values.

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

ITERS = 10

H, K, V = 16, 128, 128
G_MIN = -5.0


class OurKernel(CompiledKernel):
    def __init__(self, lib_path, adapter_path, name="kda_forward"):
        super().__init__(lib_path, adapter_path, name)

    def __call__(self, tensors):
        result = MEMREF[4]()
        self.call_in_place(result, tensors)
        out = read_result(result)
        self.free_results(result)
        return out

    def time(self, tensors):
        return self.time_in_place(lambda: MEMREF[4](), tensors, ITERS)


def run_ours(kernel, name, tensors, ref, row, T):
    o = kernel(tensors)
    row[name + "_rel_error"] = rel_error(o, ref)
    row[name + "_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())
    row[name + "_ms"], row[name + "_call_ms"] = kernel.time(tensors)
    row[name + "_launch_ms"] = kernel.last_launch_ms  # per kernel, last call
    row[name + "_tflops"] = kda_flops(T) / (row[name + "_ms"] * 1e-3) / 1e12


def reference(q, k, v, z, beta, a_log, dt_bias, gate="bounded"):
    """The per-token recurrence of ALGORITHMS.md 1.3 in float64 (on the GPU),
    with the bounded gate (g_min = G_MIN) or the softplus gate of 2.1."""
    d = torch.device("cuda")
    q, k, v, z, beta = (torch.from_numpy(x).to(d, torch.float64) for x in (q, k, v, z, beta))
    a_log = torch.from_numpy(a_log).to(d, torch.float64)
    dt_bias = torch.from_numpy(dt_bias).to(d, torch.float64)
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    x = z + dt_bias[None, None]
    rate = torch.exp(a_log)[None, None, :, None]
    if gate == "bounded":
        g = G_MIN * torch.sigmoid(rate * x)
    else:
        g = -rate * torch.nn.functional.softplus(x)
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


def try_load_fla(path):
    """(chunk_kda, None), or (None, why) when fla cannot be imported: the
    benchmark goes on without the peer and says why."""
    try:
        return load_fla(path), None
    except Exception as e:  # reported, not hidden
        error = f"{type(e).__name__}: {e}"
        print("flash-linear-attention unavailable:", error, flush=True)
        return None, error


def kda_flops(T):
    # ALGORITHMS.md 1.4: 6 T K^2 + 3 T C K + T C^2 per head (K = V, C = 64).
    return H * (6 * T * K * K + 3 * T * 64 * K + T * 64 * 64)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--lib-per-position", help="our kernels compiled with "
                   "kda-diagonal=per-position (for the dense/per-position ratio)")
    p.add_argument("--adapter", required=True)
    p.add_argument("--fla", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lengths", default="1024,4096,16384,65536")
    p.add_argument("--softplus-max-t", type=int, default=4096,
                   help="check @kda_forward_softplus up to this T")
    p.add_argument("--ours-max-t", type=int, default=65536,
                   help="skip our kernel above this T (its time is reported as absent)")
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    gemm, _ = gemm_ceiling()
    bandwidth = copy_bandwidth()
    print(f"ceilings: bf16 GEMM {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s", flush=True)
    ours = OurKernel(args.lib, args.adapter)
    ours_pp = OurKernel(args.lib_per_position, args.adapter) if args.lib_per_position else None
    # The example's softplus gate: never proven, so per-position diagonal
    # tiles; checked (not timed) up to --softplus-max-t.
    ours_softplus = OurKernel(args.lib, args.adapter, "kda_forward_softplus")
    chunk_kda, fla_error = try_load_fla(args.fla)

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
            tensors = [torch.from_numpy(x).cuda() for x in (q, k, v, z, beta, a_log, dt_bias)]
            run_ours(ours, "ours", tensors, ref, row, T)
            if T <= args.softplus_max_t:
                ref_sp = reference(q, k, v, z, beta, a_log, dt_bias, gate="softplus")
                o = ours_softplus(tensors)
                row["softplus_rel_error"] = rel_error(o, ref_sp)
                row["softplus_nonfinite"] = int(np.size(o) - np.isfinite(o).sum())
            if ours_pp is not None:
                run_ours(ours_pp, "ours_pp", tensors, ref, row, T)
                row["dense_over_per_position"] = row["ours_pp_ms"] / row["ours_ms"]
            del tensors

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
        rows.append(row)
        print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "copy_tb_s": bandwidth,
              "fla_error": fla_error, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kda_bench.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"bf16 GEMM ceiling {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s")
    print("| T | ours ms (call ms) | TFLOP/s | FLA ms | FLA TFLOP/s | ours/FLA | "
          "per-position ms | dense/per-position | ours err | nonfinite | FLA err | softplus err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        fmt = lambda x, f: (f.format(x) if x is not None else "-")
        print(f"| {r['T']} | {fmt(r.get('ours_ms'), '{:.3f}')} ({fmt(r.get('ours_call_ms'), '{:.2f}')}) | "
              f"{fmt(r.get('ours_tflops'), '{:.1f}')} | {fmt(r.get('fla_ms'), '{:.3f}')} | "
              f"{fmt(r.get('fla_tflops'), '{:.1f}')} | {fmt(r.get('ours_over_fla_throughput'), '{:.2f}')} | "
              f"{fmt(r.get('ours_pp_ms'), '{:.3f}')} | {fmt(r.get('dense_over_per_position'), '{:.2f}')} | "
              f"{fmt(r.get('ours_rel_error'), '{:.2e}')} | {fmt(r.get('ours_nonfinite'), '{}')} | "
              f"{fmt(r.get('fla_rel_error'), '{:.2e}')} | {fmt(r.get('softplus_rel_error'), '{:.2e}')} |")


if __name__ == "__main__":
    main()
