#!/usr/bin/env python3
# bench/moe/bench_grad.py - moe-mlir's MoE layer forward + backward on the
# GPU at the issue's shape, checked against float64 and timed beside the
# PyTorch layer of bench/moe/bench.py with its autograd backward, in one run
# on one GPU (issue #14's floor: "MoE layer forward + backward >= 1.2x the
# PyTorch layer").
#
# Ours: bench/moe/moe_ffn_train.mlir from bench/moe/compile_grad.sh (host
# code + PTX; bench/moe/run_grad.sh links it): @moe_ffn_train_forward (the
# layer of moe_ffn_large.mlir, also returning the routing weights and
# indices, the dispatched rows, expert offsets, source slots and expert
# outputs) and @moe_ffn_train_backward (those values and dy -> dx and the
# gradients of the router, gate, up, down and shared-expert weights), at
# N = 16384 tokens, d = 2048, E = 64 experts of F = 1024, top-8, a shared
# expert of 1024, SwiGLU, bf16, exact quantile balancing (the next bias is
# part of the forward, as in the peer).
#
# The check (the routing of ours, so that top-k near-ties cannot make the
# two differ): a float64 layer (PyTorch autograd on the GPU, every token)
# routed by our forward's indices gives y and every gradient for the same
# dy; each of ours and of the peer's is compared by max|got - ref| /
# max|ref|. Whether that routing is the right one is checked apart: our
# selections against the float64 routing of bench.py's reference (the
# tokens whose selected set differs, and the smallest top-k margin there),
# our routing weights against float64 at our indices, our load against
# the count of our indices (exact) and the float64 one, our next bias
# against float64 QB.
#
# Timing: ours by CUDA events around each of our launches (summed:
# forward, backward, total) and the host wall time of each call (results
# allocated by the call, as in bench.py); the peer (bf16, torch._grouped_mm
# when its backward works, autograd) by CUDA-graph replay of its forward
# and of forward + backward (torch.autograd.grad), like bench.py's; the
# bf16 cuBLAS GEMM ceiling and the copy bandwidth in the same run. Prints
# markdown tables and writes OUT/moe_grad_bench.json.
#
# Usage (on the GPU machine, after bench/moe/compile_grad.sh here):
#   bench/moe/run_grad.sh OUTDIR [options of this script]
# or: python3 bench/moe/bench_grad.py --lib LIB.so --adapter libmoert_mlir.so --out OUTDIR

import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from common import (  # noqa: E402  (bench/common.py)
    MEMREF, CompiledKernel, copy_bandwidth, cuda_time, gemm_ceiling, graph_time,
    result_tensor, tensor_descriptor)
from bench import (  # noqa: E402
    RSF, TorchMoE, layer_inputs, max_vio, reference as routing_reference)

# The compiled shape (moe_ffn_train.mlir); only N is dynamic.
D, E, TOPK, FW, SHARED_W = 2048, 64, 8, 1024, 1024

GRADS = ("dx", "dw_router", "dw_gate", "dw_up", "dw_down", "dws_gate", "dws_up", "dws_down")


# ----------------------------------------------------------------------------
# Ours
# ----------------------------------------------------------------------------

class ForwardResults(ctypes.Structure):
    """@moe_ffn_train_forward's nine results, in order."""
    _fields_ = [("y", MEMREF[2]), ("load", MEMREF[1]), ("next_bias", MEMREF[1]),
                ("weights", MEMREF[2]), ("indices", MEMREF[2]), ("permuted", MEMREF[2]),
                ("offsets", MEMREF[1]), ("source_slot", MEMREF[1]),
                ("expert_out", MEMREF[2])]


# What @moe_ffn_train_backward takes from the forward, after the weights.
SAVED = ("weights", "indices", "permuted", "offsets", "source_slot", "expert_out")


class BackwardResults(ctypes.Structure):
    """@moe_ffn_train_backward's eight results, in order (GRADS)."""
    _fields_ = [("dx", MEMREF[2]), ("dw_router", MEMREF[2]), ("dw_gate", MEMREF[3]),
                ("dw_up", MEMREF[3]), ("dw_down", MEMREF[3]), ("dws_gate", MEMREF[2]),
                ("dws_up", MEMREF[2]), ("dws_down", MEMREF[2])]


def descriptors(results):
    return [getattr(results, name) for name, _ in results._fields_]


class TrainLayer:
    """The two entry points of moe_ffn_train.mlir. Inputs are torch tensors
    on the GPU, read in place; the backward takes the forward's result
    descriptors as they are (host-shared buffers the kernels wrote), so
    nothing is copied between the two calls."""

    def __init__(self, lib_path, adapter_path):
        self.fwd = CompiledKernel(lib_path, adapter_path, "moe_ffn_train_forward")
        self.bwd = CompiledKernel(lib_path, adapter_path, "moe_ffn_train_backward")
        self.adapter = self.fwd.adapter
        self.adapter.moertMlirLastKernelTimes.restype = ctypes.c_int
        self.adapter.moertMlirPeakBytes.restype = ctypes.c_int
        self.adapter.moertMlirPeakBytes.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)] * 2

    def forward(self, p):
        """p: the inputs (x, wr, bias, wg, wu, wd, sg, su, sd as torch
        tensors). Returns ForwardResults (the caller frees them)."""
        res = ForwardResults()
        args = [tensor_descriptor(p[n])
                for n in ("x", "wr", "bias", "wg", "wu", "wd", "sg", "su", "sd")]
        # Our launches go to the runtime's own streams: PyTorch's producers
        # of the inputs must be done first.
        torch.cuda.synchronize()
        self.fwd.fn(ctypes.byref(res), *[ctypes.byref(a) for a in args])
        self.fwd.check("forward")
        return res

    def backward(self, p, saved, dy):
        res = BackwardResults()
        args = [tensor_descriptor(p[n]) for n in ("x", "wr", "wg", "wu", "wd", "sg", "su", "sd")]
        args += [getattr(saved, n) for n in SAVED]
        args.append(tensor_descriptor(dy))
        torch.cuda.synchronize()
        self.bwd.fn(ctypes.byref(res), *[ctypes.byref(a) for a in args])
        self.bwd.check("backward")
        return res

    def free(self, *results):
        self.fwd.free_results(*[d for r in results for d in descriptors(r)])

    def kernel_ms(self):
        """The summed GPU time of the launches since the last call, and
        each launch's."""
        total = self.adapter.moertMlirKernelMilliseconds()
        times = (ctypes.c_double * 1024)()
        count = self.adapter.moertMlirLastKernelTimes(times, 1024)
        return total, [times[i] for i in range(min(count, 1024))]

    def time(self, p, dy, iters):
        """GPU time of the launches (CUDA events around each, summed) and
        host wall time of the calls, forward and backward, averaged over
        iters pairs after a warm-up pair. The wall times are taken with
        the kernel timing off (no events)."""
        f = self.forward(p)
        self.free(self.backward(p, f, dy), f)
        out = {}
        self.adapter.moertMlirSetKernelTiming(1)
        self.kernel_ms()
        fwd_ms = bwd_ms = 0.0
        for _ in range(iters):
            f = self.forward(p)
            ms, fwd_launches = self.kernel_ms()
            fwd_ms += ms
            b = self.backward(p, f, dy)
            ms, bwd_launches = self.kernel_ms()
            bwd_ms += ms
            self.free(b, f)
        self.adapter.moertMlirSetKernelTiming(0)
        self.fwd.check("timing")
        out["fwd_kernel_ms"], out["bwd_kernel_ms"] = fwd_ms / iters, bwd_ms / iters
        out["total_kernel_ms"] = out["fwd_kernel_ms"] + out["bwd_kernel_ms"]
        out["fwd_launch_ms"], out["bwd_launch_ms"] = fwd_launches, bwd_launches
        fwd_wall = bwd_wall = 0.0
        for _ in range(iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            f = self.forward(p)
            t1 = time.perf_counter()
            b = self.backward(p, f, dy)
            t2 = time.perf_counter()
            fwd_wall += t1 - t0
            bwd_wall += t2 - t1
            self.free(b, f)
        out["fwd_call_ms"], out["bwd_call_ms"] = fwd_wall * 1e3 / iters, bwd_wall * 1e3 / iters
        out["total_call_ms"] = out["fwd_call_ms"] + out["bwd_call_ms"]
        return out

    def profile(self, p, dy):
        """One forward and one backward with MOERT_KERNEL_PROFILE set: the
        adapter prints each call's GPU time by kernel name to stderr."""
        os.environ["MOERT_KERNEL_PROFILE"] = "1"
        try:
            self.adapter.moertMlirSetKernelTiming(1)
            self.kernel_ms()
            print("kernel profile of our forward (stderr):", flush=True)
            f = self.forward(p)
            self.kernel_ms()
            sys.stderr.flush()
            print("kernel profile of our backward (stderr):", flush=True)
            b = self.backward(p, f, dy)
            self.kernel_ms()
            self.free(b, f)
        finally:
            self.adapter.moertMlirSetKernelTiming(0)
            del os.environ["MOERT_KERNEL_PROFILE"]

    def peak_bytes(self, p, dy):
        """The device pool's and managed memory's high-water marks over one
        forward + backward (results held until both are done)."""
        self.adapter.moertMlirResetPeakBytes()
        f = self.forward(p)
        b = self.backward(p, f, dy)
        pool, managed = ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)
        self.adapter.moertMlirPeakBytes(ctypes.byref(pool), ctypes.byref(managed))
        self.free(b, f)
        return {"device_pool_bytes": pool.value, "managed_bytes": managed.value}


def run_ours_once(layer, p, dy):
    """One forward + backward: what the checks read, as torch tensors on the
    GPU (copied out of the result buffers, which are then freed)."""
    t0 = time.perf_counter()
    f = layer.forward(p)
    b = layer.backward(p, f, dy)
    first_ms = (time.perf_counter() - t0) * 1e3
    out = {"y": result_tensor(f.y, torch.bfloat16),
           "load": result_tensor(f.load, torch.int64),
           "next_bias": result_tensor(f.next_bias, torch.float32),
           "weights": result_tensor(f.weights, torch.float32),
           "indices": result_tensor(f.indices, torch.int64),
           "offsets": result_tensor(f.offsets, torch.int64)}
    for name in GRADS:
        out[name] = result_tensor(getattr(b, name), torch.bfloat16)
    layer.free(b, f)
    return out, first_ms


# ----------------------------------------------------------------------------
# float64 reference (PyTorch autograd, the routing given)
# ----------------------------------------------------------------------------

def reference_grads(p, dy, indices, k, rsf):
    """The layer in float64 on every token, routed by `indices` [N, k]
    (ours): s = sigmoid(x Wr^T), w = s_sel / (sum s_sel + 1e-20) * rsf,
    y = sum_sel w_j SwiGLU_j(x) + shared(x), and the gradients of
    <y, dy> by autograd. Returns (y, w, {GRADS name: gradient})."""
    names = ("x", "wr", "wg", "wu", "wd", "sg", "su", "sd")
    leaf = {n: p[n].detach().double().requires_grad_() for n in names}
    x = leaf["x"]
    N = x.shape[0]
    s = torch.sigmoid(x @ leaf["wr"].T)                       # [N, E]
    s_sel = s.gather(1, indices)
    w = s_sel / (s_sel.sum(1, keepdim=True) + 1e-20) * rsf
    flat = indices.reshape(-1)
    order = torch.argsort(flat, stable=True)
    tok = order // k
    counts = torch.bincount(flat, minlength=leaf["wg"].shape[0]).tolist()
    # One gather, split per expert (one backward node each way; slicing or
    # indexing the weights per expert would give a full-size gradient per
    # expert).
    parts = x[tok].split(counts)
    wg, wu, wd = leaf["wg"].unbind(0), leaf["wu"].unbind(0), leaf["wd"].unbind(0)
    outs = [(F.silu(xj @ wg[j]) * (xj @ wu[j])) @ wd[j] for j, xj in enumerate(parts)]
    o = torch.cat(outs)                                        # [N k, d], expert order
    y = torch.zeros(N, x.shape[1], dtype=torch.float64, device=x.device)
    y = y.index_add(0, tok, w.reshape(-1)[order][:, None] * o)
    y = y + (F.silu(x @ leaf["sg"]) * (x @ leaf["su"])) @ leaf["sd"]
    grads = torch.autograd.grad(y, [leaf[n] for n in names], dy.double())
    return y.detach(), w.detach(), dict(zip(GRADS, grads))


def rel_err(got, ref):
    """max|got - ref| / max|ref| on the GPU; inf when got holds a non-finite
    value."""
    got = got.detach().to(torch.float64)
    if not bool(torch.isfinite(got).all()):
        return float("inf")
    return float((got - ref).abs().max() / ref.abs().max())


def selection_mismatch(a, b):
    """Tokens whose selected expert sets differ ([N, k] indices, any order)."""
    a = torch.as_tensor(a).to("cuda", torch.int64).sort(1).values
    b = torch.as_tensor(b).to("cuda", torch.int64).sort(1).values
    return int((a != b).any(1).sum())


def routing_checks(ours, ref_routing, ref_w, weights_tol, bias_tol, max_mismatch):
    """Our routing against float64: selections, weights, load, next bias."""
    _, rload, rnb, rsel, margin = ref_routing
    idx = ours["indices"]
    load = ours["load"].cpu().numpy()
    own = torch.bincount(idx.reshape(-1), minlength=E).cpu().numpy()
    out = {"selection_mismatch_tokens": selection_mismatch(idx, rsel),
           "ref_topk_margin": margin,
           "weights_rel_error": rel_err(ours["weights"], ref_w),
           "load_equals_own_indices": bool(np.array_equal(load, own)),
           "load_abs_diff_sum_vs_ref": int(np.abs(load - rload).sum()),
           "next_bias_max_abs_error": float(np.max(np.abs(
               ours["next_bias"].double().cpu().numpy() - rnb))),
           "load_maxvio": max_vio(load), "load": load.tolist(),
           "offsets_consistent": bool(np.array_equal(
               ours["offsets"].cpu().numpy(), np.concatenate([[0], np.cumsum(own)])))}
    out["ok"] = bool(out["selection_mismatch_tokens"] <= max_mismatch
                     and out["weights_rel_error"] < weights_tol
                     and out["load_equals_own_indices"] and out["offsets_consistent"]
                     and out["next_bias_max_abs_error"] < bias_tol)
    return out


# ----------------------------------------------------------------------------
# The peer: bench.py's PyTorch layer with autograd
# ----------------------------------------------------------------------------

class TorchMoETrain(TorchMoE):
    """bench.py's TorchMoE (same forward: fp32 router, top-k, QB, experts
    by torch._grouped_mm or a per-expert loop, fp32 combine, shared
    expert) with its weights as autograd leaves: the router in fp32, the
    fused gate|up [E, d, 2F], down [E, F, d], shared gate|up [d, 2Fs] and
    shared down in bf16 (bf16 gradients, like ours). step() is forward +
    backward by torch.autograd.grad (nothing accumulates in .grad)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.wr = self.wr.detach().clone().requires_grad_()
        self.wgu = self.wgu.detach().requires_grad_()
        self.wd = self.wd.detach().requires_grad_()
        self.sgu = self.sgu.detach().requires_grad_()
        self.sd = self.sd.detach().requires_grad_()

    def params(self):
        return [self.wr, self.wgu, self.wd, self.sgu, self.sd]

    def step(self, x, dy):
        y, counts, nb = self(x)
        grads = torch.autograd.grad(y, [x] + self.params(), dy)
        return y, counts, nb, grads

    def named_grads(self, grads):
        """step()'s gradients under GRADS' names (gate|up split)."""
        dx, dwr, dwgu, dwd, dsgu, dsd = grads
        Fw, Fs = self.F, self.sd.shape[0]
        return {"dx": dx, "dw_router": dwr, "dw_gate": dwgu[..., :Fw],
                "dw_up": dwgu[..., Fw:], "dw_down": dwd, "dws_gate": dsgu[:, :Fs],
                "dws_up": dsgu[:, Fs:], "dws_down": dsd}


def grouped_mm_backward_works(dev):
    """None when torch._grouped_mm (bf16, 2-D x 3-D, offsets) has a backward
    that agrees with a loop over the groups; else why not."""
    if not hasattr(torch, "_grouped_mm"):
        return "torch._grouped_mm does not exist in this torch"
    try:
        g = torch.Generator(device=dev)
        g.manual_seed(0)
        x = torch.randn(80, 64, device=dev, generator=g).bfloat16().requires_grad_()
        w = torch.randn(3, 64, 32, device=dev, generator=g).bfloat16().requires_grad_()
        dy = torch.randn(80, 32, device=dev, generator=g).bfloat16()
        offs = torch.tensor([13, 40, 80], dtype=torch.int32, device=dev)  # ragged groups
        dx, dw = torch.autograd.grad(torch._grouped_mm(x, w, offs=offs), (x, w), dy)
        xr = x.detach().double().requires_grad_()
        wr = w.detach().double().requires_grad_()
        yr = torch.cat([xr[:13] @ wr[0], xr[13:40] @ wr[1], xr[40:] @ wr[2]])
        dxr, dwr = torch.autograd.grad(yr, (xr, wr), dy.double())
        for got, want, what in ((dx, dxr, "dx"), (dw, dwr, "dw")):
            err = rel_err(got, want)
            if not err < 2e-2:
                return f"torch._grouped_mm's backward {what} is {err:.2e} from float64"
        return None
    except Exception as e:
        return f"torch._grouped_mm has no working backward here: {type(e).__name__}: {e}"


def check_grads(got, ref):
    """{name: rel error} of y and the GRADS against the reference's."""
    return {name: rel_err(got[name], ref[name]) for name in ("y",) + GRADS}


def run_peer(p, dy, indices, ref, args, mode):
    """One forward + backward of the peer checked against the float64
    reference `ref` (routed by `indices`: ours) when there is one, then its
    forward and forward + backward timed."""
    v = {}
    moe = TorchMoETrain(p["wr"], p["bias"], p["wg"], p["wu"], p["wd"], p["sg"], p["su"],
                        p["sd"], k=TOPK, rsf=RSF, mode=mode)
    x = p["x"].detach().requires_grad_()
    if ref is not None:
        y, counts, nb, grads = moe.step(x, dy)
        got = moe.named_grads(grads)
        got["y"] = y
        v["errors"] = check_grads(got, ref)
        with torch.no_grad():
            _, sel, _, _ = moe.route(p["x"])
        v["selection_mismatch_tokens"] = selection_mismatch(sel, indices)
        same = (sel.sort(1).values == indices.sort(1).values).all(1)
        v["y_rel_error_same_routing_rows"] = rel_err(y[same], ref["y"][same])
        v["load"] = counts.cpu().tolist()
        del y, counts, nb, grads, got, sel, same
        torch.cuda.synchronize()
    timer = graph_time if mode == "grouped_mm" else (
        lambda fn, iters: (cuda_time(fn, iters), "cuda_events"))
    v["fwd_ms"], v["fwd_timing"] = timer(lambda: moe(x), args.iters)
    v["total_ms"], v["total_timing"] = timer(lambda: moe.step(x, dy), args.iters)
    v["bwd_ms"] = v["total_ms"] - v["fwd_ms"]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    moe.step(x, dy)
    torch.cuda.synchronize()
    v["peak_bytes_over_inputs"] = torch.cuda.max_memory_allocated() - base
    del moe, x
    torch.cuda.empty_cache()
    return v


# ----------------------------------------------------------------------------

def make_inputs(N, dev):
    """bench.py run_peer's inputs (generator seed 1, same order and
    distributions), then dy ~ N(0, 1) in bf16. The router weights are bf16
    values held in fp32 (ours takes them as bf16)."""
    bf16 = torch.bfloat16
    g = torch.Generator(device=dev)
    g.manual_seed(1)
    x, wr, bias, wg, wu, wd, sg, su, sd = layer_inputs(N, D, E, FW, SHARED_W, dev, g)
    dy = torch.randn(N, D, device=dev, generator=g).to(bf16)
    p = {"x": x, "wr": wr, "bias": bias, "wg": wg, "wu": wu, "wd": wd,
         "sg": sg, "su": su, "sd": sd}
    return p, dy


def error_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0][:300]}" if str(err) else type(err).__name__


def main():
    p_ = argparse.ArgumentParser(description=__doc__)
    p_.add_argument("--lib", help="bench/moe/moe_ffn_train.mlir built by compile_grad.sh, linked")
    p_.add_argument("--adapter", help="libmoert_mlir.so")
    p_.add_argument("--out", required=True)
    p_.add_argument("--n", type=int, default=16384, help="tokens")
    p_.add_argument("--iters", type=int, default=20)
    p_.add_argument("--y-tol", type=float, default=2e-2, help="y against float64 (bf16 bar)")
    p_.add_argument("--grad-tol", type=float, default=2e-2,
                    help="every gradient against float64 (bf16 results)")
    p_.add_argument("--weights-tol", type=float, default=1e-4,
                    help="our routing weights against float64 at our indices")
    p_.add_argument("--bias-tol", type=float, default=1e-5, help="next bias, max abs")
    p_.add_argument("--max-routing-mismatch", type=int, default=16,
                    help="tokens whose selection may differ from float64 (near-ties)")
    p_.add_argument("--peer-modes", default="grouped_mm,loop",
                    help="the peer's expert paths to run (bench.py's TorchMoE modes)")
    p_.add_argument("--skip-peer", action="store_true")
    p_.add_argument("--skip-reference", action="store_true")
    p_.add_argument("--no-profile", action="store_true",
                    help="skip the per-kernel profile of one forward and backward")
    args = p_.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    N = args.n

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"torch._grouped_mm: {hasattr(torch, '_grouped_mm')}", flush=True)
    gemm, gemm_shapes = gemm_ceiling()
    bandwidth = copy_bandwidth()
    print(f"ceilings: bf16 cuBLAS GEMM {gemm:.0f} TFLOP/s "
          f"({', '.join(f'{n}^3: {t:.0f}' for n, t in gemm_shapes.items())}), "
          f"device copy {bandwidth:.2f} TB/s", flush=True)

    routed_fwd = 2 * N * TOPK * D * FW * 3
    shared_fwd = 2 * N * D * SHARED_W * 3
    router_fwd = 2 * N * D * E
    res = {"N": N, "d": D, "E": E, "top_k": TOPK, "F": FW, "shared_F": SHARED_W,
           "dtype": "bfloat16", "torch": torch.__version__,
           "device": torch.cuda.get_device_name(),
           "gemm_bf16_tflops": gemm, "gemm_bf16_tflops_by_shape": gemm_shapes,
           "copy_tb_per_s": bandwidth,
           "routed_gemm_flops_fwd": routed_fwd, "routed_gemm_flops_train": 3 * routed_fwd,
           "layer_flops_train": 3 * (routed_fwd + shared_fwd + router_fwd),
           "tolerances": {"y": args.y_tol, "grad": args.grad_tol,
                          "weights": args.weights_tol, "next_bias": args.bias_tol,
                          "routing_mismatch_tokens": args.max_routing_mismatch}}
    p, dy = make_inputs(N, dev)

    # Ours: one checked forward + backward (the first call loads the PTX),
    # then the timings.
    ours_out, ours = None, {}
    if args.lib:
        try:
            layer = TrainLayer(args.lib, args.adapter)
            ours_in = dict(p, wr=p["wr"].to(torch.bfloat16))
            ours_out, ours["first_call_ms"] = run_ours_once(layer, ours_in, dy)
            ours["y_nonfinite"] = int((~torch.isfinite(ours_out["y"].float())).sum())
            ours.update(layer.time(ours_in, dy, args.iters))
            if not args.no_profile:
                layer.profile(ours_in, dy)
            ours.update(layer.peak_bytes(ours_in, dy))
            layer.adapter.moertMlirReleaseCachedBuffers()
            ours["routed_train_tflops"] = 3 * routed_fwd / (ours["total_kernel_ms"] * 1e-3) / 1e12
            ours["layer_train_tflops"] = res["layer_flops_train"] / (ours["total_kernel_ms"] * 1e-3) / 1e12
            ours["routed_train_over_gemm_ceiling"] = ours["routed_train_tflops"] / gemm
            del ours_in
        except Exception as e:
            ours["error"] = error_line(e)
        print(json.dumps({"ours": ours}), flush=True)
    res["ours"] = ours

    # The float64 routing, and the float64 layer routed by ours (by the
    # float64 routing when ours failed).
    ref, indices = None, None
    peer_modes = [m for m in args.peer_modes.split(",") if m]
    if "grouped_mm" in peer_modes:
        why = grouped_mm_backward_works(dev)
        res["grouped_mm_backward"] = why or "ok"
        if why:
            print(f"WARNING: {why}; the peer runs its experts as a loop", flush=True)
            peer_modes = [m for m in peer_modes if m != "grouped_mm"] or ["loop"]
    if not args.skip_reference:
        routing = routing_reference(p["x"].float(), p["wr"], p["bias"], p["wg"], p["wu"],
                                    p["wd"], p["sg"], p["su"], p["sd"], k=TOPK, rsf=RSF,
                                    y_rows=np.arange(0))
        res["ref_topk_margin"], res["ref_load_maxvio"] = routing[4], max_vio(routing[1])
        if ours_out is not None:
            indices = ours_out["indices"]
            res["reference_routing"] = "ours"
        else:
            indices = torch.as_tensor(routing[3], device=dev)
            res["reference_routing"] = "float64"
        t0 = time.perf_counter()
        try:
            ref_y, ref_w, ref = reference_grads(p, dy, indices, TOPK, RSF)
            ref["y"] = ref_y
            del ref_y
        except Exception as e:   # out of memory, say: the timings still run
            res["reference_error"] = error_line(e)
            if ours_out is not None:
                ours["error"] = ours.get("error", "unchecked: " + res["reference_error"])
            print(f"WARNING: the float64 reference failed: {res['reference_error']}", flush=True)
        res["reference_seconds"] = time.perf_counter() - t0
        torch.cuda.empty_cache()
        if ours_out is not None and ref is not None:
            ours["errors"] = check_grads(ours_out, ref)
            ours["routing"] = routing_checks(ours_out, routing, ref_w, args.weights_tol,
                                             args.bias_tol, args.max_routing_mismatch)
            ours["ok"] = bool(ours["routing"]["ok"] and ours["y_nonfinite"] == 0
                              and ours["errors"]["y"] <= args.y_tol
                              and all(ours["errors"][g] <= args.grad_tol for g in GRADS))
            del ref_w
        print(json.dumps({"ours_checks": {k: ours.get(k) for k in ("errors", "routing", "ok")}}),
              flush=True)

    # The peer, each mode checked against the same reference, then timed.
    peer = {}
    if not args.skip_peer:
        for mode in peer_modes:
            try:
                v = run_peer(p, dy, indices, ref, args, mode)
                v["routed_train_tflops"] = 3 * routed_fwd / (v["total_ms"] * 1e-3) / 1e12
                v["layer_train_tflops"] = res["layer_flops_train"] / (v["total_ms"] * 1e-3) / 1e12
            except Exception as e:
                v = {"error": error_line(e)}
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            peer[mode] = v
            print(json.dumps({"peer": {mode: v}}), flush=True)
    ref = None
    torch.cuda.empty_cache()
    res["peer"] = peer
    best = [m for m in ("grouped_mm", "loop") if "total_ms" in peer.get(m, {})]
    res["peer_mode"] = best[0] if best else None
    if best and "total_kernel_ms" in ours:
        pv = peer[best[0]]
        ours["speed_over_peer"] = {
            "fwd": pv["fwd_ms"] / ours["fwd_kernel_ms"],
            "bwd": pv["bwd_ms"] / ours["bwd_kernel_ms"],
            "total": pv["total_ms"] / ours["total_kernel_ms"],
            "total_call": pv["total_ms"] / ours["total_call_ms"]}

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "moe_grad_bench.json"), "w") as f:
        json.dump(res, f, indent=2)
    print_tables(res)
    # Non-zero when ours failed or missed a bar (not when it was not checked).
    sys.exit(1 if "error" in ours or not ours.get("ok", True) else 0)


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def print_tables(res):
    ours, peer = res["ours"], res["peer"]
    pm = res["peer_mode"]
    pv = peer.get(pm, {}) if pm else {}
    print()
    print(f"MoE layer forward + backward (N={res['N']}, d={res['d']}, E={res['E']} of "
          f"F={res['F']}, top-{res['top_k']}, shared {res['shared_F']}, bf16, exact QB) on "
          f"{res['device']}; bf16 GEMM ceiling {res['gemm_bf16_tflops']:.0f} TFLOP/s, "
          f"copy {res['copy_tb_per_s']:.2f} TB/s; peer: PyTorch {pm or '-'} "
          f"({pv.get('total_timing', '-')})")
    if "error" in ours:
        print(f"ours failed: {ours['error']}")
    speed = ours.get("speed_over_peer", {})
    print("| | ours ms | PyTorch ms | ours / PyTorch speed |")
    print("|---|---|---|---|")
    for label, ok, pk, sk in (("forward (GPU time of the launches)", "fwd_kernel_ms", "fwd_ms", "fwd"),
                              ("backward (GPU time of the launches)", "bwd_kernel_ms", "bwd_ms", "bwd"),
                              ("forward + backward (GPU time of the launches)", "total_kernel_ms",
                               "total_ms", "total"),
                              ("forward + backward (wall time of the calls)", "total_call_ms",
                               "total_ms", "total_call")):
        print(f"| {label} | {fmt(ours.get(ok), '.3f')} | {fmt(pv.get(pk), '.3f')} | "
              f"{fmt(speed.get(sk), '.2f')} |")
    print(f"| TFLOP/s: the routed expert GEMMs' fwd + bwd FLOPs (3 x the forward's, "
          f"{res['routed_gemm_flops_train'] / 1e12:.2f} TFLOP) over the layer's fwd + bwd time | "
          f"{fmt(ours.get('routed_train_tflops'), '.0f')} | "
          f"{fmt(pv.get('routed_train_tflops'), '.0f')} | |")
    print()
    print("Relative error max|got - ref| / max|ref| against float64 (routed as ours):")
    oe, pe = ours.get("errors", {}), pv.get("errors", {})
    print(f"| tensor | ours | PyTorch {pm or ''} | bar |")
    print("|---|---|---|---|")
    for name in ("y",) + GRADS:
        bar = res["tolerances"]["y" if name == "y" else "grad"]
        print(f"| {name} | {fmt(oe.get(name), '.2e')} | {fmt(pe.get(name), '.2e')} | {bar:.0e} |")
    r = ours.get("routing")
    if r:
        print()
        print(f"ours' routing: {r['selection_mismatch_tokens']} tokens select other experts than "
              f"float64 (smallest top-k margin there {r['ref_topk_margin']:.2e}); weights "
              f"{r['weights_rel_error']:.2e} from float64; load equals its indices' count: "
              f"{r['load_equals_own_indices']}, {r['load_abs_diff_sum_vs_ref']} from float64's; "
              f"next bias within {r['next_bias_max_abs_error']:.2e}; MaxVio {r['load_maxvio']:.3f}")
    if "selection_mismatch_tokens" in pv:
        print(f"PyTorch's routing: {pv['selection_mismatch_tokens']} tokens select other experts "
              f"than the reference's ({res.get('reference_routing')}; y on the others: "
              f"{pv['y_rel_error_same_routing_rows']:.2e})")
    for m, v in peer.items():
        if "error" in v:
            print(f"PyTorch {m} failed: {v['error']}")
        elif m != pm:
            print(f"PyTorch {m}: forward {v['fwd_ms']:.3f} ms, forward + backward "
                  f"{v['total_ms']:.3f} ms ({v['total_timing']})")
    if "ok" in ours:
        print(f"ours ok: {ours['ok']}")


if __name__ == "__main__":
    main()
