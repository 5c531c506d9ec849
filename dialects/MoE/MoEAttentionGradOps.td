//===- MoEAttentionGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of attention and the loss: moe.mla_attention_grad and the lm_head cross-entropy (fused with the projection in vocabulary chunks).
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEATTENTIONGRADOPS_TD
#define MOE_DIALECT_MOE_MOEATTENTIONGRADOPS_TD

include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// MLAAttentionGradOp
//===----------------------------------------------------------------------===//

def MoE_MLAAttentionGradOp : MoE_Op<"mla_attention_grad", [Pure]> {
  let summary = "Backward of moe.mla_attention (flash-attention style)";
  let description = [{
    The adjoints of the operands of `moe.mla_attention` (ALGORITHMS.md
    sections 3.1 and 3.3) from the forward's `output` (the gated output when
    there is a gate), its `lse: [B, H, T]` and the output adjoint
    `d_output`. Per batch and head, with `s = sigmoid(gate)` (1 without a
    gate), `lambda = scale` (default `D_qk^-1/2`) and
    `P = exp(lambda q k^T - lse)` under the causal mask:

    ```
    dO      = d_output * s                     (the adjoint of the ungated o)
    D[t]    = sum_j d_output[t, j] output[t, j]  (= rowsum(dO o o))
    dV      = P^T dO
    dS      = P o (dO v^T - D)
    dQ      = lambda dS k            dK = lambda dS^T q
    dGate   = d_output * output * (1 - s)      (= d_output * o * s (1 - s))
    ```

    Taking the gated output means the ungated `o` is never divided out of
    it. Shapes as for `moe.mla_attention`: `query, key: [B, T, H, D_qk]`,
    `value, gate, output, d_output: [B, T, H, D_v]`; each result has the
    type of the operand it is the adjoint of, and `d_gate` is present
    exactly when `gate` is.

    Example:

    ```mlir
    %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g),
        %o, %lse, %do
        : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>,
           tensor<?x?x4x64xf32>)
        -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
            tensor<?x?x4x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$query,
    MoE_FloatTensor:$key,
    MoE_FloatTensor:$value,
    Optional<MoE_FloatTensor>:$gate,
    MoE_FloatTensor:$output,
    MoE_F32Tensor:$lse,
    MoE_FloatTensor:$d_output,
    OptionalAttr<F64Attr>:$scale
  );
  let results = (outs
    MoE_FloatTensor:$d_query,
    MoE_FloatTensor:$d_key,
    MoE_FloatTensor:$d_value,
    Optional<MoE_FloatTensor>:$d_gate
  );
  let assemblyFormat = [{
    $query `,` $key `,` $value (`gate` `(` $gate^ `)`)? `,` $output `,` $lse
    `,` $d_output attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: `scale` or `D_qk^-1/2`.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// LinearCrossEntropyGradOp
//===----------------------------------------------------------------------===//

def MoE_LinearCrossEntropyGradOp : MoE_Op<"linear_cross_entropy_grad", [Pure]> {
  let summary = "Backward of moe.linear_cross_entropy, in vocabulary chunks";
  let description = [{
    The adjoints of `input` and `weight` of `moe.linear_cross_entropy`
    (ALGORITHMS.md section 7.2) from its per-token log-sum-exp `lse` and the
    loss adjoint `d_loss` (a `tensor<f32>`). With `z = input W^T` and
    `G[t, v] = d_loss / N_valid * (exp(z[t, v] - lse[t]) - [v = labels[t]])`
    on the valid tokens (0 on the ignored ones):

    ```
    d_input = G W          d_weight = G^T input
    ```

    `G` is never materialised whole: back ends recompute `z` chunk by chunk
    of the vocabulary. Operand shapes as for `moe.linear_cross_entropy`
    (`lse` has the labels' shape); `d_input` and `d_weight` have the types of
    `input` and `weight`.

    Example:

    ```mlir
    %dx, %dw = moe.linear_cross_entropy_grad %h, %w, %labels, %lse, %dloss
        : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>,
           tensor<?x?xf32>, tensor<f32>)
        -> (tensor<?x?x64xf32>, tensor<256x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    MoE_IntTensor:$labels,
    MoE_F32Tensor:$lse,
    MoE_ScalarF32Tensor:$d_loss,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index
  );
  let results = (outs MoE_FloatTensor:$d_input, MoE_FloatTensor:$d_weight);
  let assemblyFormat = [{
    $input `,` $weight `,` $labels `,` $lse `,` $d_loss attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CrossEntropyGradOp
//===----------------------------------------------------------------------===//

def MoE_CrossEntropyGradOp : MoE_Op<"cross_entropy_grad", [Pure]> {
  let summary = "Backward of moe.cross_entropy: the logits' adjoint";
  let description = [{
    `d_logits[t, v] = d_loss / N_valid * (softmax(logits[t])[v] -
    [v = labels[t]])` on the positions whose label is not `ignore_index`,
    0 on the others (ALGORITHMS.md section 7.2). `d_logits` has the type of
    `logits`; `d_loss` is a `tensor<f32>`.

    Example:

    ```mlir
    %dz = moe.cross_entropy_grad %logits, %labels, %dloss
        : (tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<f32>)
        -> tensor<?x?x256xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$logits,
    MoE_IntTensor:$labels,
    MoE_ScalarF32Tensor:$d_loss,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index
  );
  let results = (outs MoE_FloatTensor:$d_logits);
  let assemblyFormat = [{
    $logits `,` $labels `,` $d_loss attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOEATTENTIONGRADOPS_TD
