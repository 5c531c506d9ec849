//===- MoERoutingGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of routing and experts: moe.route_grad, moe.dispatch_grad,
// moe.expert_ffn_grad, moe.glu_ffn_grad and moe.combine_grad
// (ALGORITHMS.md sections 4.1, 6 and 7.1).
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEROUTINGGRADOPS_TD
#define MOE_DIALECT_MOE_MOEROUTINGGRADOPS_TD

include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// RouteGradOp
//===----------------------------------------------------------------------===//

def MoE_RouteGradOp : MoE_Op<"route_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["w_router", "w_router_grad"]>]> {
  let summary = "Gradient of moe.route through its top-k weights";
  let description = [{
    The adjoint of `moe.route`'s `weights` (ALGORITHMS.md section 4.1). With
    `input: [N, d]`, `w_router: [E, d]`, the forward's `indices: [N, k]` and
    `weights_grad: [N, k]`, in fp32, per token `n` and slot `i` with
    `j = indices[n, i]`:

    ```
    s_i     = sigmoid(input[n] . w_router[j])
    S       = sum_i s_i + 1e-20
    ds_i    = scaling / S * (weights_grad[n, i]
                             - sum_i' weights_grad[n, i'] s_i' / S)
    g[n, i] = ds_i * s_i * (1 - s_i)                   (logit gradient)
    input_grad[n]       = sum_i g[n, i] w_router[j]
    w_router_grad[e]    = sum_{n, i : indices[n, i] = e} g[n, i] input[n]
    ```

    with `scaling = routing.scaling`. The selection (and so the bias) is not
    differentiable: unselected experts get no gradient.

    Example:

    ```mlir
    %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
        {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                                balance = #moe.quantile_balance<exact>>}
        : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<?x4xi64>,
           tensor<?x4xf32>) -> (tensor<?x64xf32>, tensor<16x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_router,
    MoE_IntTensor:$indices,
    MoE_F32Tensor:$weights_grad,
    MoE_RoutingAttr:$routing
  );
  let results = (outs
    MoE_FloatTensor:$input_grad,
    MoE_FloatTensor:$w_router_grad
  );
  let assemblyFormat = [{
    $input `,` $w_router `,` $indices `,` $weights_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// DispatchGradOp
//===----------------------------------------------------------------------===//

def MoE_DispatchGradOp : MoE_Op<"dispatch_grad", [Pure]> {
  let summary = "Adjoint of moe.dispatch: sums each token's slot gradients";
  let description = [{
    With the gradient of the permuted rows `permuted_grad: [N*k, d]`, the
    dispatch's `source_slot: [N*k]` and its `indices: [N, k]` (which give
    `N` and `k`):

    ```
    input_grad[n] = sum_i permuted_grad[m(n, i)]   where
                    source_slot[m(n, i)] = n * k + i
    ```

    summed in fp32 over `i` in order (deterministic), then converted to the
    result's type.

    Example:

    ```mlir
    %dx = moe.dispatch_grad %dxp, %slot, %idx
        : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xi64>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$permuted_grad,
    MoE_I64Tensor:$source_slot,
    MoE_IntTensor:$indices
  );
  let results = (outs MoE_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $permuted_grad `,` $source_slot `,` $indices attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ExpertFFNGradOp
//===----------------------------------------------------------------------===//

def MoE_ExpertFFNGradOp : MoE_Op<"expert_ffn_grad", [Pure,
    AllTypesMatch<["input", "input_grad", "result_grad"]>,
    AllTypesMatch<["w_gate", "w_gate_grad"]>,
    AllTypesMatch<["w_up", "w_up_grad"]>,
    AllTypesMatch<["w_down", "w_down_grad"]>]> {
  let summary = "Gradient of the grouped gated FFN over expert-sorted rows";
  let description = [{
    The backward of `moe.expert_ffn` (ALGORITHMS.md sections 6 and 7.1). For
    each expert `j` and its rows `x = input[o[j] .. o[j+1]]`
    (`o = expert_offsets`) with `dy = result_grad[o[j] .. o[j+1]]`, in fp32,
    the pre-activations are recomputed:

    ```
    a = x W_gate[j],  u = x W_up[j],  h = act(a, u)
    dh = dy W_down[j]^T
    da = dh * dact/da(a, u),  du = dh * dact/du(a, u)
    input_grad  = da W_gate[j]^T + du W_up[j]^T      (its rows)
    w_gate_grad[j] = x^T da,  w_up_grad[j] = x^T du,  w_down_grad[j] = h^T dy
    ```

    An expert without rows gets zero weight gradients. SwiGLU:
    `dact/da = u sigmoid(a) (1 + a sigmoid(-a))`, `dact/du = silu(a)`;
    SiTU-GLU: `dact/da = (sech^2(a/b_g) sigmoid(a) + b_g tanh(a/b_g)
    sigmoid(a) sigmoid(-a)) cap(u)`, `dact/du = SiTU(a) cap'(u)`.

    Example:

    ```mlir
    %dxp, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
        {activation = #moe.activation<swiglu>}
        : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
           tensor<16x64x32xf32>, tensor<16x32x64xf32>, tensor<?x64xf32>)
        -> (tensor<?x64xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>,
            tensor<16x32x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_I64Tensor:$expert_offsets,
    MoE_FloatTensor:$w_gate, MoE_FloatTensor:$w_up, MoE_FloatTensor:$w_down,
    MoE_FloatTensor:$result_grad,
    MoE_ActivationAttr:$activation
  );
  let results = (outs
    MoE_FloatTensor:$input_grad,
    MoE_FloatTensor:$w_gate_grad,
    MoE_FloatTensor:$w_up_grad,
    MoE_FloatTensor:$w_down_grad
  );
  let assemblyFormat = [{
    $input `,` $expert_offsets `,` $w_gate `,` $w_up `,` $w_down `,`
    $result_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GLUFFNGradOp
//===----------------------------------------------------------------------===//

def MoE_GLUFFNGradOp : MoE_Op<"glu_ffn_grad", [Pure,
    AllTypesMatch<["input", "input_grad", "result_grad"]>,
    AllTypesMatch<["w_gate", "w_gate_grad"]>,
    AllTypesMatch<["w_up", "w_up_grad"]>,
    AllTypesMatch<["w_down", "w_down_grad"]>]> {
  let summary = "Gradient of the dense gated FFN";
  let description = [{
    The backward of `moe.glu_ffn` on `input: [..., d]`: the formulas of
    `moe.expert_ffn_grad` with one expert over every row, the weight
    gradients summed over all leading dimensions, in fp32.

    Example:

    ```mlir
    %dx, %dwg, %dwu, %dwd = moe.glu_ffn_grad %x, %wg, %wu, %wd, %dy
        {activation = #moe.activation<swiglu>}
        : (tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
           tensor<128x64xf32>, tensor<?x?x64xf32>)
        -> (tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
            tensor<128x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_gate, MoE_FloatTensor:$w_up, MoE_FloatTensor:$w_down,
    MoE_FloatTensor:$result_grad,
    MoE_ActivationAttr:$activation
  );
  let results = (outs
    MoE_FloatTensor:$input_grad,
    MoE_FloatTensor:$w_gate_grad,
    MoE_FloatTensor:$w_up_grad,
    MoE_FloatTensor:$w_down_grad
  );
  let assemblyFormat = [{
    $input `,` $w_gate `,` $w_up `,` $w_down `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CombineGradOp
//===----------------------------------------------------------------------===//

def MoE_CombineGradOp : MoE_Op<"combine_grad", [Pure,
    AllTypesMatch<["expert_output", "expert_output_grad"]>,
    AllTypesMatch<["weights", "weights_grad"]>]> {
  let summary = "Gradient of moe.combine to the expert outputs and weights";
  let description = [{
    With `expert_output: [N*k, d]`, `source_slot: [N*k]`, `weights: [N, k]`
    and `result_grad: [N, d]`, for the row `m` with `source_slot[m] =
    n * k + i` (ALGORITHMS.md sections 4.1 and 7.1):

    ```
    expert_output_grad[m] = weights[n, i] * result_grad[n]
    weights_grad[n, i]    = <expert_output[m], result_grad[n]>   (fp32)
    ```

    Example:

    ```mlir
    %dyp, %dw = moe.combine_grad %yp, %slot, %w, %dy
        : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>, tensor<?x64xf32>)
        -> (tensor<?x64xf32>, tensor<?x4xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$expert_output,
    MoE_I64Tensor:$source_slot,
    MoE_F32Tensor:$weights,
    MoE_FloatTensor:$result_grad
  );
  let results = (outs
    MoE_FloatTensor:$expert_output_grad,
    MoE_F32Tensor:$weights_grad
  );
  let assemblyFormat = [{
    $expert_output `,` $source_slot `,` $weights `,` $result_grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOEROUTINGGRADOPS_TD
