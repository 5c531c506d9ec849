#!/usr/bin/env python3
# bench/model/torch_model.py - the example models (kimi-tiny, kimi-small) in
# PyTorch, written from ALGORITHMS.md and the models' .mlir descriptions: the
# peer of the compiled forward pass, and a check of it on the same weights.
#
# usage: bench/model/torch_model.py MODEL --params DIR --batch DIR
#            [--expect LOSS | --expect-npy FILE] [--rtol R] [options]
#
# MODEL is kimi-tiny, kimi-small or a config.json (examples/configs/): the
# architecture comes from the config, and the parameter names and shapes it
# implies are checked against the model's .mlir (examples/models/<name>.mlir,
# or --mlir FILE) before anything runs. --params DIR holds every parameter as
# DIR/<name>.npy (f32), as written by an executable of `moe-compile MODEL.mlir
# --forward-only` given --dump-params=DIR; without it the weights are drawn
# from --seed by the same initialisation rules (not the same values). --batch
# DIR holds tokens.npy and labels.npy ([B, T] int32, the executable's
# --dump-batch=DIR); --tokens FILE (little-endian uint32 ids, the
# executable's --tokens) with --batch-size and --seq-len builds the batch the
# executable builds from the same file. The script prints the forward loss
# (the mean cross-entropy) and, with --expect or --expect-npy (the
# executable's --loss-npy), exits with status 1 unless
# |ours - expected| <= rtol * |expected|.
#
# Precision: on the CPU everything is fp32 (the CPU back end's arithmetic).
# With --precision bf16 (the default on CUDA) the matmul operands are bf16
# copies of the fp32 parameters with fp32 accumulation (what bf16 autocast
# does, without re-casting the weights at every call); norms, softmaxes, the
# router, the residual stream, the KDA gate and state, and the loss stay
# fp32: the compiled model's default policy.
#
# Implementations (--kda, --experts, auto by default): on CUDA with
# flash-linear-attention importable (its source in .peers/fla, see --fla),
# KDA is fla's chunk_kda with the L2 norms, beta's sigmoid and the gate (the
# bounded one with safe_gate) computed in its kernels, the short
# convolutions fla's causal_conv1d and the output norm fla's gated RMSNorm;
# otherwise a chunked KDA written here (ALGORITHMS.md section 1.4, fp32,
# chunks of 64), or the per-token recurrence of section 1.3
# (--kda=recurrent), or fla's naive recurrence (--kda=fla-naive, a reference
# independent of this file). MLA is torch's scaled_dot_product_attention.
# The routed experts are torch._grouped_mm over expert-sorted rows on CUDA in
# bf16, else a loop over the experts.
#
# Checks beside the loss: --trace prints the RMS of every sub-layer's output;
# --compare-kda=IMPL runs the forward a second time with another KDA
# implementation and prints, per sub-layer, the largest difference relative
# to the output's largest magnitude; --break=NAME flips the sign of one
# sub-layer's output (layers.<i>.mixer, layers.<i>.ffn), which a loss check
# must catch. bench/model/check_torch_cpu.sh runs the whole self-check on
# the CPU.
#
# Training (bench/train/peer.py) uses the same forward with autograd:
# Impl.route_hook receives every MoE FFN's fp32 scores and top-k indices (for
# the balancer), Impl.recompute puts chosen sub-layers under activation
# checkpointing, and matmul_f32 has a backward on CUDA (torch has none for
# mm's out_dtype overload); the forward values are the same.

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import types

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ("kimi-tiny", "kimi-small")


# ---------------------------------------------------------------------------
# Configuration (the keys moe-import-config reads, docs/ConfigImport.md)
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Config:
    name: str
    vocab: int
    hidden: int
    mixers: list            # per decoder layer: "kda" or "mla"
    eps: float
    init_std: float
    # KDA
    kda_heads: int = 0
    kda_dim: int = 0        # K = V, also the rank of the low-rank gates
    conv_width: int = 4
    gate: str = "softplus"  # or "bounded"
    g_min: float = -5.0
    # MLA
    mla_heads: int = 0
    kv_rank: int = 0
    nope: int = 0
    rope: int = 0
    v_dim: int = 0
    mla_gate: bool = False
    # FFNs
    dense_layers: int = 0
    intermediate: int = 0
    experts: int = 0
    top_k: int = 0
    expert_dim: int = 0
    shared: int = 0
    scaling: float = 1.0
    activation: str = "swiglu"
    situ_gate_beta: float = 4.0
    situ_up_beta: float = 25.0   # None: no cap
    # residuals: Block AttnRes with this many sub-layers per block, or None
    block_size: int = None


def load_config(path):
    """The architecture of a Kimi-Linear config.json with its moe_mlir key;
    what this implementation does not cover is an error."""
    with open(path) as f:
        c = json.load(f)
    extra = c.get("moe_mlir", {})
    layers = c["num_hidden_layers"]
    lin = c.get("linear_attn_config") or {}
    kda = set(lin.get("kda_layers", []))
    mixers = ["kda" if i + 1 in kda else "mla" for i in range(layers)]
    if c.get("q_lora_rank") is not None:
        raise SystemExit(f"{path}: q_lora_rank is not implemented here")
    if c.get("tie_word_embeddings", False):
        raise SystemExit(f"{path}: tied embeddings are not implemented here")
    if not c.get("mla_use_nope", True):
        raise SystemExit(f"{path}: only NoPE MLA exists")
    if c.get("moe_layer_freq", 1) != 1:
        raise SystemExit(f"{path}: moe_layer_freq must be 1")
    base = os.path.splitext(os.path.basename(path))[0]
    cfg = Config(
        name=extra.get("model_name", base.replace("-", "_")),
        vocab=c["vocab_size"], hidden=c["hidden_size"], mixers=mixers,
        eps=c.get("rms_norm_eps", 1e-5), init_std=c.get("initializer_range", 0.02))
    if "kda" in mixers:
        cfg.kda_heads, cfg.kda_dim = lin["num_heads"], lin["head_dim"]
        cfg.conv_width = lin["short_conv_kernel_size"]
        cfg.gate = extra.get("kda_gate", "softplus")
        cfg.g_min = extra.get("kda_g_min", -5.0)
    if "mla" in mixers:
        cfg.mla_heads = c["num_attention_heads"]
        cfg.kv_rank = c["kv_lora_rank"]
        cfg.nope, cfg.rope = c["qk_nope_head_dim"], c["qk_rope_head_dim"]
        cfg.v_dim = c["v_head_dim"]
        cfg.mla_gate = extra.get("mla_output_gate", False)
    cfg.dense_layers = c.get("first_k_dense_replace", 0)
    if cfg.dense_layers:
        cfg.intermediate = c["intermediate_size"]
    if cfg.dense_layers < layers:
        cfg.experts = c["num_experts"]
        cfg.top_k = c["num_experts_per_token"]
        cfg.expert_dim = c["moe_intermediate_size"]
        cfg.shared = c.get("num_shared_experts", 0)
        cfg.scaling = c.get("routed_scaling_factor", 1.0)
    cfg.activation = extra.get("ffn_activation", "swiglu")
    if cfg.activation == "situ_glu":
        cfg.situ_gate_beta = extra.get("situ_gate_beta", 4.0)
        cfg.situ_up_beta = extra.get("situ_up_beta", 25.0)
    cfg.block_size = extra.get("attn_res_block_size")
    return cfg


def model_paths(model, mlir=None):
    """(config.json, model .mlir) of a model name or a config path."""
    if model in MODELS:
        config = os.path.join(ROOT, "examples", "configs", model + ".json")
    else:
        config = model
    if mlir is None:
        stem = os.path.splitext(os.path.basename(config))[0]
        candidate = os.path.join(ROOT, "examples", "models", stem + ".mlir")
        mlir = candidate if os.path.exists(candidate) else None
    return config, mlir


# ---------------------------------------------------------------------------
# Parameters: names, shapes and initialisers, in the order of the .mlir
# ---------------------------------------------------------------------------

def param_specs(cfg):
    """[(name, shape, init)] with init one of ("normal",), ("ones",),
    ("zeros",), ("dt",) (inverse softplus of dt ~ logU(1e-3, 1e-1)) and
    ("log_uniform", 1, 16) (A_log of the softplus gate)."""
    d, specs = cfg.hidden, []

    def add(name, shape, init=("normal",)):
        specs.append((name, tuple(shape), init))

    def res(prefix):
        if cfg.block_size is not None:
            add(prefix + "_res.query", [d], ("zeros",))
            add(prefix + "_res.key_norm", [d], ("ones",))

    add("embed.weight", [cfg.vocab, d])
    for i, mixer in enumerate(cfg.mixers):
        p = f"layers.{i}."
        res(p + "mixer")
        add(p + "mixer_norm.weight", [d], ("ones",))
        m = p + "mixer."
        if mixer == "kda":
            hk, r = cfg.kda_heads * cfg.kda_dim, cfg.kda_dim
            for w in ("w_q", "w_k", "w_v"):
                add(m + w, [d, hk])
            for w in ("conv_q", "conv_k", "conv_v"):
                add(m + w, [hk, cfg.conv_width])
            add(m + "w_gate_down", [d, r])
            add(m + "w_gate_up", [r, hk])
            add(m + "A_log", [cfg.kda_heads],
                ("zeros",) if cfg.gate == "bounded" else ("log_uniform", 1.0, 16.0))
            add(m + "dt_bias", [cfg.kda_heads, cfg.kda_dim], ("dt",))
            add(m + "w_beta", [d, cfg.kda_heads])
            add(m + "w_out_gate_down", [d, r])
            add(m + "w_out_gate_up", [r, hk])
            add(m + "out_norm", [cfg.kda_dim], ("ones",))
            add(m + "w_out", [hk, d])
        else:
            h = cfg.mla_heads
            add(m + "w_q", [d, h * (cfg.nope + cfg.rope)])
            add(m + "w_kv_down", [d, cfg.kv_rank + cfg.rope])
            add(m + "kv_norm", [cfg.kv_rank], ("ones",))
            add(m + "w_kv_up", [cfg.kv_rank, h * (cfg.nope + cfg.v_dim)])
            if cfg.mla_gate:
                add(m + "w_gate", [d, h * cfg.v_dim])
            add(m + "w_out", [h * cfg.v_dim, d])
        res(p + "ffn")
        add(p + "ffn_norm.weight", [d], ("ones",))
        f = p + "ffn."
        if i < cfg.dense_layers:
            add(f + "w_gate", [d, cfg.intermediate])
            add(f + "w_up", [d, cfg.intermediate])
            add(f + "w_down", [cfg.intermediate, d])
        else:
            e, w = cfg.experts, cfg.expert_dim
            add(f + "w_router", [e, d])
            add(f + "router_bias", [e], ("zeros",))
            add(f + "w_gate", [e, d, w])
            add(f + "w_up", [e, d, w])
            add(f + "w_down", [e, w, d])
            if cfg.shared:
                s = cfg.shared * w
                add(f + "w_shared_gate", [d, s])
                add(f + "w_shared_up", [d, s])
                add(f + "w_shared_down", [s, d])
    if cfg.block_size is not None:
        res("final")
    add("final_norm.weight", [d], ("ones",))
    add("lm_head.weight", [cfg.vocab, d])
    return specs


_PARAM = re.compile(r'moe\.param\s+"([^"]+)"(.*?):\s*tensor<([^>]*)>', re.S)


def check_against_mlir(cfg, mlir_path):
    """The parameters of the .mlir (name, shape, order) and its layer
    attributes must be the ones this implementation builds; returns the list
    of differences (empty when none)."""
    with open(mlir_path) as f:
        text = f.read()
    problems = []
    found = []
    for name, _, ty in _PARAM.findall(text):
        dims = ty.split("x")[:-1]
        found.append((name, tuple(int(x) for x in dims)))
    ours = [(n, s) for n, s, _ in param_specs(cfg)]
    if found != ours:
        a, b = dict(found), dict(ours)
        for n in sorted(set(a) | set(b)):
            if a.get(n) != b.get(n):
                problems.append(f"parameter {n}: .mlir {a.get(n)}, ours {b.get(n)}")
        if not problems:
            problems.append("the parameters are in another order")
    # Attributes that change the forward pass but no parameter shape.
    kinds = {"kda": text.count("moe.kda_layer "), "mla": text.count("moe.mla_layer ")}
    if kinds != {k: cfg.mixers.count(k) for k in ("kda", "mla")}:
        problems.append(f"mixers: .mlir {kinds}, ours {cfg.mixers}")
    for got in set(re.findall(r"#moe\.decay_gate<([^>]*)>", text)):
        want = f"bounded, g_min = {cfg.g_min}" if cfg.gate == "bounded" else "softplus"
        if got.replace(" ", "") != want.replace(" ", ""):
            problems.append(f"decay gate: .mlir <{got}>, ours <{want}>")
    for got in set(re.findall(r"#moe\.activation<([^>]*)>", text)):
        if cfg.activation == "situ_glu":
            want = f"situ_glu, gate_beta = {cfg.situ_gate_beta}" + (
                "" if cfg.situ_up_beta is None else f", up_beta = {cfg.situ_up_beta}")
        else:
            want = cfg.activation
        if got.replace(" ", "") != want.replace(" ", ""):
            problems.append(f"activation: .mlir <{got}>, ours <{want}>")
    for e, k, s in set(re.findall(
            r"#moe\.routing<experts = (\d+), top_k = (\d+), scaling = ([0-9.e+-]+)", text)):
        if (int(e), int(k), float(s)) != (cfg.experts, cfg.top_k, cfg.scaling):
            problems.append(f"routing: .mlir {e}/{k}/{s}, ours "
                            f"{cfg.experts}/{cfg.top_k}/{cfg.scaling}")
    blocks = set(int(b) for b in re.findall(r"block_size = (\d+) : i64", text))
    if blocks != ({cfg.block_size} if cfg.block_size is not None else set()):
        problems.append(f"AttnRes block sizes: .mlir {blocks}, ours {cfg.block_size}")
    if re.search(r"epsilon|norm_eps", text.split("moe.model", 1)[-1]):
        problems.append("the .mlir sets an epsilon explicitly: not read here")
    return problems


def init_params(cfg, seed, device="cpu"):
    """Weights drawn by the model's initialisation rules (ALGORITHMS.md
    sections 2.1 and 7.4) from a torch generator: the same distributions as
    the executable's, not the same values."""
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    params = {}
    for name, shape, init in param_specs(cfg):
        if init[0] == "normal":
            t = torch.randn(shape, generator=gen, device=device) * cfg.init_std
        elif init[0] == "ones":
            t = torch.ones(shape, device=device)
        elif init[0] == "zeros":
            t = torch.zeros(shape, device=device)
        elif init[0] == "log_uniform":
            t = torch.empty(shape, device=device).uniform_(init[1], init[2], generator=gen).log()
        else:  # dt = exp(U(ln 1e-3, ln 1e-1)) >= 1e-4, b = dt + ln(-expm1(-dt))
            u = torch.rand(shape, generator=gen, device=device)
            dt = torch.exp(u * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            dt = dt.clamp(min=1e-4)
            t = dt + torch.log(-torch.expm1(-dt))
        params[name] = t
    return params


def load_params(cfg, directory, device="cpu"):
    """DIR/<name>.npy for every parameter, f32, with the expected shapes."""
    params = {}
    expected = {n for n, _, _ in param_specs(cfg)}
    present = {f[:-4] for f in os.listdir(directory) if f.endswith(".npy")}
    if present != expected:
        raise SystemExit(f"{directory}: missing {sorted(expected - present)}, "
                         f"unexpected {sorted(present - expected)}")
    for name, shape, _ in param_specs(cfg):
        a = np.load(os.path.join(directory, name + ".npy"))
        if a.dtype != np.float32 or a.shape != shape:
            raise SystemExit(f"{name}.npy: {a.dtype} {a.shape}, expected float32 {shape}")
        params[name] = torch.from_numpy(a).to(device)
    return params


# Parameters that stay fp32 under --precision bf16 (the rest of the 2-D and
# 3-D weights get bf16 copies): the embedding table (its rows are the fp32
# residual stream), the router (fp32 scores), beta's projection (fp32,
# section 1.2), the gate parameters, the norms and AttnRes vectors.
_FP32_NAMES = ("embed.weight", ".w_router", ".router_bias", ".w_beta", ".A_log",
               ".dt_bias", "norm", "_res.")


def compute_params(params, dtype):
    """The weights the forward pass reads: bf16 copies of the matmul weights
    (and the convolutions) when dtype is bf16, the fp32 parameters as they
    are otherwise."""
    if dtype == torch.float32:
        return dict(params)
    out = {}
    for name, t in params.items():
        keep = t.dim() < 2 or any(s in name for s in _FP32_NAMES)
        out[name] = t if keep else t.to(dtype)
    return out


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------

def rms_norm(x, w, eps):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()


def l2_norm(x, eps=1e-6):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + eps)


def linear(x, w):
    """x W with W: [in, out] in the compute dtype (fp32 accumulation)."""
    return torch.matmul(x.to(w.dtype), w)


class _MatmulF32(torch.autograd.Function):
    """torch.mm(a, b, out_dtype=float32) with a backward (torch defines no
    derivative for mm's out_dtype overload): the fp32 adjoint is rounded to
    the operands' dtype and both adjoints are GEMMs in that dtype with fp32
    accumulation, as under autocast."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.mm(a, b, out_dtype=torch.float32)

    @staticmethod
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        dy = dy.to(a.dtype)
        da = torch.mm(dy, b.t()) if ctx.needs_input_grad[0] else None
        db = torch.mm(a.t(), dy) if ctx.needs_input_grad[1] else None
        return da, db


def matmul_f32(a, b):
    """a b in fp32: bf16 operands accumulate in fp32 and stay fp32 (the
    same forward with or without autograd)."""
    if a.dtype == torch.float32:
        return a @ b
    if a.is_cuda:
        try:
            if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
                return _MatmulF32.apply(a, b)
            return torch.mm(a, b, out_dtype=torch.float32)
        except (RuntimeError, TypeError):
            pass
    # The same arithmetic: bf16 values are exact in fp32.
    return a.float() @ b.float()


def glu_act(cfg, a, u):
    """SwiGLU or SiTU-GLU (ALGORITHMS.md section 6) in fp32."""
    a, u = a.float(), u.float()
    if cfg.activation == "swiglu":
        return F.silu(a) * u
    bg = cfg.situ_gate_beta
    h = bg * torch.tanh(a / bg) * torch.sigmoid(a)
    if cfg.situ_up_beta is not None:
        u = cfg.situ_up_beta * torch.tanh(u / cfg.situ_up_beta)
    return h * u


def glu_ffn(cfg, x, wg, wu, wd):
    h = glu_act(cfg, linear(x, wg), linear(x, wu))
    return linear(h, wd)


def short_conv(x, w, impl):
    """SiLU(causal depth-wise conv): c[t] = sum_i w[:, i] x[t - W + 1 + i]."""
    if impl.fla_conv:
        return impl.fla.causal_conv1d(x, w.to(x.dtype), activation="silu")[0]
    width = w.shape[1]
    c = F.conv1d(x.transpose(1, 2), w.to(x.dtype).unsqueeze(1), padding=width - 1,
                 groups=w.shape[0])
    return F.silu(c[..., : x.shape[1]].transpose(1, 2))


def decay_gate(cfg, raw, a_log, dt_bias):
    """Log decay g <= 0 from the raw gate projection (section 2.1), fp32."""
    z = raw.float() + dt_bias.float()
    a = a_log.float().exp()[:, None]
    if cfg.gate == "bounded":
        return cfg.g_min * torch.sigmoid(a * z)
    return -a * F.softplus(z)


def kda_recurrent(q, k, v, g, beta, scale):
    """Section 1.3's FWD, per token, fp32. q, k: [B, T, H, K] normalised;
    v: [B, T, H, V]; g: [B, T, H, K]; beta: [B, T, H]."""
    B, T, H, K = q.shape
    S = q.new_zeros(B, H, K, v.shape[-1], dtype=torch.float32)
    out = []
    for t in range(T):
        S = g[:, t].float().exp()[..., None] * S
        kt = k[:, t].float()
        u = beta[:, t].float()[..., None] * (v[:, t].float() - torch.einsum("bhk,bhkv->bhv", kt, S))
        S = S + kt[..., None] * u[..., None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", scale * q[:, t].float(), S))
    return torch.stack(out, 1)


def kda_chunked(q, k, v, g, beta, scale, chunk=64):
    """Section 1.4's chunkwise form, fp32, vectorised over batch and heads;
    every exponent is a difference Gamma_i - Gamma_j <= 0 (j <= i), so
    nothing overflows whatever the gate."""
    B, T, H, K = q.shape
    q = (q.float() * scale).transpose(1, 2)
    k, v, g = (x.float().transpose(1, 2) for x in (k, v, g))
    beta = beta.float().transpose(1, 2)
    S = q.new_zeros(B, H, K, v.shape[-1])
    out = torch.empty_like(v)
    for c0 in range(0, T, chunk):
        n = min(chunk, T - c0)
        qc, kc, vc, bc = q[:, :, c0:c0 + n], k[:, :, c0:c0 + n], v[:, :, c0:c0 + n], \
            beta[:, :, c0:c0 + n]
        G = g[:, :, c0:c0 + n].cumsum(-2)                    # [B, H, n, K]
        incl = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        diff = G[:, :, :, None, :] - G[:, :, None, :, :]      # [B, H, i, j, K]
        decay = torch.where(incl[:, :, None], diff, float("-inf")).exp()
        a_qk = torch.einsum("bhid,bhjd,bhijd->bhij", qc, kc, decay)
        lower = torch.einsum("bhid,bhjd,bhijd->bhij", kc, kc, decay) * bc[..., None]
        lower = lower.masked_fill(~incl.tril(-1), 0.0)
        eye = torch.eye(n, dtype=q.dtype, device=q.device)
        system = eye + lower                                 # unit lower-triangular
        w = torch.linalg.solve_triangular(system, bc[..., None] * kc * G.exp(),
                                          upper=False, unitriangular=True)
        u = torch.linalg.solve_triangular(system, bc[..., None] * vc,
                                          upper=False, unitriangular=True)
        vn = u - w @ S
        out[:, :, c0:c0 + n] = (qc * G.exp()) @ S + a_qk @ vn
        last = G[:, :, -1:, :]
        S = last.transpose(-1, -2).exp() * S + (kc * (last - G).exp()).transpose(-1, -2) @ vn
    return out.transpose(1, 2)


def kda_layer(cfg, P, m, x, impl):
    """ALGORITHMS.md section 1.2 (moe.kda_layer) on the pre-normed x."""
    B, T, _ = x.shape
    H, K = cfg.kda_heads, cfg.kda_dim
    q = short_conv(linear(x, P[m + "w_q"]), P[m + "conv_q"], impl).view(B, T, H, K)
    k = short_conv(linear(x, P[m + "w_k"]), P[m + "conv_k"], impl).view(B, T, H, K)
    v = short_conv(linear(x, P[m + "w_v"]), P[m + "conv_v"], impl).view(B, T, H, K)
    raw = linear(linear(x, P[m + "w_gate_down"]), P[m + "w_gate_up"]).view(B, T, H, K)
    beta_logit = x.float() @ P[m + "w_beta"].float()
    out_gate = linear(linear(x, P[m + "w_out_gate_down"]), P[m + "w_out_gate_up"])
    out_gate = out_gate.view(B, T, H, K)
    scale = K ** -0.5
    if impl.kda == "fla":
        bounded = cfg.gate == "bounded"
        o, _ = impl.fla.chunk_kda(
            q, k, v, raw, beta_logit, scale=scale,
            A_log=P[m + "A_log"].float(), dt_bias=P[m + "dt_bias"].float().reshape(-1),
            use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
            use_beta_sigmoid_in_kernel=True, safe_gate=bounded,
            lower_bound=cfg.g_min if bounded else None)
    else:
        qn, kn = l2_norm(q), l2_norm(k)
        g = decay_gate(cfg, raw, P[m + "A_log"], P[m + "dt_bias"])
        beta = torch.sigmoid(beta_logit)
        if impl.kda == "chunk":
            o = kda_chunked(qn, kn, v, g, beta, scale)
        elif impl.kda == "recurrent":
            o = kda_recurrent(qn, kn, v, g, beta, scale)
        elif impl.kda == "fla-naive":
            o, _ = impl.fla.naive_recurrent_kda(qn, kn, v.float(), g, beta, scale=scale)
        else:
            raise ValueError(impl.kda)
    if impl.fla_norm:
        y = impl.fla.rms_norm_gated(o, out_gate, P[m + "out_norm"].float(), None,
                                    activation="sigmoid", eps=cfg.eps)
    else:
        y = rms_norm(o, P[m + "out_norm"], cfg.eps) * torch.sigmoid(out_gate.float())
    return linear(y.reshape(B, T, H * K), P[m + "w_out"])


def mla_layer(cfg, P, m, x, impl):
    """ALGORITHMS.md section 3.1, NoPE, non-absorbed (moe.mla_layer)."""
    B, T, _ = x.shape
    H, nope, rope, dv = cfg.mla_heads, cfg.nope, cfg.rope, cfg.v_dim
    q = linear(x, P[m + "w_q"]).view(B, T, H, nope + rope)
    kv_down = linear(x, P[m + "w_kv_down"])
    latent = rms_norm(kv_down[..., : cfg.kv_rank], P[m + "kv_norm"], 1e-6)
    kv = linear(latent, P[m + "w_kv_up"]).view(B, T, H, nope + dv)
    k_rope = kv_down[..., cfg.kv_rank:].to(kv.dtype)[:, :, None, :].expand(B, T, H, rope)
    k = torch.cat([kv[..., :nope], k_rope], dim=-1)
    v = kv[..., nope:]
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
        scale=(nope + rope) ** -0.5).transpose(1, 2)
    if cfg.mla_gate:
        o = o * torch.sigmoid(linear(x, P[m + "w_gate"]).view(B, T, H, dv))
    return linear(o.reshape(B, T, H * dv), P[m + "w_out"])


def moe_ffn(cfg, P, f, x, impl):
    """Sections 4.1 and 7.1 (moe.moe_ffn): sigmoid scores in fp32, top-k of
    score + bias (the bias, which the balancer sets, selects only), weights
    from the raw scores renormalised over the selection times the routed
    scaling, routed experts plus the shared expert."""
    shape = x.shape
    xf = x.reshape(-1, shape[-1])
    n, k, E = xf.shape[0], cfg.top_k, cfg.experts
    scores = torch.sigmoid(xf.float() @ P[f + "w_router"].float().t())
    _, idx = torch.topk(scores + P[f + "router_bias"].float(), k, dim=-1)
    if impl.route_hook is not None:
        # The training peer's balancer reads the step's routing.
        impl.route_hook(f, scores, idx)
    weights = scores.gather(1, idx)
    weights = weights / (weights.sum(-1, keepdim=True) + 1e-20) * cfg.scaling
    wg, wu, wd = P[f + "w_gate"], P[f + "w_up"], P[f + "w_down"]
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    token = order // k
    xs = xf[token].to(wg.dtype)
    # Expert counts without a device-to-host copy (bincount reads the max).
    counts = torch.zeros(E, dtype=torch.int64, device=x.device).index_add_(
        0, flat, torch.ones_like(flat))
    if impl.experts == "grouped_mm":
        offs = counts.cumsum(0).to(torch.int32)
        h = glu_act(cfg, torch._grouped_mm(xs, wg, offs=offs),
                    torch._grouped_mm(xs, wu, offs=offs)).to(wd.dtype)
        ys = torch._grouped_mm(h, wd, offs=offs).float()
    else:
        ys = torch.empty(xs.shape[0], shape[-1], dtype=torch.float32, device=x.device)
        ends = counts.cumsum(0).tolist()
        start = 0
        for e, end in enumerate(ends):
            if end > start:
                ys[start:end] = glu_ffn(cfg, xs[start:end], wg[e], wu[e], wd[e]).float()
            start = end
    ys = ys * weights.reshape(-1)[order, None]
    y = torch.zeros(n, shape[-1], dtype=torch.float32, device=x.device).index_add_(0, token, ys)
    if cfg.shared:
        y = y + glu_ffn(cfg, xf, P[f + "w_shared_gate"], P[f + "w_shared_up"],
                        P[f + "w_shared_down"]).float()
    return y.reshape(shape)


def attn_res(sources, query, key_norm, eps):
    """Section 5.1's mix: softmax over the sources of
    rstd(v_i) (v_i . (query * key_norm)), in fp32."""
    if len(sources) == 1:
        return sources[0]
    vs = torch.stack([s.float() for s in sources])
    u = query.float() * key_norm.float()
    rstd = torch.rsqrt(vs.pow(2).mean(-1) + eps)
    p = torch.softmax(rstd * (vs @ u), dim=0)
    return (p[..., None] * vs).sum(0)


def cross_entropy(cfg, h, w, labels, chunk_rows=8192):
    """Mean cross-entropy of h W^T against labels (ignore_index -100), the
    logits in fp32, a chunk of rows at a time."""
    h = h.reshape(-1, h.shape[-1])
    labels = labels.reshape(-1).long()
    total = torch.zeros((), dtype=torch.float32, device=h.device)
    for r in range(0, h.shape[0], chunk_rows):
        logits = matmul_f32(h[r:r + chunk_rows].to(w.dtype), w.t())
        total = total + F.cross_entropy(logits, labels[r:r + chunk_rows], ignore_index=-100,
                                        reduction="sum")
    return total / (labels != -100).sum().clamp(min=1)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

class Impl:
    """Which implementation each piece uses, and the optional checks."""

    def __init__(self, kda="chunk", experts="loop", fla=None, fla_conv=False, fla_norm=False,
                 trace=False, trace_inputs=False, break_sublayer=None, route_hook=None,
                 recompute=None):
        self.kda, self.experts, self.fla = kda, experts, fla
        self.fla_conv, self.fla_norm = fla_conv, fla_norm  # fla's conv and gated norm
        self.trace = [] if trace or trace_inputs else None
        self.trace_inputs = trace_inputs
        self.break_sublayer = break_sublayer
        # route_hook(prefix, fp32 scores [N, E], top-k indices [N, k]), called
        # by every MoE FFN (bench/train/peer.py's balancer reads it).
        self.route_hook = route_hook
        # recompute(name) -> bool: run that sub-layer under activation
        # checkpointing (training only; the values are the same).
        self.recompute = recompute


def sublayer_names(cfg):
    return [f"layers.{i}.{part}" for i in range(len(cfg.mixers)) for part in ("mixer", "ffn")]


def sublayer_fn(cfg, P, name, impl):
    """The function of the pre-normed input that sub-layer NAME computes."""
    i, part = int(name.split(".")[1]), name.split(".")[2]
    prefix = f"layers.{i}.{part}."
    if part == "mixer":
        layer = kda_layer if cfg.mixers[i] == "kda" else mla_layer
        return lambda x: layer(cfg, P, prefix, x, impl)
    if i < cfg.dense_layers:
        return lambda x: glu_ffn(cfg, x, P[prefix + "w_gate"], P[prefix + "w_up"],
                                 P[prefix + "w_down"])
    return lambda x: moe_ffn(cfg, P, prefix, x, impl)


def forward_loss(cfg, P, tokens, labels, impl):
    """The mean cross-entropy of the model on tokens/labels ([B, T] ints);
    P from compute_params. With impl.trace a list, each sub-layer appends
    (name, its fp32 output) or, with impl.trace_inputs, (name, its
    pre-normed input, its output)."""
    emb = F.embedding(tokens.long(), P["embed.weight"]).float()
    eps = cfg.eps
    blocks, partial, h = [emb], None, emb
    for sub, name in enumerate(sublayer_names(cfg)):
        if cfg.block_size is not None:
            if partial is not None and sub % cfg.block_size == 0:
                blocks.append(partial)
                partial = None
            sources = blocks + ([partial] if partial is not None else [])
            x = attn_res(sources, P[name + "_res.query"], P[name + "_res.key_norm"], eps)
        else:
            x = h
        x = rms_norm(x, P[name + "_norm.weight"], eps)
        fn = sublayer_fn(cfg, P, name, impl)
        if impl.recompute is not None and torch.is_grad_enabled() and impl.recompute(name):
            y = torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        else:
            y = fn(x)
        if impl.break_sublayer == name:
            y = -y
        if impl.trace is not None:
            impl.trace.append((name, x, y.float()) if impl.trace_inputs else (name, y.float()))
        if cfg.block_size is not None:
            partial = y.float() if partial is None else partial + y.float()
        else:
            h = h + y.float()
    if cfg.block_size is not None:
        if partial is not None and len(cfg.mixers) * 2 % cfg.block_size == 0:
            blocks.append(partial)
            partial = None
        h = attn_res(blocks + ([partial] if partial is not None else []),
                     P["final_res.query"], P["final_res.key_norm"], eps)
    out = rms_norm(h, P["final_norm.weight"], eps)
    return cross_entropy(cfg, out, P["lm_head.weight"], labels)


# ---------------------------------------------------------------------------
# flash-linear-attention and the choice of implementations
# ---------------------------------------------------------------------------

def default_fla_dirs():
    return [os.path.join(ROOT, ".peers", "fla"),
            os.path.join(ROOT, ".peers", "flash-linear-attention")]


def import_fla(directory=None):
    """fla's chunk_kda and friends from its source tree (a directory holding
    the fla package), or from an installed fla; None when not importable.
    Returns a namespace and a line that says where it came from or why not.
    From a source tree the package's own __init__ is skipped: it imports
    fla.layers and fla.models, which need transformers, and the kernels
    here (fla.ops, fla.modules) need only torch, triton and einops."""
    dirs = [directory] if directory else default_fla_dirs()
    source = next((d for d in dirs if d and os.path.isdir(os.path.join(d, "fla"))), None)
    if source and "fla" not in sys.modules:
        package = types.ModuleType("fla")
        package.__path__ = [os.path.join(source, "fla")]
        package.__file__ = os.path.join(source, "fla", "__init__.py")
        with open(package.__file__) as f:
            version = re.search(r'__version__ = "([^"]+)"', f.read())
        package.__version__ = version.group(1) if version else "?"
        sys.modules["fla"] = package
    try:
        import fla
        from fla.modules.convolution import causal_conv1d
        from fla.modules.fused_norm_gate import rms_norm_gated
        from fla.ops.kda import chunk_kda
        from fla.ops.kda.naive import naive_recurrent_kda
    except Exception as e:  # ImportError, or a Triton that rejects the source
        return None, f"fla not importable: {type(e).__name__}: {e}"
    ns = argparse.Namespace(chunk_kda=chunk_kda, causal_conv1d=causal_conv1d,
                            rms_norm_gated=rms_norm_gated,
                            naive_recurrent_kda=naive_recurrent_kda)
    where = os.path.dirname(os.path.dirname(os.path.abspath(fla.__file__)))
    return ns, f"fla {getattr(fla, '__version__', '?')} from {where}"


def make_impl(device, kda="auto", experts="auto", fla_dir=None, dtype=torch.float32,
              fla_kernels=True, **kw):
    """Resolves 'auto': fla's chunk_kda on CUDA and torch._grouped_mm on
    CUDA in bf16 (its only type there), the chunked KDA of this file and the
    expert loop otherwise. With fla on CUDA and fla_kernels, the short
    convolutions and KDA's gated output norm are fla's kernels too."""
    cuda = device.type == "cuda"
    fla, fla_note = (None, "fla not used")
    if cuda or kda in ("fla", "fla-naive"):
        fla, fla_note = import_fla(fla_dir)
    if kda == "auto":
        kda = "fla" if (cuda and fla is not None) else "chunk"
    if kda in ("fla", "fla-naive") and fla is None:
        raise SystemExit(f"--kda={kda}: {fla_note}")
    if kda == "fla" and not cuda:
        raise SystemExit("--kda=fla needs a CUDA device (fla's kernels are Triton)")
    if experts == "auto":
        experts = "grouped_mm" if cuda and dtype == torch.bfloat16 else "loop"
    fused = bool(cuda and fla is not None and fla_kernels)
    return Impl(kda=kda, experts=experts, fla=fla if cuda or kda == "fla-naive" else None,
                fla_conv=fused, fla_norm=fused, **kw), fla_note


def read_batch(args, cfg, device):
    """(tokens, labels) as the executable builds them."""
    if args.batch:
        tokens = np.load(os.path.join(args.batch, "tokens.npy"))
        labels = np.load(os.path.join(args.batch, "labels.npy"))
    else:
        stream = np.fromfile(args.tokens, dtype="<u4")
        need = args.batch_size * args.seq_len + 1
        if stream.size < need:
            raise SystemExit(f"{args.tokens}: {stream.size} tokens, the batch needs {need}")
        tokens = stream[: need - 1].astype(np.int32).reshape(args.batch_size, args.seq_len)
        labels = stream[1:need].astype(np.int32).reshape(args.batch_size, args.seq_len)
    if tokens.max() >= cfg.vocab:
        raise SystemExit(f"token id {tokens.max()} is out of range for vocab {cfg.vocab}")
    return torch.from_numpy(tokens).to(device), torch.from_numpy(labels).to(device)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__ or "PyTorch model of the examples")
    ap.add_argument("model", help="kimi-tiny, kimi-small or a config.json")
    ap.add_argument("--mlir", help="the model's .mlir (default examples/models/<name>.mlir)")
    ap.add_argument("--params", help="directory of <name>.npy (the executable's --dump-params)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed without --params")
    ap.add_argument("--batch", help="directory of tokens.npy, labels.npy (--dump-batch)")
    ap.add_argument("--tokens", help="uint32 token file (the executable's --tokens)")
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--precision", choices=("fp32", "bf16"),
                    help="matmul operands (default: bf16 on CUDA, fp32 on the CPU)")
    ap.add_argument("--kda", default="auto", choices=("auto", "fla", "chunk", "recurrent", "fla-naive"))
    ap.add_argument("--experts", default="auto", choices=("auto", "grouped_mm", "loop"))
    ap.add_argument("--fla", help="directory holding the fla package (default .peers/fla)")
    ap.add_argument("--expect", type=float, help="the loss to match")
    ap.add_argument("--expect-npy", help="the loss to match, a 0-d f32 .npy (--loss-npy)")
    ap.add_argument("--rtol", type=float, default=2e-5)
    ap.add_argument("--trace", action="store_true", help="print each sub-layer output's RMS")
    ap.add_argument("--compare-kda", help="a second KDA implementation to compare per sub-layer")
    ap.add_argument("--break", dest="break_sublayer",
                    help="flip the sign of this sub-layer's output (e.g. layers.2.mixer)")
    ap.add_argument("--threads", type=int, help="torch CPU threads")
    args = ap.parse_args(argv)
    if bool(args.batch) == bool(args.tokens):
        ap.error("give exactly one of --batch DIR and --tokens FILE")
    if args.threads:
        torch.set_num_threads(args.threads)

    config, mlir = model_paths(args.model, args.mlir)
    cfg = load_config(config)
    if mlir:
        problems = check_against_mlir(cfg, mlir)
        if problems:
            for p in problems:
                print(f"error: {os.path.relpath(mlir)}: {p}", file=sys.stderr)
            return 2
    device = torch.device(args.device)
    precision = args.precision or ("bf16" if device.type == "cuda" else "fp32")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    params = (load_params(cfg, args.params, device) if args.params
              else init_params(cfg, args.seed, device))
    P = compute_params(params, dtype)
    tokens, labels = read_batch(args, cfg, device)
    impl, fla_note = make_impl(device, args.kda, args.experts, args.fla, dtype,
                               trace=bool(args.trace or args.compare_kda),
                               break_sublayer=args.break_sublayer)
    if args.break_sublayer and args.break_sublayer not in sublayer_names(cfg):
        ap.error(f"--break={args.break_sublayer}: no such sub-layer")
    print(f"model {cfg.name} ({os.path.relpath(config)}"
          + (f", checked against {os.path.relpath(mlir)}" if mlir else "") + f"), "
          f"{sum(t.numel() for t in params.values())} parameters "
          f"({'from ' + args.params if args.params else 'seed ' + str(args.seed)}); "
          f"batch {tuple(tokens.shape)}; device {device}, {precision}; kda {impl.kda}"
          f"{' (+ fla conv, gated norm)' if impl.fla_conv else ''}, "
          f"experts {impl.experts}; {fla_note}"
          + (f"; BROKEN: {args.break_sublayer} negated" if args.break_sublayer else ""))
    with torch.inference_mode():
        loss = float(forward_loss(cfg, P, tokens, labels, impl))
        if args.trace:
            for name, y in impl.trace:
                print(f"  {name:18s} rms {float(y.pow(2).mean().sqrt()):.6e}")
        if args.compare_kda:
            other, _ = make_impl(device, args.compare_kda, impl.experts, args.fla, dtype,
                                 trace=True)
            loss2 = float(forward_loss(cfg, P, tokens, labels, other))
            print(f"per sub-layer, max |{impl.kda} - {other.kda}| / max |{other.kda}|:")
            for (name, a), (_, b) in zip(impl.trace, other.trace):
                err = float((a - b).abs().max() / b.abs().max())
                print(f"  {name:18s} {err:.3e}")
            print(f"loss {impl.kda} {loss:.7f}, {other.kda} {loss2:.7f}, "
                  f"relative difference {abs(loss - loss2) / abs(loss2):.3e}")
    print(f"loss {loss:.7f}")
    expected = args.expect
    if args.expect_npy:
        expected = float(np.load(args.expect_npy))
    if expected is None:
        return 0 if math.isfinite(loss) else 1
    rel = abs(loss - expected) / abs(expected)
    ok = rel <= args.rtol
    print(f"expected {expected:.7f}: relative error {rel:.3e} "
          f"({'within' if ok else 'OUTSIDE'} rtol {args.rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
