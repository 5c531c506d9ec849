//===- MoEPrimitiveOps.td - primitive moe ops ------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// The ops layer ops decompose into: the core KDA recurrence and its gate,
// core attention, routing, dispatch, grouped experts and combine, and the
// small element-wise pieces that have no upstream equivalent. Each has one
// backward formula in ALGORITHMS.md, and each is where a sharding pass cuts.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEPRIMITIVEOPS_TD
#define MOE_DIALECT_MOE_MOEPRIMITIVEOPS_TD

//===----------------------------------------------------------------------===//
// DecayGateOp
//===----------------------------------------------------------------------===//

def MoE_DecayGateOp : MoE_Op<"decay_gate", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "KDA log decay from the raw gate projection";
  let description = [{
    Computes `g <= 0` from `raw: [B, T, H, K]` per ALGORITHMS.md section 2.1,
    with `dt_bias: [H, K]` and `A_log: [H]`:

    * `#moe.decay_gate<bounded, g_min = m>`:
      `g = m * sigmoid(exp(A_log[h]) * (raw + dt_bias[h]))`; without `A_log`,
      `g = m * sigmoid(raw + dt_bias[h])`. Every value lies in `[m, 0]`.
    * `#moe.decay_gate<softplus>`:
      `g = -exp(A_log[h]) * softplus(raw + dt_bias[h])`; `A_log` is required.

    The result is fp32 whatever the input type: decay math stays in fp32.
    This op is where the decay-bound analysis starts.

    Example:

    ```mlir
    %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %a_log
        : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>)
        -> tensor<?x?x4x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_DecayGateAttr:$gate,
    MoE_FloatTensor:$raw,
    MoE_FloatTensor:$dt_bias,
    Optional<MoE_FloatTensor>:$a_log
  );
  let results = (outs MoE_F32Tensor:$result);
  let assemblyFormat = [{
    $gate $raw `,` $dt_bias (`,` $a_log^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// KDAOp
//===----------------------------------------------------------------------===//

def MoE_KDAOp : MoE_Op<"kda", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Core gated delta-rule recurrence (Kimi Delta Attention)";
  let description = [{
    Per batch `b` and head `h`, with state `S in R^{K x V}` (ALGORITHMS.md
    section 1.1):

    ```
    S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T
    o_t = S_t^T (scale * q_t)
    ```

    Operands: `query`, `key: [B, T, H, K]` (already L2-normalised),
    `value: [B, T, H, V]`, `log_decay: [B, T, H, K]` (fp32, `<= 0`),
    `beta: [B, T, H]` and an optional fp32 `initial_state` (zero when
    absent). Results: `output: [B, T, H, V]` with the element type of
    `value`, and the fp32 `final_state`. Both states use `state_layout`:
    `[B, H, K, V]` for `key_major`, `[B, H, V, K]` for `value_major`.
    `scale` defaults to `K^-1/2`.

    Example:

    ```mlir
    %o, %s = moe.kda %q, %k, %v, %g, %beta
        : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
        -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$query,
    MoE_FloatTensor:$key,
    MoE_FloatTensor:$value,
    MoE_F32Tensor:$log_decay,
    MoE_FloatTensor:$beta,
    Optional<MoE_F32Tensor>:$initial_state,
    OptionalAttr<F64Attr>:$scale,
    DefaultValuedAttr<MoE_StateLayoutAttr, "StateLayout::KeyMajor">:$state_layout
  );
  let results = (outs MoE_FloatTensor:$output, MoE_F32Tensor:$final_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $log_decay `,` $beta
    (`initial_state` `(` $initial_state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to the query: `scale` or `K^-1/2`.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// L2NormOp
//===----------------------------------------------------------------------===//

def MoE_L2NormOp : MoE_Op<"l2_norm", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "L2 normalisation over the last dimension";
  let description = [{
    `result = input / sqrt(sum(input^2, -1) + epsilon)` (ALGORITHMS.md
    section 1.2), with a finite, positive `epsilon` (1e-6 by default).

    Example:

    ```mlir
    %y = moe.l2_norm %x : tensor<?x?x4x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ShortConvOp
//===----------------------------------------------------------------------===//

def MoE_ShortConvOp : MoE_Op<"short_conv", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Causal depth-wise 1-D convolution, optionally followed by SiLU";
  let description = [{
    `c[b, t, ch] = sum_{i < W} weight[ch, i] * input[b, t - W + 1 + i, ch]`
    with zeros before the first position, on `input: [B, T, C]` and
    `weight: [C, W]` (ALGORITHMS.md section 1.2). With `silu`, the result is
    `SiLU(c)`.

    Example:

    ```mlir
    %y = moe.short_conv %x, %w {silu} : tensor<?x?x128xf32>, tensor<128x4xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    UnitAttr:$silu
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MLAAttentionOp
//===----------------------------------------------------------------------===//

def MoE_MLAAttentionOp : MoE_Op<"mla_attention", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Core causal attention with an optional sigmoid output gate";
  let description = [{
    Per batch and head (ALGORITHMS.md sections 3.1 and 3.2):

    ```
    o = softmax(query key^T * scale + causal mask) value
    output = o * sigmoid(gate)                 (o when gate is absent)
    lse[b, h, t] = log sum_s exp(score[t, s])  kept for the backward pass
    ```

    `query, key: [B, T, H, D_qk]`, `value: [B, T, H, D_v]`,
    `gate: [B, T, H, D_v]`. `D_qk` and `D_v` may differ (192 and 128 in the
    real models). `scale` defaults to `D_qk^-1/2`. `output` has the element
    type of `value`; `lse: [B, H, T]` is fp32.

    Example:

    ```mlir
    %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
        : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
           tensor<?x?x4x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$query,
    MoE_FloatTensor:$key,
    MoE_FloatTensor:$value,
    Optional<MoE_FloatTensor>:$gate,
    OptionalAttr<F64Attr>:$scale
  );
  let results = (outs MoE_FloatTensor:$output, MoE_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`gate` `(` $gate^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: `scale` or `D_qk^-1/2`.
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// RouteOp
//===----------------------------------------------------------------------===//

def MoE_RouteOp : MoE_Op<"route", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Sigmoid top-k routing with load counts and the balancer update";
  let description = [{
    For `input: [N, d]`, `w_router: [E, d]` and the selection bias
    `bias: [E]` (ALGORITHMS.md sections 4.1-4.3), with `k =
    routing.top_k`, all in fp32 (the contraction accumulates in fp32):

    ```
    s = sigmoid(input w_router^T)              [N, E]
    z = s + bias                               [N, E], selection only
    rank[n, j] = |{j' : z[n, j'] > z[n, j] or (z[n, j'] = z[n, j] and j' < j)}|
    indices[n, i] = the j with rank[n, j] = i, for i < k
    weights[n, i] = s[n, indices[n, i]] / (sum_i' s[n, indices[n, i']] + 1e-20)
                    * routing.scaling          [N, k]
    load[j] = |{n : rank[n, j] < k}|           [E] x i64
    next_bias = routing.balance(s, z, bias)    [E] x f32
    ```

    So `indices` lists each token's top-k experts by decreasing `z`, equal
    values going to the lower expert index first.

    `#moe.quantile_balance` (section 4.3, `k < E`): with `cut[n] = z[n, j]`
    for `rank[n, j] = k` (the (k+1)-th largest biased score),
    `r[n, j] = cut[n] - s[n, j]` (the bias expert `j` would need to win
    token `n`) and `r_(1) <= ... <= r_(N)` the sorted `r[:, j]`:

    * `exact` (QB_REF of section 4.5): `q = round(N k / E)` (halves round
      up), and `b'_j = (r_(lo) + r_(hi)) / 2` with `lo = max(q, 1)` and
      `hi = min(q + 1, N)`: the midpoint of the q-th and (q+1)-th smallest,
      so that exactly q tokens have `r < b'_j`;
    * `histogram` with `bins`: `c_m` counts the `r[:, j]` in bin
      `m = clamp(floor((r - L) / w), 0, bins - 1)` with `L = min(bias) - 1`
      and `w = (max(bias) + 1 - L) / bins`; with `C_m = c_0 + ... + c_m`
      and `m` the first bin with `C_m >= N k / E` (the last bin at the
      latest), `b'_j = L + (m + (N k / E - C_{m-1}) / c_m) w`;

    then `next_bias = b' - mean(b')`. An empty batch (`N = 0`) gives
    `bias - mean(bias)`.

    `#moe.sign_bias`: `next_bias = bias + rate * sign(N k / E - load)`,
    with `sign(0) = 0`.

    Example:

    ```mlir
    %w, %idx, %load, %nb = moe.route %x, %wr, %bias
        {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                                balance = #moe.quantile_balance<exact>>}
        : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>)
        -> (tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_router,
    MoE_F32Tensor:$bias,
    MoE_RoutingAttr:$routing
  );
  let results = (outs
    MoE_F32Tensor:$weights,
    MoE_IntTensor:$indices,
    MoE_I64Tensor:$load,
    MoE_F32Tensor:$next_bias
  );
  let assemblyFormat = [{
    $input `,` $w_router `,` $bias attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// DispatchOp
//===----------------------------------------------------------------------===//

def MoE_DispatchOp : MoE_Op<"dispatch", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Groups token-slots by expert";
  let description = [{
    Sorts the `N * k` (token, slot) pairs of `indices: [N, k]` by expert,
    stably (within an expert, by `n * k + i`), and gathers the token rows of
    `input: [N, d]` in that order; every index must lie in
    `[0, num_experts)`:

    ```
    permuted[m] = input[source_slot[m] / k]    [N*k, d]
    expert_offsets[j] = first row of expert j  [E + 1] x i64, last = N*k
    source_slot[m] = n * k + i                 [N*k] x i64
    ```

    Expert `j` owns rows `expert_offsets[j] .. expert_offsets[j+1]`. This is
    where expert parallelism inserts its all-to-all.

    Example:

    ```mlir
    %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 16 : i64}
        : (tensor<?x64xf32>, tensor<?x4xi64>)
        -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_IntTensor:$indices,
    MoE_PositiveI64Attr:$num_experts
  );
  let results = (outs
    MoE_FloatTensor:$permuted,
    MoE_I64Tensor:$expert_offsets,
    MoE_I64Tensor:$source_slot
  );
  let assemblyFormat = [{
    $input `,` $indices attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ExpertFFNOp
//===----------------------------------------------------------------------===//

def MoE_ExpertFFNOp : MoE_Op<"expert_ffn", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Grouped gated FFN over expert-sorted rows";
  let description = [{
    For each expert `j`, rows `expert_offsets[j] .. expert_offsets[j+1]` of
    `input: [M, d]` go through
    `act(x W_gate[j], x W_up[j]) W_down[j]` with `W_gate, W_up: [E, d, F]`
    and `W_down: [E, F, d]`: one grouped GEMM per projection. The offsets
    are non-decreasing, start at 0 and end at `M`; the contractions and the
    activation (`#moe.activation`, ALGORITHMS.md sections 6 and 7.1) are
    computed in fp32 and the result is converted to the input's type.

    Example:

    ```mlir
    %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
        {activation = #moe.activation<swiglu>}
        : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
           tensor<16x64x32xf32>, tensor<16x32x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_I64Tensor:$expert_offsets,
    MoE_FloatTensor:$w_gate, MoE_FloatTensor:$w_up, MoE_FloatTensor:$w_down,
    MoE_ActivationAttr:$activation
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $expert_offsets `,` $w_gate `,` $w_up `,` $w_down attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

def MoE_CombineOp : MoE_Op<"combine", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Weighted sum of each token's expert outputs";
  let description = [{
    Inverse of `moe.dispatch`: with `expert_output: [N*k, d]`,
    `source_slot: [N*k]` and `weights: [N, k]`,
    `result[n] = sum_i weights[n, i] * expert_output[m(n, i)]` where
    `source_slot[m(n, i)] = n * k + i`, summed in fp32.

    Example:

    ```mlir
    %y = moe.combine %yp, %slot, %w
        : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$expert_output,
    MoE_I64Tensor:$source_slot,
    MoE_F32Tensor:$weights
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_output `,` $source_slot `,` $weights attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AttnResMixOp
//===----------------------------------------------------------------------===//

def MoE_AttnResMixOp : MoE_Op<"attn_res_mix", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Softmax-over-depth mix of sources with RMS-normalised keys";
  let description = [{
    The core of Attention Residuals (ALGORITHMS.md section 5.3), per token:

    ```
    rstd_i = (mean(v_i^2) + epsilon)^-1/2
    p = softmax_i(rstd_i * (v_i . query))      fp32
    result = sum_i p_i v_i
    ```

    `query: [d]` already holds the RMSNorm weight folded in
    (`w * key_norm`). All sources have the result's type `[..., d]`.

    Example:

    ```mlir
    %h = moe.attn_res_mix %b0, %b1 query(%u)
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
        -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins
    Variadic<MoE_FloatTensor>:$sources,
    MoE_FloatTensor:$query,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $sources `query` `(` $query `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

def MoE_CrossEntropyOp : MoE_Op<"cross_entropy", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Mean cross-entropy of logits against integer labels";
  let description = [{
    `loss = sum_valid (LSE(logits_t) - logits_t[labels_t]) / N_valid` over the
    positions whose label differs from `ignore_index` (ALGORITHMS.md section
    7.2), in fp32. `logits: [..., V]`; `labels` has the leading shape.

    Example:

    ```mlir
    %loss = moe.cross_entropy %logits, %labels
        : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$logits,
    MoE_IntTensor:$labels,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index
  );
  let results = (outs MoE_ScalarF32Tensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LinearCrossEntropyOp
//===----------------------------------------------------------------------===//

def MoE_LinearCrossEntropyOp : MoE_Op<"linear_cross_entropy", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "lm_head projection fused with the mean cross-entropy";
  let description = [{
    The loss of `moe.cross_entropy` applied to the logits `z = input W^T`
    (ALGORITHMS.md section 7.2), without ever materialising `z`: per token,

    ```
    lse[t]  = log sum_v exp(z[t, v])          z[t, v] = sum_d input[t, d] W[v, d]
    loss    = sum_{valid t} (lse[t] - z[t, labels[t]]) / N_valid
    ```

    over the positions whose label differs from `ignore_index`. `input` is
    `[..., d]` (at least one leading dimension), `weight` is `[V, d]`
    (untied lm_head) and `labels` has `input`'s leading shape. The results
    are the fp32 `loss` and the fp32 per-token log-sum-exp `lse` (the
    leading shape), which the backward (`moe.linear_cross_entropy_grad`)
    reads instead of recomputing it; `lse` has no adjoint. Back ends lower
    it in vocabulary chunks with an online log-sum-exp. With no valid
    label, the loss is 0 / 0 = NaN.

    Example:

    ```mlir
    %loss, %lse = moe.linear_cross_entropy %h, %w, %labels
        : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>)
        -> (tensor<f32>, tensor<?x?xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    MoE_IntTensor:$labels,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index
  );
  let results = (outs MoE_ScalarF32Tensor:$loss, MoE_F32Tensor:$lse);
  let assemblyFormat = [{
    $input `,` $weight `,` $labels attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOEPRIMITIVEOPS_TD
