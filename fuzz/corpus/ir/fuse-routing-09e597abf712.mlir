func.func @routed(%x: tensor<?x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>,
                  %wg: tensor<8x16x4xf32>, %wu: tensor<8x16x4xf32>,
                  %wd: tensor<8x4x16xf32>)
    -> (tensor<?x16xf32>, tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x16xf32>, tensor<?x2xi64>)
      -> (tensor<?x16xf32>, tensor<9xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<9xi64>, tensor<8x16x4xf32>,
         tensor<8x16x4xf32>, tensor<8x4x16xf32>) -> tensor<?x16xf32>
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x16xf32>
  return %y, %load, %nb : tensor<?x16xf32>, tensor<8xi64>, tensor<8xf32>
}
