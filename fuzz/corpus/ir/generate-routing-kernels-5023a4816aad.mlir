func.func @histogram_two_dispatches(%x: tensor<?x64xf32>, %y: tensor<?x32xbf16>,
                                    %wr: tensor<16x64xf32>, %bias: tensor<16xf32>)
    -> (tensor<?x64xf32>, tensor<?x32xbf16>, tensor<17xi64>, tensor<16xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 1.0,
                              balance = #moe.quantile_balance<histogram, bins = 512>>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xi32>, tensor<16xi64>, tensor<16xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x4xi32>) -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
  %yp, %off2, %slot2 = moe.dispatch %y, %idx {num_experts = 16 : i64}
      : (tensor<?x32xbf16>, tensor<?x4xi32>) -> (tensor<?x32xbf16>, tensor<17xi64>, tensor<?xi64>)
  return %xp, %yp, %off2, %nb : tensor<?x64xf32>, tensor<?x32xbf16>, tensor<17xi64>, tensor<16xf32>
}
