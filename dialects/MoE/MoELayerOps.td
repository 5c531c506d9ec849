//===- MoELayerOps.td - layer-level moe ops --------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// The ops a model description is written in: embedding, norms, the KDA and
// MLA mixers, the MoE and dense FFNs, Block Attention Residuals and the loss
// head. `-moe-decompose` rewrites the composite ones into primitive ops.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOELAYEROPS_TD
#define MOE_DIALECT_MOE_MOELAYEROPS_TD

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

def MoE_EmbeddingOp : MoE_Op<"embedding", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure]> {
  let summary = "Gathers one row of an embedding table per token";
  let description = [{
    `result[b, t, :] = table[tokens[b, t], :]` (ALGORITHMS.md section 7.2).
    `tokens` is an integer tensor of any rank; the result appends the table's
    width to its shape and has the table's element type. Ids outside
    `[0, vocab)` are undefined behaviour of the caller.

    Example:

    ```mlir
    %h = moe.embedding %tokens, %table
        : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins MoE_IntTensor:$tokens, MoE_FloatTensor:$table);
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $table attr-dict `:` type($tokens) `,` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

def MoE_RMSNormOp : MoE_Op<"rms_norm", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    `result = input * rsqrt(mean(input^2, -1) + epsilon) * weight`, computed
    in fp32 (ALGORITHMS.md section 7.2). `weight` has the length of the last
    dimension; `epsilon` is finite and positive. It is both a layer op and a
    primitive: `-moe-decompose` leaves it as it is.

    Example:

    ```mlir
    %y = moe.rms_norm %x, %w {epsilon = 1.0e-05 : f64}
        : tensor<?x?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// KDALayerOp
//===----------------------------------------------------------------------===//

def MoE_KDALayerOp : MoE_Op<"kda_layer", [Pure]> {
  let summary = "Kimi Delta Attention mixer layer";
  let description = [{
    The KDA block of ALGORITHMS.md section 1.2, on a pre-normed input
    `x: [B, T, d]` with `H = num_heads`, `K = head_dim`, `V = value_dim`:

    ```
    q = L2Norm(SiLU(ShortConv(x W_q)))        W_q: [d, H*K], conv_q: [H*K, W]
    k = L2Norm(SiLU(ShortConv(x W_k)))        W_k: [d, H*K], conv_k: [H*K, W]
    v =        SiLU(ShortConv(x W_v))         W_v: [d, H*V], conv_v: [H*V, W]
    g = decay_gate((x W_f_down) W_f_up)       W_f_down: [d, R], W_f_up: [R, H*K],
                                              A_log: [H], dt_bias: [H, K]
    beta = sigmoid(x W_beta)                  W_beta: [d, H]
    o = KDA(q, k, v, g, beta)                 [B, T, H, V], scale K^-1/2
    y = RMSNorm_V(o) * out_norm * sigmoid((x W_og_down) W_og_up)
                                              out_norm: [V], W_og_down: [d, Rg],
                                              W_og_up: [Rg, H*V]
    result = y W_out                          W_out: [H*V, d]
    ```

    `gate` selects the decay parameterization; `chunk_size` (a power of two)
    is the chunk length the tiling uses; `state_layout` is the layout of the
    recurrent state; `norm_eps` is the output RMSNorm's epsilon. The L2 norm
    uses epsilon 1e-6.

    Example:

    ```mlir
    %y = moe.kda_layer %x
        q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
        gate(%wfd, %wfu, %alog, %dtb) beta(%wb)
        out_gate(%wgd, %wgu) out_norm(%on) out(%wo)
        {num_heads = 2 : i64, head_dim = 32 : i64, value_dim = 32 : i64,
         gate = #moe.decay_gate<bounded, g_min = -5.0>}
        : (...) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_q, MoE_FloatTensor:$w_k, MoE_FloatTensor:$w_v,
    MoE_FloatTensor:$conv_q, MoE_FloatTensor:$conv_k, MoE_FloatTensor:$conv_v,
    MoE_FloatTensor:$w_gate_down, MoE_FloatTensor:$w_gate_up,
    MoE_FloatTensor:$a_log, MoE_FloatTensor:$dt_bias,
    MoE_FloatTensor:$w_beta,
    MoE_FloatTensor:$w_out_gate_down, MoE_FloatTensor:$w_out_gate_up,
    MoE_FloatTensor:$out_norm, MoE_FloatTensor:$w_out,
    MoE_PositiveI64Attr:$num_heads,
    MoE_PositiveI64Attr:$head_dim,
    MoE_PositiveI64Attr:$value_dim,
    MoE_DecayGateAttr:$gate,
    DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositivePowerOf2]>, "64">:$chunk_size,
    DefaultValuedAttr<MoE_StateLayoutAttr, "StateLayout::KeyMajor">:$state_layout,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$norm_eps
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input
    `q` `(` $w_q `)` `k` `(` $w_k `)` `v` `(` $w_v `)`
    `conv` `(` $conv_q `,` $conv_k `,` $conv_v `)`
    `gate` `(` $w_gate_down `,` $w_gate_up `,` $a_log `,` $dt_bias `)`
    `beta` `(` $w_beta `)`
    `out_gate` `(` $w_out_gate_down `,` $w_out_gate_up `)`
    `out_norm` `(` $out_norm `)` `out` `(` $w_out `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MLALayerOp
//===----------------------------------------------------------------------===//

def MoE_MLALayerOp : MoE_Op<"mla_layer", [Pure, AttrSizedOperandSegments]> {
  let summary = "Gated multi-head latent attention mixer layer (NoPE)";
  let description = [{
    The MLA block of ALGORITHMS.md section 3.1 in its training (non-absorbed)
    form, on a pre-normed input `x: [B, T, d]`, with `H = num_heads`,
    `d_qk = nope_head_dim + rope_head_dim`, `d_v = v_head_dim`:

    ```
    q = x W_q                                  W_q: [d, H*d_qk]
      | RMSNorm(x W_q_down) W_q_up             q-LoRA: W_q_down: [d, Rq],
                                               q_norm: [Rq], W_q_up: [Rq, H*d_qk]
    [c_kv ; k_rope] = x W_kv_down              W_kv_down: [d, Rkv + rope_head_dim]
    [k_nope ; v] = RMSNorm(c_kv) W_kv_up       kv_norm: [Rkv], W_kv_up: [Rkv, H*(nope+d_v)]
    k_h = [k_nope_h ; k_rope]                  k_rope shared by all heads
    o = causal softmax(q k^T * scale) v        scale = d_qk^-1/2
    o = o * sigmoid(x W_gate)                  only with gate: W_gate: [d, H*d_v]
    result = o W_out                           W_out: [H*d_v, d]
    ```

    Exactly one of `q(...)` and `q_lora(...)` is given. The Kimi family uses
    NoPE: the `rope_head_dim` slices take part in the dot product but are
    never rotated. `norm_eps` is the epsilon of the latent RMSNorms.

    Example:

    ```mlir
    %y = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
        {num_heads = 2 : i64, nope_head_dim = 16 : i64,
         rope_head_dim = 8 : i64, v_head_dim = 16 : i64}
        : (...) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    Optional<MoE_FloatTensor>:$w_q,
    Optional<MoE_FloatTensor>:$w_q_down,
    Optional<MoE_FloatTensor>:$q_norm,
    Optional<MoE_FloatTensor>:$w_q_up,
    MoE_FloatTensor:$w_kv_down, MoE_FloatTensor:$kv_norm, MoE_FloatTensor:$w_kv_up,
    Optional<MoE_FloatTensor>:$w_gate,
    MoE_FloatTensor:$w_out,
    MoE_PositiveI64Attr:$num_heads,
    MoE_PositiveI64Attr:$nope_head_dim,
    MoE_NonNegativeI64Attr:$rope_head_dim,
    MoE_PositiveI64Attr:$v_head_dim,
    DefaultValuedAttr<F64Attr, "1.0e-6">:$norm_eps
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input
    (`q` `(` $w_q^ `)`)?
    (`q_lora` `(` $w_q_down^ `,` $q_norm `,` $w_q_up `)`)?
    `kv` `(` $w_kv_down `,` $kv_norm `,` $w_kv_up `)`
    (`gate` `(` $w_gate^ `)`)?
    `out` `(` $w_out `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MoEFFNOp
//===----------------------------------------------------------------------===//

def MoE_MoEFFNOp : MoE_Op<"moe_ffn", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Routed Mixture-of-Experts FFN with an optional shared expert";
  let description = [{
    ALGORITHMS.md sections 4.1 and 7.1, on tokens `x: [..., d]` (rank >= 2) with
    `E = routing.experts`, `k = routing.top_k`:

    ```
    s = sigmoid(x W_router^T)                  W_router: [E, d]
    sel = top_k(s + router_bias)               router_bias: [E], selection only
    w_j = s_j / sum_{sel} s * routing.scaling  for j in sel
    result = sum_{j in sel} w_j Expert_j(x) + Shared(x)
    Expert_j(x) = act(x W_gate[j], x W_up[j]) W_down[j]
                                               W_gate, W_up: [E, d, F], W_down: [E, F, d]
    Shared(x) = act(x Ws_gate, x Ws_up) Ws_down
                                               Ws_gate, Ws_up: [d, Fs], Ws_down: [Fs, d]
    ```

    It also returns `load: [E] x i64`, the token-slots each expert received,
    and `next_bias: [E] x f32`, the selection bias the balancer computes from
    this batch for the next step. The shared expert is optional.

    The tokens are flattened to `N = prod(leading dims)` rows, and the
    routing is exactly that of `moe.route` (which this op decomposes into,
    with `moe.dispatch`, `moe.expert_ffn`, `moe.combine` and `moe.glu_ffn`):
    `top_k` ranks `s + router_bias` with ties to the lower expert index,
    `w` adds `1e-20` to the sum of the selected scores, and
    `#moe.quantile_balance<exact>` takes, per expert, the midpoint of the
    q-th and (q+1)-th smallest `r = cut - s` (`cut` the (k+1)-th largest
    biased score of the token, `q = round(N k / E)` clamped to `[1, N]`),
    centred to zero mean (QB_REF of ALGORITHMS.md section 4.5).

    Example:

    ```mlir
    %y, %load, %bias2 = moe.moe_ffn %x router(%wr, %bias)
        experts(%wg, %wu, %wd) shared(%sg, %su, %sd)
        {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                                balance = #moe.quantile_balance<exact>>,
         activation = #moe.activation<swiglu>}
        : (...) -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_router,
    MoE_F32Tensor:$router_bias,
    MoE_FloatTensor:$w_gate, MoE_FloatTensor:$w_up, MoE_FloatTensor:$w_down,
    Optional<MoE_FloatTensor>:$w_shared_gate,
    Optional<MoE_FloatTensor>:$w_shared_up,
    Optional<MoE_FloatTensor>:$w_shared_down,
    MoE_RoutingAttr:$routing,
    MoE_ActivationAttr:$activation
  );
  let results = (outs
    MoE_FloatTensor:$result,
    MoE_I64Tensor:$load,
    MoE_F32Tensor:$next_bias
  );
  let assemblyFormat = [{
    $input `router` `(` $w_router `,` $router_bias `)`
    `experts` `(` $w_gate `,` $w_up `,` $w_down `)`
    (`shared` `(` $w_shared_gate^ `,` $w_shared_up `,` $w_shared_down `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GLUFFNOp
//===----------------------------------------------------------------------===//

def MoE_GLUFFNOp : MoE_Op<"glu_ffn", [
    DeclareOpInterfaceMethods<MoE_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Dense gated FFN (SwiGLU or SiTU-GLU)";
  let description = [{
    `result = act(x W_gate, x W_up) W_down` on `x: [..., d]` with
    `W_gate, W_up: [d, F]` and `W_down: [F, d]` (ALGORITHMS.md section 7.1).
    It is the dense FFN of the first layers and the shared expert of
    `moe.moe_ffn`, at both levels.

    Example:

    ```mlir
    %y = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
        : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
          tensor<128x64xf32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$w_gate, MoE_FloatTensor:$w_up, MoE_FloatTensor:$w_down,
    MoE_ActivationAttr:$activation
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_gate `,` $w_up `,` $w_down attr-dict `:` type($input) `,`
    type($w_gate) `,` type($w_up) `,` type($w_down)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AttnResOp
//===----------------------------------------------------------------------===//

def MoE_AttnResOp : MoE_Op<"attn_res", [Pure]> {
  let summary = "Attention Residuals: a learned softmax mix over earlier blocks";
  let description = [{
    The input of sub-layer `sublayer` under (Block) Attention Residuals
    (ALGORITHMS.md sections 5.1 and 5.2):

    ```
    k_i = RMSNorm(v_i) * key_norm             per source and token
    p = softmax_i(query . k_i)                over the sources, fp32
    result = sum_i p_i v_i
    ```

    The sources are the completed block representations `b_0` (the token
    embedding), ..., `b_{n-1}`, followed by the current block's partial sum
    when it is not empty. `block_size` is the number of sub-layers per block
    (1 is Full AttnRes); a decoder layer has two sub-layers, mixer and FFN.
    Sub-layer `s` therefore reads `1 + floor(s / block_size)` completed
    blocks plus a partial sum when `s mod block_size != 0`; the verifier
    checks the count. The final mix before the output norm uses
    `sublayer` = the number of sub-layers.

    Example:

    ```mlir
    %h = moe.attn_res %b0, %b1, %partial query(%w) key_norm(%rho)
        {block_size = 4 : i64, sublayer = 5 : i64}
        : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
           tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins
    Variadic<MoE_FloatTensor>:$sources,
    MoE_FloatTensor:$query,
    MoE_FloatTensor:$key_norm,
    MoE_PositiveI64Attr:$block_size,
    MoE_NonNegativeI64Attr:$sublayer,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $sources `query` `(` $query `)` `key_norm` `(` $key_norm `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of sources sub-layer `sublayer` reads under `blockSize`.
    static int64_t getExpectedNumSources(int64_t sublayer, int64_t blockSize) {
      return 1 + sublayer / blockSize + (sublayer % blockSize != 0 ? 1 : 0);
    }
  }];
}

//===----------------------------------------------------------------------===//
// LMHeadOp
//===----------------------------------------------------------------------===//

def MoE_LMHeadOp : MoE_Op<"lm_head", [Pure]> {
  let summary = "Output projection with mean cross-entropy loss";
  let description = [{
    `logits = input W^T` with `W: [vocab, d]` (untied), then the mean
    cross-entropy against `labels` over the positions whose label is not
    `ignore_index` (ALGORITHMS.md section 7.2). `input` is `[..., d]` and
    `labels` has `input`'s leading shape. The result is a `tensor<f32>`.

    Example:

    ```mlir
    %loss = moe.lm_head %h, %w, %labels
        : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins
    MoE_FloatTensor:$input,
    MoE_FloatTensor:$weight,
    MoE_IntTensor:$labels,
    DefaultValuedAttr<I64Attr, "-100">:$ignore_index
  );
  let results = (outs MoE_ScalarF32Tensor:$loss);
  let assemblyFormat = [{
    $input `,` $weight `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOELAYEROPS_TD
