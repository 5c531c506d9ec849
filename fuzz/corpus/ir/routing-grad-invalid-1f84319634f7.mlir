func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %idx: tensor<?x4xi64>, %dw: tensor<?x2xf32>) {
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<?x4xi64>, tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<8x64xf32>)
  return
}
