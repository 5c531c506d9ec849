#!/usr/bin/env python3
"""An independent float64 reference of a whole moe.model, in NumPy.

It reads a model's .mlir (the `moe.model` body: `moe.param` declarations and
the layer ops in the order written), runs the forward loss in float64 on the
packed fp32 parameter vector (the `getParamLayout` order: the params in
declaration order, each flattened row-major), and checks a compiled gradient
against float64 central differences of that loss in random directions, one
parameter tensor at a time.

The math is that of the dialect's op definitions (dialects/MoE/*.td) and
ALGORITHMS.md: embedding (7.2), attn_res (5.1, 5.2), rms_norm (7.2),
kda_layer (1.1, 1.2, 2.1; per-token recurrence), mla_layer (3.1, NoPE, with
the optional sigmoid gate and q-LoRA), moe_ffn (4.1, 7.1: sigmoid top-k with
the selection bias, ties to the lower expert index, the shared expert),
glu_ffn (SwiGLU and SiTU-GLU, 6), lm_head (mean cross-entropy with
ignore_index) and arith.addf. Nothing here calls the compiler.

Subcommands (all arrays are .npy files):
  layout MODEL                     the parameter table: offset size shape name
  init MODEL -o P.npy --seed S     random (not initial) packed parameters
  batch MODEL -o DIR --batch B --seq-len T --seed S
                                   random tokens.npy and labels.npy (int32)
  loss MODEL P.npy TOKENS LABELS [-o LOSS.npy]
                                   the float64 loss (printed; saved as f32)
  fdgrad MODEL P TOKENS LABELS --only REGEX -o G.npy
                                   coordinate-wise central-difference gradient
                                   of the tensors matching REGEX (zeros
                                   elsewhere), for checking the checker
  gradcheck MODEL P TOKENS LABELS GRAD.npy [--directions N] [--tol X]
                                   [--only REGEX] [--scale-grad NAME=F]
                                   per tensor: compiled gradient . u against
                                   (L(p + h u) - L(p - h u)) / 2h

gradcheck's error per tensor (n scalars, compiled gradient g): for random
unit directions u, max |g . u - fd(u)| / max(|g| / sqrt(n), RMS of the
fd(u), noise floor); along u = g / |g|, | |g| - fd | / max(|g|, |fd|, floor
sqrt(n)); the tensor's error is the larger of the two. h = --step times the
tensor's norm (at least --step), divided by 8 until no MoE routing decision
differs from the unperturbed run's. Buffers must have exactly zero gradient.
"""

import argparse
import math
import re
import sys

import numpy as np


class ModelError(Exception):
    pass


# ---------------------------------------------------------------------------
# Parsing the model's .mlir (the custom syntax of the moe ops)
# ---------------------------------------------------------------------------

def strip_comments(text):
    out = []
    for line in text.splitlines():
        in_string = False
        cut = len(line)
        for i, ch in enumerate(line):
            if ch == '"':
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def split_top_level(text, sep=","):
    """Splits at `sep` outside (), [], {}, <> (ignoring `->`)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{<":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ">" and not (i > 0 and text[i - 1] == "-"):
            depth -= 1
        elif ch == '"':
            j = text.index('"', i + 1)
            i = j
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def matching(text, start):
    """Index of the bracket closing the one at text[start]."""
    pairs = {"(": ")", "{": "}", "[": "]", "<": ">"}
    opening = text[start]
    closing = pairs[opening]
    depth = 0
    for i in range(start, len(text)):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing and not (closing == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
    raise ModelError("unbalanced '%s' in: %s" % (opening, text[start:start + 80]))


def parse_number(text):
    text = text.strip()
    m = re.match(r"^([-+0-9.eE]+|true|false)\s*(:\s*\w+)?$", text)
    if not m:
        return text
    v = m.group(1)
    if v in ("true", "false"):
        return v == "true"
    if re.match(r"^[-+]?\d+$", v) and (m.group(2) is None or "i" in m.group(2)):
        return int(v)
    return float(v)


def parse_attr_dict(text):
    """`{a = 4 : i64, gate = #moe.decay_gate<...>, silu}` -> dict."""
    attrs = {}
    for item in split_top_level(text):
        if "=" in item and not item.startswith("#"):
            key, value = item.split("=", 1)
            attrs[key.strip()] = parse_number(value)
        else:
            attrs[item.strip()] = True
    return attrs


def parse_dialect_attr(text, mnemonic):
    """`#moe.routing<experts = 16, top_k = 4, ...>` -> (positional, keywords)."""
    text = text.strip()
    prefix = "#moe." + mnemonic
    if text.startswith(prefix):
        text = text[len(prefix):]
    if not (text.startswith("<") and text.endswith(">")):
        raise ModelError("cannot read the attribute %s<%s>" % (prefix, text))
    positional, keywords = [], {}
    for item in split_top_level(text[1:-1]):
        if "=" in item and not item.startswith("#"):
            key, value = item.split("=", 1)
            keywords[key.strip()] = parse_number(value)
        else:
            positional.append(item.strip())
    return positional, keywords


class Param:
    def __init__(self, name, shape, offset, init, std, no_weight_decay, buffer):
        self.name, self.shape, self.offset = name, shape, offset
        self.size = int(np.prod(shape)) if shape else 1
        self.init, self.std = init, std
        self.no_weight_decay, self.buffer = no_weight_decay, buffer


class Op:
    def __init__(self, name, results, leading, groups, attrs, line):
        self.name, self.results = name, results
        self.leading, self.groups, self.attrs = leading, groups, attrs
        self.line = line

    def where(self):
        return "line %d: %s" % (self.line, self.name)


class Model:
    def __init__(self, path):
        with open(path) as f:
            raw = f.read()
        text = strip_comments(raw)
        header = re.search(r"moe\.model\s+@([\w$.]+)\s*\(([^)]*)\)\s*\{", text)
        if not header:
            raise ModelError("%s: no moe.model found" % path)
        self.name = header.group(1)
        sizes = parse_attr_dict(header.group(2))
        self.vocab = sizes.get("vocab_size")
        self.hidden = sizes.get("hidden_size")
        body_start = header.end()
        body_end = matching(text, header.end() - 1)
        body = text[body_start:body_end]
        block = re.search(r"\^bb0\s*\(\s*(%[\w$.]+)\s*:[^,]*,\s*(%[\w$.]+)\s*:"
                          r"[^)]*\)\s*:", body)
        if not block:
            raise ModelError("%s: the model's block arguments (tokens, labels) "
                             "are missing" % path)
        self.tokens_name, self.labels_name = block.group(1), block.group(2)
        body_start += block.end()
        body = text[body_start:body_end]

        starts = list(re.finditer(
            r"(%[\w$.]+(?:\s*,\s*%[\w$.]+)*)\s*=\s*([a-z_]+\.[a-z_.]+)|"
            r"(moe\.return)", body))
        self.params, self.ops, self.returned = [], [], None
        offset = 0
        for index, m in enumerate(starts):
            end = starts[index + 1].start() if index + 1 < len(starts) else len(body)
            stmt = body[m.end():end].strip()
            line = text[:body_start + m.start()].count("\n") + 1
            if m.group(3):
                self.returned = stmt.split(":")[0].strip()
                continue
            results = [r.strip() for r in m.group(1).split(",")]
            opname = m.group(2)
            if opname == "moe.param":
                pm = re.match(r'^"([^"]*)"\s+init\s+(<[^>]*>)\s*(.*?):\s*'
                              r'tensor<([^>]*)>', stmt, re.S)
                if not pm:
                    raise ModelError("line %d: cannot read moe.param %s" %
                                     (line, stmt[:60]))
                dims = pm.group(4).split("x")
                if dims[-1] != "f32":
                    raise ModelError("line %d: parameter \"%s\" has element type "
                                     "%s; the reference reads f32 parameters "
                                     "only" % (line, pm.group(1), dims[-1]))
                shape = tuple(int(d) for d in dims[:-1])
                kinds, keywords = parse_dialect_attr(pm.group(2), "init")
                flags = pm.group(3).split()
                p = Param(pm.group(1), shape, offset, kinds[0],
                          keywords, "no_weight_decay" in flags, "buffer" in flags)
                offset += p.size
                self.params.append(p)
                self.ops.append(Op(opname, results, [], {}, {"param": p}, line))
                continue
            self.ops.append(self.parse_op(opname, results, stmt, line))
        self.num_scalars = offset
        if self.returned is None:
            raise ModelError("%s: the model has no moe.return" % path)
        self.by_name = {p.name: p for p in self.params}

    @staticmethod
    def parse_op(opname, results, stmt, line):
        # Operands up to the attr-dict or the type signature.
        i, depth = 0, 0
        while i < len(stmt):
            ch = stmt[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch in "{:":
                break
            i += 1
        operands = stmt[:i]
        attrs = {}
        if i < len(stmt) and stmt[i] == "{":
            close = matching(stmt, i)
            attrs = parse_attr_dict(stmt[i + 1:close])
        groups = {}
        for g in re.finditer(r"(\w+)\s*\(([^()]*)\)", operands):
            groups[g.group(1)] = [o.strip() for o in g.group(2).split(",")]
        leading_text = re.sub(r"(\w+)\s*\(([^()]*)\)", "", operands)
        leading = [o.strip() for o in leading_text.split(",") if o.strip()]
        for o in leading + [x for v in groups.values() for x in v]:
            if not re.match(r"^%[\w$.]+$", o):
                raise ModelError("line %d: %s: cannot read operand '%s'" %
                                 (line, opname, o))
        return Op(opname, results, leading, groups, attrs, line)


# ---------------------------------------------------------------------------
# float64 math of the ops
# ---------------------------------------------------------------------------

def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def silu(x):
    return x * sigmoid(x)


def softplus(x):
    return np.logaddexp(0.0, x)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def l2_norm(x, eps=1e-6):
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def short_conv_silu(x, w):
    """c[b,t,ch] = sum_i w[ch,i] x[b, t-W+1+i, ch] (zeros before 0), SiLU."""
    width = w.shape[1]
    seq = x.shape[1]
    padded = np.concatenate(
        [np.zeros((x.shape[0], width - 1, x.shape[2])), x], axis=1)
    c = np.zeros_like(x)
    for i in range(width):
        c += w[:, i] * padded[:, i:i + seq, :]
    return silu(c)


def split_heads(x, heads):
    return x.reshape(x.shape[:-1] + (heads, x.shape[-1] // heads))


def merge_heads(x):
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


def attn_res(sources, query, key_norm, eps):
    u = query * key_norm
    scores = np.stack([np.sum(v * u, axis=-1) /
                       np.sqrt(np.mean(v * v, axis=-1) + eps) for v in sources])
    scores -= scores.max(axis=0)
    p = np.exp(scores)
    p /= p.sum(axis=0)
    return sum(p[i][..., None] * v for i, v in enumerate(sources))


def decay_gate(raw, dt_bias, a_log, gate_text):
    kinds, keywords = parse_dialect_attr(gate_text, "decay_gate")
    kind = kinds[0]
    if kind == "bounded":
        z = raw + dt_bias
        if a_log is not None:
            z = np.exp(a_log)[:, None] * z
        return keywords["g_min"] * sigmoid(z)
    if kind == "softplus":
        return -np.exp(a_log)[:, None] * softplus(raw + dt_bias)
    raise ModelError("unknown decay gate '%s'" % kind)


def kda(q, k, v, g, beta, scale):
    """Per-token recurrence of ALGORITHMS.md 1.1/1.3; [B,T,H,*] operands."""
    batch, seq, heads, key_dim = q.shape
    state = np.zeros((batch, heads, key_dim, v.shape[-1]))
    out = np.zeros(v.shape)
    for t in range(seq):
        state = np.exp(g[:, t])[..., None] * state
        predicted = np.einsum("bhkv,bhk->bhv", state, k[:, t])
        u = beta[:, t][..., None] * (v[:, t] - predicted)
        state = state + k[:, t][..., None] * u[:, :, None, :]
        out[:, t] = np.einsum("bhkv,bhk->bhv", state, scale * q[:, t])
    return out


def kda_layer(x, w, attrs):
    heads = attrs["num_heads"]
    key_dim, value_dim = attrs["head_dim"], attrs["value_dim"]

    def branch(weight, conv):
        return split_heads(short_conv_silu(x @ weight, conv), heads)

    q = l2_norm(branch(w["w_q"], w["conv_q"]))
    k = l2_norm(branch(w["w_k"], w["conv_k"]))
    v = branch(w["w_v"], w["conv_v"])
    raw = split_heads((x @ w["w_gate_down"]) @ w["w_gate_up"], heads)
    g = decay_gate(raw, w["dt_bias"], w.get("a_log"), attrs["gate"])
    beta = sigmoid(x @ w["w_beta"])
    o = kda(q, k, v, g, beta, key_dim ** -0.5)
    normed = rms_norm(o, w["out_norm"], attrs.get("norm_eps", 1e-5))
    out_gate = sigmoid(split_heads(
        (x @ w["w_out_gate_down"]) @ w["w_out_gate_up"], heads))
    assert out_gate.shape[-1] == value_dim
    return merge_heads(normed * out_gate) @ w["w_out"]


def mla_layer(x, w, attrs):
    heads = attrs["num_heads"]
    nope, rope = attrs["nope_head_dim"], attrs["rope_head_dim"]
    value_dim = attrs["v_head_dim"]
    eps = attrs.get("norm_eps", 1e-6)
    if "w_q" in w:
        q = x @ w["w_q"]
    else:
        q = rms_norm(x @ w["w_q_down"], w["q_norm"], eps) @ w["w_q_up"]
    q = split_heads(q, heads)
    kv_down = x @ w["w_kv_down"]
    rank = kv_down.shape[-1] - rope
    latent = rms_norm(kv_down[..., :rank], w["kv_norm"], eps)
    kv = split_heads(latent @ w["w_kv_up"], heads)
    k = kv[..., :nope]
    v = kv[..., nope:nope + value_dim]
    if rope > 0:
        rope_key = np.broadcast_to(kv_down[..., None, rank:],
                                   k.shape[:-1] + (rope,))
        k = np.concatenate([k, rope_key], axis=-1)
    seq = x.shape[1]
    scores = np.einsum("bthd,bshd->bhts", q, k) * (nope + rope) ** -0.5
    causal = np.tril(np.ones((seq, seq), dtype=bool))
    scores = np.where(causal, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhts,bshd->bthd", p, v)
    if "w_gate" in w:
        o = o * sigmoid(split_heads(x @ w["w_gate"], heads))
    return merge_heads(o) @ w["w_out"]


def glu(a, u, activation_text):
    kinds, keywords = parse_dialect_attr(activation_text, "activation")
    if kinds[0] == "swiglu":
        return silu(a) * u
    if kinds[0] == "situ_glu":
        gate_beta = keywords["gate_beta"]
        h = gate_beta * np.tanh(a / gate_beta) * sigmoid(a)
        if "up_beta" in keywords:
            u = keywords["up_beta"] * np.tanh(u / keywords["up_beta"])
        return h * u
    raise ModelError("unknown activation '%s'" % kinds[0])


def glu_ffn(x, w_gate, w_up, w_down, activation):
    return glu(x @ w_gate, x @ w_up, activation) @ w_down


def moe_ffn(x, w, attrs, selections):
    _, routing = parse_dialect_attr(attrs["routing"], "routing")
    experts, top_k = routing["experts"], routing["top_k"]
    scaling = routing["scaling"]
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    s = sigmoid(flat @ w["w_router"].T)
    z = s + w["router_bias"]
    # Decreasing z, equal values to the lower expert index first.
    order = np.argsort(-z, axis=1, kind="stable")
    chosen = order[:, :top_k]
    # The smallest gap between a token's k-th and (k+1)-th biased score:
    # how far the selection is from a tie (fp32 may break a closer one
    # differently).
    ranked = np.take_along_axis(z, order, axis=1)
    margin = float(np.min(ranked[:, top_k - 1] - ranked[:, top_k])) \
        if top_k < experts and ranked.shape[0] else math.inf
    selections.append((chosen.copy(), margin))
    s_sel = np.take_along_axis(s, chosen, axis=1)
    weights = s_sel / (s_sel.sum(axis=1, keepdims=True) + 1e-20) * scaling
    y = np.zeros_like(flat)
    for j in range(experts):
        rows, slots = np.nonzero(chosen == j)
        if rows.size == 0:
            continue
        out = glu_ffn(flat[rows], w["w_gate"][j], w["w_up"][j], w["w_down"][j],
                      attrs["activation"])
        np.add.at(y, rows, weights[rows, slots][:, None] * out)
    if "w_shared_gate" in w:
        y = y + glu_ffn(flat, w["w_shared_gate"], w["w_shared_up"],
                        w["w_shared_down"], attrs["activation"])
    return y.reshape(shape)


def cross_entropy(logits, labels, ignore_index):
    flat = logits.reshape(-1, logits.shape[-1])
    lab = labels.reshape(-1).astype(np.int64)
    valid = lab != ignore_index
    if not valid.any():
        raise ModelError("every label is ignore_index")
    if lab[valid].min() < 0 or lab[valid].max() >= flat.shape[-1]:
        raise ModelError("a label lies outside [0, %d) and is not ignore_index "
                         "%d" % (flat.shape[-1], ignore_index))
    z = flat[valid]
    m = z.max(axis=1)
    lse = m + np.log(np.exp(z - m[:, None]).sum(axis=1))
    picked = z[np.arange(z.shape[0]), lab[valid]]
    return float(np.mean(lse - picked))


# Operand names of each op, in the custom syntax's order: (leading names,
# {group keyword: names}). Optional groups may be absent.
KDA_GROUPS = {"q": ["w_q"], "k": ["w_k"], "v": ["w_v"],
              "conv": ["conv_q", "conv_k", "conv_v"],
              "gate": ["w_gate_down", "w_gate_up", "a_log", "dt_bias"],
              "beta": ["w_beta"],
              "out_gate": ["w_out_gate_down", "w_out_gate_up"],
              "out_norm": ["out_norm"], "out": ["w_out"]}
MLA_GROUPS = {"q": ["w_q"], "q_lora": ["w_q_down", "q_norm", "w_q_up"],
              "kv": ["w_kv_down", "kv_norm", "w_kv_up"], "gate": ["w_gate"],
              "out": ["w_out"]}
MOE_GROUPS = {"router": ["w_router", "router_bias"],
              "experts": ["w_gate", "w_up", "w_down"],
              "shared": ["w_shared_gate", "w_shared_up", "w_shared_down"]}


def named_operands(op, env, groups):
    w = {}
    for key, values in op.groups.items():
        if key not in groups or len(values) != len(groups[key]):
            raise ModelError("%s: unexpected operand group '%s'" %
                             (op.where(), key))
        for name, value in zip(groups[key], values):
            w[name] = lookup(op, env, value)
    return w


def lookup(op, env, value):
    if value not in env:
        raise ModelError("%s: use of undefined value %s" % (op.where(), value))
    return env[value]


def forward(model, packed, tokens, labels, selections=None, start=0,
            env=None, snapshots=None, margins=None):
    """The float64 loss of `model` at the packed parameters.

    `selections` (a dict) receives each moe_ffn's routing choice by op index.
    With `env` (the values before op `start` of an earlier run) only the ops
    from `start` on run; `snapshots` (a list) receives the values before each
    op, for such later runs; `margins` (a dict) each moe_ffn's smallest gap
    between a token's k-th and (k+1)-th biased router score."""
    if packed.shape != (model.num_scalars,):
        raise ModelError("the parameter vector has shape %s; the model %s has "
                         "%d scalars" % (packed.shape, model.name,
                                         model.num_scalars))
    packed = np.asarray(packed, dtype=np.float64)
    if selections is None:
        selections = {}
    if env is None:
        env = {model.tokens_name: tokens, model.labels_name: labels}
    else:
        env = dict(env)
    for index in range(start, len(model.ops)):
        op = model.ops[index]
        if snapshots is not None:
            snapshots.append(dict(env))
        a = op.attrs
        if op.name == "moe.param":
            p = a["param"]
            value = packed[p.offset:p.offset + p.size].reshape(p.shape)
        elif op.name == "moe.embedding":
            ids, table = (lookup(op, env, v) for v in op.leading)
            value = table[ids]
        elif op.name == "moe.rms_norm":
            x, weight = (lookup(op, env, v) for v in op.leading)
            value = rms_norm(x, weight, a.get("epsilon", 1e-5))
        elif op.name == "moe.attn_res":
            sources = [lookup(op, env, v) for v in op.leading]
            value = attn_res(sources, lookup(op, env, op.groups["query"][0]),
                             lookup(op, env, op.groups["key_norm"][0]),
                             a.get("epsilon", 1e-5))
        elif op.name == "moe.kda_layer":
            value = kda_layer(lookup(op, env, op.leading[0]),
                              named_operands(op, env, KDA_GROUPS), a)
        elif op.name == "moe.mla_layer":
            value = mla_layer(lookup(op, env, op.leading[0]),
                              named_operands(op, env, MLA_GROUPS), a)
        elif op.name == "moe.moe_ffn":
            chosen = []
            value = moe_ffn(lookup(op, env, op.leading[0]),
                            named_operands(op, env, MOE_GROUPS), a, chosen)
            selections[index] = chosen[0][0]
            if margins is not None:
                margins[op.results[0]] = chosen[0][1]
        elif op.name == "moe.glu_ffn":
            x, wg, wu, wd = (lookup(op, env, v) for v in op.leading)
            value = glu_ffn(x, wg, wu, wd, a["activation"])
        elif op.name == "moe.lm_head":
            x, weight, lab = (lookup(op, env, v) for v in op.leading)
            value = cross_entropy(x @ weight.T, lab, a.get("ignore_index", -100))
        elif op.name == "arith.addf":
            lhs, rhs = (lookup(op, env, v) for v in op.leading)
            value = lhs + rhs
        else:
            raise ModelError("%s: the reference does not implement this op" %
                             op.where())
        env[op.results[0]] = value
        # Results beyond the first (moe_ffn's load and next_bias) are not
        # used by the loss; a use of them is an error at lookup.
    return float(lookup(model.ops[-1], env, model.returned))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

def random_params(model, seed):
    """Random parameters around the initialisers' scales, never the initial
    values themselves: weights N(0, 1/sqrt(max of the last two dims)), ones
    1 + N(0, 0.2), zeros N(0, 0.5/sqrt(last dim)), dt_bias the inverse softplus
    of dt ~ logU(low, high)."""
    rng = np.random.default_rng(seed)
    packed = np.zeros(model.num_scalars, dtype=np.float32)
    for p in model.params:
        shape = p.shape or (1,)
        if p.init == "normal":
            std = 1.0 / math.sqrt(max(shape[-2:]))
            value = rng.normal(0.0, std, shape)
        elif p.init == "ones":
            value = 1.0 + rng.normal(0.0, 0.2, shape)
        elif p.init == "zeros":
            value = rng.normal(0.0, 0.5 / math.sqrt(shape[-1]), shape)
        elif p.init == "inverse_softplus_dt":
            low, high = p.std.get("low", 1e-3), p.std.get("high", 0.1)
            dt = np.exp(rng.uniform(math.log(low), math.log(high), shape))
            dt = np.maximum(dt, 1e-4)
            value = dt + np.log(-np.expm1(-dt))
        else:
            raise ModelError("parameter \"%s\": unknown initialiser '%s'" %
                             (p.name, p.init))
        packed[p.offset:p.offset + p.size] = np.asarray(value).reshape(-1)
    return packed


def load_npy(path, what):
    try:
        return np.load(path)
    except (OSError, ValueError) as e:
        raise ModelError("cannot read %s %s: %s" % (what, path, e))


# ---------------------------------------------------------------------------
# Finite differences and the gradient check
# ---------------------------------------------------------------------------

class Objective:
    """The loss as a function of one parameter tensor at a time: a perturbed
    run restarts at the first op that reads the tensor."""

    def __init__(self, model, packed, tokens, labels):
        self.model, self.tokens, self.labels = model, tokens, labels
        self.base = packed.astype(np.float64)
        self.selections, self.snapshots = {}, []
        self.margins = {}
        self.loss = forward(model, self.base, tokens, labels, self.selections,
                            snapshots=self.snapshots, margins=self.margins)
        self.first_use = {}
        for index, op in enumerate(model.ops):
            if op.name == "moe.param":
                continue
            operands = op.leading + [v for g in op.groups.values() for v in g]
            for value in operands:
                self.first_use.setdefault(value, index)
        self.evaluations = 0

    def at(self, param, values):
        """The loss with `param` set to `values`, and whether every routing
        decision is that of the unperturbed run."""
        self.evaluations += 1
        index = next(i for i, op in enumerate(self.model.ops)
                     if op.name == "moe.param" and op.attrs["param"] is param)
        result = self.model.ops[index].results[0]
        start = self.first_use.get(result, len(self.model.ops))
        env = dict(self.snapshots[start]) if start < len(self.model.ops) else {}
        env[result] = values.reshape(param.shape)
        # The base vector is changed in place for the run, then restored.
        window = self.base[param.offset:param.offset + param.size]
        saved = window.copy()
        window[:] = values
        sel = {}
        try:
            loss = forward(self.model, self.base, self.tokens, self.labels,
                           sel, start=start, env=env)
        finally:
            window[:] = saved
        same = all(np.array_equal(sel[i], self.selections[i]) for i in sel)
        return loss, same

    def directional(self, param, u, rel_step):
        """(L(p + h u) - L(p - h u)) / 2h, u a unit vector inside `param`;
        the step shrinks until no routing decision changes."""
        norm = np.linalg.norm(self.base[param.offset:param.offset + param.size])
        h = rel_step * max(norm, 1.0)
        for _ in range(6):
            p = self.base[param.offset:param.offset + param.size]
            plus, same_plus = self.at(param, p + h * u)
            minus, same_minus = self.at(param, p - h * u)
            if same_plus and same_minus:
                return (plus - minus) / (2 * h)
            h /= 8
        raise ModelError("parameter \"%s\": a routing decision flips at every "
                         "step size tried" % param.name)


def select_params(model, only):
    chosen = [p for p in model.params if not only or re.search(only, p.name)]
    if not chosen:
        raise ModelError("no parameter matches '%s'" % only)
    return chosen


def cmd_fdgrad(args, model):
    obj = Objective(model, load_npy(args.params, "parameters"),
                    load_npy(args.tokens, "tokens"),
                    load_npy(args.labels, "labels"))
    grad = np.zeros(model.num_scalars, dtype=np.float32)
    for p in select_params(model, args.only):
        if p.buffer:
            continue
        for i in range(p.size):
            u = np.zeros(p.size)
            u[i] = 1.0
            grad[p.offset + i] = obj.directional(p, u, args.step)
    np.save(args.output, grad)
    print("fdgrad: %d evaluations" % obj.evaluations)


def cmd_gradcheck(args, model):
    packed = load_npy(args.params, "parameters")
    grad = load_npy(args.grad, "gradient").astype(np.float64).reshape(-1)
    if grad.shape != (model.num_scalars,):
        raise ModelError("the gradient has %d scalars; the model %s has %d" %
                         (grad.size, model.name, model.num_scalars))
    # Deliberate errors, to show that the check catches them.
    for option, items in (("scale", args.scale_grad), ("add", args.add_grad)):
        for item in items:
            name, text = item.rsplit("=", 1)
            if name not in model.by_name:
                raise ModelError("--%s-grad: no parameter named \"%s\"" %
                                 (option, name))
            p = model.by_name[name]
            window = grad[p.offset:p.offset + p.size]
            if option == "scale":
                window *= float(text)
                print("scaled the gradient of %s by %g" % (name, float(text)))
            else:
                window += float(text)
                print("added %g to the gradient of %s" % (float(text), name))
    obj = Objective(model, packed, load_npy(args.tokens, "tokens"),
                    load_npy(args.labels, "labels"))
    print("model %s: %d parameter tensors, %d scalars, loss %.17g" %
          (model.name, len(model.params), model.num_scalars, obj.loss))
    for value, margin in obj.margins.items():
        print("routing of %s: smallest top-k margin %.3e" % (value, margin))
    # Below `floor` (per element) a gradient is rounding noise: a fraction
    # of the RMS gradient entry of the whole model.
    trained = np.concatenate([grad[p.offset:p.offset + p.size]
                              for p in model.params if not p.buffer])
    floor = args.floor * np.linalg.norm(trained) / math.sqrt(max(trained.size, 1))
    print("noise floor %.3e per element" % floor)
    rng = np.random.default_rng(args.seed)
    worst, worst_name, failed = 0.0, "", []
    for p in select_params(model, args.only):
        g = grad[p.offset:p.offset + p.size]
        if p.buffer:
            # Buffers (the router's selection bias) get no gradient.
            bad = np.count_nonzero(g)
            print("%-40s buffer: %d nonzero gradient entries" % (p.name, bad))
            if bad:
                failed.append(p.name)
            continue
        gnorm = np.linalg.norm(g)
        errors, fds = [], []
        for _ in range(args.directions):
            u = rng.normal(size=p.size)
            u /= np.linalg.norm(u)
            fd = obj.directional(p, u, args.step)
            fds.append(fd)
            errors.append(abs(float(g @ u) - fd))
        # Random unit directions: |grad . u| ~ |grad| / sqrt(n).
        scale = max(gnorm / math.sqrt(p.size), math.sqrt(np.mean(np.square(fds))),
                    floor)
        rel = max(errors) / scale if scale > 0 else 0.0
        # Along the compiled gradient itself: the derivative is |grad|.
        along = 0.0
        if gnorm > 0:
            fd = obj.directional(p, g / gnorm, args.step)
            along = abs(gnorm - fd) / max(gnorm, abs(fd), floor * math.sqrt(p.size))
        err = max(rel, along)
        status = "ok" if err <= args.tol else "FAIL"
        if err > args.tol:
            failed.append(p.name)
        print("%-40s n %8d |grad| %.3e random %.2e along %.2e %s" %
              (p.name, p.size, gnorm, rel, along, status))
        if err > worst:
            worst, worst_name = err, p.name
    print("worst relative error %.3e (%s), tolerance %.1e, %d evaluations" %
          (worst, worst_name, args.tol, obj.evaluations))
    if failed:
        print("gradient check FAILED for: %s" % ", ".join(failed))
        return 1
    print("gradient check passed")
    return 0


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(prog="model_reference.py",
                                     description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("layout")
    s.add_argument("model")

    s = sub.add_parser("init")
    s.add_argument("model")
    s.add_argument("-o", dest="output", required=True)
    s.add_argument("--seed", type=int, default=0)

    s = sub.add_parser("batch")
    s.add_argument("model")
    s.add_argument("-o", dest="output", required=True)
    s.add_argument("--batch", type=int, default=2)
    s.add_argument("--seq-len", type=int, default=40)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--ignore-every", type=int, default=0,
                   help="set every N-th label to the lm_head's ignore_index "
                        "(0: none)")

    for name in ("loss", "fdgrad", "gradcheck"):
        s = sub.add_parser(name)
        s.add_argument("model")
        s.add_argument("params")
        s.add_argument("tokens")
        s.add_argument("labels")
        if name == "loss":
            s.add_argument("-o", dest="output")
        if name == "fdgrad":
            s.add_argument("-o", dest="output", required=True)
            s.add_argument("--only", required=True)
        if name == "gradcheck":
            s.add_argument("grad")
            s.add_argument("--only", default="")
            s.add_argument("--directions", type=int, default=3)
            s.add_argument("--tol", type=float, default=1e-3)
            s.add_argument("--seed", type=int, default=0)
            s.add_argument("--floor", type=float, default=1e-4,
                           help="gradient entries below FLOOR times the RMS "
                                "entry of the whole gradient count as zero")
            s.add_argument("--scale-grad", action="append", default=[],
                           metavar="NAME=FACTOR",
                           help="multiply one tensor's gradient (to show "
                                "that the check fails)")
            s.add_argument("--add-grad", action="append", default=[],
                           metavar="NAME=VALUE",
                           help="add VALUE to one tensor's gradient (to show "
                                "that the check fails)")
        if name != "loss":
            s.add_argument("--step", type=float, default=1e-4,
                           help="central-difference step, relative to the "
                                "tensor's norm")
    args = parser.parse_args(argv)

    model = Model(args.model)
    if args.command == "layout":
        print("model %s: vocab %s, hidden %s, %d scalars" %
              (model.name, model.vocab, model.hidden, model.num_scalars))
        for p in model.params:
            flags = (" no_weight_decay" if p.no_weight_decay else "") + \
                (" buffer" if p.buffer else "")
            print("param %d %d [%s] %s%s" % (p.offset, p.size,
                                             ", ".join(map(str, p.shape)),
                                             p.name, flags))
        return 0
    if args.command == "init":
        np.save(args.output, random_params(model, args.seed))
        return 0
    if args.command == "batch":
        rng = np.random.default_rng(args.seed)
        shape = (args.batch, args.seq_len)
        tokens = rng.integers(0, model.vocab, shape).astype(np.int32)
        labels = rng.integers(0, model.vocab, shape).astype(np.int32)
        if args.ignore_every > 0:
            heads = [op for op in model.ops if op.name == "moe.lm_head"]
            ignore = heads[0].attrs.get("ignore_index", -100) if heads else -100
            labels.reshape(-1)[::args.ignore_every] = ignore
        import os
        os.makedirs(args.output, exist_ok=True)
        np.save(os.path.join(args.output, "tokens.npy"), tokens)
        np.save(os.path.join(args.output, "labels.npy"), labels)
        return 0
    if args.command == "loss":
        margins = {}
        loss = forward(model, load_npy(args.params, "parameters"),
                       load_npy(args.tokens, "tokens"),
                       load_npy(args.labels, "labels"), margins=margins)
        print("loss %.17g" % loss)
        for value, margin in margins.items():
            print("routing of %s: smallest top-k margin %.3e" % (value, margin))
        if args.output:
            np.save(args.output, np.array(loss, dtype=np.float64))
        return 0
    if args.command == "fdgrad":
        cmd_fdgrad(args, model)
        return 0
    return cmd_gradcheck(args, model)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ModelError as e:
        print("model_reference.py: error: %s" % e, file=sys.stderr)
        sys.exit(1)
