#!/usr/bin/env python3
# bench/train/peer.py - the PyTorch + flash-linear-attention training step of
# the example models: the peer of the compiled training executables (what
# bench/model/peer.py is for the forward pass).
#
# usage: python3 bench/train/peer.py [--model kimi-tiny|kimi-small|all]
#            [--batch-size B] [--seq-len T] [--params DIR] [--batches FILE]
#            [--steps N] [--iters N] [--timing-warmup N] [--lr X] [--min-lr X]
#            [--warmup N] [--schedule wsd|cosine|constant] [--decay-frac X]
#            [--weight-decay X] [--clip X] [--beta1 X] [--beta2 X] [--eps X]
#            [--seed N] [--repeat-check K] [--recompute auto|none|moe|all]
#            [--device cuda|cpu] [--precision auto|bf16|fp32] [--fla DIR]
#            [--out DIR] [--require-learning]
#
# The model is bench/model/torch_model.py (the forward the forward peer
# times and checks), trained as our compiled step trains it
# (docs/Training.md, ALGORITHMS.md sections 4.3, 7.3, 7.4):
#
# * fp32 master weights: --params DIR (<name>.npy, as the compiled
#   executable's --dump-params writes them; `EXE --steps=0 --dump-params=DIR`
#   gives its initial weights) or drawn from --seed by the model's
#   initialisation rules; fp32 gradients and AdamW moments.
# * The GPU precision policy of the forward peer, autocast-style: each step
#   makes bf16 copies of the matmul weights (differentiable casts, so the
#   gradients reach the fp32 masters in fp32), bf16 operands with fp32
#   accumulation, and norms, softmaxes, router, residual stream, KDA gate and
#   state, logits and loss in fp32. fla's chunk_kda, causal_conv1d and gated
#   RMSNorm with their autograd, SDPA, torch._grouped_mm (its autograd is
#   checked first; without it the expert loop, said loudly).
# * torch.optim.AdamW(fused=True) with the driver's defaults
#   (tools/moe-compile/driver/TrainOptions.h): lr 3e-3, betas (0.9, 0.95),
#   eps 1e-8, weight decay 0.1 on every parameter the .mlir does not mark
#   no_weight_decay (norm weights, AttnRes queries and key norms, A_log,
#   dt_bias: the rule of moe-import-config, applied here by name and checked
#   against the .mlir's flags), clip_grad_norm_(max 1.0, foreach) over every
#   trainable parameter, and the driver's learning-rate schedule (warm-up
#   lr*t/warmup for t <= warmup = steps/10, then wsd: constant, and a linear
#   decay to min-lr = lr/10 over the last ceil(0.2 steps) steps).
# * The router biases are buffers, not parameters: after each step every one
#   is overwritten with its layer's next bias (ALGORITHMS.md 4.3), computed
#   from the step's fp32 routing scores and the bias the step routed with, by
#   the balancer the .mlir's #moe.routing names (quantile_balance exact or
#   histogram, or sign_bias), as moe.route defines it (MoEPrimitiveOps.td).
# * A step whose loss or gradient norm is not finite is skipped (parameters,
#   moments and biases unchanged), as the driver skips it.
#
# Data: --batches FILE, little-endian uint32 token ids, step-major: step s
# (0-based) is the B windows [s*B + r] (r < B) of T + 1 tokens, inputs the
# first T of a window and labels the last T. Without it each step's windows
# are drawn from numpy's generator seeded with (--seed, s).
#
# Phases (one process):
#  1. probe: one forward and backward of step 0's batch, no update: fla
#     autotunes its kernels here (1-4 minutes), and a kernel that fails, or
#     an out-of-memory error, selects the next implementation (fla without
#     its conv and norm kernels, then the chunked KDA of torch_model.py) or
#     the next recomputation level (--recompute auto: none, then the MoE
#     FFNs, then every sub-layer under activation checkpointing); "kda",
#     "experts", "recompute" and "fallbacks" in the JSON say what ran.
#  2. --repeat-check K (default 2): K steps from the initial weights, thrown
#     away, then phase 3 starts again from the same weights; the JSON says
#     whether its first K losses are bit-for-bit those of the repeat.
#  3. the loss curve: --steps training steps from the initial weights, under
#     torch's deterministic algorithms (warn_only; fla's Triton kernels are
#     not covered by it), recording per step the loss before the update,
#     the learning rate, the global gradient norm before clipping and the
#     largest MaxVio of the MoE layers (the driver's metrics).
#  4. timing: --timing-warmup (3) untimed steps, then --iters (20) steps
#     timed one by one with CUDA events, continuing the run of phase 3 (the
#     same weights, moments and biases; step s reads batch s, cycling through
#     the file's batches; learning rate that of the curve's last step;
#     deterministic algorithms off). Median, minimum and mean ms per step,
#     tokens/s = B*T / median, peak memory (torch.cuda.max_memory_allocated
#     over the timed steps), model FLOPs per step (training_flops below) and
#     MFU = model TFLOP/s / the bf16 GEMM ceiling measured at the start of
#     the same process (bench/model/peer.py's gemm_8192).
#
# Prints one table and writes <out>/train-peer-<model>.json (--out, else
# $OUT, else bench/train/out). --device cpu runs every phase on the CPU in
# fp32 without fla (a smoke test: --batch-size 2 --seq-len 64 by default
# there); --require-learning makes the exit status 1 unless the loss fell
# over the curve and every trainable parameter that the forward reads got a
# non-zero gradient at some step.

import argparse
import gc
import importlib.util
import json
import math
import os
import re
import sys
import time
import traceback

# Before CUDA starts: fewer fragmentation failures at the large shapes.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(BENCH, "model"))
sys.path.insert(0, BENCH)
import torch_model as tm  # noqa: E402  (bench/model/torch_model.py)
from common import copy_bandwidth  # noqa: E402  (bench/common.py)


def _import_forward_peer():
    """bench/model/peer.py, under another module name (this file is peer.py
    too)."""
    spec = importlib.util.spec_from_file_location(
        "model_peer", os.path.join(BENCH, "model", "peer.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


forward_peer = _import_forward_peer()
SHAPES = forward_peer.SHAPES  # kimi-tiny (16, 2048), kimi-small (4, 8192)
CPU_SHAPE = (2, 64)


# ---------------------------------------------------------------------------
# What the .mlir decides: weight decay, buffers, balancers
# ---------------------------------------------------------------------------

def is_buffer(name):
    """The router's selection bias: written by the balancer, never by the
    optimizer (`buffer` in the .mlir)."""
    return name.endswith(".router_bias")


def no_weight_decay(name):
    """The parameters moe-import-config marks no_weight_decay
    (lib/Import/KimiModel.cpp): the norm weights (<...>_norm.weight,
    final_norm.weight, KDA's out_norm, MLA's kv_norm and q_norm), the AttnRes
    queries and key norms (<...>_res.query, <...>_res.key_norm), and KDA's
    A_log and dt_bias."""
    leaf = name.rsplit(".", 1)[-1]
    return (name.endswith("norm.weight")
            or leaf in ("out_norm", "kv_norm", "q_norm", "query", "key_norm", "A_log",
                        "dt_bias"))


def mlir_param_flags(mlir_path):
    """{name: (no_weight_decay, buffer)} from the .mlir's moe.param ops."""
    with open(mlir_path) as f:
        text = f.read()
    return {name: ("no_weight_decay" in attrs, re.search(r"\bbuffer\b", attrs) is not None)
            for name, attrs, _ in tm._PARAM.findall(text)}


_ROUTING = re.compile(
    r"#moe\.routing<experts = (\d+), top_k = (\d+), scaling = [^,]+,\s*"
    r"balance = #moe\.(quantile_balance|sign_bias)<([^>]*)>")


def parse_balance(kind, body):
    """("exact",), ("histogram", bins) or ("sign", rate) from an attribute."""
    body = body.replace(" ", "")
    if kind == "sign_bias":
        return ("sign", float(body.split("=", 1)[1]))
    if body == "exact":
        return ("exact",)
    m = re.fullmatch(r"histogram,bins=(\d+)", body)
    if not m:
        raise SystemExit(f"unknown quantile balance <{body}>")
    return ("histogram", int(m.group(1)))


def read_balancers(cfg, config_path, mlir_path):
    """[(ffn prefix, balance)] for the MoE layers in order: from the .mlir's
    #moe.routing attributes, else from the config's moe_mlir keys with
    moe-import-config's defaults (sign_bias at rate 1e-3; histogram bins
    512)."""
    prefixes = [f"layers.{i}.ffn." for i in range(len(cfg.mixers)) if i >= cfg.dense_layers]
    if not prefixes:
        return []
    if mlir_path:
        with open(mlir_path) as f:
            found = _ROUTING.findall(f.read())
        if len(found) != len(prefixes):
            raise SystemExit(f"{mlir_path}: {len(found)} #moe.routing attributes with a balancer, "
                             f"{len(prefixes)} MoE layers")
        return [(p, parse_balance(kind, body)) for p, (_, _, kind, body) in zip(prefixes, found)]
    with open(config_path) as f:
        extra = json.load(f).get("moe_mlir", {})
    if extra.get("balance", "sign_bias") == "quantile":
        if extra.get("balance_method", "exact") == "histogram":
            balance = ("histogram", int(extra.get("balance_bins", 512)))
        else:
            balance = ("exact",)
    else:
        balance = ("sign", float(extra.get("balance_rate", 1e-3)))
    return [(p, balance) for p in prefixes]


def balance_name(balance):
    if balance[0] == "exact":
        return "quantile_balance<exact>"
    if balance[0] == "histogram":
        return f"quantile_balance<histogram, bins = {balance[1]}>"
    return f"sign_bias<rate = {balance[1]:g}>"


# ---------------------------------------------------------------------------
# The balancers (ALGORITHMS.md 4.2, 4.3; moe.route in MoEPrimitiveOps.td)
# ---------------------------------------------------------------------------

def expert_load(idx, experts):
    """Token-slots per expert, [E] int64, without a device-to-host copy."""
    flat = idx.reshape(-1)
    return torch.zeros(experts, dtype=torch.int64, device=idx.device).index_add_(
        0, flat, torch.ones_like(flat))


def next_bias(balance, scores, idx, bias, top_k):
    """The selection bias of the next step, from this step's fp32 scores
    s [N, E], its top-k indices and the bias b it routed with.

    Quantile balancing: cut[n] = the (k+1)-th largest of s[n] + b, r = cut - s
    (the bias expert j would need to win token n), then per expert
    * exact: the midpoint of the q-th and (q+1)-th smallest r[:, j], q =
      round(N k / E) with halves up, clamped to ranks [1, N];
    * histogram: counts of r[:, j] over `bins` bins spanning
      [min b - 1, max b + 1], and the point where the cumulative count
      reaches N k / E, interpolated linearly inside its bin;
    centred to zero mean. Sign bias: b + rate * sign(N k / E - load)."""
    n, experts = scores.shape
    target = n * top_k / experts
    bias = bias.float()
    if balance[0] == "sign":
        load = expert_load(idx, experts).float()
        return bias + balance[1] * torch.sign(target - load)
    if n == 0:
        return bias - bias.mean()
    cut = torch.topk(scores + bias, top_k + 1, dim=1).values[:, top_k]
    r = cut[:, None] - scores                                     # [N, E]
    if balance[0] == "exact":
        q = (2 * n * top_k + experts) // (2 * experts)
        low, high = max(q, 1), min(q + 1, n)
        ordered = torch.sort(r, dim=0).values
        b = (ordered[low - 1] + ordered[high - 1]) * 0.5
    else:
        bins = balance[1]
        lo = bias.min() - 1.0
        width = (bias.max() + 1.0 - lo) / bins
        m = torch.floor((r - lo) / width).clamp(0, bins - 1).long()   # [N, E]
        counts = torch.zeros(experts, bins, device=r.device).scatter_add_(
            1, m.t(), torch.ones(experts, n, device=r.device))
        cumulative = counts.cumsum(1)
        first = (cumulative < target).sum(1).clamp(max=bins - 1)      # first C_m >= target
        previous = cumulative.gather(1, (first - 1).clamp(min=0)[:, None])[:, 0]
        before = torch.where(first > 0, previous, torch.zeros_like(lo))
        inside = counts.gather(1, first[:, None])[:, 0]
        b = lo + (first.float() + (target - before) / inside) * width
    return b - b.mean()


# ---------------------------------------------------------------------------
# Model FLOPs
# ---------------------------------------------------------------------------

KDA_CHUNK = 64  # chunk_kda's chunk size C


def training_flops(cfg, batch, length):
    """Model FLOPs of one training step, forward and backward, a multiply-add
    counted as 2 FLOPs and the backward as twice the forward (the adjoints of
    the inputs and of the weights: one GEMM each per forward GEMM), so
    3 x the forward; recomputation (--recompute) is not counted.

    * weights: 6 * A * tokens, A = the matmul weights one token reads
      (active parameters): every 2-D weight in full - the projections, the
      low-rank gate factors, beta's projection, the short convolutions (a
      depth-wise convolution reads each weight once per token), the router
      (all E scores), the dense FFN, the shared expert, lm_head - and the
      routed experts' [E, ., .] weights times top_k / E. Not counted: the
      embedding table (a row gather) and the element-wise vectors (norm
      weights, AttnRes vectors, A_log, dt_bias, router bias).
    * MLA attention, per layer: forward 2 * B * H * T^2 * (d_qk + d_v) / 2
      (Q K^T and P V over the causal lower triangle; d_qk = nope + rope;
      bench/mla's count), times 3.
    * KDA, per layer: forward B * H * (6 T K^2 + 3 T C K + T C^2), C = 64,
      K = V (ALGORITHMS.md 1.4; bench/kda's count for chunk_kda: the chunk
      state products, the intra-chunk products and the triangular solve),
      times 3.
    Not counted: element-wise work, norms, softmaxes, the AttnRes mixes
    (about 4 d FLOPs per source per token forward), routing, the loss's
    softmax."""
    tokens = batch * length
    active = 0.0
    for name, shape, _ in tm.param_specs(cfg):
        if name == "embed.weight" or len(shape) < 2 or name.endswith(".dt_bias"):
            continue
        n = math.prod(shape)
        active += n * cfg.top_k / cfg.experts if len(shape) == 3 else n
    weights = 6 * active * tokens
    H, d_qk, d_v = cfg.mla_heads, cfg.nope + cfg.rope, cfg.v_dim
    mla = 3 * cfg.mixers.count("mla") * 2 * batch * H * length ** 2 * (d_qk + d_v) / 2
    K, C = cfg.kda_dim, KDA_CHUNK
    kda = 3 * cfg.mixers.count("kda") * batch * cfg.kda_heads * (
        6 * length * K * K + 3 * length * C * K + length * C * C)
    return {"active_matmul_params_per_token": active, "weights": weights, "mla_attention": mla,
            "kda": kda, "total": weights + mla + kda}


def summary_active_params(cfg):
    """Parameters one token reads as -moe-print-model-summary counts them
    (the .mlir header's "active per token"): everything, the routed experts
    times top_k / E and the embedding table one row."""
    total = 0.0
    for name, shape, _ in tm.param_specs(cfg):
        n = math.prod(shape)
        if name == "embed.weight":
            n = shape[1]
        elif len(shape) == 3:
            n = n * cfg.top_k / cfg.experts
        total += n
    return total


# ---------------------------------------------------------------------------
# Schedule and data
# ---------------------------------------------------------------------------

def learning_rate(hp, t):
    """The driver's learningRate (TrainOptions.cpp) of step t in 1..steps."""
    if t <= hp.warmup:
        return hp.lr * t / hp.warmup
    if hp.schedule == "constant":
        return hp.lr
    if hp.schedule == "cosine":
        span = max(1, hp.steps - hp.warmup)
        p = (t - hp.warmup) / span
        return hp.min_lr + (hp.lr - hp.min_lr) * 0.5 * (1 + math.cos(math.pi * p))
    decay = min(math.ceil(hp.decay_frac * hp.steps), hp.steps - hp.warmup)
    start = hp.steps - decay
    if t <= start or decay == 0:
        return hp.lr
    return hp.lr + (hp.min_lr - hp.lr) * (t - start) / decay


class Batches:
    """Step s's (tokens, labels), [B, T] int32 on the device."""

    def __init__(self, path, batch, length, vocab, seed, device):
        self.path, self.batch, self.length, self.vocab = path, batch, length, vocab
        self.seed, self.device = seed, device
        if path:
            self.stream = np.memmap(path, dtype="<u4", mode="r")
            self.count = self.stream.size // (batch * (length + 1))
            if self.count == 0:
                raise SystemExit(f"{path}: {self.stream.size} tokens, one step needs "
                                 f"{batch * (length + 1)}")

    def describe(self):
        if self.path:
            return f"{self.path} ({self.count} steps of {self.batch} x {self.length + 1})"
        return f"random ids, numpy generator seeded with ({self.seed}, step)"

    def __call__(self, s):
        if self.path:
            rows = self.batch * (self.length + 1)
            i = s % self.count
            window = np.asarray(self.stream[i * rows:(i + 1) * rows]).reshape(
                self.batch, self.length + 1)
            if window.max() >= self.vocab:
                raise SystemExit(f"{self.path}: token id {window.max()} at step {s} is out of "
                                 f"range for vocab {self.vocab}")
        else:
            gen = np.random.default_rng([self.seed, s])
            window = gen.integers(0, self.vocab, (self.batch, self.length + 1))
        window = window.astype(np.int32)
        tokens = torch.from_numpy(np.ascontiguousarray(window[:, :-1])).to(self.device)
        labels = torch.from_numpy(np.ascontiguousarray(window[:, 1:])).to(self.device)
        return tokens, labels


# ---------------------------------------------------------------------------
# The training step
# ---------------------------------------------------------------------------

def grouped_mm_autograd(device):
    """None when torch._grouped_mm (bf16, 2-D x 3-D with offsets) has a
    backward that agrees with a loop over the groups on this device; else
    why not."""
    try:
        gen = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(64, 32, device=device, generator=gen).bfloat16().requires_grad_()
        w = torch.randn(2, 32, 48, device=device, generator=gen).bfloat16().requires_grad_()
        dy = torch.randn(64, 48, device=device, generator=gen).bfloat16()
        # Groups of any size, as the routing makes them.
        offs = torch.tensor([13, 64], dtype=torch.int32, device=device)
        dx, dw = torch.autograd.grad(torch._grouped_mm(x, w, offs=offs), (x, w), dy)
        xr, wr = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
        yr = torch.cat([xr[:13] @ wr[0], xr[13:] @ wr[1]])
        dxr, dwr = torch.autograd.grad(yr, (xr, wr), dy.float())
        for got, want, what in ((dx, dxr, "dx"), (dw, dwr, "dw")):
            err = float((got.float() - want).norm() / want.norm())
            if not err < 2e-2:
                return f"torch._grouped_mm's backward {what} differs from the loop by {err:.2e}"
        return None
    except Exception as e:
        return f"torch._grouped_mm has no working backward here: {type(e).__name__}: {e}"


class Trainer:
    """fp32 master weights, AdamW state and the router-bias buffers of one
    run, and its training step."""

    def __init__(self, cfg, weights, device, dtype, impl, hp, balancers):
        self.cfg, self.device, self.dtype, self.impl, self.hp = cfg, device, dtype, impl, hp
        self.balancers = balancers
        self.params = {}
        for name, w in weights.items():
            t = w.to(device, dtype=torch.float32, copy=True)
            self.params[name] = t if is_buffer(name) else t.requires_grad_()
        self.names = [n for n in self.params if not is_buffer(n)]
        self.trainable = [self.params[n] for n in self.names]
        decay = [self.params[n] for n in self.names if not no_weight_decay(n)]
        keep = [self.params[n] for n in self.names if no_weight_decay(n)]
        groups = [{"params": decay, "weight_decay": hp.weight_decay},
                  {"params": keep, "weight_decay": 0.0}]
        kw = dict(lr=hp.lr, betas=(hp.beta1, hp.beta2), eps=hp.eps)
        try:
            self.opt = torch.optim.AdamW(groups, fused=True, **kw)
            self.optimizer = "AdamW(fused=True)"
        except (RuntimeError, ValueError) as e:
            print(f"WARNING: fused AdamW unavailable on {device} ({e}); foreach AdamW instead",
                  flush=True)
            self.opt = torch.optim.AdamW(groups, foreach=True, **kw)
            self.optimizer = "AdamW(foreach=True)"
        self.routes = {}
        self.steps_taken = 0

    def _hook(self, prefix, scores, idx):
        # Keyed by layer: a recomputed sub-layer reports the same routing again.
        self.routes[prefix] = (scores.detach(), idx.detach())

    def zero_grad(self):
        self.opt.zero_grad(set_to_none=True)
        self.routes = {}

    def forward_backward(self, tokens, labels, reserve_moments=False):
        """The step's loss (before the update) and gradients. With
        reserve_moments (the probe) it holds as much memory as AdamW's
        moments will take, which do not exist before the first update, so
        that an out-of-memory error shows here."""
        reserve = ([torch.empty_like(p) for p in self.trainable for _ in (0, 1)]
                   if reserve_moments and not self.opt.state else None)
        self.impl.route_hook = self._hook
        self.routes = {}
        P = tm.compute_params(self.params, self.dtype)
        loss = tm.forward_loss(self.cfg, P, tokens, labels, self.impl)
        loss.backward()
        del reserve
        return loss.detach()

    def step(self, tokens, labels, lr, record=None):
        """One training step. With record (a dict of lists, phase 3) it
        also reads the loss, gradient norm and MaxVio back (one sync), skips
        a non-finite step and notes which parameters got a gradient; without
        it nothing waits for the device (phase 4)."""
        loss = self.forward_backward(tokens, labels)
        read = [p.grad is not None for p in self.trainable]
        for p in self.trainable:
            if p.grad is None:  # not read by the forward: a zero gradient, as in our step
                p.grad = torch.zeros_like(p)
        grads = [p.grad for p in self.trainable]
        if record is not None:
            nonzero = torch.stack([g.abs().amax() for g in grads]) > 0
        max_norm = self.hp.clip if self.hp.clip > 0 else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(self.trainable, max_norm, foreach=True)
        if record is not None:
            # MaxVio = max load / mean load - 1 per MoE layer (ALGORITHMS.md 4.4).
            vios = [expert_load(idx, self.cfg.experts).max().float()
                    / (idx.shape[0] * self.cfg.top_k / self.cfg.experts) - 1
                    for _, idx in (self.routes[p] for p, _ in self.balancers)]
            vio = torch.stack(vios) if vios else torch.zeros(1, device=loss.device)
            values = torch.stack([loss.float(), grad_norm.float(), vio.max(),
                                  vio.argmax().float()]).tolist()
            ok = math.isfinite(values[0]) and math.isfinite(values[1])
            record["loss"].append(values[0])
            record["lr"].append(lr)
            record["grad_norm"].append(values[1])
            record["max_vio"].append(values[2] if vios else None)
            record["max_vio_layer"].append(
                int(self.balancers[int(values[3])][0].split(".")[1]) if vios else None)
            record["skipped"].append(not ok)
            record["nonzero"] = nonzero if "nonzero" not in record else record["nonzero"] | nonzero
            record["read"] = read if "read" not in record else [
                a or b for a, b in zip(record["read"], read)]
            if not ok:
                self.zero_grad()
                return
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.step()
        with torch.no_grad():
            for prefix, balance in self.balancers:
                scores, idx = self.routes[prefix]
                bias = self.params[prefix + "router_bias"]
                bias.copy_(next_bias(balance, scores, idx, bias, self.cfg.top_k))
        self.zero_grad()
        self.steps_taken += 1


def new_record():
    return {"loss": [], "lr": [], "grad_norm": [], "max_vio": [], "max_vio_layer": [],
            "skipped": []}


def recompute_rule(cfg, level):
    if level == "moe":
        return lambda name: name.endswith(".ffn") and int(name.split(".")[1]) >= cfg.dense_layers
    if level == "all":
        return lambda name: True
    return None


def free_device(device):
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------
# One model
# ---------------------------------------------------------------------------

def run_model(args, model, device, hp_args):
    cuda = device.type == "cuda"
    default_shape = SHAPES[model] if cuda else CPU_SHAPE
    batch = args.batch_size or default_shape[0]
    length = args.seq_len or default_shape[1]
    config, mlir = tm.model_paths(model)
    cfg = tm.load_config(config)
    problems = tm.check_against_mlir(cfg, mlir) if mlir else []
    if problems:
        raise SystemExit(f"{model}: the config disagrees with {mlir}: {problems}")
    specs = tm.param_specs(cfg)
    if mlir:
        flags = mlir_param_flags(mlir)
        wrong = [n for n, _, _ in specs if flags[n] != (no_weight_decay(n), is_buffer(n))]
        if wrong:
            raise SystemExit(f"{mlir}: the no_weight_decay / buffer flags of {wrong} are not "
                             f"the ones this script applies by name")
    balancers = read_balancers(cfg, config, mlir)
    hp = argparse.Namespace(**vars(hp_args))
    hp.warmup = hp.steps // 10 if hp.warmup is None else hp.warmup
    hp.min_lr = hp.lr / 10 if hp.min_lr is None else hp.min_lr
    if hp.warmup > hp.steps or hp.min_lr > hp.lr:
        raise SystemExit("--warmup must not exceed --steps, nor --min-lr --lr")
    precision = args.precision if args.precision != "auto" else ("bf16" if cuda else "fp32")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32

    result = {"model": model, "batch": batch, "seq_len": length, "tokens_per_step": batch * length,
              "device": torch.cuda.get_device_name(0) if cuda else "cpu",
              "torch": torch.__version__, "precision": precision,
              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF") if cuda else None}
    try:
        import triton
        result["triton"] = triton.__version__
    except ImportError:
        result["triton"] = None
    t0 = time.time()
    if args.params:
        weights = tm.load_params(cfg, args.params, "cpu")
    else:
        weights = {n: t.cpu() for n, t in tm.init_params(cfg, args.seed, device).items()}
    result["weights"] = args.params or f"seed {args.seed} (torch_model.init_params on {device})"
    result["parameters"] = sum(t.numel() for t in weights.values())
    batches = Batches(args.batches, batch, length, cfg.vocab, args.seed + 1, device)
    if args.batches and batches.count < hp.steps:
        raise SystemExit(f"{args.batches}: {batches.count} steps of batches, --steps {hp.steps}")
    result["batches"] = batches.describe()
    no_decay = [n for n, _, _ in specs if not is_buffer(n) and no_weight_decay(n)]
    result["optimizer"] = {
        "lr": hp.lr, "min_lr": hp.min_lr, "warmup": hp.warmup, "schedule": hp.schedule,
        "decay_frac": hp.decay_frac, "weight_decay": hp.weight_decay, "clip": hp.clip,
        "betas": [hp.beta1, hp.beta2], "eps": hp.eps,
        "no_weight_decay": no_decay,
        "buffers": [n for n, _, _ in specs if is_buffer(n)]}
    result["balancers"] = {p + "router_bias": balance_name(b) for p, b in balancers}
    print(f"== {model}: B={batch}, T={length}, {result['parameters']:,} parameters "
          f"({result['weights']}, {time.time() - t0:.1f} s); batches: {result['batches']}; "
          f"{precision}; balancers: {sorted(set(result['balancers'].values()))}", flush=True)

    # Phase 1: the implementation that runs a forward and backward.
    result["fallbacks"] = []
    experts = "auto"
    if cuda and dtype == torch.bfloat16:
        why = grouped_mm_autograd(device)
        if why:
            print(f"WARNING: {why}; the routed experts run as a loop over the experts "
                  f"(slower)", flush=True)
            result["fallbacks"].append(why)
            experts = "loop"
    attempts = [dict(kda="auto", fla_kernels=True), dict(kda="auto", fla_kernels=False),
                dict(kda="chunk", fla_kernels=False)] if cuda else [dict(kda="chunk",
                                                                         fla_kernels=False)]
    levels = ["none", "moe", "all"] if args.recompute == "auto" else [args.recompute]
    tokens0, labels0 = batches(0)
    trainer = None
    chosen = None
    for attempt in attempts:
        impl, fla_note = tm.make_impl(device, attempt["kda"], experts, args.fla, dtype,
                                      fla_kernels=attempt["fla_kernels"])
        result["fla"] = fla_note
        what = f"kda {impl.kda}, fla conv/norm {impl.fla_conv}, experts {impl.experts}"
        failed = None
        for level in levels:
            impl.recompute = recompute_rule(cfg, level)
            if trainer is None:
                trainer = Trainer(cfg, weights, device, dtype, impl, hp, balancers)
            trainer.impl = impl
            t0 = time.time()
            oom = False
            try:
                loss = float(trainer.forward_backward(tokens0, labels0, reserve_moments=True))
                if cuda:
                    torch.cuda.synchronize()
                result["probe_seconds"] = time.time() - t0
                chosen = (impl, level)
            except torch.cuda.OutOfMemoryError as e:
                oom = True
                failed = f"{what}, recompute {level}: out of memory: {str(e).splitlines()[0]}"
            except Exception as e:
                failed = f"{what}, recompute {level}: {type(e).__name__}: {e}"
                print(traceback.format_exc(), flush=True)
            trainer.zero_grad()
            free_device(device)
            if chosen:
                break
            print(f"error: {failed}", flush=True)
            result["fallbacks"].append(failed)
            if not oom:
                break  # another implementation, not more recomputation
        if chosen:
            break
    if not chosen:
        raise SystemExit(f"{model}: no implementation ran a training step")
    impl, level = chosen
    result["kda"], result["fla_conv_norm"], result["experts"] = \
        impl.kda, impl.fla_conv, impl.experts
    result["recompute"] = level
    result["optimizer"]["implementation"] = trainer.optimizer
    result["probe_loss"] = loss
    print(f"probe (kda {impl.kda}, fla conv/norm {impl.fla_conv}, experts {impl.experts}, "
          f"recompute {level}): forward + backward {result['probe_seconds']:.1f} s "
          f"(fla autotunes here), loss {loss:.6f}", flush=True)
    if cuda and impl.kda != "fla":
        print(f"WARNING: KDA runs as '{impl.kda}' ({result['fla']}): this is not the "
              f"PyTorch + fla peer, and its time is not that peer's", flush=True)

    # Phase 2: the same first steps twice.
    torch.use_deterministic_algorithms(args.deterministic, warn_only=True)
    try:  # deterministic mode would also fill every torch.empty with NaN
        importlib.import_module("torch.utils.deterministic").fill_uninitialized_memory = False
    except ImportError:
        pass
    if cuda:
        torch.backends.cudnn.deterministic = args.deterministic
    repeat = None
    if args.repeat_check and hp.steps:
        k = min(args.repeat_check, hp.steps)
        repeat = new_record()
        for s in range(k):
            trainer.step(*batches(s), float(np.float32(learning_rate(hp, s + 1))), record=repeat)
        del trainer
        free_device(device)
        trainer = Trainer(cfg, weights, device, dtype, impl, hp, balancers)

    # Phase 3: the loss curve.
    record = new_record()
    t0 = time.time()
    for s in range(hp.steps):
        lr = float(np.float32(learning_rate(hp, s + 1)))  # the driver passes f32
        trainer.step(*batches(s), lr, record=record)
        if s == 0 or (s + 1) % args.log_every == 0 or s + 1 == hp.steps:
            vio = record["max_vio"][-1]
            print(f"step {s + 1} loss {record['loss'][-1]:.6f} lr {lr:.3e} grad-norm "
                  f"{record['grad_norm'][-1]:.4f}"
                  + (f" max-vio {vio:.3f} (layer {record['max_vio_layer'][-1]})"
                     if vio is not None else "")
                  + (" skipped" if record["skipped"][-1] else ""), flush=True)
    curve_seconds = time.time() - t0
    nonzero = record.pop("nonzero", None)
    read = record.pop("read", None)
    result["curve"] = dict(record, steps=hp.steps, seconds=curve_seconds)
    if repeat is not None:
        k = len(repeat["loss"])
        same = repeat["loss"] == record["loss"][:k]
        result["repeat_check"] = {"steps": k, "losses": repeat["loss"], "bitwise_equal": same}
        print(f"repeat check: the first {k} losses {'are' if same else 'are NOT'} bit-for-bit "
              f"those of a second run from the same weights", flush=True)
    if nonzero is not None:
        nonzero = nonzero.tolist()
        unread = [n for n, r in zip(trainer.names, read) if not r]
        zero = [n for n, r, z in zip(trainer.names, read, nonzero) if r and not z]
        result["gradients"] = {"not_read_by_forward": unread, "zero_at_every_step": zero,
                               "buffers_without_gradient": result["optimizer"]["buffers"]}
        print(f"gradients over {hp.steps} steps: {len(trainer.names) - len(unread) - len(zero)} "
              f"of {len(trainer.names)} trainable parameters non-zero; not read by the "
              f"forward: {unread or 'none'}; read but zero at every step: {zero or 'none'}; "
              f"router biases (buffers): no gradient, set by the balancer", flush=True)
        if hp.steps:
            result["router_bias_spread"] = {
                p + "router_bias": float(trainer.params[p + "router_bias"].max()
                                         - trainer.params[p + "router_bias"].min())
                for p, _ in balancers}

    # Phase 4: timing.
    torch.use_deterministic_algorithms(False)
    if cuda:
        torch.backends.cudnn.deterministic = False
    n_timed = args.timing_warmup + args.iters
    timed = [batches(hp.steps + i) for i in range(n_timed)]
    lr = float(np.float32(learning_rate(hp, hp.steps))) if hp.steps else hp.lr
    position = [0]

    def one_step():
        trainer.step(*timed[position[0]], lr)
        position[0] += 1

    for _ in range(args.timing_warmup):
        one_step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    timing = forward_peer.time_cuda(one_step, iters=args.iters, warmup=0, cuda=cuda)
    result.update(timing)
    result["timing"] = (f"{args.timing_warmup} untimed then {args.iters} timed steps after the "
                        f"curve's {hp.steps}, continuing its run (batches {hp.steps}..., "
                        f"lr {lr:.3e}), deterministic algorithms off")
    result["ms_per_step"] = timing["median_ms"]
    result["tokens_per_s"] = batch * length / (timing["median_ms"] * 1e-3)
    result["peak_memory_bytes"] = torch.cuda.max_memory_allocated() if cuda else None
    result["peak_memory_gib"] = (result["peak_memory_bytes"] or 0) / 2 ** 30
    result["resident_bytes_before"] = before
    flops = training_flops(cfg, batch, length)
    result["model_flops_per_step"] = flops
    result["summary_active_params_per_token"] = summary_active_params(cfg)
    result["model_tflops_per_s"] = flops["total"] / (timing["median_ms"] * 1e-3) / 1e12
    print(f"timing: median {timing['median_ms']:.3f} ms per step (min {timing['min_ms']:.3f}, "
          f"mean {timing['mean_ms']:.3f}, {timing['runs']} steps), "
          f"{result['tokens_per_s']:,.0f} tokens/s, peak memory {result['peak_memory_gib']:.2f} "
          f"GiB (resident before {before / 2 ** 30:.2f} GiB), model "
          f"{flops['total'] / 1e12:.3f} TFLOP per step", flush=True)
    trainer = timed = weights = None  # free the run before the next model
    free_device(device)
    return result


def check_learning(result):
    """The smoke test's requirements; returns the list of failures."""
    failures = []
    losses = result["curve"]["loss"]
    if len(losses) < 2 or not losses[-1] < losses[0]:
        failures.append(f"the loss did not fall: {losses[:1]} -> {losses[-1:]}")
    zero = result.get("gradients", {}).get("zero_at_every_step")
    if zero:
        failures.append(f"zero gradient at every step: {zero}")
    if not all(math.isfinite(x) for x in losses):
        failures.append("a loss is not finite")
    return failures


def print_table(results):
    print("| model | B x T | steps | loss first -> last | ms/step (min, mean) | tokens/s | "
          "peak GiB | TFLOP/step | TFLOP/s | GEMM ceiling | MFU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        losses = r["curve"]["loss"]
        first_last = f"{losses[0]:.4f} -> {losses[-1]:.4f}" if losses else "-"
        gemm = r.get("gemm_bf16_8192_tflops")
        mfu = r.get("mfu")
        print(f"| {r['model']} | {r['batch']} x {r['seq_len']} | {r['curve']['steps']} | "
              f"{first_last} | {r['median_ms']:.2f} ({r['min_ms']:.2f}, {r['mean_ms']:.2f}) | "
              f"{r['tokens_per_s']:,.0f} | {r['peak_memory_gib']:.2f} | "
              f"{r['model_flops_per_step']['total'] / 1e12:.3f} | {r['model_tflops_per_s']:.1f} | "
              f"{f'{gemm:.0f}' if gemm else '-'} | {f'{mfu:.3f}' if mfu else '-'} |")


def main():
    ap = argparse.ArgumentParser(description="the PyTorch + fla training-step peer")
    ap.add_argument("--model", default="kimi-tiny", choices=("all",) + tuple(SHAPES))
    ap.add_argument("--batch-size", type=int,
                    help="default 16 for kimi-tiny, 4 for kimi-small (2 on the CPU)")
    ap.add_argument("--seq-len", type=int,
                    help="default 2048 for kimi-tiny, 8192 for kimi-small (64 on the CPU)")
    ap.add_argument("--params", help="initial weights: <name>.npy directory (one --model)")
    ap.add_argument("--batches", help="uint32 token file, step-major windows of T + 1 tokens")
    ap.add_argument("--seed", type=int, default=0,
                    help="weights without --params; batches without --batches (seed + 1)")
    ap.add_argument("--steps", type=int, default=200, help="steps of the loss curve")
    ap.add_argument("--iters", type=int, help="timed steps (default 20; 3 on the CPU)")
    ap.add_argument("--timing-warmup", type=int,
                    help="untimed steps before timing (default 3; 1 on the CPU)")
    ap.add_argument("--log-every", type=int, default=10)
    # The driver's options and defaults (tools/moe-compile/driver/TrainOptions.h).
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr", type=float, help="default lr/10")
    ap.add_argument("--warmup", type=int, help="learning-rate warm-up steps (default steps/10)")
    ap.add_argument("--schedule", default="wsd", choices=("wsd", "cosine", "constant"))
    ap.add_argument("--decay-frac", type=float, default=0.2)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0, help="0: no clipping")
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--repeat-check", type=int, default=2,
                    help="run the first K steps twice and compare the losses (0: off)")
    ap.add_argument("--no-deterministic", dest="deterministic", action="store_false",
                    help="the curve without torch's deterministic algorithms")
    ap.add_argument("--recompute", default="auto", choices=("auto", "none", "moe", "all"),
                    help="activation checkpointing of sub-layers (auto: none, more on "
                         "out-of-memory)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test (fp32, no fla)")
    ap.add_argument("--precision", default="auto", choices=("auto", "bf16", "fp32"),
                    help="matmul operands (auto: bf16 on CUDA, fp32 on the CPU)")
    ap.add_argument("--fla", help="directory holding the fla package (default .peers/fla)")
    ap.add_argument("--out", help="result directory (default $OUT, else bench/train/out)")
    ap.add_argument("--require-learning", action="store_true",
                    help="exit 1 unless the loss fell and every parameter the forward reads "
                         "got a non-zero gradient")
    args = ap.parse_args()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("no CUDA device (--device cpu: a smoke test)")
    args.iters = args.iters if args.iters is not None else (20 if cuda else 3)
    if args.timing_warmup is None:
        args.timing_warmup = 3 if cuda else 1
    if args.iters < 1 or args.timing_warmup < 0 or args.steps < 0 or args.log_every < 1:
        ap.error("--iters >= 1, --timing-warmup >= 0, --steps >= 0, --log-every >= 1")
    models = list(SHAPES) if args.model == "all" else [args.model]
    if len(models) > 1 and (args.params or args.batches):
        ap.error("--params and --batches belong to one model: give --model")
    hp_args = argparse.Namespace(
        steps=args.steps, lr=args.lr, min_lr=args.min_lr, warmup=args.warmup,
        schedule=args.schedule, decay_frac=args.decay_frac, weight_decay=args.weight_decay,
        clip=args.clip, beta1=args.beta1, beta2=args.beta2, eps=args.eps)
    out = args.out or os.environ.get("OUT") or os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    gemm = bandwidth = None
    if cuda:
        gemm = forward_peer.gemm_8192()
        bandwidth = copy_bandwidth()
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: bf16 GEMM 8192^3 "
              f"{gemm:.0f} TFLOP/s, copy {bandwidth:.2f} TB/s", flush=True)
    results, failures = [], []
    for model in models:
        result = run_model(args, model, device, hp_args)
        result["gemm_bf16_8192_tflops"] = gemm
        result["copy_tb_per_s"] = bandwidth
        result["mfu"] = result["model_tflops_per_s"] / gemm if gemm else None
        path = os.path.join(out, f"train-peer-{model}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {path}", flush=True)
        results.append(result)
        if args.require_learning:
            failures += [f"{model}: {x}" for x in check_learning(result)]
    print_table(results)
    for failure in failures:
        print(f"error: {failure}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
