#!/usr/bin/env python3
# bench/moe/experts_bench.py - check and time moe-mlir's grouped expert GEMMs
# (bench/moe/experts.mlir through -moe-generate-expert-kernels) against a
# float64 reference and torch._grouped_mm, in one run on one GPU.
#
# Rows are grouped by expert with skewed counts (some experts empty at the
# small sizes); the reference computes h = silu(x Wg) * (x Wu) and h Wd in
# float64 for a sample of rows, from the same bf16 inputs.

import argparse
import ctypes
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, copy_bandwidth, gemm_ceiling, graph_time, result_tensor)

D, E, FW = 2048, 64, 1024


def counts_for(rows, skew, gen):
    """Expert row counts summing to rows, skewed (Dirichlet-like)."""
    p = torch.rand(E, generator=gen, device="cuda") ** skew
    p /= p.sum()
    counts = torch.floor(p * rows).to(torch.int64)
    counts[0] += rows - counts.sum()
    return counts


def reference_rows(x, wg, wu, wd, expert_of, rows):
    out = []
    for r in rows.tolist():
        e = int(expert_of[r])
        xr = x[r].double()
        h = F.silu(xr @ wg[e].double()) * (xr @ wu[e].double())
        out.append(h @ wd[e].double())
    return torch.stack(out)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--adapter", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rows", default="1,300,4096,131072")
    p.add_argument("--iters", type=int, default=10)
    args = p.parse_args()

    kernels = {"ours": CompiledKernel(args.lib, args.adapter, "experts")}
    gen = torch.Generator(device="cuda").manual_seed(0)
    res = {"gemm_bf16_tflops": None, "checks": [], "timing": {}}
    wg = (torch.randn(E, D, FW, device="cuda", generator=gen) / D ** 0.5).bfloat16()
    wu = (torch.randn(E, D, FW, device="cuda", generator=gen) / D ** 0.5).bfloat16()
    wd = (torch.randn(E, FW, D, device="cuda", generator=gen) / FW ** 0.5).bfloat16()

    def run(kernel, x, offsets):
        r = MEMREF[2]()
        kernel.call_in_place(r, (x, offsets, wg, wu, wd))
        y = result_tensor(r, torch.bfloat16)
        kernel.free_results(r)
        return y

    for rows in [int(v) for v in args.rows.split(",")]:
        x = torch.randn(rows, D, device="cuda", generator=gen).bfloat16()
        counts = counts_for(rows, 3.0, gen)
        offsets = torch.zeros(E + 1, dtype=torch.int64, device="cuda")
        offsets[1:] = torch.cumsum(counts, 0)
        expert_of = torch.repeat_interleave(torch.arange(E, device="cuda"), counts)
        sample = torch.randperm(rows, generator=gen, device="cuda")[:256]
        # Always the first and last row of every non-empty expert too.
        edges = torch.cat([offsets[:-1][counts > 0], offsets[1:][counts > 0] - 1])
        sample = torch.unique(torch.cat([sample, edges]))
        ref = reference_rows(x, wg, wu, wd, expert_of, sample)
        for name, kernel in kernels.items():
            y = run(kernel, x, offsets)
            got = y[sample].double()
            err = float((got - ref).abs().max() / ref.abs().max())
            nonfinite = int((~torch.isfinite(y)).sum())
            entry = {"variant": name, "rows": rows,
                     "empty_experts": int((counts == 0).sum()),
                     "checked_rows": int(sample.numel()), "rel_error": err,
                     "nonfinite": nonfinite}
            print(json.dumps(entry), flush=True)
            res["checks"].append(entry)

    # Timing at the shape: N = 16384 tokens x top-8.
    rows = 131072
    x = torch.randn(rows, D, device="cuda", generator=gen).bfloat16()
    counts = counts_for(rows, 1.5, gen)
    offsets = torch.zeros(E + 1, dtype=torch.int64, device="cuda")
    offsets[1:] = torch.cumsum(counts, 0)
    flops = 6 * rows * D * FW
    for name, kernel in kernels.items():
        kernel_ms, call_ms = kernel.time_in_place(
            lambda: MEMREF[2](), (x, offsets, wg, wu, wd), args.iters)
        res["timing"][f"{name}_kernel_ms"] = kernel_ms
        res["timing"][f"{name}_call_ms"] = call_ms
        res["timing"][f"{name}_launch_ms"] = kernel.last_launch_ms
        res["timing"][f"{name}_tflops"] = flops / (kernel_ms * 1e-3) / 1e12
        print(name, kernel_ms, call_ms, kernel.last_launch_ms, flush=True)
    kernel_ms = res["timing"]["ours_kernel_ms"]

    wgu = torch.cat([wg, wu], dim=2).contiguous()
    offs = offsets[1:].to(torch.int32)

    def peer():
        gu = torch._grouped_mm(x, wgu, offs=offs)
        h = F.silu(gu[:, :FW]) * gu[:, FW:]
        return torch._grouped_mm(h, wd, offs=offs)
    peer_ms, how = graph_time(peer, args.iters)
    res["timing"]["peer_grouped_mm_ms"] = peer_ms
    res["timing"]["peer_timing"] = how
    res["timing"]["peer_tflops"] = flops / (peer_ms * 1e-3) / 1e12
    res["timing"]["ours_over_peer_speed"] = peer_ms / kernel_ms
    ceiling, per_shape = gemm_ceiling()
    res["gemm_bf16_tflops"] = ceiling
    res["gemm_bf16_tflops_by_shape"] = per_shape
    res["copy_tb_s"] = copy_bandwidth()
    res["timing"]["ours_over_ceiling"] = res["timing"]["ours_tflops"] / ceiling
    print(json.dumps(res, indent=1), flush=True)
    with open(os.path.join(args.out, "experts_bench.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
