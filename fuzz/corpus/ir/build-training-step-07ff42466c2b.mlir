moe.model @not_buffer(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "w_router" init <normal, std = 0.02> : tensor<4x4xf32>
  %rb = moe.param "router_bias" init <zeros> : tensor<4xf32>
  %wg = moe.param "w_gate" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wu = moe.param "w_up" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wd = moe.param "w_down" init <normal, std = 0.02> : tensor<4x2x4xf32>
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %zero = arith.constant dense<0.0> : tensor<f32>
  moe.return %zero : tensor<f32>
}
