//===- Passes.td - moe conversion passes -----------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Declarations of the passes that convert moe ops into upstream dialects.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_PASSES_TD
#define MOE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMoEToLinalg : Pass<"convert-moe-to-linalg"> {
  let summary = "Lower element-wise and normalisation moe primitives to linalg";
  let description = [{
    Rewrites the moe primitives that are plain tensor algebra into
    `linalg.generic` ops on tensors plus `arith`, `math` and `tensor` ops,
    following ALGORITHMS.md:

    * `moe.l2_norm`: `x / sqrt(sum(x^2) + eps)` over the last dimension
      (section 1.2);
    * `moe.rms_norm`: `x * rsqrt(mean(x^2) + eps) * w` (section 7.2);
    * `moe.decay_gate`: both gates of section 2.1, with or without `A_log`;
      the softplus is evaluated as `max(x, 0) + log1p(exp(-|x|))`, which
      neither overflows nor loses the small values;
    * `moe.short_conv`: a left zero `tensor.pad` of `W - 1` steps and one
      contraction over the window, then the optional SiLU (section 1.2);
    * `moe.cross_entropy`: max, log-sum-exp and the picked logit per token,
      then the mean over the tokens whose label is not `ignore_index`
      (section 7.2; the mean of no token is NaN);
    * `moe.embedding`: a gather of table rows with `tensor.extract`;
    * `moe.glu_ffn`: `act(x Wg, x Wu) Wd` with the contractions and the
      activation (SwiGLU or SiTU-GLU, sections 6 and 7.1) in fp32.

    Reductions, norms, gates and the loss are computed in fp32 and the result
    is converted back to the op's element type. Batch and sequence
    dimensions, and any dimension the ops allow to be dynamic, may be
    dynamic. Other ops (`moe.kda`, routing, attention, ...) are left
    unchanged: this is a partial conversion.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // MOE_CONVERSION_PASSES_TD
