func.func @route_dispatch_bf16(%x: tensor<?x128xbf16>, %wr: tensor<64x128xbf16>,
                               %bias: tensor<64xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 64 : i64}
      : (tensor<?x128xbf16>, tensor<?x8xi64>)
      -> (tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>
}
