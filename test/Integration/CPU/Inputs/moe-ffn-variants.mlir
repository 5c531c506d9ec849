// Variants of examples/kernels/moe_ffn.mlir (d = 64, E = 16 experts of width
// 32, top-4) for the numerical tests of the other balancers, SiTU-GLU, and a
// dispatch and combine whose routing comes from outside.

// Histogram quantile balancing with 512 bins, SwiGLU, a shared expert.
func.func @moe_ffn_histogram(%x: tensor<?x64xf32>, %w_router: tensor<16x64xf32>,
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
                              balance = #moe.quantile_balance<histogram, bins = 512>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>,
         tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x32x64xf32>,
         tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>)
      -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>)
  return %y, %load, %next_bias : tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>
}

// DeepSeek-V3 sign-bias balancing, SiTU-GLU experts, no shared expert,
// top-2 of 16 with scaling 1.
func.func @moe_ffn_sign_situ(%x: tensor<?x64xf32>, %w_router: tensor<16x64xf32>,
                             %bias: tensor<16xf32>,
                             %w_gate: tensor<16x64x32xf32>,
                             %w_up: tensor<16x64x32xf32>,
                             %w_down: tensor<16x32x64xf32>)
    -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down)
      {routing = #moe.routing<experts = 16, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>,
         tensor<16x64x32xf32>, tensor<16x64x32xf32>, tensor<16x32x64xf32>)
      -> (tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>)
  return %y, %load, %next_bias : tensor<?x64xf32>, tensor<16xi64>, tensor<16xf32>
}

// Routing given as data: a stand-alone dispatch (counting sort of the
// token-slots), grouped SwiGLU experts, and a combine that inverts
// source_slot itself.
func.func @experts_given_routing(%x: tensor<?x64xf32>, %indices: tensor<?x4xi64>,
                                 %weights: tensor<?x4xf32>,
                                 %w_gate: tensor<16x64x32xf32>,
                                 %w_up: tensor<16x64x32xf32>,
                                 %w_down: tensor<16x32x64xf32>)
    -> tensor<?x64xf32> {
  %xp, %offsets, %slot = moe.dispatch %x, %indices {num_experts = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x4xi64>)
      -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %offsets, %w_gate, %w_up, %w_down
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
         tensor<16x64x32xf32>, tensor<16x32x64xf32>) -> tensor<?x64xf32>
  %y = moe.combine %yp, %slot, %weights
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Other expert counts and top-k, exact QB, no shared expert: 8 experts,
// top-1, and 64 experts of width 16, top-8.
func.func @moe_ffn_e8_top1(%x: tensor<?x64xf32>, %w_router: tensor<8x64xf32>,
                           %bias: tensor<8xf32>, %w_gate: tensor<8x64x32xf32>,
                           %w_up: tensor<8x64x32xf32>,
                           %w_down: tensor<8x32x64xf32>)
    -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down)
      {routing = #moe.routing<experts = 8, top_k = 1, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>,
         tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>)
      -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %next_bias : tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>
}

func.func @moe_ffn_e64_top8(%x: tensor<?x64xf32>, %w_router: tensor<64x64xf32>,
                            %bias: tensor<64xf32>, %w_gate: tensor<64x64x16xf32>,
                            %w_up: tensor<64x64x16xf32>,
                            %w_down: tensor<64x16x64xf32>)
    -> (tensor<?x64xf32>, tensor<64xi64>, tensor<64xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down)
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>,
         tensor<64x64x16xf32>, tensor<64x64x16xf32>, tensor<64x16x64xf32>)
      -> (tensor<?x64xf32>, tensor<64xi64>, tensor<64xf32>)
  return %y, %load, %next_bias : tensor<?x64xf32>, tensor<64xi64>, tensor<64xf32>
}
