// Three MoE layers, one per balancer (exact and histogram quantile
// balancing, sign bias), between an embedding and the lm_head loss: the
// data-parallel tests' model (train-data-parallel-balancers.test).
moe.model @balancers(vocab_size = 256, hidden_size = 16) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.5> : tensor<256x16xf32>
  %x0 = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<256x16xf32> -> tensor<?x?x16xf32>
  %wr0 = moe.param "layers.0.ffn.w_router" init <normal, std = 0.5> : tensor<8x16xf32>
  %rb0 = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<8xf32>
  %wg0 = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wu0 = moe.param "layers.0.ffn.w_up" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wd0 = moe.param "layers.0.ffn.w_down" init <normal, std = 0.2> : tensor<8x8x16xf32>
  %y0, %load0, %next0 = moe.moe_ffn %x0 router(%wr0, %rb0) experts(%wg0, %wu0, %wd0)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16x8xf32>,
         tensor<8x16x8xf32>, tensor<8x8x16xf32>)
      -> (tensor<?x?x16xf32>, tensor<8xi64>, tensor<8xf32>)
  %x1 = arith.addf %x0, %y0 : tensor<?x?x16xf32>
  %wr1 = moe.param "layers.1.ffn.w_router" init <normal, std = 0.5> : tensor<8x16xf32>
  %rb1 = moe.param "layers.1.ffn.router_bias" init <zeros> buffer : tensor<8xf32>
  %wg1 = moe.param "layers.1.ffn.w_gate" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wu1 = moe.param "layers.1.ffn.w_up" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wd1 = moe.param "layers.1.ffn.w_down" init <normal, std = 0.2> : tensor<8x8x16xf32>
  %y1, %load1, %next1 = moe.moe_ffn %x1 router(%wr1, %rb1) experts(%wg1, %wu1, %wd1)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<histogram, bins = 64>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16x8xf32>,
         tensor<8x16x8xf32>, tensor<8x8x16xf32>)
      -> (tensor<?x?x16xf32>, tensor<8xi64>, tensor<8xf32>)
  %x2 = arith.addf %x1, %y1 : tensor<?x?x16xf32>
  %wr2 = moe.param "layers.2.ffn.w_router" init <normal, std = 0.5> : tensor<8x16xf32>
  %rb2 = moe.param "layers.2.ffn.router_bias" init <zeros> buffer : tensor<8xf32>
  %wg2 = moe.param "layers.2.ffn.w_gate" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wu2 = moe.param "layers.2.ffn.w_up" init <normal, std = 0.2> : tensor<8x16x8xf32>
  %wd2 = moe.param "layers.2.ffn.w_down" init <normal, std = 0.2> : tensor<8x8x16xf32>
  %y2, %load2, %next2 = moe.moe_ffn %x2 router(%wr2, %rb2) experts(%wg2, %wu2, %wd2)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                               balance = #moe.sign_bias<rate = 1.0e-2>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16x8xf32>,
         tensor<8x16x8xf32>, tensor<8x8x16xf32>)
      -> (tensor<?x?x16xf32>, tensor<8xi64>, tensor<8xf32>)
  %x3 = arith.addf %x2, %y2 : tensor<?x?x16xf32>
  %norm_w = moe.param "final_norm.weight" init <ones> no_weight_decay : tensor<16xf32>
  %out = moe.rms_norm %x3, %norm_w : tensor<?x?x16xf32>, tensor<16xf32>
  %head = moe.param "lm_head.weight" init <normal, std = 0.2> : tensor<256x16xf32>
  %loss = moe.lm_head %out, %head, %labels
      : (tensor<?x?x16xf32>, tensor<256x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
