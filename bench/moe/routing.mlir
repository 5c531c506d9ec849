// bench/moe/routing.mlir - the routing half of the MoE layer for
// bench/moe/routing_bench.py: moe.route + moe.dispatch at the issue's shape
// (d = 2048, E = 64, top-8, routed scaling 2.5, exact QB; N dynamic), which
// -moe-generate-routing-kernels turns into GPU kernels; and two small f32
// variants for the fp32 CUDA-core router, the histogram QB and the sign bias.

func.func @routing(%x: tensor<?x2048xbf16>, %w_router: tensor<64x2048xbf16>,
                   %bias: tensor<64xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x2048xbf16>, tensor<65xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x2048xbf16>, tensor<64x2048xbf16>, tensor<64xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 64 : i64}
      : (tensor<?x2048xbf16>, tensor<?x8xi64>)
      -> (tensor<?x2048xbf16>, tensor<65xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x2048xbf16>, tensor<65xi64>, tensor<?xi64>
}

func.func @routing_f32_histogram(%x: tensor<?x64xf32>,
                                 %w_router: tensor<16x64xf32>,
                                 %bias: tensor<16xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>,
        tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                              balance = #moe.quantile_balance<histogram, bins = 512>>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x4xi64>)
      -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>,
        tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>
}

func.func @routing_f32_sign(%x: tensor<?x64xf32>, %w_router: tensor<16x64xf32>,
                            %bias: tensor<16xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>,
        tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x4xi64>)
      -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x4xf32>, tensor<?x4xi64>, tensor<16xi64>, tensor<16xf32>,
        tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>
}

// fp32 router with ragged tiles: d = 200 is no multiple of the 32 staged
// columns and E = 24 leaves the last group of 16 experts half empty.
func.func @routing_f32_ragged(%x: tensor<?x200xf32>,
                              %w_router: tensor<24x200xf32>,
                              %bias: tensor<24xf32>)
    -> (tensor<?x6xf32>, tensor<?x6xi64>, tensor<24xi64>, tensor<24xf32>,
        tensor<?x200xf32>, tensor<25xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 24, top_k = 6, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x200xf32>, tensor<24x200xf32>, tensor<24xf32>)
      -> (tensor<?x6xf32>, tensor<?x6xi64>, tensor<24xi64>, tensor<24xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 24 : i64}
      : (tensor<?x200xf32>, tensor<?x6xi64>)
      -> (tensor<?x200xf32>, tensor<25xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x6xf32>, tensor<?x6xi64>, tensor<24xi64>, tensor<24xf32>,
        tensor<?x200xf32>, tensor<25xi64>, tensor<?xi64>
}

// More experts than one router tile (Kimi-Linear has 256): the fp32 router
// in passes of 128 experts, bf16 operands widened as they are staged.
func.func @routing_e256(%x: tensor<?x128xbf16>, %w_router: tensor<256x128xbf16>,
                        %bias: tensor<256xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<256xi64>, tensor<256xf32>,
        tensor<?x128xbf16>, tensor<257xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x128xbf16>, tensor<256x128xbf16>, tensor<256xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<256xi64>, tensor<256xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 256 : i64}
      : (tensor<?x128xbf16>, tensor<?x8xi64>)
      -> (tensor<?x128xbf16>, tensor<257xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<?x8xi64>, tensor<256xi64>, tensor<256xf32>,
        tensor<?x128xbf16>, tensor<257xi64>, tensor<?xi64>
}

// The most experts the generated kernels take.
func.func @routing_f32_e512(%x: tensor<?x64xf32>, %w_router: tensor<512x64xf32>,
                            %bias: tensor<512xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<512xi64>, tensor<512xf32>,
        tensor<?x64xf32>, tensor<513xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 512, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf32>, tensor<512x64xf32>, tensor<512xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<512xi64>, tensor<512xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 512 : i64}
      : (tensor<?x64xf32>, tensor<?x8xi64>)
      -> (tensor<?x64xf32>, tensor<513xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<?x8xi64>, tensor<512xi64>, tensor<512xf32>,
        tensor<?x64xf32>, tensor<513xi64>, tensor<?xi64>
}
