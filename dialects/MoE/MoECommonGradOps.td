//===- MoECommonGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of the small layers: moe.decay_gate_grad, moe.l2_norm_grad, moe.short_conv_grad, moe.rms_norm_grad, moe.embedding_grad, moe.attn_res_mix_grad.
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD
#define MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD

include "dialects/MoE/MoEBase.td"
include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// DecayGateGradOp
//===----------------------------------------------------------------------===//

def MoE_DecayGateGradOp : MoE_Op<"decay_gate_grad", [Pure]> {
  let summary = "Backward of moe.decay_gate";
  let description = [{
    Given `grad = dL/dg: [B, T, H, K]` (fp32) and the operands of the
    `moe.decay_gate` that computed `g`, computes (ALGORITHMS.md section 2.1),
    with `x = raw + dt_bias[h]` and `A = A_log[h]`:

    * bounded, `p = exp(A) x` (`p = x` without `A_log`), `s = sigmoid(p)`:
      `raw_grad = grad * g_min * s (1 - s) * exp(A)` (no `exp(A)` factor
      without `A_log`); `a_log_grad[h] = sum_{b,t,c} raw_grad * x`;
    * softplus: `raw_grad = -grad * exp(A) * sigmoid(x)`;
      `a_log_grad[h] = sum_{b,t,c} grad * g`;
    * both: `dt_bias_grad[h, c] = sum_{b,t} raw_grad`.

    `s (1 - s)` is evaluated as `sigmoid(p) sigmoid(-p)`, which keeps its
    relative precision when the gate saturates. Sums over tokens accumulate
    in fp32. Each result has the type of its operand; `a_log_grad` is
    present exactly when `a_log` is.

    Example:

    ```mlir
    %dz, %db, %da = moe.decay_gate_grad <softplus> %dg, %z, %dt_bias, %a_log
        : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<4x64xf32>,
           tensor<4xf32>)
        -> (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins
    MoE_DecayGateAttr:$gate,
    MoE_F32Tensor:$grad,
    MoE_FloatTensor:$raw,
    MoE_FloatTensor:$dt_bias,
    Optional<MoE_FloatTensor>:$a_log
  );
  let results = (outs
    MoE_FloatTensor:$raw_grad,
    MoE_FloatTensor:$dt_bias_grad,
    Optional<MoE_FloatTensor>:$a_log_grad
  );
  let assemblyFormat = [{
    $gate $grad `,` $raw `,` $dt_bias (`,` $a_log^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// L2NormGradOp
//===----------------------------------------------------------------------===//

def MoE_L2NormGradOp : MoE_Op<"l2_norm_grad", [Pure,
    AllTypesMatch<["grad", "input", "input_grad"]>]> {
  let summary = "Backward of moe.l2_norm";
  let description = [{
    With `r = (sum(x^2, -1) + epsilon)^-1/2` and `y = x r` (ALGORITHMS.md
    section 1.2): `input_grad = r (grad - y (y . grad))` per row, in fp32.
    `epsilon` must be the forward's.

    Example:

    ```mlir
    %dx = moe.l2_norm_grad %dy, %x : tensor<?x?x4x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$grad,
    MoE_FloatTensor:$input,
    DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$input_grad);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ShortConvGradOp
//===----------------------------------------------------------------------===//

def MoE_ShortConvGradOp : MoE_Op<"short_conv_grad", [Pure,
    AllTypesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Backward of moe.short_conv";
  let description = [{
    For `c[b, t, ch] = sum_{i < W} w[ch, i] x[b, t - W + 1 + i, ch]`
    (ALGORITHMS.md section 1.2), with `dc = grad` (or, with `silu`,
    `dc = grad * s (1 + c (1 - s))`, `s = sigmoid(c)`, `c` recomputed):

    ```
    input_grad[b, s, ch] = sum_{i < W, s + W - 1 - i < T} w[ch, i] dc[b, s + W - 1 - i, ch]
    weight_grad[ch, i]   = sum_{b, t} dc[b, t, ch] x[b, t - W + 1 + i, ch]
    ```

    (the transposed convolution, and a sum over tokens), in fp32.

    Example:

    ```mlir
    %dx, %dw = moe.short_conv_grad %dy, %x, %w {silu}
        : tensor<?x?x128xf32>, tensor<128x4xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$grad,
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    UnitAttr:$silu
  );
  let results = (outs MoE_FloatTensor:$input_grad, MoE_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RMSNormGradOp
//===----------------------------------------------------------------------===//

def MoE_RMSNormGradOp : MoE_Op<"rms_norm_grad", [Pure,
    AllTypesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Backward of moe.rms_norm";
  let description = [{
    With `rstd = (mean(x^2, -1) + epsilon)^-1/2`, `x^ = x rstd` and
    `g^ = w grad` (ALGORITHMS.md section 7.2), in fp32:

    ```
    input_grad  = rstd (g^ - x^ mean(x^ g^, -1))
    weight_grad = sum over every leading index of grad x^
    ```

    `epsilon` must be the forward's.

    Example:

    ```mlir
    %dx, %dw = moe.rms_norm_grad %dy, %x, %w {epsilon = 1.0e-05 : f64}
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$grad,
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$input_grad, MoE_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// EmbeddingGradOp
//===----------------------------------------------------------------------===//

def MoE_EmbeddingGradOp : MoE_Op<"embedding_grad", [Pure,
    AllTypesMatch<["table", "table_grad"]>]> {
  let summary = "Backward of moe.embedding: a deterministic scatter-add";
  let description = [{
    `table_grad[v, :] = sum_{n : tokens[n] = v} grad[n, :]` (ALGORITHMS.md
    section 7.2), `n` running over every index of `tokens`. Each row's terms
    are added in token order (the order of a stable sort by id followed by a
    segment sum), in fp32, so the result does not depend on scheduling.
    `grad` has the forward result's type (`tokens`' shape then the table's
    width); the `table` operand only gives the result its type and its
    dynamic sizes. Ids outside `[0, vocab)`, which the forward does not
    define, add nothing.

    Example:

    ```mlir
    %dtable = moe.embedding_grad %dh, %tokens, %table
        : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<256x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$grad,
    MoE_IntTensor:$tokens,
    MoE_FloatTensor:$table
  );
  let results = (outs MoE_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $grad `,` $tokens `,` $table attr-dict `:` type($grad) `,` type($tokens)
    `,` type($table)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AttnResMixGradOp
//===----------------------------------------------------------------------===//

def MoE_AttnResMixGradOp : MoE_Op<"attn_res_mix_grad", [Pure]> {
  let summary = "Backward of moe.attn_res_mix";
  let description = [{
    Per token, with `rstd_i = (mean(v_i^2) + epsilon)^-1/2`,
    `k_i = rstd_i v_i`, `s_i = k_i . u`, `p = softmax(s)` and `dh = grad`
    (ALGORITHMS.md section 5.3), in fp32:

    ```
    a_i = dh . v_i ;  ds_i = p_i (a_i - sum_j p_j a_j)
    source_grads[i] = p_i dh + ds_i rstd_i (u - k_i s_i / d)
    query_grad      = sum_tokens sum_i ds_i k_i
    ```

    One gradient per source, in order, each of the sources' type, then the
    query's. `epsilon` must be the forward's.

    Example:

    ```mlir
    %d0, %d1, %du = moe.attn_res_mix_grad %dh, %b0, %b1 query(%u)
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
           tensor<64xf32>)
        -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$grad,
    Variadic<MoE_FloatTensor>:$sources,
    MoE_FloatTensor:$query,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon
  );
  let results = (outs
    Variadic<MoE_FloatTensor>:$source_grads,
    MoE_FloatTensor:$query_grad
  );
  let assemblyFormat = [{
    $grad `,` $sources `query` `(` $query `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD
