// bench/moe/moe_ffn_bf16_small.mlir - a bf16 MoE layer small enough for the
// CPU back end (d = 256, E = 8 experts of width 128, top-2, a shared expert
// of width 128, exact QB), so that bench/moe/bench.py can check the GPU's
// generated routing and expert kernels against the CPU back end's results
// on the same inputs (bench/cpu_reference.py).

func.func @moe_ffn_bf16(%x: tensor<?x256xbf16>, %w_router: tensor<8x256xbf16>,
                        %bias: tensor<8xf32>,
                        %w_gate: tensor<8x256x128xbf16>,
                        %w_up: tensor<8x256x128xbf16>,
                        %w_down: tensor<8x128x256xbf16>,
                        %ws_gate: tensor<256x128xbf16>,
                        %ws_up: tensor<256x128xbf16>,
                        %ws_down: tensor<128x256xbf16>)
    -> (tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down) shared(%ws_gate, %ws_up, %ws_down)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x256xbf16>, tensor<8x256xbf16>, tensor<8xf32>,
         tensor<8x256x128xbf16>, tensor<8x256x128xbf16>,
         tensor<8x128x256xbf16>, tensor<256x128xbf16>,
         tensor<256x128xbf16>, tensor<128x256xbf16>)
      -> (tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %next_bias : tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>
}
