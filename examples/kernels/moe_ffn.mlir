// The MoE FFN kernel of the CPU and GPU back ends (ALGORITHMS.md sections
// 4.1, 4.3, 4.5 and 7.1): d = 64, E = 16 routed experts of width 32, top-4,
// routed scaling factor 2.5, SwiGLU experts and one SwiGLU shared expert of
// width 32; the token count is dynamic.
//
//   s    = sigmoid(x W_router^T)           z = s + bias (selection only)
//   sel  = top-4 of z (ties to the lower expert)
//   w_j  = s_j / (sum_sel s + 1e-20) * 2.5
//   y    = sum_{j in sel} w_j Expert_j(x) + Shared(x),
//          Expert(x) = (silu(x Wg) * (x Wu)) Wd
//
// Results: y, the load (token-slots per expert) and the next step's bias
// from exact quantile balancing (QB_REF): per expert the midpoint of the
// q-th and (q+1)-th smallest r = cut - s, q = round(4 N / 16), centred.

func.func @moe_ffn_forward(%x: tensor<?x64xf32>, %w_router: tensor<16x64xf32>,
                           %bias: tensor<16xf32>,
                           %w_gate: tensor<16x64x32xf32>,
                           %w_up: tensor<16x64x32xf32>,
                           %w_down: tensor<16x32x64xf32>,
                           %ws_gate: tensor<64x32xf32>,
                           %ws_up: tensor<64x32xf32>,
                           %ws_down: tensor<32x64xf32>)
    -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down) shared(%ws_gate, %ws_up, %ws_down)
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>,
         tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x32x64xf32>,
         tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>)
      -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>)
  return %y, %load, %next_bias : tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>
}
