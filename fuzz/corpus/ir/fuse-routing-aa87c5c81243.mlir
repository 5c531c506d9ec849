func.func @histogram(%x: tensor<20x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>)
    -> (tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<histogram, bins = 32>>}
      : (tensor<20x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>)
  return %w, %idx, %load, %nb : tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>
}
