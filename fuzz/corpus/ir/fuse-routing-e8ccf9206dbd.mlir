func.func @sign_bias(%x: tensor<?x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>)
    -> (tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<8xi64>, tensor<8xf32>)
  return %load, %nb : tensor<8xi64>, tensor<8xf32>
}
