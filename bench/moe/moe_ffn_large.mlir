// bench/moe/moe_ffn_large.mlir - the issue's MoE layer for the GPU timing of
// bench/moe/bench.py: N tokens (dynamic) of d = 2048 in bf16, E = 64
// routed SwiGLU experts of width F = 1024, top-8, routed scaling 2.5, one
// shared SwiGLU expert of width 1024, exact quantile balancing. The same
// math as examples/kernels/moe_ffn.mlir at the issue's shape.

func.func @moe_ffn_large(%x: tensor<?x2048xbf16>, %w_router: tensor<64x2048xbf16>,
                         %bias: tensor<64xf32>,
                         %w_gate: tensor<64x2048x1024xbf16>,
                         %w_up: tensor<64x2048x1024xbf16>,
                         %w_down: tensor<64x1024x2048xbf16>,
                         %ws_gate: tensor<2048x1024xbf16>,
                         %ws_up: tensor<2048x1024xbf16>,
                         %ws_down: tensor<1024x2048xbf16>)
    -> (tensor<?x2048xbf16>, tensor<64xi64>, tensor<64xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down) shared(%ws_gate, %ws_up, %ws_down)
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x2048xbf16>, tensor<64x2048xbf16>, tensor<64xf32>,
         tensor<64x2048x1024xbf16>, tensor<64x2048x1024xbf16>,
         tensor<64x1024x2048xbf16>, tensor<2048x1024xbf16>,
         tensor<2048x1024xbf16>, tensor<1024x2048xbf16>)
      -> (tensor<?x2048xbf16>, tensor<64xi64>, tensor<64xf32>)
  return %y, %load, %next_bias : tensor<?x2048xbf16>, tensor<64xi64>, tensor<64xf32>
}
