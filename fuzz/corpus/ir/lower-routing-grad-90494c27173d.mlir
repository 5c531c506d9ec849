func.func @route(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>,
    %idx: tensor<?x2xi64>, %dw: tensor<?x2xf32>)
    -> (tensor<?x16xf32>, tensor<4x16xf32>) {
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<?x2xi64>,
         tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4x16xf32>)
  return %dx, %dwr : tensor<?x16xf32>, tensor<4x16xf32>
}
