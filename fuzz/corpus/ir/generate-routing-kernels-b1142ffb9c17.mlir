func.func @declined(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
                    %h: tensor<?x64xf16>, %wh: tensor<8x64xf16>,
                    %xd: tensor<?x?xf32>, %wd: tensor<8x?xf32>,
                    %wbig: tensor<256x64xf32>, %bbig: tensor<256xf32>)
    -> (tensor<?x8xi64>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x2xi64>) {
  %w0, %i0, %l0, %b0 = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<8xi64>, tensor<8xf32>)
  %w1, %i1, %l1, %b1 = moe.route %h, %wh, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf16>, tensor<8x64xf16>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  %w2, %i2, %l2, %b2 = moe.route %xd, %wd, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x?xf32>, tensor<8x?xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  %w3, %i3, %l3, %b3 = moe.route %x, %wbig, %bbig
      {routing = #moe.routing<experts = 256, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<256xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<256xi64>, tensor<256xf32>)
  return %i0, %i1, %i2, %i3 : tensor<?x8xi64>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x2xi64>
}
