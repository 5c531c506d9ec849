//===- Passes.td - moe dialect passes --------------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Declarations of the passes that transform moe IR.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD
#define MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MoEDecompose : Pass<"moe-decompose"> {
  let summary = "Rewrite layer ops into primitive moe ops and upstream ops";
  let description = [{
    Rewrites every layer op (`moe.kda_layer`, `moe.mla_layer`,
    `moe.moe_ffn`, `moe.attn_res`, `moe.lm_head`) into the primitive ops of
    the moe dialect plus `linalg`, `arith`, `math` and `tensor` ops,
    following ALGORITHMS.md exactly:

    * projections become `linalg.generic` contractions over the last
      dimension, reshapes become `tensor.expand_shape`/`collapse_shape`;
    * `moe.kda_layer` becomes short convolutions, `moe.l2_norm`,
      `moe.decay_gate`, a sigmoid `beta`, `moe.kda`, `moe.rms_norm` and the
      sigmoid output gate;
    * `moe.mla_layer` becomes the latent projections, `moe.rms_norm`, slices
      and concatenations that build per-head keys, and
      `moe.mla_attention` with its gate;
    * `moe.moe_ffn` becomes `moe.route`, `moe.dispatch`, `moe.expert_ffn`,
      `moe.combine` and the shared `moe.glu_ffn`;
    * `moe.attn_res` folds its key norm into the query and becomes
      `moe.attn_res_mix`;
    * `moe.lm_head` becomes a logits contraction and `moe.cross_entropy`.

    Ops that are already primitive (`moe.embedding`, `moe.rms_norm`,
    `moe.glu_ffn`, ...) are left alone. Batch and sequence dimensions may be
    dynamic. The output verifies and contains no layer op.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::moe::MoEDialect"
  ];
}

def MoEPrintModelSummary : Pass<"moe-print-model-summary", "::mlir::ModuleOp"> {
  let summary = "Print each model's layers, parameters and active parameters";
  let description = [{
    For every `moe.model` in the module, prints one block to standard output:
    the model's name, vocabulary and width, the number of layer ops of each
    kind, the total parameter count, and the parameters active per token.

    Active parameters count every parameter once, except that the routed
    experts of a `moe.moe_ffn` count `top_k / experts` of their weights and
    an embedding table counts one row (the row a token reads). The IR is not
    changed.
  }];
}


def MoETileLinearAttention : Pass<"moe-tile-linear-attention"> {
  let summary = "Chunk moe.kda into tiles, dense on the diagonal only where proven safe";
  let description = [{
    Lowers every `moe.kda` op into the chunked WY/UT algorithm of
    ALGORITHMS.md sections 1.4-1.6 on tensors: an `scf.forall` over
    (batch, head), an `scf.for` over chunks of `chunk-size` tokens that
    carries the fp32 recurrent state, and inside each chunk static tiles:
    the in-chunk cumulative decay, the intra-chunk matrices `Aqk` and `L`
    from a grid of `sub-chunk-size` tiles, forward substitution for
    `(I + L)^-1`, the W/U pseudo-values, the output and the state update.
    The sequence is padded with zeros to whole chunks (a padded step has
    zero decay, key, value and beta, so it changes nothing); batch and
    length may be dynamic.

    Off-diagonal tiles are always factored through their first row (both
    factors are at most 1). Each diagonal tile takes:

    * the dense path (factored exponentials through the `reference` row,
      two matmuls, select masking) when the decay-bound analysis proves
      `E_ref(c) * |g_min| <= L_op` for the query's element type;
    * otherwise, with `runtime-guard`, a per-tile `scf.if` on the exact
      exponent range of the tile (section 2.4), choosing the dense or the
      per-position path at run time;
    * otherwise the per-position path, which only exponentiates
      differences `Gamma_i - Gamma_j` with `j <= i`.

    Every kda op gets a remark that says which path it took and why, with
    the bound, the exponent, the limit and the margin.
    `test-force-dense` takes the dense path regardless of the proof; it
    exists to show what the proof prevents.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", "64",
           "Tokens per chunk (a power of two)">,
    Option<"subChunkSize", "sub-chunk-size", "int64_t", "16",
           "Rows per diagonal tile (a power of two, at most chunk-size)">,
    Option<"reference", "reference", "std::string", "\"mid\"",
           "Reference row of the dense diagonal path: pre, start or mid">,
    Option<"runtimeGuard", "runtime-guard", "bool", "true",
           "Guard unproven diagonal tiles at run time instead of always "
           "taking the per-position path">,
    Option<"testForceDense", "test-force-dense", "bool", "false",
           "Test only: take the dense diagonal path even where it is not "
           "proven safe">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD
