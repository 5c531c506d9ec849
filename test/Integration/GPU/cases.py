# test/Integration/GPU/cases.py - the cases of the GPU suite
# (scripts/gpu-test.sh): which kernels are compiled (and with which
# moe-lower-to-nvvm options), which functions run at which shapes on which
# inputs, the fp64 reference of each result and the tolerance of each
# comparison, with the reason for it. prepare.py reads this table where
# MLIR is installed; run.py reads only the manifest that prepare.py writes.
#
# Every float input is a seeded uniform random array whose values are exact
# in bf16 (so the CPU and GPU runs read the same numbers whatever the
# argument's element type; suite.uniform_segments); the seed is a hash of the
# input's description, so an input shared by several cases is one file, and
# adding a case changes no other case's data.

import re
import zlib

# ---------------------------------------------------------------------------
# Tolerances. A check passes when its error is at most the bar:
#   rtol: max|gpu - ref| / max|ref| (max|gpu - ref| when ref is all zeros);
#   atol: max|gpu - ref|;
#   exact: every element equal (integers, and values that are only moved).
# A non-finite GPU value or a shape mismatch always fails.
# ---------------------------------------------------------------------------


class Tol:
    def __init__(self, why, rtol=None, atol=None, exact=False):
        self.rtol, self.atol, self.exact, self.why = rtol, atol, exact, why

    def to_json(self):
        kind = "exact" if self.exact else ("rtol" if self.rtol is not None else "atol")
        bar = 0 if self.exact else (self.rtol if self.rtol is not None else self.atol)
        return {"kind": kind, "bar": bar, "why": self.why}


BF16 = Tol(rtol=2e-2, why="bf16 tensor-core operands (mma.sync m16n8k16) with fp32 "
           "accumulation: the bar of bench/kda, bench/mla and bench/moe (measured "
           "2e-3 to 6e-3 there); the CPU back end is fp32 (1e-5 of fp64)")
BF16_OUT = Tol(rtol=2e-2, why="bf16 result (2^-9 relative rounding) of bf16 "
               "tensor-core kernels: bench/moe's bf16 bar")
F32 = Tol(rtol=1e-4, why="fp32 throughout on the GPU (one-thread tile kernels, the "
          "fp32 CUDA-core router): the CPU suite's 1e-5 bar with a 10x margin for "
          "another summation order and libdevice's exp; bench/moe's y bar")
ROUTE_W = Tol(rtol=1e-4, why="routing weights s_j / sum s * scaling in fp32 from "
              "scores summed in another order (bench/moe/routing_bench.py: 1e-5 "
              "against fp64), with a 10x margin")
EXACT = Tol(exact=True, why="integers (load, indices, offsets, slots) or values "
            "only moved (dispatched rows): the top-k margin of every token is "
            "far above the score error (see the case's margin)")
BIAS = Tol(atol=1e-5, why="next bias from scores that differ by about 1e-7: "
           "bench/moe's bias bar")
F32_BF16_GEMM = Tol(rtol=5e-3, why="f32 experts under matmul-precision=bf16: "
                    "the GEMMs take bf16 operands with fp32 accumulation, the "
                    "activation and the result are fp32. The inputs are exact "
                    "in bf16, so the one rounding is h's to bf16 (2^-9 "
                    "relative per element): a NumPy emulation of that rounding "
                    "(fp64 otherwise) gives 1.6e-3 to 2.0e-3 of max|y| on these "
                    "cases; 5e-3 leaves 2.5x for fp32 accumulation order and "
                    "libdevice's tanh and exp; the CPU back end is fp32")
MODEL_FN = Tol(rtol=1e-2, why="whole-model loss at random (not initial) weights, "
               "through bf16 tensor-core KDA and MLA kernels in every layer; such a "
               "loss is far from what a broken forward gives (not measured on a GPU "
               "yet)")
GEMM_EXACT_IN = Tol(rtol=1e-4, why="generated GEMM on operands that are exact in bf16 "
                   "(the suite's inputs): the rounding to bf16 loses nothing, so only "
                   "the fp32 accumulation order differs (about K 2^-24 of sum |a b|); "
                   "the F32 bar")
GEMM_BF16 = Tol(rtol=1e-2, why="generated GEMM rounding f32 operands to bf16 (unit "
                "roundoff u = 2^-8, each product off by at most 2u relative) with fp32 "
                "accumulation: the errors of the K products add like a random walk, "
                "about u sqrt(K) rms|a b| per element against max|ref| of about "
                "4 sqrt(K) rms|a b| / sqrt(3), so about 1e-3 to 3e-3 at the largest "
                "element; the worst case 2u sum|a b| / max|ref| is 2e-2 at K = 256")
LOSS = Tol(rtol=2e-3, why="whole-model loss; bench/model measured 3.7e-4 on an H200; "
           "a model that predicts every byte uniformly gives ln 256 = 5.545, 3e-3 "
           "from the CPU's 5.563 at seed 0, so the bar stays below that")


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


class Uniform:
    """Uniform in [low, high), rounded to bf16; low == high gives a constant."""

    def __init__(self, low, high):
        self.low, self.high = float(low), float(high)

    def key(self):
        return f"U({self.low:g},{self.high:g})"

    def segments(self, shape, model_layout=None):
        count = 1
        for n in shape:
            count *= n
        return [(count, self.low, self.high)]


class ModelParams:
    """The packed parameter vector of a moe.model (the getParamLayout order):
    each parameter uniform around its initialiser's scale but never at its
    initial value (as model_reference.py init): normal(std) -> within
    +-sqrt(3 / max of the last two dims), ones -> 1 +- 0.35, zeros -> +-0.87 /
    sqrt(last dim), inverse_softplus_dt -> [-6.9, -2.3] (dt from 1e-3 to
    0.1)."""

    def __init__(self, model):
        self.model = model

    def key(self):
        return f"ModelParams({self.model})"

    def segments(self, shape, model_layout):
        out = []
        for init, pshape, size in model_layout:
            if init == "normal":
                a = (3.0 / max(pshape[-2:])) ** 0.5
                out.append((size, -a, a))
            elif init == "ones":
                out.append((size, 0.65, 1.35))
            elif init == "zeros":
                a = 0.87 / pshape[-1] ** 0.5
                out.append((size, -a, a))
            elif init == "inverse_softplus_dt":
                out.append((size, -6.9, -2.3))
            else:
                raise ValueError(f"unknown initialiser {init}")
        return out


class Integers:
    """Uniform integers in [low, high); every `ignore_every`-th one (0: none)
    replaced by `ignore` (the lm_head's ignore_index)."""

    def __init__(self, low, high, ignore_every=0, ignore=-100):
        self.low, self.high, self.ignore_every, self.ignore = low, high, ignore_every, ignore

    def key(self):
        return f"Integers({self.low},{self.high},{self.ignore_every},{self.ignore})"


class Offsets:
    """The [E + 1] i64 group offsets of consecutive groups of the given sizes."""

    def __init__(self, counts):
        self.counts = list(counts)

    def key(self):
        return "Offsets(" + ",".join(map(str, self.counts)) + ")"


class Permutation:
    """[n] i64: a random permutation of 0 .. n - 1 (a combine's source_slot)."""

    def key(self):
        return "Permutation"


class TopIndices:
    """[N, k] i64: k distinct experts of E per row, in random order."""

    def __init__(self, experts):
        self.experts = experts

    def key(self):
        return f"TopIndices({self.experts})"


class Input:
    def __init__(self, name, shape, gen, salt=""):
        self.name, self.shape, self.gen, self.salt = name, tuple(shape), gen, salt

    def key(self):
        return f"{self.name}:{'x'.join(map(str, self.shape))}:{self.gen.key()}{self.salt}"

    def seed(self):
        return zlib.crc32(self.key().encode())

    def is_integer(self):
        return isinstance(self.gen, (Offsets, TopIndices, Integers, Permutation))


# ---------------------------------------------------------------------------
# Libraries: one host object (+ embedded PTX) each
# ---------------------------------------------------------------------------


class Library:
    """kernel: a repository path; derive: a function of the kernel's text
    giving the text compiled instead, or moe_opt: moe-opt options that give
    it (either way written to the suite's kernels/); options:
    moe-lower-to-nvvm's; modules: gpu modules that the object must embed (the
    generated kernels this library is meant to test)."""

    def __init__(self, name, kernel, options="", derive=None, moe_opt=None, modules=(),
                 what=""):
        self.name, self.kernel, self.options = name, kernel, options
        self.derive, self.moe_opt = derive, moe_opt
        self.modules, self.what = list(modules), what


def mla_bf16(text):
    # q, k, v, gate and output in bf16, as bench/mla/compile.sh derives its
    # bf16 variant.
    return text.replace("x96xf32", "x96xbf16").replace("x64xf32", "x64xbf16")


def mla_grad_tiny(text):
    # kimi-tiny's MLA head widths: d_qk = 32 + 16, d_v = 32.
    return (text.replace("4x96xf32", "4x48xf32").replace("4x64xf32", "4x32xf32")
            .replace("D_qk = 96 != D_v = 64", "D_qk = 48 != D_v = 32"))


def moe_ffn_f32(text):
    # The bf16 layer with f32 input, weights and output.
    return text.replace("xbf16>", "xf32>").replace("@moe_ffn_bf16(", "@moe_ffn_f32(")


def keep_functions(text, entries, where):
    """The func.func definitions @entries of text (each from its line
    `func.func @name(` to the next line `}`), in their order there."""
    pattern = r"^func\.func @(\w+)\(.*?^\}\n"
    found = re.findall(pattern, text, re.S | re.M)
    missing = [e for e in entries if e not in found]
    if missing:
        raise ValueError(f"{where} has no functions {missing}")
    return "".join(m.group(0) + "\n" for m in re.finditer(pattern, text, re.S | re.M)
                   if m.group(1) in entries)


def functions(entries, where):
    """derive: only the functions `entries` of the kernel file."""
    def derive(text):
        return (f"// {where}'s @{', @'.join(entries)} (the GPU suite's cases.py)\n\n"
                + keep_functions(text, entries, where))
    return derive


def moe_grad(E, K, F, activation, d=32, entries=("expert_grad",)):
    """test/Integration/CPU/Inputs/moe-grad.mlir (the gradient ops of the
    MoE FFN: @dispatch_grad, @combine_grad, @expert_grad, ...) filled in as
    the CPU's moe-grad*.test do with sed: E experts, top-k K, width F, the
    activation; the hidden size (32 in the template) d. Only the functions
    `entries` are kept (a smaller object, and the others' ops are not what
    these libraries test)."""
    def derive(text):
        text = (f"// test/Integration/CPU/Inputs/moe-grad.mlir's @{', @'.join(entries)} at "
                f"d = {d}, E = {E}, top-{K}, F = {F}, {activation} (the GPU suite's "
                "cases.py moe_grad)\n\n"
                + keep_functions(text, entries, "moe-grad.mlir"))
        if d != 32:
            text = re.sub(r"tensor<([^>]*)>",
                          lambda m: "tensor<" + "x".join(
                              str(d) if p == "32" else p for p in m.group(1).split("x")) + ">",
                          text)
        for key, value in (("@E1@", E + 1), ("@E@", E), ("@H@", E // 2), ("@K@", K),
                           ("@F@", F), ("@ACT@", activation)):
            text = text.replace(key, str(value))
        return text
    return derive


SWIGLU_ATTR = "#moe.activation<swiglu>"
SITU_ATTR = "#moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>"


LIBRARIES = [
    Library("kda", "examples/kernels/kda.mlir", modules=["moe_kda_kernels"],
            what="the KDA example: generated tensor-core kernels, dense diagonal "
                 "tiles (bounded gate) and per-position ones (softplus gate)"),
    Library("kda_per_position", "examples/kernels/kda.mlir",
            options="kda-diagonal=per-position", modules=["moe_kda_kernels"],
            what="the KDA example with every diagonal tile per position"),
    Library("kda_gmin8", "test/Integration/CPU/Inputs/kda-gmin8.mlir",
            modules=["moe_kda_kernels"],
            what="g_min = -8: dense diagonal tiles with a bf16 margin of 23"),
    Library("kda_h2_k32_v16", "test/Integration/CPU/Inputs/kda-h2-k32-v16.mlir",
            options="matmul-precision=exact",
            what="K = 32, V = 16: not for the kernel generator, the tiled "
                 "path in fp32 (matmul-precision=exact: at the default, its "
                 "contractions run on tf32 tensor cores, 3.6e-4 to 5.1e-4 "
                 "from fp64 on an H100)"),
    Library("kda_dynamic_heads", "test/Integration/CPU/Inputs/kda-dynamic-heads.mlir",
            options="matmul-precision=exact",
            what="a dynamic head count (the tiled path in fp32; with tf32 "
                 "contractions 6.4e-4 to 9.0e-4 from fp64 on an H100)"),
    Library("mla", "examples/kernels/mla.mlir", modules=["moe_attention_kernels"],
            what="the MLA example: generated flash-attention kernel, 256 query rows "
                 "per block, fp32 K and V converted to bf16 once"),
    Library("mla_qt64", "examples/kernels/mla.mlir", options="attention-query-tile=64",
            modules=["moe_attention_kernels"], what="64 query rows per block"),
    Library("mla_qt128", "examples/kernels/mla.mlir", options="attention-query-tile=128",
            modules=["moe_attention_kernels"], what="128 query rows per block"),
    Library("mla_bf16", "examples/kernels/mla.mlir", derive=mla_bf16,
            modules=["moe_attention_kernels"],
            what="the MLA example with bf16 q, k, v, gate and output"),
    Library("mla_variants", "test/Integration/CPU/Inputs/mla-attention-variants.mlir",
            modules=["moe_attention_kernels"],
            what="the log-sum-exp returned, and no gate"),
    Library("mla_grad", "test/Integration/CPU/Inputs/mla-grad.mlir",
            modules=["moe_attention_kernels", "moe_attention_grad_kernels"],
            what="the forward and moe.mla_attention_grad of the CPU's mla-grad.test "
                 "(D_qk = 96, D_v = 64, 4 heads; gated at the default scale, and "
                 "ungated at scale 0.2): the generated forward, then the backward of "
                 "-moe-generate-attention-grad-kernels (prep, dK dV per key tile, dQ "
                 "per query tile; K and V, Q and dO fragments re-read from shared "
                 "memory, D_qk + D_v > 128)"),
    Library("mla_grad_tiny", "test/Integration/CPU/Inputs/mla-grad.mlir",
            derive=mla_grad_tiny, modules=["moe_attention_kernels",
                                           "moe_attention_grad_kernels"],
            what="mla_grad at kimi-tiny's head widths (D_qk = 48: three k-steps; "
                 "D_v = 32): the resident fragments kept in registers"),
    Library("mla_grad_bf16", "test/Integration/CPU/Inputs/mla-grad.mlir",
            derive=mla_bf16, modules=["moe_attention_kernels",
                                      "moe_attention_grad_kernels"],
            what="mla_grad with bf16 q, k, v, gate, output adjoint and gradients "
                 "(the lse stays fp32)"),
    Library("moe_ffn", "examples/kernels/moe_ffn.mlir", options="matmul-precision=exact",
            modules=["moe_routing_kernels"],
            what="the MoE FFN example (f32): generated routing kernels, experts "
                 "and shared expert as one-thread tile kernels (the shared expert's "
                 "dense GEMMs kept exact fp32, so that the F32 bars hold)"),
    Library("moe_ffn_gemm", "examples/kernels/moe_ffn.mlir",
            modules=["moe_routing_kernels", "moe_gemm_kernels"],
            what="the MoE FFN example (f32) at the default precision: the shared "
                 "expert's three dense projections (d = 64, F = 32) as generated "
                 "bf16 tensor-core GEMMs"),
    Library("moe_ffn_variants", "test/Integration/CPU/Inputs/moe-ffn-variants.mlir",
            options="matmul-precision=exact", modules=["moe_routing_kernels"],
            what="histogram QB, sign bias with SiTU-GLU, routing given as data, "
                 "E = 8 top-1 and E = 64 top-8 (dense GEMMs kept exact fp32)"),
    Library("moe_ffn_bf16", "bench/moe/moe_ffn_bf16_small.mlir",
            modules=["moe_routing_kernels", "moe_expert_kernels"],
            what="a bf16 MoE layer (d = 256, E = 8, top-2): tensor-core router "
                 "and grouped expert GEMMs"),
    Library("routing", "bench/moe/routing.mlir", modules=["moe_routing_kernels"],
            what="route + dispatch: bf16 at the issue's d = 2048, E = 64, top-8; "
                 "f32 with histogram QB and with the sign bias"),
    Library("experts", "test/Integration/GPU/Inputs/experts-small.mlir",
            modules=["moe_expert_kernels"],
            what="grouped bf16 SwiGLU expert GEMMs on ragged groups"),
    Library("mapped", "test/Integration/GPU/Inputs/mapped-ops.mlir",
            what="ops no generator takes (norms, cross-entropy, embedding), mapped "
                 "by -moe-map-forall-to-gpu: row reductions one warp per output"),
    Library("experts_f32", "test/Integration/GPU/Inputs/experts-f32.mlir",
            modules=["moe_expert_kernels"],
            what="f32 grouped experts (SwiGLU, SiTU-GLU), the f32 shared expert and "
                 "f32 combines under matmul-precision=bf16: bf16 tensor-core GEMMs, "
                 "fp32 accumulation, f32 results"),
    Library("moe_ffn_f32", "bench/moe/moe_ffn_bf16_small.mlir", derive=moe_ffn_f32,
            modules=["moe_routing_kernels", "moe_expert_kernels"],
            what="the bf16 MoE layer of moe_ffn_bf16 in f32 (d = 256, E = 8, top-2): "
                 "fp32 router, experts and shared expert on bf16 tensor cores "
                 "(matmul-precision=bf16), f32 combine"),
    Library("gemm", "test/Integration/GPU/Inputs/gemm-projections.mlir",
            modules=["moe_gemm_kernels"],
            what="dense projections and a matmul as generated tensor-core GEMMs: "
                 "f32 and bf16 operands, plain and transposed weights, ragged row "
                 "and column tiles, reductions that are no multiple of 32, an operand "
                 "that is not exact in bf16; weight "
                 "gradients (sums over the rows) as row-split GEMMs"),
    Library("moe_grad", "test/Integration/CPU/Inputs/moe-grad.mlir",
            derive=moe_grad(16, 4, 16, SWIGLU_ATTR,
                            entries=("dispatch_grad", "combine_grad", "expert_grad")),
            options="matmul-precision=exact",
            what="the MoE FFN's gradient ops (d = 32, E = 16, top-4, F = 16, "
                 "SwiGLU; test/Integration/CPU/Inputs/moe-grad.mlir): "
                 "expert_ffn_grad with each expert's rows split over blocks "
                 "(expert-grad-blocks=264), dispatch_grad, combine_grad; fp32 "
                 "tile kernels on CUDA cores (matmul-precision=exact: at the "
                 "default, their contractions run on tf32 tensor cores)"),
    Library("moe_grad_situ", "test/Integration/CPU/Inputs/moe-grad.mlir",
            derive=moe_grad(16, 2, 16, SITU_ATTR),
            options="matmul-precision=exact",
            what="expert_ffn_grad with SiTU-GLU (gate_beta 4, up_beta 25; d = 32, "
                 "E = 16, top-2, F = 16), fp32 (at the default, dw_down's "
                 "contraction runs on tf32 tensor cores: 2.4e-4 to 2.6e-4 from "
                 "fp64 on an H100)"),
    Library("moe_grad_d256", "test/Integration/CPU/Inputs/moe-grad.mlir",
            derive=moe_grad(4, 2, 128, SWIGLU_ATTR, d=256),
            modules=["moe_expert_grad_kernels"],
            what="expert_ffn_grad at kimi-tiny's expert width (d = 256, F = 128, "
                 "SwiGLU), E = 4, top-2: the tensor-core kernels of "
                 "-moe-generate-expert-grad-kernels"),
    Library("moe_grad_tc", "test/Integration/CPU/Inputs/moe-grad.mlir",
            derive=moe_grad(16, 4, 128, SWIGLU_ATTR, d=256),
            modules=["moe_expert_grad_kernels"],
            what="expert_ffn_grad at kimi-tiny's shapes (d = 256, E = 16, top-4, "
                 "F = 128, SwiGLU): tensor-core grouped GEMMs, the weight "
                 "gradients split over each expert's rows"),
    Library("moe_grad_tc_situ", "test/Integration/CPU/Inputs/moe-grad.mlir",
            derive=moe_grad(8, 2, 64, SITU_ATTR, d=128),
            modules=["moe_expert_grad_kernels"],
            what="expert_ffn_grad with SiTU-GLU at d = 128, F = 64 (64-column "
                 "tiles, a weight-gradient tile taller than F), E = 8, top-2"),
    Library("common_grad", "test/Integration/CPU/common-grad-model-sizes.mlir",
            what="the small layers' gradients at kimi-tiny's sizes (decay gate, "
                 "L2 norm, RMSNorm, short convolution, embedding, AttnRes mix): "
                 "host-code kernels of -moe-map-forall-to-gpu, the weight "
                 "gradients' sums over the tokens as split column reductions"),
    Library("kda_grad", "test/Integration/GPU/Inputs/kda-grad.mlir",
            options="matmul-precision=exact",
            derive=functions(("kda_grad_bounded", "kda_grad_value_major"),
                             "test/Integration/GPU/Inputs/kda-grad.mlir"),
            what="moe.kda_grad at kimi-tiny's heads (H = 4, K = V = 64) after "
                 "l2_norm and the bounded decay gate: the chunked backward of "
                 "-moe-tile-linear-attention (chunk 64, sub-chunk 16, dense "
                 "diagonal tiles) as fp32 tile kernels, one block per (batch, "
                 "head); key-major and value-major states (matmul-precision="
                 "exact: the tiles' contractions on CUDA cores in fp32)"),
    Library("kda_grad_softplus", "test/Integration/GPU/Inputs/kda-grad.mlir",
            options="matmul-precision=exact",
            derive=functions(("kda_grad_softplus",),
                             "test/Integration/GPU/Inputs/kda-grad.mlir"),
            what="moe.kda_grad with the softplus gate: diagonal tiles guarded at "
                 "run time (dense or per position); a library of its own so that "
                 "its kernels' failures leave the bounded cases alone"),
    Library("kda_grad_tf32", "test/Integration/GPU/Inputs/kda-grad.mlir",
            derive=functions(("kda_grad_bounded", "kda_grad_value_major",
                              "kda_grad_softplus"),
                             "test/Integration/GPU/Inputs/kda-grad.mlir"),
            what="the kda_grad cases at the default precision (bf16): the tile "
                 "programs' contractions on tensor cores (mma.sync m16n8k8, "
                 "operands rounded to tf32, fp32 accumulation)"),
    Library("kimi_tiny_fn", "examples/models/kimi-tiny.mlir",
            moe_opt=["-convert-moe-model-to-func"],
            modules=["moe_kda_kernels", "moe_attention_kernels", "moe_routing_kernels",
                     "moe_expert_kernels", "moe_gemm_kernels"],
            what="kimi-tiny's loss as a function of its packed parameters, tokens and "
                 "labels (-convert-moe-model-to-func), the whole model through "
                 "moe-lower-to-nvvm"),
]

LIBRARY = {lib.name: lib for lib in LIBRARIES}


# ---------------------------------------------------------------------------
# Kernel cases
# ---------------------------------------------------------------------------


class Check:
    """Result `result` against the CPU back end (tol) and, when the case has
    one for it, the fp64 reference (fp64_tol, default tol)."""

    def __init__(self, result, name, tol, fp64_tol=None, fp64=True):
        self.result, self.name, self.tol = result, name, tol
        self.fp64_tol = fp64_tol or tol
        self.fp64 = fp64


class KernelCase:
    """reference(ctx, paths) makes the fp64 references from the input files
    and returns {result index: file}; ctx is prepare.py's (moe-reference,
    scratch files)."""

    def __init__(self, name, library, entry, inputs, checks, reference,
                 timeout=60, margin=None, note=""):
        self.name, self.library, self.entry = name, library, entry
        self.inputs, self.checks, self.reference = inputs, checks, reference
        self.timeout, self.margin, self.note = timeout, margin, note

    kind = "kernel"


def kda_inputs(B, T, H=4, K=64, V=64, z=(-3, 3), a_log=(0, 1)):
    return [Input("q", (B, T, H, K), Uniform(-1, 1)),
            Input("k", (B, T, H, K), Uniform(-1, 1)),
            Input("v", (B, T, H, V), Uniform(-1, 1)),
            Input("z", (B, T, H, K), Uniform(*z)),
            Input("beta", (B, T, H), Uniform(0.05, 0.95)),
            Input("a_log", (H,), Uniform(*a_log)),
            Input("dt_bias", (H, K), Uniform(-1, 1))]


def kda_reference(gate, g_min=None):
    def reference(ctx, paths):
        options = [f"--gate={gate}"] + ([f"--g-min={g_min}"] if g_min is not None else [])
        return {0: ctx.moe_reference("kda", paths, options)}
    return reference


def kda_cases():
    cases = []
    shapes = [(1, 1), (1, 63), (1, 64), (1, 65), (2, 100), (1, 200), (3, 17)]
    for B, T in shapes:
        for entry, gate in (("kda_forward", "bounded"), ("kda_forward_softplus", "softplus")):
            cases.append(KernelCase(
                f"kda/{entry}/B{B}_T{T}", "kda", entry, kda_inputs(B, T),
                [Check(0, "o", BF16)],
                kda_reference(gate, -5 if gate == "bounded" else None)))
    cases.append(KernelCase(
        "kda/kda_forward_softplus/strong_decay_B2_T100", "kda", "kda_forward_softplus",
        kda_inputs(2, 100, z=(20, 40), a_log=(1.5, 1.6)), [Check(0, "o", BF16)],
        kda_reference("softplus"),
        note="about -130 nats of decay per step: dense diagonal tiles would "
             "overflow (test/Integration/CPU/kda-forward.test)"))
    for B, T in ((1, 65), (2, 100)):
        cases.append(KernelCase(
            f"kda_per_position/kda_forward/B{B}_T{T}", "kda_per_position", "kda_forward",
            kda_inputs(B, T), [Check(0, "o", BF16)], kda_reference("bounded", -5)))
    for B, T in ((1, 65), (2, 200)):
        cases.append(KernelCase(
            f"kda_gmin8/kda_forward/B{B}_T{T}", "kda_gmin8", "kda_forward",
            kda_inputs(B, T), [Check(0, "o", BF16)], kda_reference("bounded", -8)))
    for B, T in ((1, 65), (2, 37)):
        for entry, gate in (("kda_forward", "bounded"), ("kda_forward_softplus", "softplus")):
            cases.append(KernelCase(
                f"kda_h2_k32_v16/{entry}/B{B}_T{T}", "kda_h2_k32_v16", entry,
                kda_inputs(B, T, H=2, K=32, V=16), [Check(0, "o", F32)],
                kda_reference(gate, -5 if gate == "bounded" else None)))
    for entry, gate in (("kda_forward", "bounded"), ("kda_forward_softplus", "softplus")):
        cases.append(KernelCase(
            f"kda_dynamic_heads/{entry}/B1_T65_H3", "kda_dynamic_heads", entry,
            kda_inputs(1, 65, H=3, K=32, V=16), [Check(0, "o", F32)],
            kda_reference(gate, -5 if gate == "bounded" else None)))
    return cases


def mla_inputs(B, T, gate=True):
    ins = [Input("q", (B, T, 4, 96), Uniform(-3, 3)),
           Input("k", (B, T, 4, 96), Uniform(-3, 3)),
           Input("v", (B, T, 4, 64), Uniform(-1, 1))]
    if gate:
        ins.append(Input("gate", (B, T, 4, 64), Uniform(-3, 3)))
    return ins


def mla_reference(lse=False):
    def reference(ctx, paths):
        out = ctx.scratch("ref_lse.npy")
        ref = ctx.moe_reference("mla_attention", paths, [f"--lse={out}"] if lse else [])
        return {0: ref, 1: out} if lse else {0: ref}
    return reference


def mla_cases():
    cases = []
    for B, T in ((1, 1), (3, 17), (1, 64), (1, 65), (2, 130), (1, 300)):
        cases.append(KernelCase(f"mla/mla_attention_forward/B{B}_T{T}", "mla",
                                "mla_attention_forward", mla_inputs(B, T),
                                [Check(0, "y", BF16)], mla_reference()))
    for lib, shapes in (("mla_qt64", ((1, 65), (2, 130))), ("mla_qt128", ((1, 300),))):
        for B, T in shapes:
            cases.append(KernelCase(f"{lib}/mla_attention_forward/B{B}_T{T}", lib,
                                    "mla_attention_forward", mla_inputs(B, T),
                                    [Check(0, "y", BF16)], mla_reference()))
    for B, T in ((1, 1), (3, 17), (2, 130)):
        cases.append(KernelCase(f"mla_bf16/mla_attention_forward/B{B}_T{T}", "mla_bf16",
                                "mla_attention_forward", mla_inputs(B, T),
                                [Check(0, "y", BF16)], mla_reference()))
    for B, T in ((1, 1), (2, 130)):
        cases.append(KernelCase(f"mla_variants/mla_attention_lse/B{B}_T{T}", "mla_variants",
                                "mla_attention_lse", mla_inputs(B, T),
                                [Check(0, "y", BF16), Check(1, "lse", BF16)],
                                mla_reference(lse=True)))
    for B, T in ((3, 17), (1, 65)):
        cases.append(KernelCase(f"mla_variants/mla_attention_no_gate/B{B}_T{T}",
                                "mla_variants", "mla_attention_no_gate",
                                mla_inputs(B, T, gate=False),
                                [Check(0, "y", BF16), Check(1, "lse", BF16)],
                                mla_reference(lse=True)))
    return cases


def moe_inputs(N, E=16, d=64, F=32, shared=True, x=(-1, 1), router=1.0, bias=0.1,
               w=0.2, wd=0.2, salt=""):
    ins = [Input("x", (N, d), Uniform(*x)),
           Input("w_router", (E, d), Uniform(-router, router), salt),
           Input("bias", (E,), Uniform(-bias, bias), salt),
           Input("w_gate", (E, d, F), Uniform(-w, w)),
           Input("w_up", (E, d, F), Uniform(-w, w)),
           Input("w_down", (E, F, d), Uniform(-wd, wd))]
    if shared:
        ins += [Input("ws_gate", (d, F), Uniform(-w, w)),
                Input("ws_up", (d, F), Uniform(-w, w)),
                Input("ws_down", (F, d), Uniform(-wd, wd))]
    return ins


def moe_reference(top_k, scaling, extra=()):
    """moe-reference moe_ffn: y, load, next bias (results 0, 1, 2)."""
    def reference(ctx, paths):
        load, bias = ctx.scratch("ref_load.npy"), ctx.scratch("ref_next_bias.npy")
        y = ctx.moe_reference("moe_ffn", paths, [f"--top-k={top_k}", f"--scaling={scaling}",
                                                 f"--load={load}", f"--next-bias={bias}",
                                                 *extra])
        return {0: y, 1: load, 2: bias}
    return reference


def moe_checks(y_tol):
    return [Check(0, "y", y_tol), Check(1, "load", EXACT), Check(2, "next_bias", BIAS)]


def experts_given_reference(ctx, paths):
    """y = sum_j w_j Expert_{idx_j}(x): each expert by moe-reference glu_ffn
    on every token, combined here in fp64."""
    import numpy as np
    x, idx, w, wg, wu, wd = paths
    indices, weights = np.load(idx), np.load(w).astype(np.float64)
    gates, ups, downs = np.load(wg), np.load(wu), np.load(wd)
    y = np.zeros((indices.shape[0], downs.shape[2]))
    for e in range(gates.shape[0]):
        files = []
        for name, arr in (("g", gates), ("u", ups), ("d", downs)):
            files.append(ctx.scratch(f"expert{e}_{name}.npy"))
            np.save(files[-1], arr[e])
        ye = np.load(ctx.moe_reference("glu_ffn", [x] + files, ["--dtype=f64"],
                                       out=ctx.scratch(f"expert{e}_y.npy")))
        y += ((indices == e) * weights).sum(axis=1, keepdims=True) * ye
    out = ctx.scratch("ref_y.npy")
    np.save(out, y.astype(np.float32))
    return {0: out}


def moe_cases():
    cases = []
    for N in (0, 1, 63, 64, 65, 257, 1000):
        cases.append(KernelCase(f"moe_ffn/moe_ffn_forward/N{N}", "moe_ffn", "moe_ffn_forward",
                                moe_inputs(N), moe_checks(F32), moe_reference(4, 2.5),
                                margin=(4, 0)))
    for N in (1, 300):
        cases.append(KernelCase(f"moe_ffn_gemm/moe_ffn_forward/N{N}", "moe_ffn_gemm",
                                "moe_ffn_forward", moe_inputs(N),
                                [Check(0, "y", GEMM_BF16), Check(1, "load", EXACT),
                                 Check(2, "next_bias", BIAS)],
                                moe_reference(4, 2.5), margin=(4, 0)))
    cases.append(KernelCase(
        "moe_ffn/moe_ffn_forward/ties_N300", "moe_ffn", "moe_ffn_forward",
        moe_inputs(300, router=0, bias=0), moe_checks(F32), moe_reference(4, 2.5),
        note="every score ties (zero router and bias): experts 0-3 for every token "
             "(ties to the lower index), load [N, N, N, N, 0, ...], next bias 0"))
    cases.append(KernelCase(
        "moe_ffn_variants/moe_ffn_histogram/N300", "moe_ffn_variants", "moe_ffn_histogram",
        moe_inputs(300, router=0.3), moe_checks(F32),
        moe_reference(4, 2.5, ["--balance=histogram", "--bins=512"]), margin=(4, 0)))
    sign = moe_inputs(320, shared=False, x=(-4, 4), router=0.3, w=1)
    cases.append(KernelCase(
        "moe_ffn_variants/moe_ffn_sign_situ/N320", "moe_ffn_variants", "moe_ffn_sign_situ",
        sign, moe_checks(F32),
        moe_reference(2, 1, ["--balance=sign", "--rate=1e-3", "--activation=situ_glu",
                             "--gate-beta=4", "--up-beta=25"]), margin=(2, 0)))
    for name, E, F, k, scaling, Ns in (("moe_ffn_e8_top1", 8, 32, 1, 1, (300,)),
                                       ("moe_ffn_e64_top8", 64, 16, 8, 2.5, (1, 300))):
        for N in Ns:
            cases.append(KernelCase(
                f"moe_ffn_variants/{name}/N{N}", "moe_ffn_variants", name,
                moe_inputs(N, E=E, F=F, shared=False), moe_checks(F32),
                moe_reference(k, scaling), margin=(k, 0)))
    cases.append(KernelCase(
        "moe_ffn_variants/experts_given_routing/N100", "moe_ffn_variants",
        "experts_given_routing",
        [Input("x", (100, 64), Uniform(-1, 1)),
         Input("indices", (100, 4), TopIndices(16)),
         Input("weights", (100, 4), Uniform(0, 1)),
         Input("w_gate", (16, 64, 32), Uniform(-0.2, 0.2)),
         Input("w_up", (16, 64, 32), Uniform(-0.2, 0.2)),
         Input("w_down", (16, 32, 64), Uniform(-0.2, 0.2))],
        [Check(0, "y", F32)], experts_given_reference))
    for N in (1, 300, 777):
        ins = [Input("x", (N, 256), Uniform(-1, 1)),
               Input("w_router", (8, 256), Uniform(-0.11, 0.11)),
               Input("bias", (8,), Uniform(-0.05, 0.05)),
               Input("w_gate", (8, 256, 128), Uniform(-0.11, 0.11)),
               Input("w_up", (8, 256, 128), Uniform(-0.11, 0.11)),
               Input("w_down", (8, 128, 256), Uniform(-0.15, 0.15)),
               Input("ws_gate", (256, 128), Uniform(-0.11, 0.11)),
               Input("ws_up", (256, 128), Uniform(-0.11, 0.11)),
               Input("ws_down", (128, 256), Uniform(-0.15, 0.15))]
        cases.append(KernelCase(f"moe_ffn_bf16/moe_ffn_bf16/N{N}", "moe_ffn_bf16",
                                "moe_ffn_bf16", ins, moe_checks(BF16_OUT),
                                moe_reference(2, 2.5), margin=(2, 0)))
    return cases


def routing_reference(top_k, extra=()):
    """moe-reference moe_ffn with zero experts of width 1 for the routing
    results: weights, indices, load and next bias (results 0 to 3)."""
    def reference(ctx, paths):
        import numpy as np
        x, w_router, bias = paths
        E, d = np.load(w_router).shape
        zeros = []
        for name, shape in (("g", (E, d, 1)), ("u", (E, d, 1)), ("d", (E, 1, d))):
            zeros.append(ctx.scratch(f"zero_{name}.npy"))
            np.save(zeros[-1], np.zeros(shape, np.float32))
        out = {1: ctx.scratch("ref_indices.npy"), 2: ctx.scratch("ref_load.npy"),
               3: ctx.scratch("ref_next_bias.npy"), 0: ctx.scratch("ref_weights.npy")}
        ctx.moe_reference("moe_ffn", [x, w_router, bias] + zeros,
                          [f"--top-k={top_k}", "--scaling=2.5", f"--weights={out[0]}",
                           f"--indices={out[1]}", f"--load={out[2]}",
                           f"--next-bias={out[3]}", *extra],
                          out=ctx.scratch("ref_y_unused.npy"))
        return out
    return reference


def routing_checks(k):
    return [Check(0, "weights", ROUTE_W), Check(1, "indices", EXACT),
            Check(2, "load", EXACT), Check(3, "next_bias", BIAS),
            Check(4, "permuted_x", EXACT, fp64=False), Check(5, "offsets", EXACT, fp64=False),
            Check(6, "slot", EXACT, fp64=False)]


def routing_cases():
    cases = []
    for N in (1, 40):
        cases.append(KernelCase(
            f"routing/routing/N{N}", "routing", "routing",
            [Input("x", (N, 2048), Uniform(-1, 1)),
             Input("w_router", (64, 2048), Uniform(-0.04, 0.04)),
             Input("bias", (64,), Uniform(-0.05, 0.05))],
            routing_checks(8), routing_reference(8), margin=(8, 0)))
    for entry, extra, Ns in (("routing_f32_histogram", ["--balance=histogram", "--bins=512"],
                              (1, 300)),
                             ("routing_f32_sign", ["--balance=sign", "--rate=1e-3"], (300,))):
        for N in Ns:
            cases.append(KernelCase(
                f"routing/{entry}/N{N}", "routing", entry,
                [Input("x", (N, 64), Uniform(-1, 1)),
                 Input("w_router", (16, 64), Uniform(-0.3, 0.3)),
                 Input("bias", (16,), Uniform(-0.1, 0.1))],
                routing_checks(4), routing_reference(4, extra), margin=(4, 0)))
    # The fp32 router's register tiles with ragged edges (d % 32, E % 16).
    for N in (1, 300):
        cases.append(KernelCase(
            f"routing/routing_f32_ragged/N{N}", "routing", "routing_f32_ragged",
            [Input("x", (N, 200), Uniform(-1, 1)),
             Input("w_router", (24, 200), Uniform(-0.1, 0.1)),
             Input("bias", (24,), Uniform(-0.1, 0.1))],
            routing_checks(6), routing_reference(6), margin=(6, 0)))
    # More experts than one router tile: passes of 128 experts, an i16
    # position table (256: Kimi-Linear's count, bf16; 512: the limit).
    for entry, d, E, Ns in (("routing_e256", 128, 256, (1, 200)),
                            ("routing_f32_e512", 64, 512, (1, 100))):
        for N in Ns:
            cases.append(KernelCase(
                f"routing/{entry}/N{N}", "routing", entry,
                [Input("x", (N, d), Uniform(-1, 1)),
                 Input("w_router", (E, d), Uniform(-0.3, 0.3)),
                 Input("bias", (E,), Uniform(-0.1, 0.1))],
                routing_checks(8), routing_reference(8), margin=(8, 0)))
    return cases


def experts_reference(ctx, paths):
    """Each group of rows through moe-reference glu_ffn with its expert's
    weights."""
    import numpy as np
    xp, off, wg, wu, wd = paths
    rows, offsets = np.load(xp), np.load(off)
    gates, ups, downs = np.load(wg), np.load(wu), np.load(wd)
    y = np.zeros((rows.shape[0], downs.shape[2]), np.float32)
    for e in range(gates.shape[0]):
        lo, hi = int(offsets[e]), int(offsets[e + 1])
        if lo == hi:
            continue
        files = []
        for name, arr in (("x", rows[lo:hi]), ("g", gates[e]), ("u", ups[e]), ("d", downs[e])):
            files.append(ctx.scratch(f"group{e}_{name}.npy"))
            np.save(files[-1], arr)
        y[lo:hi] = np.load(ctx.moe_reference("glu_ffn", files, [],
                                             out=ctx.scratch(f"group{e}_y.npy")))
    out = ctx.scratch("ref_y.npy")
    np.save(out, y)
    return {0: out}


def experts_cases():
    cases = []
    for label, counts in (("ragged", (0, 1, 130, 7, 0, 64, 200, 33)),
                          ("one_group", (5, 0, 0, 0, 0, 0, 0, 0)),
                          ("empty", (0,) * 8)):
        rows = sum(counts)
        cases.append(KernelCase(
            f"experts/experts/{label}_R{rows}", "experts", "experts",
            [Input("xp", (rows, 256), Uniform(-1, 1)),
             Input("offsets", (9,), Offsets(counts)),
             Input("w_gate", (8, 256, 128), Uniform(-0.11, 0.11)),
             Input("w_up", (8, 256, 128), Uniform(-0.11, 0.11)),
             Input("w_down", (8, 128, 256), Uniform(-0.15, 0.15))],
            [Check(0, "y", BF16_OUT)], experts_reference,
            note="group sizes " + ", ".join(map(str, counts))))
    return cases


def mapped_cases():
    # Ragged token counts (3 x 37 = 111 rows: not a multiple of the eight
    # warps of a block) and one row.
    cases = []
    for B, T in ((3, 37), (1, 1), (2, 300)):
        cases.append(KernelCase(
            f"mapped/rms_norm/B{B}_T{T}", "mapped", "rms_norm",
            [Input("x", (B, T, 256), Uniform(-2, 2)), Input("w", (256,), Uniform(0.5, 1.5))],
            [Check(0, "y", F32)],
            lambda ctx, paths: {0: ctx.moe_reference("rms_norm", paths, [])}))
        cases.append(KernelCase(
            f"mapped/l2_norm/B{B}_T{T}", "mapped", "l2_norm",
            [Input("x", (B, T, 64), Uniform(-1, 1))], [Check(0, "y", F32)],
            lambda ctx, paths: {0: ctx.moe_reference("l2_norm", paths, [])}))
        cases.append(KernelCase(
            f"mapped/cross_entropy/B{B}_T{T}", "mapped", "cross_entropy",
            [Input("z", (B, T, 300), Uniform(-4, 4)),
             Input("labels", (B, T), Integers(0, 300, ignore_every=5 if B * T > 1 else 0))],
            [Check(0, "loss", F32)],
            lambda ctx, paths: {0: ctx.moe_reference("cross_entropy", paths, [])}))
        cases.append(KernelCase(
            f"mapped/embedding/B{B}_T{T}", "mapped", "embedding",
            [Input("tokens", (B, T), Integers(0, 300)), Input("table", (300, 48), Uniform(-1, 1))],
            [Check(0, "h", EXACT)],
            lambda ctx, paths: {0: ctx.moe_reference("embedding", paths, [])}))
        # The table's gradient sums each row's terms in token order, as the
        # CPU does: equal to it bit for bit. Ids outside [0, 300) add nothing.
        cases.append(KernelCase(
            f"mapped/embedding_grad/B{B}_T{T}", "mapped", "embedding_grad",
            [Input("dh", (B, T, 48), Uniform(-1, 1)),
             Input("tokens", (B, T), Integers(-3, 303)),
             Input("table", (300, 48), Uniform(-1, 1))],
            [Check(0, "dtable", EXACT, fp64_tol=F32)],
            lambda ctx, paths: {0: ctx.moe_reference(
                "embedding_grad", [paths[1], paths[2], paths[0]], [])}))
    # From 4096 tokens on, the tokens are cut into segments of whole
    # 256-token steps (at least 2048 tokens each, at most 32), each summed in
    # token order, then the segments in order: another order than the CPU's.
    # Here 16 segments over ids that hit 13 rows (and 3 ids outside the
    # table), so each segment's row sums run long.
    cases.append(KernelCase(
        "mapped/embedding_grad_segments/B4_T8192", "mapped", "embedding_grad",
        [Input("dh", (4, 8192, 48), Uniform(-1, 1)),
         Input("tokens", (4, 8192), Integers(-3, 13)),
         Input("table", (300, 48), Uniform(-1, 1))],
        [Check(0, "dtable", F32)],
        lambda ctx, paths: {0: ctx.moe_reference(
            "embedding_grad", [paths[1], paths[2], paths[0]], [])}))
    # Few ids (every token hits one of 7 rows), a width of 600 (three
    # columns per thread, the last partly), i64 ids and a dynamic table; two
    # segments.
    cases.append(KernelCase(
        "mapped/embedding_grad_wide/N5000", "mapped", "embedding_grad_wide",
        [Input("dh", (5000, 600), Uniform(-1, 1)),
         Input("ids", (5000,), Integers(0, 7)),
         Input("table", (7, 600), Uniform(-1, 1))],
        [Check(0, "dtable", F32)],
        lambda ctx, paths: {0: ctx.moe_reference(
            "embedding_grad", [paths[1], paths[2], paths[0]], [])}))
    return cases


SITU = ["--activation=situ_glu", "--gate-beta=4", "--up-beta=25"]


def grouped_reference(extra=()):
    """Each group of rows through moe-reference glu_ffn (fp64) with its
    expert's weights and the activation options `extra`."""
    def reference(ctx, paths):
        import numpy as np
        xp, off, wg, wu, wd = paths
        rows, offsets = np.load(xp), np.load(off)
        gates, ups, downs = np.load(wg), np.load(wu), np.load(wd)
        y = np.zeros((rows.shape[0], downs.shape[2]), np.float64)
        for e in range(gates.shape[0]):
            lo, hi = int(offsets[e]), int(offsets[e + 1])
            if lo == hi:
                continue
            files = []
            for name, arr in (("x", rows[lo:hi]), ("g", gates[e]), ("u", ups[e]),
                              ("d", downs[e])):
                files.append(ctx.scratch(f"group{e}_{name}.npy"))
                np.save(files[-1], arr)
            y[lo:hi] = np.load(ctx.moe_reference("glu_ffn", files, ["--dtype=f64", *extra],
                                                 out=ctx.scratch(f"group{e}_y.npy")))
        out = ctx.scratch("ref_y.npy")
        np.save(out, y.astype(np.float32))
        return {0: out}
    return reference


def gemm_reference(transposed=False, init=0.0, chain=False):
    """The fp64 product of the input files: x [..., K] (x / 3 in f32 first
    for the chain) times w [K, N] (or w [N, K] transposed), plus init; the
    chain multiplies by its second weight in fp64 too."""
    def reference(ctx, paths):
        import numpy as np
        x = np.load(paths[0]).astype(np.float64)
        w = np.load(paths[1]).astype(np.float64)
        if chain:
            x = (np.load(paths[0]).astype(np.float32) * np.float32(1 / 3)).astype(np.float64)
        y = init + x @ (w.T if transposed else w)
        if chain:
            y = y @ np.load(paths[2]).astype(np.float64)
        out = ctx.scratch("ref_y.npy")
        np.save(out, y.astype(np.float32))
        return {0: out}
    return reference


def wgrad_reference(init=0.0, transposed=False):
    """The fp64 weight gradient of the input files: x [rows..., m] and
    dy [rows..., n] summed over the rows, init + x^T dy ([m, n]), or its
    transpose."""
    def reference(ctx, paths):
        import numpy as np
        x = np.load(paths[0]).astype(np.float64)
        dy = np.load(paths[1]).astype(np.float64)
        x = x.reshape(-1, x.shape[-1])
        dy = dy.reshape(-1, dy.shape[-1])
        g = x.T @ dy
        out = ctx.scratch("ref_g.npy")
        np.save(out, (init + (g.T if transposed else g)).astype(np.float32))
        return {0: out}
    return reference


def shared_reference(ctx, paths):
    """moe-reference glu_ffn (fp64) with SiTU-GLU."""
    return {0: ctx.moe_reference("glu_ffn", paths, SITU)}


def dense_reference(ctx, paths):
    """moe-reference glu_ffn (fp64, SiTU-GLU) on the [B * T, d] rows."""
    import numpy as np
    x = np.load(paths[0])
    rows = ctx.scratch("dense_rows.npy")
    np.save(rows, x.reshape(-1, x.shape[-1]))
    y = np.load(ctx.moe_reference("glu_ffn", [rows, *paths[1:]], SITU))
    out = ctx.scratch("ref_y.npy")
    np.save(out, y.reshape(*x.shape[:-1], y.shape[-1]))
    return {0: out}


def experts_combine_reference(ctx, paths):
    """y = sum_j w_j Expert_{idx_j}(x) + Shared(x): every expert and the
    shared expert by moe-reference glu_ffn (fp64, SiTU-GLU) on every token,
    combined here in fp64."""
    import numpy as np
    x, idx, w, wg, wu, wd, sg, su, sd = paths
    indices, weights = np.load(idx), np.load(w).astype(np.float64)
    gates, ups, downs = np.load(wg), np.load(wu), np.load(wd)
    y = np.load(ctx.moe_reference("glu_ffn", [x, sg, su, sd], ["--dtype=f64", *SITU],
                                  out=ctx.scratch("shared_y.npy"))).astype(np.float64)
    for e in range(gates.shape[0]):
        files = []
        for name, arr in (("g", gates), ("u", ups), ("d", downs)):
            files.append(ctx.scratch(f"expert{e}_{name}.npy"))
            np.save(files[-1], arr[e])
        ye = np.load(ctx.moe_reference("glu_ffn", [x] + files, ["--dtype=f64", *SITU],
                                       out=ctx.scratch(f"expert{e}_y.npy")))
        y += ((indices == e) * weights).sum(axis=1, keepdims=True) * ye
    out = ctx.scratch("ref_y.npy")
    np.save(out, y.astype(np.float32))
    return {0: out}


def combine_reference(ctx, paths):
    """result[n] = sum_i w[n, i] out[m] with source_slot[m] = n k + i, fp64."""
    import numpy as np
    out, slot, w = (np.load(p) for p in paths)
    weights = w.astype(np.float64)
    n, k = weights.shape
    row_of = np.empty(n * k, np.int64)
    row_of[slot] = np.arange(n * k)
    rows = out.astype(np.float64)[row_of].reshape(n, k, -1)
    y = (weights[:, :, None] * rows).sum(axis=1)
    path = ctx.scratch("ref_y.npy")
    np.save(path, y.astype(np.float32))
    return {0: path}


def experts_f32_cases():
    """f32 experts and combines (matmul-precision=bf16). Gate/up weights of
    the SiTU-GLU cases are large enough (x Wg, x Wu of standard deviation
    about 16) that both caps act: SiTU saturates at 4, the up cap bends."""
    cases = []
    for label, counts in (("ragged", (0, 1, 130, 7, 0, 64, 200, 33)),
                          ("one_group", (5, 0, 0, 0, 0, 0, 0, 0)),
                          ("empty", (0,) * 8)):
        rows = sum(counts)
        for entry, w, extra in (("experts_f32", 0.11, ()), ("experts_f32_situ", 3.0, SITU)):
            if label != "ragged" and entry == "experts_f32_situ":
                continue
            cases.append(KernelCase(
                f"experts_f32/{entry}/{label}_R{rows}", "experts_f32", entry,
                [Input("xp", (rows, 256), Uniform(-1, 1)),
                 Input("offsets", (9,), Offsets(counts)),
                 Input("w_gate", (8, 256, 128), Uniform(-w, w)),
                 Input("w_up", (8, 256, 128), Uniform(-w, w)),
                 Input("w_down", (8, 128, 256), Uniform(-0.15, 0.15))],
                [Check(0, "y", F32_BF16_GEMM)], grouped_reference(extra),
                note="group sizes " + ", ".join(map(str, counts))))
    for N in (1, 300):
        cases.append(KernelCase(
            f"experts_f32/shared_f32_situ/N{N}", "experts_f32", "shared_f32_situ",
            [Input("x", (N, 256), Uniform(-1, 1)),
             Input("ws_gate", (256, 128), Uniform(-3, 3)),
             Input("ws_up", (256, 128), Uniform(-3, 3)),
             Input("ws_down", (128, 256), Uniform(-0.15, 0.15))],
            [Check(0, "y", F32_BF16_GEMM)], shared_reference))
    cases.append(KernelCase(
        "experts_f32/dense_f32_situ/B2_T150", "experts_f32", "dense_f32_situ",
        [Input("x", (2, 150, 256), Uniform(-1, 1)),
         Input("w_gate", (256, 192), Uniform(-3, 3)),
         Input("w_up", (256, 192), Uniform(-3, 3)),
         Input("w_down", (192, 256), Uniform(-0.15, 0.15))],
        [Check(0, "y", F32_BF16_GEMM)], dense_reference,
        note="[B, T, d] input (a model's dense layer): collapsed to 300 rows; "
             "F = 192, three gate/up column tiles"))
    for N in (1, 77, 300):
        cases.append(KernelCase(
            f"experts_f32/experts_combine_f32/N{N}", "experts_f32", "experts_combine_f32",
            [Input("x", (N, 256), Uniform(-1, 1)),
             Input("indices", (N, 4), TopIndices(8)),
             Input("weights", (N, 4), Uniform(0, 1)),
             Input("w_gate", (8, 256, 128), Uniform(-3, 3)),
             Input("w_up", (8, 256, 128), Uniform(-3, 3)),
             Input("w_down", (8, 128, 256), Uniform(-0.15, 0.15)),
             Input("ws_gate", (256, 128), Uniform(-3, 3)),
             Input("ws_up", (256, 128), Uniform(-3, 3)),
             Input("ws_down", (128, 256), Uniform(-0.15, 0.15))],
            [Check(0, "y", F32_BF16_GEMM)], experts_combine_reference,
            note="routing given as data (top-4 of 8, ragged groups); SiTU-GLU; "
                 "the shared expert's sum fused into the combine"))
    for N in (1, 300):
        cases.append(KernelCase(
            f"experts_f32/combine_f32/N{N}", "experts_f32", "combine_f32",
            [Input("expert_out", (4 * N, 256), Uniform(-2, 2)),
             Input("source_slot", (4 * N,), Permutation()),
             Input("weights", (N, 4), Uniform(0, 1))],
            [Check(0, "y", F32)], combine_reference,
            note="no matmul: fp32 throughout"))
    for N in (1, 300, 777):
        ins = [Input("x", (N, 256), Uniform(-1, 1)),
               Input("w_router", (8, 256), Uniform(-0.11, 0.11)),
               Input("bias", (8,), Uniform(-0.05, 0.05)),
               Input("w_gate", (8, 256, 128), Uniform(-0.11, 0.11)),
               Input("w_up", (8, 256, 128), Uniform(-0.11, 0.11)),
               Input("w_down", (8, 128, 256), Uniform(-0.15, 0.15)),
               Input("ws_gate", (256, 128), Uniform(-0.11, 0.11)),
               Input("ws_up", (256, 128), Uniform(-0.11, 0.11)),
               Input("ws_down", (128, 256), Uniform(-0.15, 0.15))]
        cases.append(KernelCase(f"moe_ffn_f32/moe_ffn_f32/N{N}", "moe_ffn_f32",
                                "moe_ffn_f32", ins, moe_checks(F32_BF16_GEMM),
                                moe_reference(2, 2.5), margin=(2, 0)))
    return cases


def gemm_cases():
    cases = []
    for B, T in ((1, 1), (1, 300), (2, 130), (3, 700)):
        cases.append(KernelCase(
            f"gemm/project_f32/B{B}_T{T}", "gemm", "project_f32",
            [Input("x", (B, T, 256), Uniform(-1, 1)),
             Input("w", (256, 192), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference()))
    for M in (1, 300, 777):
        cases.append(KernelCase(
            f"gemm/project_bf16_t/M{M}", "gemm", "project_bf16_t",
            [Input("x", (M, 512), Uniform(-1, 1)),
             Input("w", (128, 512), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference(transposed=True)))
    for M in (300, 129):
        cases.append(KernelCase(
            f"gemm/project_mixed/M{M}", "gemm", "project_mixed",
            [Input("x", (M, 128), Uniform(-1, 1)),
             Input("w", (128, 80), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference()))
        cases.append(KernelCase(
            f"gemm/project_mixed_t/M{M}", "gemm", "project_mixed_t",
            [Input("x", (M, 64), Uniform(-1, 1)),
             Input("w", (256, 64), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference(transposed=True)))
    for M in (1, 300):
        cases.append(KernelCase(
            f"gemm/matmul_k32/M{M}", "gemm", "matmul_k32",
            [Input("x", (M, 32), Uniform(-1, 1)),
             Input("w", (32, 512), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference(init=0.5)))
    for M in (1, 300):
        cases.append(KernelCase(
            f"gemm/project_k80/M{M}", "gemm", "project_k80",
            [Input("x", (M, 80), Uniform(-1, 1)),
             Input("w", (80, 256), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference()))
        cases.append(KernelCase(
            f"gemm/project_k40_t/M{M}", "gemm", "project_k40_t",
            [Input("x", (M, 40), Uniform(-1, 1)),
             Input("w", (96, 40), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference(transposed=True)))
    for M in (300, 1000):
        cases.append(KernelCase(
            f"gemm/rounded_chain/M{M}", "gemm", "rounded_chain",
            [Input("x", (M, 256), Uniform(-1, 1)),
             Input("w1", (256, 64), Uniform(-0.1, 0.1)),
             Input("w2", (64, 256), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_BF16)], gemm_reference(chain=True),
            note="x / 3 and the hidden product are not exact in bf16: both GEMMs "
                 "round their A operand"))
    for B, T in ((1, 1), (2, 300)):
        cases.append(KernelCase(
            f"gemm/input_grad/B{B}_T{T}", "gemm", "input_grad",
            [Input("dy", (B, T, 256), Uniform(-1, 1)),
             Input("w", (128, 256), Uniform(-0.1, 0.1))],
            [Check(0, "y", GEMM_EXACT_IN)], gemm_reference(transposed=True)))
    # Weight gradients: rows from one (a single split, one row) to several
    # splits of 256 rows with a ragged last one, and 2 x 2048 (the splits
    # sized so that tiles x splits reach 264 blocks).
    for B, T in ((1, 1), (1, 300), (3, 259), (2, 2048)):
        cases.append(KernelCase(
            f"gemm/wgrad_f32/B{B}_T{T}", "gemm", "wgrad_f32",
            [Input("x", (B, T, 256), Uniform(-1, 1)),
             Input("dy", (B, T, 80), Uniform(-0.1, 0.1))],
            [Check(0, "g", GEMM_EXACT_IN)], wgrad_reference()))
    # No rows: no partial kernel, the gradient is the filled 0.5.
    cases.append(KernelCase(
        "gemm/wgrad_bf16/M0", "gemm", "wgrad_bf16",
        [Input("x", (0, 64), Uniform(-1, 1)),
         Input("dy", (0, 128), Uniform(-0.1, 0.1))],
        [Check(0, "g", GEMM_EXACT_IN)], wgrad_reference(init=0.5)))
    for M in (31, 777, 5000):
        cases.append(KernelCase(
            f"gemm/wgrad_bf16/M{M}", "gemm", "wgrad_bf16",
            [Input("x", (M, 64), Uniform(-1, 1)),
             Input("dy", (M, 128), Uniform(-0.1, 0.1))],
            [Check(0, "g", GEMM_EXACT_IN)], wgrad_reference(init=0.5)))
        cases.append(KernelCase(
            f"gemm/wgrad_mixed_t/M{M}", "gemm", "wgrad_mixed_t",
            [Input("x", (M, 128), Uniform(-1, 1)),
             Input("dy", (M, 192), Uniform(-0.1, 0.1))],
            [Check(0, "g", GEMM_EXACT_IN)], wgrad_reference(transposed=True)))
    return cases


def model_fn_reference(ctx, paths):
    """test/tools/model-reference/model_reference.py loss: the fp64 NumPy
    model on the same parameters and batch."""
    out = ctx.scratch("ref_loss.npy")
    ctx.run_python(["test/tools/model-reference/model_reference.py", "loss", MODEL,
                    *paths, "-o", out], "the fp64 model reference")
    return {0: out}


def model_fn_cases():
    # T = 72 crosses a KDA chunk; T = 130 two (as the CPU's
    # kimi-tiny-model-reference.test, with every 7th label ignored).
    return [KernelCase(
        f"model_fn/kimi_tiny/B{B}_T{T}", "kimi_tiny_fn", "kimi_tiny",
        [Input("params", (7987020,), ModelParams(MODEL)),
         Input("tokens", (B, T), Integers(0, 256)),
         Input("labels", (B, T), Integers(0, 256, ignore_every=7))],
        [Check(0, "loss", MODEL_FN)], model_fn_reference, timeout=240)
        for B, T in ((2, 72), (1, 130))]


# ---------------------------------------------------------------------------
# Gradient kernels: fp32 on CUDA cores (no kernel generator takes them; no
# tensor cores), so the bars are fp32 ones.
# ---------------------------------------------------------------------------

EXPERT_GRAD = Tol(rtol=5e-6, why="expert_ffn_grad in fp32 on CUDA cores (tile "
                  "GEMMs, no tensor cores), each expert's rows split over blocks "
                  "whose fp32 partial weight gradients are summed in split order: "
                  "another summation order than the CPU's (one pass per expert). "
                  "The CPU back end is 7e-8 to 8.2e-7 from fp64 on these cases "
                  "(the worst dw_gate at N = 2000, 500 rows per expert); an H200 "
                  "gave 4e-8 to 8.2e-7 from the CPU and 7e-8 to 4.4e-7 from fp64; "
                  "5e-6 leaves 6x")
EXPERT_GRAD_TC = Tol(rtol=5e-3, why="expert_ffn_grad on bf16 tensor cores "
                     "(-moe-generate-expert-grad-kernels): x, dy and the weights "
                     "rounded to bf16, dh in fp32, h, da and du rounded to bf16 "
                     "before the GEMMs that read them, fp32 accumulation. An "
                     "H200 gave 1.2e-3 to 2.5e-3 from fp64 (and the same from "
                     "the CPU) on these cases; 5e-3 leaves 2x")
ROUTING_GRAD = Tol(rtol=1e-6, why="dispatch_grad sums a token's k slot rows "
                   "(bf16-exact inputs: exact in fp32 but for an occasional last "
                   "bit), combine_grad's dyp is one product per element and its "
                   "dw a 32-term fp32 dot product: the CPU back end is 0 (dx, "
                   "dyp) and 7.4e-8 (dw) from fp64, an H200 0 and 7.4e-8 from the "
                   "CPU (3.7e-8 from fp64); the worst-case rounding of the dot "
                   "products is about 2.5e-6 of max|dw|, so 1e-6 is a bar on the "
                   "typical error with 13x over the observed")
KDA_GRAD = Tol(rtol=2e-5, why="the chunked KDA backward (chunk 64, sub-chunk 16) "
               "in fp32 on CUDA cores, the CPU's tiles in another summation "
               "order: the CPU back end is 1e-7 to 3.9e-6 from fp64 on these "
               "cases (the worst dq; a random initial state and final-state "
               "adjoint of entries up to 1 make the gradients large, about 1); "
               "an H200 gave up to 4.0e-6 from the CPU and 1.4e-6 from fp64 "
               "(dq); 2e-5 leaves 5x and is the CPU suite's bar "
               "(test/Integration/CPU/kda-grad.mlir)")
KDA_GRAD_NO_STATE = Tol(rtol=1e-4, why="as KDA_GRAD without an initial state or "
                        "final-state adjoint: the gradients are 2 to 5x smaller "
                        "(0.1 to 0.5) at the same absolute error, so the CPU back "
                        "end is 2e-7 to 2.6e-5 from fp64 (dk the worst; dq and dg "
                        "2.3e-5) and an H200 up to 2.4e-5 from the CPU (5.6e-6 from "
                        "fp64); 1e-4 leaves 4x")
KDA_GRAD_TF32 = Tol(rtol=4e-3, why="the chunked KDA backward with its tiles' "
                    "contractions on tensor cores (operands rounded to tf32, "
                    "2^-11 relative, fp32 accumulation) through about ten "
                    "chained products per chunk: an H100 gave 9.5e-5 (dq) to "
                    "1.5e-3 (dk) from the CPU's fp32 and from fp64; 4e-3 "
                    "leaves 2.7x and stays 5x below the bf16 bar")
KDA_GRAD_TINY = Tol(atol=1e-30, why="dg and dS0 under about -130 nats of decay "
                    "per step: every state decays to nothing within a step, so "
                    "they are about 1e-42 (subnormal in fp32; the CPU back end is "
                    "1e-45 to 5e-42 from fp64, an H200 1e-45 and 0 from the CPU), "
                    "and a GPU that flushes subnormals to zero gives 0: bounded "
                    "absolutely, far below the other gradients of the case (0.1 "
                    "to 8) and far above 0 for a wrong (dense) diagonal path, "
                    "which gives non-finite values")


def expert_grad_reference(E, extra=()):
    """moe-reference expert_ffn_grad (fp64): it dispatches x by the indices
    itself (rows stable by expert, as moe.dispatch) and returns dxp and the
    three weight gradients."""
    def reference(ctx, paths):
        out = {1: ctx.scratch("ref_dw_gate.npy"), 2: ctx.scratch("ref_dw_up.npy"),
               3: ctx.scratch("ref_dw_down.npy")}
        out[0] = ctx.moe_reference("expert_ffn_grad", paths,
                                   [f"--dw-gate={out[1]}", f"--dw-up={out[2]}",
                                    f"--dw-down={out[3]}", f"--num-experts={E}", *extra])
        return out
    return reference


def expert_grad_inputs(N, E, K, F, indices, d=32, x=1.0, w=0.2, salt=""):
    return [Input("x", (N, d), Uniform(-x, x)),
            Input("indices", (N, K), indices),
            Input("w_gate", (E, d, F), Uniform(-w, w), salt),
            Input("w_up", (E, d, F), Uniform(-w, w), salt),
            Input("w_down", (E, F, d), Uniform(-0.2, 0.2)),
            Input("dyp", (N * K, d), Uniform(-1, 1))]


def expert_grad_checks(tol):
    return [Check(0, "dxp", tol), Check(1, "dw_gate", tol), Check(2, "dw_up", tol),
            Check(3, "dw_down", tol)]


def dispatch_grad_reference(E):
    def reference(ctx, paths):
        _, idx, dxp = paths
        return {0: ctx.moe_reference("dispatch_grad", [dxp, idx], [f"--num-experts={E}"])}
    return reference


def combine_grad_reference(E):
    def reference(ctx, paths):
        _, idx, yp, w, dy = paths
        dw = ctx.scratch("ref_dw.npy")
        dyp = ctx.moe_reference("combine_grad", [yp, idx, w, dy],
                                [f"--d-weights={dw}", f"--num-experts={E}"])
        return {0: dyp, 1: dw}
    return reference


def indices_note(indices, E):
    if isinstance(indices, TopIndices):
        return "" if indices.experts == E else \
            f"; only experts 0-{indices.experts - 1} chosen, the others empty"
    return (f"; experts drawn from 0-{indices.high - 1}, repeats within a token "
            "allowed, the others empty")


def routing_grad_cases():
    """The MoE FFN's gradient ops on the rows moe.dispatch makes (the
    template's functions dispatch x by the indices first). Indices limited
    to the first experts leave the others empty (as the CPU test's --high);
    Integers also lets a token pick one expert twice (which a dispatch
    allows), TopIndices picks k distinct experts (as the router does)."""
    cases = []
    swiglu = ["--activation=swiglu"]
    for N, indices, label in ((0, Integers(0, 16), "N0"),
                              (1, TopIndices(16), "N1"),
                              (75, Integers(0, 12), "N75_repeats_E12"),
                              (300, TopIndices(11), "N300_E11"),
                              (2000, TopIndices(16), "N2000")):
        cases.append(KernelCase(
            f"moe_grad/expert_grad/{label}", "moe_grad", "expert_grad",
            expert_grad_inputs(N, 16, 4, 16, indices), expert_grad_checks(EXPERT_GRAD),
            expert_grad_reference(16, swiglu),
            note=f"{N} tokens, top-4 of 16 experts" + indices_note(indices, 16)))
    for N, indices, label, x, w in ((75, Integers(0, 11), "N75_repeats_E11", 1.0, 0.2),
                                    (300, TopIndices(16), "N300_caps", 2.0, 3.0)):
        cases.append(KernelCase(
            f"moe_grad_situ/expert_grad/{label}", "moe_grad_situ", "expert_grad",
            expert_grad_inputs(N, 16, 2, 16, indices, x=x, w=w),
            expert_grad_checks(EXPERT_GRAD), expert_grad_reference(16, SITU),
            note="SiTU-GLU (gate_beta 4, up_beta 25), top-2" + indices_note(indices, 16) + (
                "; x in +-2, gate/up weights in +-3: pre-activations of standard "
                "deviation about 11, so SiTU saturates and the up cap bends"
                if w > 1 else "")))
    cases.append(KernelCase(
        "moe_grad_d256/expert_grad/N150_E3", "moe_grad_d256", "expert_grad",
        expert_grad_inputs(150, 4, 2, 128, TopIndices(3), d=256, w=0.11),
        expert_grad_checks(EXPERT_GRAD_TC), expert_grad_reference(4, swiglu),
        note="kimi-tiny's expert width (d = 256, F = 128), 4 experts, top-2 of "
             "the first 3: expert 3 empty (zero weight gradients)"))
    for N, indices, label in ((0, Integers(0, 16), "N0"),
                              (1, TopIndices(16), "N1"),
                              (300, TopIndices(11), "N300_E11"),
                              (2048, TopIndices(16), "N2048")):
        cases.append(KernelCase(
            f"moe_grad_tc/expert_grad/{label}", "moe_grad_tc", "expert_grad",
            expert_grad_inputs(N, 16, 4, 128, indices, d=256, w=0.11),
            expert_grad_checks(EXPERT_GRAD_TC), expert_grad_reference(16, swiglu),
            note=f"{N} tokens, top-4 of 16 experts, d = 256, F = 128"
                 + indices_note(indices, 16)))
    for N, label, x, w in ((700, "N700", 1.0, 0.15), (300, "N300_caps", 2.0, 3.0)):
        cases.append(KernelCase(
            f"moe_grad_tc_situ/expert_grad/{label}", "moe_grad_tc_situ", "expert_grad",
            expert_grad_inputs(N, 8, 2, 64, TopIndices(8), d=128, x=x, w=w),
            expert_grad_checks(EXPERT_GRAD_TC), expert_grad_reference(8, SITU),
            note="SiTU-GLU (gate_beta 4, up_beta 25), top-2 of 8, d = 128, F = 64"
                 + ("; x in +-2, gate/up weights in +-3: SiTU saturates and the "
                    "up cap bends" if w > 1 else "")))
    for N, indices, label in ((1, TopIndices(16), "N1"),
                              (300, Integers(0, 12), "N300_repeats_E12")):
        cases.append(KernelCase(
            f"moe_grad/dispatch_grad/{label}", "moe_grad", "dispatch_grad",
            [Input("x", (N, 32), Uniform(-1, 1)), Input("indices", (N, 4), indices),
             Input("dxp", (N * 4, 32), Uniform(-1, 1))],
            [Check(0, "dx", ROUTING_GRAD)], dispatch_grad_reference(16),
            note="x only orders the rows (its values are unused)"
                 + indices_note(indices, 16)))
        cases.append(KernelCase(
            f"moe_grad/combine_grad/{label}", "moe_grad", "combine_grad",
            [Input("x", (N, 32), Uniform(-1, 1)), Input("indices", (N, 4), indices),
             Input("yp", (N * 4, 32), Uniform(-2, 2)), Input("weights", (N, 4), Uniform(0, 1)),
             Input("dy", (N, 32), Uniform(-1, 1))],
            [Check(0, "dyp", ROUTING_GRAD), Check(1, "dw", ROUTING_GRAD)],
            combine_grad_reference(16),
            note="yp: expert outputs in dispatch order; x only orders the rows"
                 + indices_note(indices, 16)))
    return cases


def kda_grad_inputs(B, T, state=True, **kw):
    ins = kda_inputs(B, T, **kw)
    if state:
        ins.append(Input("s0", (B, 4, 64, 64), Uniform(-1, 1)))
    ins.append(Input("do", (B, T, 4, 64), Uniform(-1, 1)))
    if state:
        ins.append(Input("ds", (B, 4, 64, 64), Uniform(-1, 1)))
    return ins


def kda_grad_reference(gate, g_min=None, state=True, extra=()):
    """moe-reference kda-grad (the per-token backward of ALGORITHMS.md
    section 1.3 in fp64) at q, k normalised by moe-reference l2_norm and the
    log decay of moe-reference decay_gate, both in fp64: the function's
    fp64 reference from its inputs."""
    def reference(ctx, paths):
        import os
        q, k, v, z, beta, a_log, dt_bias = paths[:7]
        qn = ctx.moe_reference("l2_norm", [q], ["--dtype=f64"], out=ctx.scratch("ref_q.npy"))
        kn = ctx.moe_reference("l2_norm", [k], ["--dtype=f64"], out=ctx.scratch("ref_k.npy"))
        g = ctx.moe_reference("decay_gate", [z, dt_bias, a_log],
                              ["--dtype=f64", f"--gate={gate}"]
                              + ([f"--g-min={g_min}"] if g_min is not None else []),
                              out=ctx.scratch("ref_g.npy"))
        options = ["--dtype=f64", *extra]
        if state:
            s0, do, ds = paths[7:]
            options += [f"--initial-state={s0}", f"--final-state-adjoint={ds}"]
        else:
            (do,) = paths[7:]
        out = ctx.scratch("ref_kda_grad")
        os.makedirs(out)
        ctx.moe_reference("kda-grad", [qn, kn, v, g, beta, do], options, out=out)
        return {i: os.path.join(out, f"{name}.npy")
                for i, name in enumerate(("dq", "dk", "dv", "dg", "dbeta", "ds0"))}
    return reference


def kda_grad_checks(tol=None, tiny=None):
    tol = tol or KDA_GRAD
    return [Check(0, "dq", tol), Check(1, "dk", tol), Check(2, "dv", tol),
            Check(3, "dg", tiny or tol), Check(4, "dbeta", tol), Check(5, "ds0", tiny or tol)]


def kda_grad_cases():
    """moe.kda_grad with a random initial state, output adjoint and
    final-state adjoint: one token, one chunk, a chunk and a part (B = 2),
    four chunks and a part (test/Integration/CPU/kda-grad.mlir at H = 4,
    K = V = 64)."""
    cases = []
    for B, T in ((1, 1), (1, 64), (2, 100), (1, 200)):
        cases.append(KernelCase(
            f"kda_grad/kda_grad_bounded/B{B}_T{T}", "kda_grad", "kda_grad_bounded",
            kda_grad_inputs(B, T), kda_grad_checks(), kda_grad_reference("bounded", -5)))
    cases.append(KernelCase(
        "kda_grad_softplus/kda_grad_softplus/B1_T100", "kda_grad_softplus",
        "kda_grad_softplus",
        kda_grad_inputs(1, 100), kda_grad_checks(), kda_grad_reference("softplus")))
    cases.append(KernelCase(
        "kda_grad_softplus/kda_grad_softplus/strong_decay_B1_T100", "kda_grad_softplus",
        "kda_grad_softplus",
        kda_grad_inputs(1, 100, z=(20, 40), a_log=(1.5, 1.6)),
        kda_grad_checks(tiny=KDA_GRAD_TINY), kda_grad_reference("softplus"),
        note="about -130 nats of decay per step: the run-time guard sends every "
             "diagonal tile to the per-position path; every state decays to "
             "nothing within a step, so dg and dS0 are below fp32's normal range "
             "(test/Integration/CPU/kda-grad.mlir)"))
    cases.append(KernelCase(
        "kda_grad/kda_grad_value_major/B1_T100", "kda_grad", "kda_grad_value_major",
        kda_grad_inputs(1, 100, state=False), kda_grad_checks(KDA_GRAD_NO_STATE),
        kda_grad_reference("bounded", -5, state=False,
                           extra=["--scale=0.3", "--state-layout=value_major"]),
        note="value-major states, scale 0.3, no initial state or final-state adjoint"))
    for B, T in ((1, 64), (2, 100), (1, 200)):
        cases.append(KernelCase(
            f"kda_grad_tf32/kda_grad_bounded/B{B}_T{T}", "kda_grad_tf32",
            "kda_grad_bounded", kda_grad_inputs(B, T), kda_grad_checks(KDA_GRAD_TF32),
            kda_grad_reference("bounded", -5)))
    cases.append(KernelCase(
        "kda_grad_tf32/kda_grad_value_major/B1_T100", "kda_grad_tf32",
        "kda_grad_value_major", kda_grad_inputs(1, 100, state=False),
        kda_grad_checks(KDA_GRAD_TF32),
        kda_grad_reference("bounded", -5, state=False,
                           extra=["--scale=0.3", "--state-layout=value_major"])))
    cases.append(KernelCase(
        "kda_grad_tf32/kda_grad_softplus/B1_T100", "kda_grad_tf32",
        "kda_grad_softplus", kda_grad_inputs(1, 100), kda_grad_checks(KDA_GRAD_TF32),
        kda_grad_reference("softplus")))
    return cases


COMMON_GRAD = Tol(rtol=5e-6, why="fp32 gradients of the small layers; the weight "
                  "gradients sum up to 1,200 tokens in runs of 64, then the runs' "
                  "partials by a warp, where the CPU sums in token order: on an "
                  "H200 up to 1.8e-6 from the CPU (the AttnRes query gradient at "
                  "2 x 600) and 3.9e-7 from fp64; the CPU is up to 1.8e-6 from fp64")


def common_grad_reference(ctx, paths):
    """moe-reference's fp64 gradients of the ops of @all, in its result order
    (moe_reference passes `out` as the last -o)."""
    (dg, z, b, a, dq, q, dy, x, w, cw, tokens, table, v1, v2, u) = paths
    out = lambda name: ctx.scratch(f"ref_{name}.npy")
    f64 = ["--dtype=f64"]
    refs = {}
    names = ["dz", "db", "da"]
    ctx.moe_reference("decay_gate_grad", [z, b, a, dg], f64 + ["--gate=bounded", "--g-min=-5",
                      "-o", out("dz"), "-o", out("db")], out=out("da"))
    names += ["dq"]
    ctx.moe_reference("l2_norm_grad", [q, dq], f64, out=out("dq"))
    names += ["rms_dx", "rms_dw"]
    ctx.moe_reference("rms_norm_grad", [x, w, dy], f64 + ["-o", out("rms_dx")],
                      out=out("rms_dw"))
    names += ["conv_dx", "conv_dw"]
    ctx.moe_reference("short_conv_grad", [x, cw, dy], f64 + ["--silu", "-o", out("conv_dx")],
                      out=out("conv_dw"))
    names += ["dtable"]
    ctx.moe_reference("embedding_grad", [tokens, table, dy], f64, out=out("dtable"))
    names += ["m0", "m1", "m2", "mu"]
    ctx.moe_reference("attn_res_mix_grad", [x, v1, v2, u, dy],
                      f64 + ["-o", out("m0"), "-o", out("m1"), "-o", out("m2")], out=out("mu"))
    for i, name in enumerate(names):
        refs[i] = out(name)
    return refs


def common_grad_cases():
    """The inputs of test/Integration/CPU/common-grad-model-sizes.mlir at its
    2 x 64 tokens and at 2 x 600 (reductions of 1,200 tokens: split column
    reductions of 19 runs of 64 tokens per output, the run of tokens 576 to
    639 stepping from the first sequence into the second)."""
    cases = []
    for B, T in ((2, 64), (2, 600)):
        inputs = [Input("dg", (B, T, 4, 64), Uniform(-1, 1)),
                  Input("z", (B, T, 4, 64), Uniform(-8, 8)),
                  Input("b", (4, 64), Uniform(-7, -2)),
                  Input("a", (4,), Uniform(-0.5, 0.5)),
                  Input("dq", (B, T, 4, 64), Uniform(-1, 1)),
                  Input("q", (B, T, 4, 64), Uniform(-1, 1)),
                  Input("dy", (B, T, 256), Uniform(-1, 1)),
                  Input("x", (B, T, 256), Uniform(-3, 3)),
                  Input("w", (256,), Uniform(0.5, 1.5)),
                  Input("cw", (256, 4), Uniform(-0.5, 0.5)),
                  Input("tokens", (B, T), Integers(0, 256)),
                  Input("table", (256, 256), Uniform(-1, 1)),
                  Input("v1", (B, T, 256), Uniform(-1, 1)),
                  Input("v2", (B, T, 256), Uniform(-4, 4)),
                  Input("u", (256,), Uniform(-0.2, 0.2))]
        names = ["dz", "db", "da", "dq", "rms_dx", "rms_dw", "conv_dx", "conv_dw", "dtable",
                 "m0", "m1", "m2", "mu"]
        cases.append(KernelCase(
            f"common_grad/all/B{B}_T{T}", "common_grad", "all", inputs,
            [Check(i, name, COMMON_GRAD) for i, name in enumerate(names)],
            common_grad_reference))
    return cases


MLA_GRAD = Tol(rtol=1.2e-2, why="the flash-attention backward on bf16 tensor cores "
               "(-moe-generate-attention-grad-kernels): q, k, v and dO rounded to "
               "bf16, P and dS rounded to bf16 as operands, fp32 accumulation, after "
               "the bf16 forward whose output enters D and d_gate. Measured on an "
               "H100 (2026-12-06, all 14 cases): 1.0e-3 to 5.7e-3 of max|ref| with "
               "f32 operands, up to 7.1e-3 (fp64) and 9.1e-3 (the CPU back end) "
               "with bf16 ones; a NumPy emulation of the kernels' tiling and "
               "roundings gave 1.0e-3 to 6.4e-3")
MLA_GRAD_ONE_KEY = Tol(atol=3e-3, why="dq and dk of a single token: exactly zero "
                       "(one key: dS = P (dP - D) = 0), so absolute. On the GPU dP "
                       "takes dO rounded to bf16 (2^-9 relative) and D the fp32 "
                       "product, so dS is about 2e-3 and dq = scale dS k (scale "
                       "96^-1/2, |k| <= 3) about 6e-4; measured 1.0e-3 to 1.1e-3 on "
                       "an H100")


def mla_grad_inputs(B, T, gate=True, qk=96, v=64):
    ins = [Input("q", (B, T, 4, qk), Uniform(-3, 3)),
           Input("k", (B, T, 4, qk), Uniform(-3, 3)),
           Input("v", (B, T, 4, v), Uniform(-1, 1))]
    if gate:
        ins.append(Input("gate", (B, T, 4, v), Uniform(-3, 3)))
    ins.append(Input("dy", (B, T, 4, v), Uniform(-1, 1)))
    return ins


def mla_grad_reference(gate=True, scale=None):
    """moe-reference mla_attention_grad (fp64, the materialised softmax's
    backward; not through the log-sum-exp) from q, k, v, [gate], dy."""
    def reference(ctx, paths):
        out = {1: ctx.scratch("ref_dk.npy"), 2: ctx.scratch("ref_dv.npy")}
        options = ["--dtype=f64", f"--dk={out[1]}", f"--dv={out[2]}"]
        if gate:
            out[3] = ctx.scratch("ref_dgate.npy")
            options.append(f"--dgate={out[3]}")
        if scale is not None:
            options.append(f"--scale={scale}")
        out[0] = ctx.moe_reference("mla_attention_grad", paths, options)
        return out
    return reference


def mla_grad_checks(T, gate=True):
    one_key = MLA_GRAD_ONE_KEY if T == 1 else MLA_GRAD
    checks = [Check(0, "dq", one_key), Check(1, "dk", one_key), Check(2, "dv", MLA_GRAD)]
    if gate:
        checks.append(Check(3, "dgate", MLA_GRAD))
    return checks


def mla_grad_cases():
    """The forward and backward of test/Integration/CPU/Inputs/mla-grad.mlir
    (the CPU's mla-grad.test) with q, k uniform in [-3, 3] (a sharp
    softmax): one token, ragged last tiles (17, 65, 130 = 2 x 64 + 2, 300 =
    4 x 64 + 44), exactly one tile (64), several batches."""
    cases = []
    for lib, shapes, qk, v in (
            ("mla_grad", ((1, 1), (3, 17), (1, 64), (1, 65), (2, 130), (1, 300)), 96, 64),
            ("mla_grad_tiny", ((1, 1), (2, 65), (1, 300)), 48, 32),
            ("mla_grad_bf16", ((1, 17), (2, 130)), 96, 64)):
        for B, T in shapes:
            cases.append(KernelCase(
                f"{lib}/grad_gated/B{B}_T{T}", lib, "grad_gated",
                mla_grad_inputs(B, T, qk=qk, v=v), mla_grad_checks(T),
                mla_grad_reference()))
    for lib, shapes, qk, v in (("mla_grad", ((3, 17), (1, 130)), 96, 64),
                               ("mla_grad_tiny", ((1, 65),), 48, 32)):
        for B, T in shapes:
            cases.append(KernelCase(
                f"{lib}/grad_plain/B{B}_T{T}", lib, "grad_plain",
                mla_grad_inputs(B, T, gate=False, qk=qk, v=v),
                mla_grad_checks(T, gate=False), mla_grad_reference(gate=False, scale=0.2)))
    return cases


# ---------------------------------------------------------------------------
# Whole models and runtime programs
# ---------------------------------------------------------------------------


class ModelCase:
    """An executable of moe-compile --forward-only --target=cuda on the
    embedded sample text: its loss against the CPU executable's and the fp64
    NumPy model's (test/tools/model-reference) on the same weights and
    batch."""

    kind = "model"

    def __init__(self, name, executable, batch, seq_len, seed, timeout=180,
                 graph=False):
        self.name, self.executable = name, executable
        self.batch, self.seq_len, self.seed = batch, seq_len, seed
        self.timeout = timeout
        # With the forward captured as a CUDA graph after the first run and
        # replayed for the later ones: the executable fails unless every
        # replay's loss equals the first (uncaptured) run's bit for bit, and
        # the case fails unless it says the graph replayed.
        self.graph = graph
        self.extra_args = ["--repeat=4", "--cuda-graph"] if graph else []


MODEL = "examples/models/kimi-tiny.mlir"
# Executable name -> moe-compile options (besides --forward-only --target=cuda).
MODEL_EXECUTABLES = {
    "model-cuda": [],
    "model-cuda-cubin": ["--gpu-format=bin"],
    # The dense projections in exact fp32 (one thread per output element)
    # rather than bf16 tensor-core GEMMs: the loss's change by the GEMMs'
    # rounding is the difference from model-cuda at the same configuration.
    "model-cuda-f32gemm": ["--matmul-precision=exact"],
}
# batch, sequence length, seed: B*T + 1 <= 837 bytes of sample text. 64 is
# one KDA chunk, 65 and 128 cross chunk boundaries, 512 carries the state
# over eight chunks, 1 is a single token.
MODEL_CONFIGS = {
    "model-cuda": [(2, 64, 0), (4, 128, 0), (1, 512, 1), (3, 65, 2), (1, 1, 3)],
    "model-cuda-cubin": [(2, 64, 0), (1, 512, 1)],
    "model-cuda-f32gemm": [(2, 64, 0), (1, 512, 1)],
}


# model-cuda's forward replayed as a CUDA graph (--cuda-graph): one KDA
# chunk, and eight.
MODEL_GRAPH_CONFIGS = [(2, 64, 0), (1, 512, 1)]


def model_cases():
    return ([ModelCase(f"model/{exe}/B{b}_T{t}_seed{s}", exe, b, t, s)
             for exe, configs in MODEL_CONFIGS.items() for b, t, s in configs]
            + [ModelCase(f"model/model-cuda-graph/B{b}_T{t}_seed{s}", "model-cuda",
                         b, t, s, graph=True)
               for b, t, s in MODEL_GRAPH_CONFIGS])


# The training program on the GPU: the losses and gradient norms of its first
# steps against the CPU training program's on the same seed and batches.
TRAIN_LOSS = Tol(rtol=3e-3, why="training losses of the first steps: the bf16 "
                 "tensor-core kernels' rounding (as LOSS) grows over the steps "
                 "(the updated weights differ); an H200 gave 2.6e-4, 2.6e-4, "
                 "1.9e-3 (B = 4, T = 128) and 6.1e-4, 4.2e-4, 7.8e-4 (B = 2, "
                 "T = 100) for steps 1 to 3, while a wrong gradient moves the "
                 "loss of step 2 by 1e-1 or more")
# Step 4 (the train-cuda-graph/ case, whose first check is the replay's bit
# equality with the uncaptured run) has taken three bf16 updates at the peak
# learning rate: its loss drifts further from the CPU's.
TRAIN_LOSS_STEP4 = Tol(rtol=6e-3, why="the fourth training step's loss: an H100 "
                       "gave 2.6e-4, 5.4e-4, 8.3e-4 and 3.2e-3 for steps 1 to 4 "
                       "(B = 4, T = 128, the CPU reference on an AMD EPYC), "
                       "while a wrong gradient moves the loss of step 2 by 1e-1 "
                       "or more")
TRAIN_GRAD_NORM = Tol(rtol=3e-2, why="the global gradient norm before clipping "
                      "through bf16 tensor-core kernels against the CPU's fp32: "
                      "an H200 gave 7.3e-4, 8.0e-4, 3.7e-4 (B = 4, T = 128) and "
                      "3.2e-3, 1.8e-2, 1.9e-2 (B = 2, T = 100; after the first "
                      "update some tokens route to other experts)")


TRAIN_GRAD_NORM_STEP4 = Tol(rtol=5e-2, why="step 4's gradient norm, after three "
                            "bf16 updates at the peak learning rate: an H100 gave "
                            "7.0e-4, 3.5e-3, 1.8e-3 and 3.1e-2 for steps 1 to 4 "
                            "(B = 4, T = 128; the loss 3.1e-3 at step 4), while "
                            "step 1 checks the gradient itself at 3e-2")


class TrainCase:
    """The executable of moe-compile --target=cuda (the training program) on
    the embedded corpus: the loss and gradient norm of each of its first
    `steps` steps against the CPU training program's (same seed, batches and
    hyper-parameters)."""

    kind = "train"

    def __init__(self, name, batch, seq_len, seed, steps=3, timeout=420, graph=False):
        self.name, self.batch, self.seq_len, self.seed = name, batch, seq_len, seed
        self.steps, self.timeout, self.graph = steps, timeout, graph


# batch, sequence length, seed: two KDA chunks; one chunk and a partial one.
TRAIN_CONFIGS = [(4, 128, 0), (2, 100, 1)]
# The train/ cases run the executable's default (the step replayed as a CUDA
# graph after step 1). train-cuda-graph/: --cuda-graph, against the CPU as
# above and, bit for bit, against the same executable with --cuda-graph=off
# (its 4 steps cross the schedule's decay, so a replay sees new
# hyper-parameters).
TRAIN_GRAPH_CONFIGS = [(4, 128, 0)]


def train_cases():
    return [TrainCase(f"train/kimi_tiny/B{b}_T{t}_seed{s}", b, t, s)
            for b, t, s in TRAIN_CONFIGS] + \
        [TrainCase(f"train-cuda-graph/kimi_tiny/B{b}_T{t}_seed{s}", b, t, s, steps=4,
                   graph=True)
         for b, t, s in TRAIN_GRAPH_CONFIGS]


class ProgramCase:
    """A test program of runtime/test built here (it needs only the CUDA
    driver and libfmt, which the suite carries): exit status 0, the line
    `expect`, and no UNSUPPORTED (the program's own skip without a GPU)."""

    kind = "program"

    def __init__(self, name, program, expect, timeout=120, files=None):
        self.name, self.program, self.expect, self.timeout = name, program, expect, timeout
        # Environment variable -> a file of the build folder that the
        # program reads: copied into the suite, the variable names the copy.
        self.files = dict(files or {})


def program_cases():
    return [ProgramCase("runtime/moert-device-test", "moert-device-test",
                        r"moert-device-test: all \d+ checks passed"),
            ProgramCase("runtime/moert-launch-test", "moert-launch-test",
                        r"moert-launch-test: all \d+ checks passed",
                        files={"MOERT_TEST_CUBIN": "runtime/test/kernels.sm_90.cubin"})]


def all_cases():
    return (program_cases() + kda_cases() + mla_cases() + moe_cases() + routing_cases()
            + experts_cases() + experts_f32_cases() + gemm_cases() + mapped_cases()
            + routing_grad_cases() + kda_grad_cases() + mla_grad_cases() + common_grad_cases() + model_fn_cases() + model_cases() + train_cases())
