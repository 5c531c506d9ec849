moe.model @quad(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<4x4xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<4x2x4xf32>
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %a = moe.param "a" init <normal, std = 0.02> : tensor<6xf32>
  %s = moe.param "s" init <ones> no_weight_decay : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%a, %s : tensor<6xf32>, tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %sv: f32, %acc: f32):
    %as = arith.mulf %av, %sv : f32
    %sq = arith.mulf %as, %as : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
