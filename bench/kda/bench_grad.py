#!/usr/bin/env python3
# bench/kda/bench_grad.py - check and time moe-mlir's KDA forward + backward
# (bench/kda/kda_train.mlir: L2 norms, decay gate, moe.kda, moe.kda_grad and
# the gate's and norms' gradients) against flash-linear-attention's
# chunk_kda forward + backward (its autograd, with the L2 norms and the gate
# in its kernels), in one run on one GPU. B = 1, H = 16, K = V = 128.
#
# Per T and gate (bounded, g_min = -5, against fla's safe_gate lower_bound
# -5; softplus against fla's softplus gate) it prints and records (JSON in
# --out):
#   * at T <= --check-max-t, the relative error (max |x - ref| / max |ref|)
#     of o and of every gradient (q, k, v, z, beta, A_log, dt_bias) against
#     float64 autograd of the per-token recurrence on the same inputs, ours
#     and fla's (fla on the bf16-rounded inputs it reads), and the count of
#     non-finite values;
#   * our time (CUDA events around each launch, summed; and the wall time of
#     the call) and fla's (CUDA-graph replay of forward + backward, or CUDA
#     events when the capture fails: the method is recorded), their ratio,
#     and TFLOP/s by 3x the forward count of bench/kda;
#   * the bf16 GEMM ceiling and the copy bandwidth measured in this run.
# Our inputs are float32 CUDA tensors read in place; fla gets bf16 copies
# (q, k, v, z, beta; A_log and dt_bias in fp32) and a bf16 output adjoint.
#
# Usage (GPU machine; bench/kda/run_grad.sh links the library):
#   bench/kda/run_grad.sh OUTDIR [--lengths 2048,16384,65536]

import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, copy_bandwidth, gemm_ceiling, graph_time, read_result, rel_error)
from bench import H, K, V, G_MIN, kda_flops, try_load_fla  # noqa: E402  (bench/kda/bench.py)

ITERS = 10
NAMES = ("o", "dq", "dk", "dv", "dz", "dbeta", "dA_log", "ddt_bias")
RANKS = (4, 4, 4, 4, 4, 3, 1, 2)


class Results(ctypes.Structure):
    """The eight results of @kda_train_*, in order."""
    _fields_ = [(n, MEMREF[r]) for n, r in zip(NAMES, RANKS)]


class OurTrainKernel(CompiledKernel):
    def __call__(self, tensors):
        results = Results()
        self.call_in_place(results, tensors)
        out = {n: read_result(getattr(results, n)) for n in NAMES}
        self.free_results(*[getattr(results, n) for n in NAMES])
        return out

    def time(self, tensors):
        return self.time_in_place(Results, tensors, ITERS)


def gate_of(z, a_log, dt_bias, gate):
    x = z + dt_bias[None, None]
    rate = torch.exp(a_log)[None, None, :, None]
    if gate == "bounded":
        return G_MIN * torch.sigmoid(rate * x)
    return -rate * torch.nn.functional.softplus(x)


def reference(inputs, do, gate):
    """o and the gradients of sum(o * do) by float64 autograd of the
    per-token recurrence (ALGORITHMS.md 1.3, zero initial state), with the
    L2 norms (eps 1e-6) and the gate of 2.1, on the GPU."""
    d = torch.device("cuda")
    leaves = [torch.from_numpy(x).to(d, torch.float64).requires_grad_() for x in inputs]
    q, k, v, z, beta, a_log, dt_bias = leaves
    qn = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    kn = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    g = gate_of(z, a_log, dt_bias, gate)
    B, T = q.shape[:2]
    s = K ** -0.5
    S = torch.zeros(B, H, K, V, dtype=torch.float64, device=d)
    outs = []
    for t in range(T):
        S = torch.exp(g[:, t])[..., None] * S
        u = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhk,bhkv->bhv", kn[:, t], S))
        S = S + kn[:, t, :, :, None] * u[:, :, None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", s * qn[:, t], S))
    o = torch.stack(outs, 1)
    grads = torch.autograd.grad(o, leaves, torch.from_numpy(do).to(d, torch.float64))
    result = {"o": o.detach().cpu().numpy()}
    for n, gr in zip(NAMES[1:], grads):
        result[n] = gr.cpu().numpy()
    return result


def fla_inputs(inputs, do):
    d = torch.device("cuda")
    q, k, v, z, beta, a_log, dt_bias = inputs
    bf = [torch.from_numpy(x).to(d, torch.bfloat16).requires_grad_() for x in (q, k, v, z, beta)]
    fp = [torch.from_numpy(a_log).to(d, torch.float32).requires_grad_(),
          torch.from_numpy(dt_bias).to(d, torch.float32).reshape(-1).requires_grad_()]
    return bf + fp, torch.from_numpy(do).to(d, torch.bfloat16)


def fla_forward(chunk_kda, leaves, gate):
    q, k, v, z, beta, a_log, dt_bias = leaves
    extra = dict(safe_gate=True, lower_bound=G_MIN) if gate == "bounded" else {}
    return chunk_kda(q, k, v, z, beta, scale=K ** -0.5, use_qk_l2norm_in_kernel=True,
                     use_gate_in_kernel=True, A_log=a_log, dt_bias=dt_bias, **extra)[0]


def fla_train(chunk_kda, leaves, do, gate):
    o = fla_forward(chunk_kda, leaves, gate)
    return (o,) + torch.autograd.grad(o, leaves, do)


def record_errors(row, prefix, got, ref):
    worst = 0.0
    for n in NAMES:
        g = np.asarray(got[n], dtype=np.float64).reshape(ref[n].shape)
        e = rel_error(g, ref[n])
        row[f"{prefix}_err_{n}"] = e
        worst = max(worst, e)
        row[f"{prefix}_nonfinite"] = row.get(f"{prefix}_nonfinite", 0) + int(
            g.size - np.isfinite(g).sum())
    row[f"{prefix}_err_worst"] = worst


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True, help="libkda_train.so")
    p.add_argument("--adapter", required=True)
    p.add_argument("--fla", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--lengths", default="2048,16384,65536")
    p.add_argument("--gates", default="bounded,softplus")
    p.add_argument("--check-max-t", type=int, default=2048,
                   help="check against float64 up to this T (the reference is a per-token loop)")
    args = p.parse_args()
    rng = np.random.default_rng(0)

    gemm, _ = gemm_ceiling()
    bandwidth = copy_bandwidth()
    print(f"ceilings: bf16 GEMM {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s", flush=True)
    chunk_kda, fla_error = try_load_fla(args.fla)

    rows = []
    for gate in args.gates.split(","):
        ours = OurTrainKernel(args.lib, args.adapter, f"kda_train_{gate}")
        for T in [int(t) for t in args.lengths.split(",")]:
            B = 1
            f32 = np.float32
            inputs = (rng.standard_normal((B, T, H, K), dtype=f32),
                      rng.standard_normal((B, T, H, K), dtype=f32),
                      rng.standard_normal((B, T, H, V), dtype=f32),
                      rng.uniform(-3, 3, (B, T, H, K)).astype(f32),
                      rng.uniform(0.05, 0.95, (B, T, H)).astype(f32),
                      rng.uniform(0, 1, (H,)).astype(f32),
                      rng.standard_normal((H, K), dtype=f32))
            do = rng.standard_normal((B, T, H, V), dtype=f32)
            row = {"gate": gate, "T": T, "B": B, "H": H, "K": K, "V": V}
            check = T <= args.check_max_t
            ref = reference(inputs, do, gate) if check else None

            tensors = [torch.from_numpy(x).cuda() for x in inputs + (do,)]
            got = ours(tensors)
            if check:
                record_errors(row, "ours", got, ref)
            else:
                row["ours_nonfinite"] = sum(int(np.size(x) - np.isfinite(x).sum())
                                            for x in got.values())
            row["ours_ms"], row["ours_call_ms"] = ours.time(tensors)
            row["ours_launch_ms"] = ours.last_launch_ms
            row["ours_tflops"] = 3 * kda_flops(T) / (row["ours_ms"] * 1e-3) / 1e12
            del tensors, got
            worst = (f"worst error {row['ours_err_worst']:.2e}" if check
                     else "not checked against float64")
            print(f"{gate} T={T}: ours {row['ours_ms']:.3f} ms, {worst}", flush=True)

            if chunk_kda is not None:
                leaves, tdo = fla_inputs(inputs, do)
                t0 = time.perf_counter()
                fo = fla_train(chunk_kda, leaves, tdo, gate)  # the first call autotunes
                torch.cuda.synchronize()
                row["fla_first_call_s"] = time.perf_counter() - t0
                if check:
                    record_errors(row, "fla", {n: x.detach().float().cpu().numpy()
                                               for n, x in zip(NAMES, fo)}, ref)
                del fo
                row["fla_ms"], row["fla_timing"] = graph_time(
                    lambda: fla_train(chunk_kda, leaves, tdo, gate), 20)
                row["ours_over_fla_throughput"] = row["fla_ms"] / row["ours_ms"]
                row["fla_tflops"] = 3 * kda_flops(T) / (row["fla_ms"] * 1e-3) / 1e12
                del leaves, tdo
            torch.cuda.empty_cache()
            rows.append(row)
            print(json.dumps(row), flush=True)

    result = {"gemm_bf16_tflops": gemm, "copy_tb_s": bandwidth, "fla_error": fla_error,
              "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kda_grad_bench.json"), "w") as f:
        json.dump(result, f, indent=2)
    fmt = lambda x, f: (f.format(x) if x is not None else "-")
    print(f"bf16 GEMM ceiling {gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s")
    print("| gate | T | ours ms (call ms) | TFLOP/s | fla ms | fla TFLOP/s | ours/fla | "
          "ours worst err | fla worst err | nonfinite |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gate']} | {r['T']} | {fmt(r.get('ours_ms'), '{:.3f}')} "
              f"({fmt(r.get('ours_call_ms'), '{:.2f}')}) | {fmt(r.get('ours_tflops'), '{:.1f}')} | "
              f"{fmt(r.get('fla_ms'), '{:.3f}')} | {fmt(r.get('fla_tflops'), '{:.1f}')} | "
              f"{fmt(r.get('ours_over_fla_throughput'), '{:.2f}')} | "
              f"{fmt(r.get('ours_err_worst'), '{:.2e}')} | {fmt(r.get('fla_err_worst'), '{:.2e}')} | "
              f"{fmt(r.get('ours_nonfinite'), '{}')} |")
    print("per-gradient errors (ours / fla):")
    for r in rows:
        if "ours_err_o" in r:
            print(f"  {r['gate']} T={r['T']}: " + ", ".join(
                f"{n} {r['ours_err_' + n]:.2e} / {fmt(r.get('fla_err_' + n), '{:.2e}')}"
                for n in NAMES))


if __name__ == "__main__":
    main()
