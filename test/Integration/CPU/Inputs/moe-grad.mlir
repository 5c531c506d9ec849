// Gradient ops of the MoE FFN (MoERoutingGradOps.td) fed by the forward ops
// whose values they read, for test/Integration/CPU/moe-grad*.test. A
// template: the tests replace @E@ (experts), @K@ (top-k), @F@ (expert
// width) and @ACT@ (the activation) with sed. The hidden size is 32.

// moe.route then its gradient through the weights; returns the selection
// too, so the test can check that fp32 and fp64 select the same experts.
func.func @route_grad(%x: tensor<?x32xf32>, %wr: tensor<@E@x32xf32>,
                      %b: tensor<@E@xf32>, %dw: tensor<?x@K@xf32>)
    -> (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = @E@, top_k = @K@, scaling = 2.5,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<@E@xf32>)
      -> (tensor<?x@K@xf32>, tensor<?x@K@xi64>, tensor<@E@xi64>,
          tensor<@E@xf32>)
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = @E@, top_k = @K@, scaling = 2.5,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>,
         tensor<?x@K@xf32>) -> (tensor<?x32xf32>, tensor<@E@x32xf32>)
  return %dx, %dwr, %idx
      : tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>
}

// Router ties: experts j and j + E/2 share their router row and bias, so
// every token has equal biased scores (lower index first). Returns the
// full router and bias for the reference.
func.func @route_grad_tied(%x: tensor<?x32xf32>, %half: tensor<@H@x32xf32>,
                           %bhalf: tensor<@H@xf32>, %dw: tensor<?x@K@xf32>)
    -> (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>,
        tensor<@E@x32xf32>, tensor<@E@xf32>) {
  %wr = tensor.concat dim(0) %half, %half
      : (tensor<@H@x32xf32>, tensor<@H@x32xf32>) -> tensor<@E@x32xf32>
  %b = tensor.concat dim(0) %bhalf, %bhalf
      : (tensor<@H@xf32>, tensor<@H@xf32>) -> tensor<@E@xf32>
  %dx, %dwr, %idx = func.call @route_grad(%x, %wr, %b, %dw)
      : (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<@E@xf32>,
         tensor<?x@K@xf32>)
      -> (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>)
  return %dx, %dwr, %idx, %wr, %b
      : tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>,
        tensor<@E@x32xf32>, tensor<@E@xf32>
}

// The dispatch's adjoint: the permuted-row gradient summed back per token.
func.func @dispatch_grad(%x: tensor<?x32xf32>, %idx: tensor<?x@K@xi64>,
                         %dxp: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = @E@ : i64}
      : (tensor<?x32xf32>, tensor<?x@K@xi64>)
      -> (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<?xi64>)
  %dx = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x32xf32>, tensor<?xi64>, tensor<?x@K@xi64>) -> tensor<?x32xf32>
  return %dx : tensor<?x32xf32>
}

// The combine's gradient to the expert outputs (in dispatch order) and to
// the weights.
func.func @combine_grad(%x: tensor<?x32xf32>, %idx: tensor<?x@K@xi64>,
                        %yp: tensor<?x32xf32>, %w: tensor<?x@K@xf32>,
                        %dy: tensor<?x32xf32>)
    -> (tensor<?x32xf32>, tensor<?x@K@xf32>) {
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = @E@ : i64}
      : (tensor<?x32xf32>, tensor<?x@K@xi64>)
      -> (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<?xi64>)
  %dyp, %dw = moe.combine_grad %yp, %slot, %w, %dy
      : (tensor<?x32xf32>, tensor<?xi64>, tensor<?x@K@xf32>, tensor<?x32xf32>)
      -> (tensor<?x32xf32>, tensor<?x@K@xf32>)
  return %dyp, %dw : tensor<?x32xf32>, tensor<?x@K@xf32>
}

// The grouped experts' gradient on the rows that the dispatch makes.
func.func @expert_grad(%x: tensor<?x32xf32>, %idx: tensor<?x@K@xi64>,
                       %wg: tensor<@E@x32x@F@xf32>, %wu: tensor<@E@x32x@F@xf32>,
                       %wd: tensor<@E@x@F@x32xf32>, %dyp: tensor<?x32xf32>)
    -> (tensor<?x32xf32>, tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
        tensor<@E@x@F@x32xf32>) {
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = @E@ : i64}
      : (tensor<?x32xf32>, tensor<?x@K@xi64>)
      -> (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<?xi64>)
  %dxp, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = @ACT@}
      : (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<@E@x32x@F@xf32>,
         tensor<@E@x32x@F@xf32>, tensor<@E@x@F@x32xf32>, tensor<?x32xf32>)
      -> (tensor<?x32xf32>, tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
          tensor<@E@x@F@x32xf32>)
  return %dxp, %dwg, %dwu, %dwd
      : tensor<?x32xf32>, tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
        tensor<@E@x@F@x32xf32>
}

// The dense (shared-expert) FFN's gradient on [B, T, d] activations.
func.func @glu_grad(%x: tensor<?x?x32xf32>, %wg: tensor<32x@F@xf32>,
                    %wu: tensor<32x@F@xf32>, %wd: tensor<@F@x32xf32>,
                    %dy: tensor<?x?x32xf32>)
    -> (tensor<?x?x32xf32>, tensor<32x@F@xf32>, tensor<32x@F@xf32>,
        tensor<@F@x32xf32>) {
  %dx, %dwg, %dwu, %dwd = moe.glu_ffn_grad %x, %wg, %wu, %wd, %dy
      {activation = @ACT@}
      : (tensor<?x?x32xf32>, tensor<32x@F@xf32>, tensor<32x@F@xf32>,
         tensor<@F@x32xf32>, tensor<?x?x32xf32>)
      -> (tensor<?x?x32xf32>, tensor<32x@F@xf32>, tensor<32x@F@xf32>,
          tensor<@F@x32xf32>)
  return %dx, %dwg, %dwu, %dwd
      : tensor<?x?x32xf32>, tensor<32x@F@xf32>, tensor<32x@F@xf32>,
        tensor<@F@x32xf32>
}

// The routed FFN forward (route, dispatch, grouped experts, combine: the
// primitives of moe.moe_ffn without the shared expert) and its backward
// chained by hand the way reverse mode chains the adjoints: combine_grad,
// expert_ffn_grad, dispatch_grad, route_grad, the two input gradients
// summed. In the CPU pipeline the forward becomes the fused routing kernel
// (dispatch fused with its route) and the backward reads its values.
func.func @moe_ffn_grad(%x: tensor<?x32xf32>, %wr: tensor<@E@x32xf32>,
                        %b: tensor<@E@xf32>, %wg: tensor<@E@x32x@F@xf32>,
                        %wu: tensor<@E@x32x@F@xf32>,
                        %wd: tensor<@E@x@F@x32xf32>, %dy: tensor<?x32xf32>)
    -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<@E@x32xf32>,
        tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
        tensor<@E@x@F@x32xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = @E@, top_k = @K@, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<@E@xf32>)
      -> (tensor<?x@K@xf32>, tensor<?x@K@xi64>, tensor<@E@xi64>,
          tensor<@E@xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = @E@ : i64}
      : (tensor<?x32xf32>, tensor<?x@K@xi64>)
      -> (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd {activation = @ACT@}
      : (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<@E@x32x@F@xf32>,
         tensor<@E@x32x@F@xf32>, tensor<@E@x@F@x32xf32>) -> tensor<?x32xf32>
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x32xf32>, tensor<?xi64>, tensor<?x@K@xf32>) -> tensor<?x32xf32>

  %dyp, %dw = moe.combine_grad %yp, %slot, %w, %dy
      : (tensor<?x32xf32>, tensor<?xi64>, tensor<?x@K@xf32>, tensor<?x32xf32>)
      -> (tensor<?x32xf32>, tensor<?x@K@xf32>)
  %dxp, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = @ACT@}
      : (tensor<?x32xf32>, tensor<@E1@xi64>, tensor<@E@x32x@F@xf32>,
         tensor<@E@x32x@F@xf32>, tensor<@E@x@F@x32xf32>, tensor<?x32xf32>)
      -> (tensor<?x32xf32>, tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
          tensor<@E@x@F@x32xf32>)
  %dx1 = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x32xf32>, tensor<?xi64>, tensor<?x@K@xi64>) -> tensor<?x32xf32>
  %dx2, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = @E@, top_k = @K@, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x32xf32>, tensor<@E@x32xf32>, tensor<?x@K@xi64>,
         tensor<?x@K@xf32>) -> (tensor<?x32xf32>, tensor<@E@x32xf32>)
  %dx = arith.addf %dx1, %dx2 : tensor<?x32xf32>
  return %y, %dx, %dwr, %dwg, %dwu, %dwd
      : tensor<?x32xf32>, tensor<?x32xf32>, tensor<@E@x32xf32>,
        tensor<@E@x32x@F@xf32>, tensor<@E@x32x@F@xf32>,
        tensor<@E@x@F@x32xf32>
}
