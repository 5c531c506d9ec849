#!/usr/bin/env python3
# bench/moe/bench.py - moe-mlir's MoE layers on the GPU: checked against a
# float64 reference and against the CPU back end, and timed beside a PyTorch
# MoE layer of the same math at the issue's shape, in one run on one GPU.
#
# Ours, from bench/moe/compile.sh (host code + PTX, linked by run.sh):
# * moe_ffn_large.mlir (--large-lib): the issue's shape in bf16 through the
#   GPU pipeline's kernel generators (routing, grouped experts, shared
#   expert, combine), checked against float64 and timed against the peer;
# * examples/kernels/moe_ffn.mlir (--lib; d = 64, E = 16, top-4, F = 32,
#   f32: routing generated, experts on the fused tile IR's
#   one-thread-per-block kernels) and moe_ffn_bf16_small.mlir
#   (--bf16-small-lib; d = 256, E = 8, top-2, F = 128, bf16: all
#   generated), checked with --cpu-checks-only against the CPU back end's
#   results on the same inputs (bench/cpu_reference.py, run where MLIR is).
# PyTorch is used here only for inputs, the float64 reference, the peer and
# the ceilings; moe-mlir itself has no Python dependency.
#
# The math (ALGORITHMS.md 4.1, 4.3, 4.5, 7.1):
#   s = sigmoid(x W_r^T); z = s + bias; sel = top-k of z (ties to the lower
#   expert); w_j = s_j / (sum_sel s + 1e-20) * 2.5;
#   y = sum_{j in sel} w_j (silu(x Wg_j) * (x Wu_j)) Wd_j + shared(x);
#   load_j = token-slots of expert j;
#   next_bias (QB_REF): cut_i = (k+1)-th largest of z_i, r_ij = cut_i - s_ij,
#   q = round(N k / E), b'_j = midpoint of the q-th and (q+1)-th smallest
#   r_.j, centred.
#
# The peer runs at N = 16384, d = 2048, F = 1024, E = 64, top-8 in bf16 with
# torch._grouped_mm when this torch has it (and a per-expert torch.matmul
# loop in any case).

import argparse
import ctypes
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, cuda_time, gemm_ceiling, graph_time, read_result, rel_error,
    result_tensor)

# The example kernel's fixed shape.
D, E, TOPK, FW, SHARED_W, RSF = 64, 16, 4, 32, 32, 2.5


class OurKernel(CompiledKernel):
    def __init__(self, lib_path, adapter_path):
        super().__init__(lib_path, adapter_path, "moe_ffn_forward")

    def __call__(self, x, wr, bias, wg, wu, wd, sg, su, sd):
        res = Results()
        self.call(res, (x, wr, bias, wg, wu, wd, sg, su, sd))
        y = read_result(res.y)
        load = read_result(res.load, ctypes.c_int64, np.int64)
        next_bias = read_result(res.next_bias)
        self.free_results(res.y, res.load, res.next_bias)
        return y, load, next_bias


class Results(ctypes.Structure):
    """The three result descriptors, one after another (y, load, next_bias)."""
    _fields_ = [("y", MEMREF[2]), ("load", MEMREF[1]), ("next_bias", MEMREF[1])]


# ----------------------------------------------------------------------------
# float64 reference (test/tools/moe-reference/moe-reference.cpp `moe_ffn`)
# ----------------------------------------------------------------------------

def reference(x, wr, bias, wg, wu, wd, sg, su, sd, k, rsf, y_rows=None):
    """float64 ROUTE_REF + experts + QB_REF. Any array inputs (numpy or
    torch, any float type); experts are computed on the GPU in float64, for
    the tokens y_rows only (all when None). Returns numpy (y[y_rows], load,
    next_bias, indices, margin) where margin is the smallest gap between the
    k-th and (k+1)-th largest s + bias of any token (how close a routing tie
    came)."""
    dev = torch.device("cuda")
    t = lambda a: torch.as_tensor(a).to(dev, torch.float64)
    x, wr, bias = t(x), t(wr), t(bias)
    N, E = x.shape[0], wr.shape[0]
    s = torch.sigmoid(x @ wr.T).cpu().numpy()                  # [N, E]
    b = bias.cpu().numpy()
    z = s + b
    order = np.argsort(-z, axis=1, kind="stable")             # decreasing, ties to lower j
    sel = order[:, :k]
    s_sel = np.take_along_axis(s, sel, axis=1)
    w = s_sel / (s_sel.sum(1, keepdims=True) + 1e-20) * rsf
    load = np.bincount(sel.reshape(-1), minlength=E).astype(np.int64)
    z_sorted = np.take_along_axis(z, order, axis=1)
    margin = float(np.min(z_sorted[:, k - 1] - z_sorted[:, k])) if k < E else float("inf")

    # QB_REF.
    if N == 0:
        next_bias = b - b.mean()
    else:
        cut = z_sorted[:, k]                                   # (k+1)-th largest of s + b
        r = np.sort(cut[:, None] - s, axis=0)                  # per expert, ascending
        q = int(math.floor(N * k / E + 0.5))                   # llround, N k / E >= 0
        lo, hi = max(q, 1), min(q + 1, N)
        nb = 0.5 * (r[lo - 1] + r[hi - 1])
        next_bias = nb - nb.mean()

    # y = sum_sel w_j Expert_j(x) + Shared(x), on the requested rows.
    rows = np.arange(N) if y_rows is None else np.asarray(y_rows)
    xr = x[torch.as_tensor(rows, device=dev)]
    y = torch.zeros(len(rows), x.shape[1], dtype=torch.float64, device=dev)
    sel_r, w_r = sel[rows], w[rows]
    for j in range(E):
        tok, slot = np.nonzero(sel_r == j)
        if len(tok) == 0:
            continue
        ti = torch.as_tensor(tok, device=dev)
        xj = xr[ti]
        h = F.silu(xj @ t(wg[j])) * (xj @ t(wu[j]))
        y.index_add_(0, ti, torch.as_tensor(w_r[tok, slot], device=dev)[:, None] * (h @ t(wd[j])))
    if sg is not None:
        y += (F.silu(xr @ t(sg)) * (xr @ t(su))) @ t(sd)
    return y.cpu().numpy(), load, next_bias, sel, margin


# ----------------------------------------------------------------------------
# The peer: a PyTorch MoE layer of the same math
# ----------------------------------------------------------------------------

class TorchMoE:
    """Dropless MoE forward of the same math. mode = "grouped_mm" (tokens
    sorted by expert, torch._grouped_mm with int32 end offsets) or "loop"
    (a torch.matmul per expert on its slice). Gate and up projections are
    one GEMM on [E, d, 2F]. Router in fp32; experts in the weights' dtype;
    the combine accumulates in fp32."""

    def __init__(self, wr, bias, wg, wu, wd, sg, su, sd, k, rsf, mode):
        self.wr, self.bias = wr.float(), bias.float()
        self.wgu = torch.cat([wg, wu], dim=2).contiguous()     # [E, d, 2F]
        self.wd = wd.contiguous()                              # [E, F, d]
        self.sgu = torch.cat([sg, su], dim=1).contiguous()     # [d, 2Fs]
        self.sd = sd
        self.k, self.rsf, self.mode = k, rsf, mode
        self.E, self.F = wg.shape[0], wg.shape[2]

    def route(self, x):
        s = torch.sigmoid(x.float() @ self.wr.T)              # [N, E]
        z = s + self.bias
        top = torch.topk(z, self.k + 1, dim=1)                 # k selected + the cut
        sel = top.indices[:, :self.k]
        cut = top.values[:, self.k]
        s_sel = s.gather(1, sel)
        w = s_sel / (s_sel.sum(1, keepdim=True) + 1e-20) * self.rsf
        return s, sel, w, cut

    def dispatch(self, x, sel):
        flat = sel.reshape(-1)
        order = torch.argsort(flat, stable=True)
        tok = order // self.k
        counts = torch.zeros(self.E, dtype=torch.int64, device=x.device)
        counts.scatter_add_(0, flat, torch.ones_like(flat))   # graph-safe (bincount syncs)
        return order, tok, counts

    def experts(self, xs, counts):
        """Routed expert FFNs on expert-sorted rows xs [N k, d]."""
        Fw = self.F
        if self.mode == "grouped_mm":
            offs = torch.cumsum(counts, 0).to(torch.int32)
            gu = torch._grouped_mm(xs, self.wgu, offs=offs)
            h = F.silu(gu[:, :Fw]) * gu[:, Fw:]
            return torch._grouped_mm(h, self.wd, offs=offs)
        out = torch.empty(xs.shape[0], self.wd.shape[2], dtype=xs.dtype, device=xs.device)
        start = 0
        for j, n in enumerate(counts.tolist()):               # host sync: not graph-capturable
            if n:
                gu = xs[start:start + n] @ self.wgu[j]
                out[start:start + n] = (F.silu(gu[:, :Fw]) * gu[:, Fw:]) @ self.wd[j]
            start += n
        return out

    def qb(self, s, cut):
        N = s.shape[0]
        r = torch.sort(cut[:, None] - s, dim=0).values
        q = int(math.floor(N * self.k / self.E + 0.5))
        lo, hi = max(q, 1), min(q + 1, N)
        nb = 0.5 * (r[lo - 1] + r[hi - 1])
        return nb - nb.mean()

    def __call__(self, x):
        s, sel, w, cut = self.route(x)
        order, tok, counts = self.dispatch(x, sel)
        o = self.experts(x[tok], counts)
        y = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
        y.index_add_(0, tok, o.float() * w.reshape(-1)[order][:, None])
        gu = x @ self.sgu
        Fs = self.sd.shape[0]
        y += ((F.silu(gu[:, :Fs]) * gu[:, Fs:]) @ self.sd).float()
        return y.to(x.dtype), counts, self.qb(s, cut)


# ----------------------------------------------------------------------------
# Timing and ceilings
# ----------------------------------------------------------------------------

def make_inputs(rng, N, d, E, Fw, Fs, skew=0.5):
    """x with a common mean direction (so the router is skewed and QB has
    work to do), router rows ~ N(0, 1/d), a small random bias, experts
    ~ N(0, 1/fan_in). All float32 numpy."""
    f32 = np.float32
    mean = (skew * rng.standard_normal(d)).astype(f32)
    x = (rng.standard_normal((N, d), dtype=f32) + mean).astype(f32)
    wr = (rng.standard_normal((E, d), dtype=f32) / np.sqrt(d)).astype(f32)
    bias = rng.uniform(-0.05, 0.05, E).astype(f32)
    wg = (rng.standard_normal((E, d, Fw), dtype=f32) / np.sqrt(d)).astype(f32)
    wu = (rng.standard_normal((E, d, Fw), dtype=f32) / np.sqrt(d)).astype(f32)
    wd = (rng.standard_normal((E, Fw, d), dtype=f32) / np.sqrt(Fw)).astype(f32)
    sg = (rng.standard_normal((d, Fs), dtype=f32) / np.sqrt(d)).astype(f32)
    su = (rng.standard_normal((d, Fs), dtype=f32) / np.sqrt(d)).astype(f32)
    sd = (rng.standard_normal((Fs, d), dtype=f32) / np.sqrt(Fs)).astype(f32)
    return x, wr, bias, wg, wu, wd, sg, su, sd


def max_vio(load):
    load = np.asarray(load, dtype=np.float64)
    return float(load.max() / load.mean() - 1.0) if load.sum() > 0 else 0.0


def check_peer(peer_out, ref, rows):
    """Errors of a peer's (y, counts, next_bias) against the float64 reference."""
    y, counts, nb = peer_out
    ry, rload, rnb = ref[0], ref[1], ref[2]
    counts = counts.cpu().numpy()
    return {"y_rel_error": rel_error(y[torch.as_tensor(rows, device=y.device)].double().cpu().numpy(), ry),
            "load_abs_diff_sum": int(np.abs(counts - rload).sum()),
            "next_bias_max_abs_error": float(np.max(np.abs(nb.double().cpu().numpy() - rnb)))}


# ----------------------------------------------------------------------------

def run_ours(args, ours, rng):
    rows = []
    for N in [int(n) for n in args.tokens.split(",")]:
        inputs = make_inputs(rng, N, D, E, FW, SHARED_W)
        ry, rload, rnb, _, margin = reference(*inputs, k=TOPK, rsf=RSF)
        row = {"N": N, "d": D, "E": E, "top_k": TOPK, "F": FW, "shared_F": SHARED_W,
               "ref_topk_margin": margin, "ref_load_maxvio": max_vio(rload)}
        t0 = time.perf_counter()
        y, load, nb = ours(*inputs)
        row["ours_first_call_ms"] = (time.perf_counter() - t0) * 1e3   # includes the PTX JIT
        if row["ours_first_call_ms"] < 5000:
            t0 = time.perf_counter()
            ours(*inputs)
            row["ours_ms"] = (time.perf_counter() - t0) * 1e3
        else:
            row["ours_ms"] = row["ours_first_call_ms"]
        row["ours_y_rel_error"] = rel_error(y, ry)
        row["ours_y_nonfinite"] = int(np.size(y) - np.isfinite(y).sum())
        row["ours_load"] = load.tolist()
        row["ref_load"] = rload.tolist()
        row["ours_load_exact"] = bool(np.array_equal(load, rload))
        row["ours_next_bias_max_abs_error"] = float(np.max(np.abs(nb.astype(np.float64) - rnb)))
        # What the next bias buys: MaxVio of the same batch routed with it (reference routing).
        _, reload, _, _, _ = reference(*inputs[:2], rnb.astype(np.float32), *inputs[3:],
                                       k=TOPK, rsf=RSF, y_rows=np.arange(0))
        row["ref_load_maxvio_after_qb"] = max_vio(reload)
        row["ours_ok"] = bool(row["ours_y_rel_error"] < args.y_tol and row["ours_load_exact"]
                              and row["ours_next_bias_max_abs_error"] < args.bias_tol)

        # The peer's code path at the same small shape, as a check of the peer itself.
        dev = torch.device("cuda")
        tin = [torch.from_numpy(a).to(dev) for a in inputs]
        peer_checks = {}
        for mode, dtype in (("loop", torch.float32), ("grouped_mm", torch.bfloat16)):
            if mode == "grouped_mm" and not hasattr(torch, "_grouped_mm"):
                continue
            try:
                cast = [a.to(dtype) for a in tin]
                moe = TorchMoE(tin[1], tin[2], *cast[3:], k=TOPK, rsf=RSF, mode=mode)
                out = moe(cast[0])
                ref_cast = reference(*[a.float() for a in cast[:1]], *tin[1:3],
                                     *[a.float() for a in cast[3:]], k=TOPK, rsf=RSF)
                peer_checks[f"{mode}_{str(dtype).split('.')[-1]}"] = check_peer(out, ref_cast, np.arange(N))
            except Exception as e:
                peer_checks[mode] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        row["peer_small_shape_checks"] = peer_checks
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


class LargeKernel(CompiledKernel):
    """A bf16 layer through the GPU pipeline's kernel generators:
    bench/moe/moe_ffn_large.mlir (the issue's shape) or
    moe_ffn_bf16_small.mlir (`name` moe_ffn_bf16)."""

    def __init__(self, lib_path, adapter_path, name="moe_ffn_large"):
        super().__init__(lib_path, adapter_path, name)

    def __call__(self, tensors):
        res = Results()
        self.call_in_place(res, tensors)
        y = result_tensor(res.y, torch.bfloat16)
        load = result_tensor(res.load, torch.int64)
        nb = result_tensor(res.next_bias, torch.float32)
        self.free_results(res.y, res.load, res.next_bias)
        return y, load, nb


def run_ours_large(large, tensors, ref, rows, layer_flops, gemm, iters):
    """Checks our layer at the issue's shape against the float64 reference
    and times it: the GPU time of its launches (CUDA events around each,
    summed) and the wall time of a whole call."""
    out = {}
    y, load, nb = large(tensors)
    out.update(check_peer((y, load, nb), ref, rows))
    out["y_nonfinite"] = int((~torch.isfinite(y.float())).sum())
    out["load"] = load.cpu().tolist()
    del y
    kernel_ms, call_ms = large.time_in_place(Results, tensors, iters)
    out["kernel_ms"], out["call_ms"] = kernel_ms, call_ms
    out["launch_ms"] = large.last_launch_ms
    out["kernel_tflops"] = layer_flops / (kernel_ms * 1e-3) / 1e12
    out["kernel_over_gemm_ceiling"] = out["kernel_tflops"] / gemm
    return out


def check_against_cpu(kernel, case_dir, bf16, y_tol, bias_tol):
    """Our GPU function on the inputs of one bench/cpu_reference.py case
    against the CPU back end's results on them (load exactly, y within
    y_tol relative, next bias within bias_tol)."""
    inputs = [np.load(os.path.join(case_dir, f"in{i}.npy")) for i in range(9)]
    cpu_y, cpu_load, cpu_nb = [np.load(os.path.join(case_dir, f"result{i}.npy"))
                               for i in range(3)]
    if bf16:   # every argument but the bias is bf16 (the values are exact)
        tensors = [torch.from_numpy(a).cuda().to(torch.float32 if i == 2 else torch.bfloat16)
                   for i, a in enumerate(inputs)]
        res = Results()
        kernel.call_in_place(res, tensors)
        y = result_tensor(res.y, torch.bfloat16).float().cpu().numpy()
        load = result_tensor(res.load, torch.int64).cpu().numpy()
        nb = result_tensor(res.next_bias, torch.float32).cpu().numpy()
        kernel.free_results(res.y, res.load, res.next_bias)
    else:
        y, load, nb = kernel(*inputs)
    row = {"case": os.path.basename(case_dir), "N": int(inputs[0].shape[0]),
           "y_rel_error_vs_cpu": rel_error(y, cpu_y.astype(np.float64)) if cpu_y.size else 0.0,
           "load_equal_to_cpu": bool(np.array_equal(load, cpu_load)),
           "load_abs_diff_sum": int(np.abs(load - cpu_load).sum()),
           "next_bias_max_abs_diff_vs_cpu": float(np.max(np.abs(nb.astype(np.float64) - cpu_nb)))}
    row["ok"] = bool(row["y_rel_error_vs_cpu"] <= y_tol and row["load_equal_to_cpu"]
                     and row["next_bias_max_abs_diff_vs_cpu"] <= bias_tol)
    print(json.dumps(row), flush=True)
    return row


def layer_inputs(N, d, E, Fw, Fs, dev, g):
    """The peer's layer inputs, drawn on the GPU from generator g (large;
    the same distributions as make_inputs): x, the router weights (bf16
    values held in fp32: our kernel takes them as bf16, the peer and the
    reference read the same values in fp32), the router bias, the routed
    experts' gate, up and down weights and the shared expert's."""
    bf16 = torch.bfloat16
    mean = 0.5 * torch.randn(d, device=dev, generator=g)
    x = (torch.randn(N, d, device=dev, generator=g) + mean).to(bf16)
    wr = (torch.randn(E, d, device=dev, generator=g) / math.sqrt(d)).to(bf16).float()
    bias = (torch.rand(E, device=dev, generator=g) - 0.5) * 0.1
    wg = (torch.randn(E, d, Fw, device=dev, generator=g) / math.sqrt(d)).to(bf16)
    wu = (torch.randn(E, d, Fw, device=dev, generator=g) / math.sqrt(d)).to(bf16)
    wd = (torch.randn(E, Fw, d, device=dev, generator=g) / math.sqrt(Fw)).to(bf16)
    sg = (torch.randn(d, Fs, device=dev, generator=g) / math.sqrt(d)).to(bf16)
    su = (torch.randn(d, Fs, device=dev, generator=g) / math.sqrt(d)).to(bf16)
    sd = (torch.randn(Fs, d, device=dev, generator=g) / math.sqrt(Fs)).to(bf16)
    return x, wr, bias, wg, wu, wd, sg, su, sd


def run_peer(args, rng, gemm, large=None):
    N, d, Fw, E, k = args.peer_n, args.peer_d, args.peer_f, args.peer_e, args.peer_k
    Fs = args.peer_shared_f
    dev, bf16 = torch.device("cuda"), torch.bfloat16
    g = torch.Generator(device=dev)
    g.manual_seed(1)
    x, wr, bias, wg, wu, wd, sg, su, sd = layer_inputs(N, d, E, Fw, Fs, dev, g)

    routed_flops = 2 * N * k * d * Fw * 3
    shared_flops = 2 * N * d * Fs * 3
    router_flops = 2 * N * d * E
    layer_flops = routed_flops + shared_flops + router_flops
    res = {"N": N, "d": d, "F": Fw, "E": E, "top_k": k, "shared_F": Fs, "dtype": "bfloat16",
           "routed_gemm_flops": routed_flops, "layer_flops": layer_flops,
           "has_grouped_mm": hasattr(torch, "_grouped_mm"), "torch": torch.__version__}

    rows = np.concatenate([np.arange(args.peer_check_rows // 2),
                           np.arange(N - args.peer_check_rows // 2, N)])
    ref = reference(x.float(), wr, bias, wg.float(), wu.float(), wd.float(),
                    sg.float(), su.float(), sd.float(), k=k, rsf=RSF, y_rows=rows)
    res["ref_topk_margin"] = ref[4]
    res["ref_load_maxvio"] = max_vio(ref[1])
    res["peer_checked_rows"] = int(len(rows))

    # The dense cuBLAS GEMMs of the same total size (what one expert holding
    # every row would cost): [N k, d] x [d, 2F] then [N k, F] x [F, d].
    a = torch.randn(N * k, d, device=dev, dtype=bf16)
    b1 = torch.randn(d, 2 * Fw, device=dev, dtype=bf16)
    h = torch.randn(N * k, Fw, device=dev, dtype=bf16)
    b2 = torch.randn(Fw, d, device=dev, dtype=bf16)
    ms = cuda_time(lambda: (a @ b1, h @ b2), args.iters)
    res["dense_same_size_gemm_ms"] = ms
    res["dense_same_size_gemm_tflops"] = routed_flops / (ms * 1e-3) / 1e12
    del a, b1, h, b2
    torch.cuda.empty_cache()

    variants = {}
    for mode in ("grouped_mm", "loop"):
        if mode == "grouped_mm" and not res["has_grouped_mm"]:
            variants[mode] = {"error": "torch._grouped_mm does not exist in this torch"}
            continue
        v = {}
        try:
            moe = TorchMoE(wr, bias, wg, wu, wd, sg, su, sd, k=k, rsf=RSF, mode=mode)
            out = moe(x)
            torch.cuda.synchronize()
            v.update(check_peer(out, ref, rows))
            del out
            if mode == "loop":
                v["layer_ms"], v["layer_timing"] = cuda_time(lambda: moe(x), args.iters), "cuda_events"
            else:
                v["layer_ms"], v["layer_timing"] = graph_time(lambda: moe(x), args.iters)
            v["layer_tflops"] = layer_flops / (v["layer_ms"] * 1e-3) / 1e12
            # The routed expert GEMMs alone, on already dispatched rows.
            _, sel, _, _ = moe.route(x)
            order, tok, counts = moe.dispatch(x, sel)
            xs = x[tok].contiguous()
            if mode == "loop":
                v["experts_ms"], v["experts_timing"] = cuda_time(lambda: moe.experts(xs, counts), args.iters), "cuda_events"
            else:
                v["experts_ms"], v["experts_timing"] = graph_time(lambda: moe.experts(xs, counts), args.iters)
            v["experts_tflops"] = routed_flops / (v["experts_ms"] * 1e-3) / 1e12
            v["experts_over_gemm_ceiling"] = v["experts_tflops"] / gemm
            v["experts_over_dense_same_size"] = v["experts_tflops"] / res["dense_same_size_gemm_tflops"]
            v["layer_over_gemm_ceiling"] = v["layer_tflops"] / gemm
            del xs, order, tok, counts, sel
        except Exception as e:
            v["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        variants[mode] = v
    res["variants"] = variants
    best = [m for m in ("grouped_mm", "loop") if "experts_ms" in variants.get(m, {})]
    res["peer_mode"] = best[0] if best else None
    if large is not None:
        try:
            ours = run_ours_large(large, (x, wr.to(bf16), bias, wg, wu, wd, sg, su, sd),
                                  ref, rows, layer_flops, gemm, args.iters)
            if best:
                peer_ms = variants[best[0]]["layer_ms"]
                ours["speed_over_peer_kernel"] = peer_ms / ours["kernel_ms"]
                ours["speed_over_peer_call"] = peer_ms / ours["call_ms"]
        except Exception as e:
            ours = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
        res["ours"] = ours
    print(json.dumps(res), flush=True)
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--adapter", required=True)
    p.add_argument("--large-lib", help="bench/moe/moe_ffn_large.mlir built by compile.sh")
    p.add_argument("--bf16-small-lib",
                   help="bench/moe/moe_ffn_bf16_small.mlir built by compile.sh")
    p.add_argument("--cpu-cases", help="the directory of bench/cpu_reference.py's "
                                       "cases (f32_*: the example, bf16_*: the bf16 layer)")
    p.add_argument("--bf16-y-tol", type=float, default=2e-2,
                   help="y against the CPU back end for bf16 (the GPU rounds h to bf16)")
    p.add_argument("--cpu-checks-only", choices=["f32", "bf16"],
                   help="only check the f32 example (--lib) or the bf16 layer "
                        "(--bf16-small-lib) against the CPU back end's cases, and "
                        "write moe_vs_cpu_<kind>.json")
    p.add_argument("--out", required=True)
    p.add_argument("--tokens", default="256,1024", help="N for our kernel (v0: keep small)")
    p.add_argument("--y-tol", type=float, default=1e-4)
    p.add_argument("--bias-tol", type=float, default=1e-5)
    p.add_argument("--peer-n", type=int, default=16384)
    p.add_argument("--peer-d", type=int, default=2048)
    p.add_argument("--peer-f", type=int, default=1024)
    p.add_argument("--peer-e", type=int, default=64)
    p.add_argument("--peer-k", type=int, default=8)
    p.add_argument("--peer-shared-f", type=int, default=1024)
    p.add_argument("--peer-check-rows", type=int, default=512)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--skip-peer", action="store_true")
    args = p.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    if args.cpu_checks_only:
        bf16 = args.cpu_checks_only == "bf16"
        kernel = (LargeKernel(args.bf16_small_lib, args.adapter, "moe_ffn_bf16") if bf16
                  else OurKernel(args.lib, args.adapter))
        rows = [check_against_cpu(kernel, os.path.join(args.cpu_cases, case), bf16,
                                  args.bf16_y_tol if bf16 else args.y_tol, args.bias_tol)
                for case in sorted(os.listdir(args.cpu_cases))
                if case.startswith(args.cpu_checks_only)]
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"moe_vs_cpu_{args.cpu_checks_only}.json"), "w") as f:
            json.dump(rows, f, indent=2)
        print(f"against the CPU back end ({args.cpu_checks_only}): "
              f"{sum(r['ok'] for r in rows)} of {len(rows)} cases ok", flush=True)
        sys.exit(0 if all(r["ok"] for r in rows) else 1)

    print("NOTE: the f32 example's experts run on one-thread-per-block kernels; its "
          "times are small-N sanity numbers, not performance.", flush=True)
    print(f"torch {torch.__version__}, torch._grouped_mm: {hasattr(torch, '_grouped_mm')}", flush=True)
    gemm, gemm_shapes = gemm_ceiling()
    print(f"ceiling: bf16 cuBLAS GEMM {gemm:.0f} TFLOP/s "
          f"({', '.join(f'{n}^3: {t:.0f}' for n, t in gemm_shapes.items())})", flush=True)
    ours = OurKernel(args.lib, args.adapter)
    ours_rows = run_ours(args, ours, rng)
    large = LargeKernel(args.large_lib, args.adapter) if args.large_lib else None
    peer = None if args.skip_peer else run_peer(args, rng, gemm, large)

    result = {"gemm_bf16_tflops": gemm, "gemm_bf16_tflops_by_shape": gemm_shapes,
              "note": "ours = v0 GPU path (one thread per scf.forall iteration), small N only, "
                      "f32 at the example's shape; peer = PyTorch bf16 at the issue's shape",
              "ours": ours_rows, "peer": peer}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "moe_bench.json"), "w") as f:
        json.dump(result, f, indent=2)

    print()
    print(f"Ours (v0, f32; d={D}, E={E}, top-{TOPK}, F={FW}, shared {SHARED_W}) vs float64 reference:")
    print("| N | ours ms | first call ms | y rel err | load exact | next_bias max abs err | "
          "top-k margin (ref) | MaxVio before/after QB (ref) | ok |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in ours_rows:
        print(f"| {r['N']} | {r['ours_ms']:.2f} | {r['ours_first_call_ms']:.1f} | "
              f"{r['ours_y_rel_error']:.2e} | {r['ours_load_exact']} | "
              f"{r['ours_next_bias_max_abs_error']:.2e} | {r['ref_topk_margin']:.2e} | "
              f"{r['ref_load_maxvio']:.2f} / {r['ref_load_maxvio_after_qb']:.2f} | {r['ours_ok']} |")
    if peer:
        print()
        print(f"Peer (PyTorch bf16; N={peer['N']}, d={peer['d']}, F={peer['F']}, E={peer['E']}, "
              f"top-{peer['top_k']}, shared {peer['shared_F']}): bf16 GEMM ceiling {gemm:.0f} TFLOP/s, "
              f"dense GEMMs of the same size {peer['dense_same_size_gemm_tflops']:.0f} TFLOP/s")
        print("| variant | experts ms | experts TFLOP/s | /GEMM ceiling | /dense same size | "
              "layer ms | layer TFLOP/s | y rel err | load diff | next_bias err |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for m, v in peer["variants"].items():
            if "experts_ms" in v:
                print(f"| {m} | {v['experts_ms']:.3f} | {v['experts_tflops']:.0f} | "
                      f"{v['experts_over_gemm_ceiling']:.2f} | {v['experts_over_dense_same_size']:.2f} | "
                      f"{v['layer_ms']:.3f} | {v['layer_tflops']:.0f} | {v['y_rel_error']:.2e} | "
                      f"{v['load_abs_diff_sum']} | {v['next_bias_max_abs_error']:.2e} |")
            else:
                print(f"| {m} | - | - | - | - | - | - | - | - | {v.get('error', '')} |")


if __name__ == "__main__":
    main()
