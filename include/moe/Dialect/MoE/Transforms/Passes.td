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
  let statistics = [
    Statistic<"numDecomposed", "num-decomposed", "Number of layer ops decomposed">
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

#endif // MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD
