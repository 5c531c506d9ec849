func.func @sign_static(%x: tensor<100x32xbf16>, %wr: tensor<8x32xbf16>, %bias: tensor<8xf32>)
    -> (tensor<100x2xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<100x32xbf16>, tensor<8x32xbf16>, tensor<8xf32>)
      -> (tensor<100x2xf32>, tensor<100x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return %idx, %nb : tensor<100x2xi64>, tensor<8xf32>
}
