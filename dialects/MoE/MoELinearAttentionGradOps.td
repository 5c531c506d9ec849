//===- MoELinearAttentionGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of KDA: moe.kda_grad.
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD
#define MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD

include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"


//===----------------------------------------------------------------------===//
// KDAGradOp
//===----------------------------------------------------------------------===//

def MoE_KDAGradOp : MoE_Op<"kda_grad", [Pure, AttrSizedOperandSegments]> {
  let summary = "Gradients of moe.kda (the chunked KDA backward)";
  let description = [{
    The reverse-mode derivative of `moe.kda` (ALGORITHMS.md sections 1.3 BWD
    and 1.7): given the forward's operands, the adjoint of its output and,
    optionally, the adjoint of its final state (zero when absent), computes
    the gradients of the loss with respect to `query`, `key`, `value`,
    `log_decay`, `beta` and the initial state.

    Operands: the operands of the `moe.kda` it differentiates (`query`,
    `key: [B, T, H, K]`, `value: [B, T, H, V]`, fp32 `log_decay: [B, T, H,
    K]`, `beta: [B, T, H]`, optional fp32 `initial_state`), the
    `output_adjoint: [B, T, H, V]` with the element type of `value`, and an
    optional fp32 `final_state_adjoint`. `scale` and `state_layout` mean what
    they mean on `moe.kda` and must be copied from it.

    Results: one gradient per operand, each with the type of its operand
    (`d_log_decay` is fp32), and the fp32 `d_initial_state` in the state
    layout (the gradient with respect to the initial state, also when the
    forward started from zero).

    Example:

    ```mlir
    %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta
        initial_state(%s0) output_adjoint(%do) final_state_adjoint(%ds)
        : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>,
           tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
        -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
            tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$query,
    MoE_FloatTensor:$key,
    MoE_FloatTensor:$value,
    MoE_F32Tensor:$log_decay,
    MoE_FloatTensor:$beta,
    Optional<MoE_F32Tensor>:$initial_state,
    MoE_FloatTensor:$output_adjoint,
    Optional<MoE_F32Tensor>:$final_state_adjoint,
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<MoE_StateLayoutAttr, "StateLayout::KeyMajor">:$state_layout
  );
  let results = (outs
    MoE_FloatTensor:$d_query,
    MoE_FloatTensor:$d_key,
    MoE_FloatTensor:$d_value,
    MoE_F32Tensor:$d_log_decay,
    MoE_FloatTensor:$d_beta,
    MoE_F32Tensor:$d_initial_state
  );
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $log_decay `,` $beta
    (`initial_state` `(` $initial_state^ `)`)?
    `output_adjoint` `(` $output_adjoint `)`
    (`final_state_adjoint` `(` $final_state_adjoint^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to the query: `scale` or `K^-1/2`.
    double getScaleOrDefault();
  }];
}

#endif // MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD
