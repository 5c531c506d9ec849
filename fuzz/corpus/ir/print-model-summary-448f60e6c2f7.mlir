moe.model @small(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h0 = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>

  %n0 = moe.param "layers.0.mixer_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x0 = moe.rms_norm %h0, %n0 : tensor<?x?x8xf32>, tensor<8xf32>
  %wq = moe.param "layers.0.mixer.w_q" init <normal, std = 0.02> : tensor<8x4xf32>
  %wkvd = moe.param "layers.0.mixer.w_kv_down" init <normal, std = 0.02> : tensor<8x4xf32>
  %kvn = moe.param "layers.0.mixer.kv_norm" init <ones> no_weight_decay : tensor<2xf32>
  %wkvu = moe.param "layers.0.mixer.w_kv_up" init <normal, std = 0.02> : tensor<2x4xf32>
  %wo = moe.param "layers.0.mixer.w_out" init <normal, std = 0.02> : tensor<2x8xf32>
  %a = moe.mla_layer %x0 q(%wq) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 1 : i64, nope_head_dim = 2 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 2 : i64}
      : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<2xf32>,
         tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<?x?x8xf32>
  %h1 = arith.addf %h0, %a : tensor<?x?x8xf32>

  %n1 = moe.param "layers.0.ffn_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x1 = moe.rms_norm %h1, %n1 : tensor<?x?x8xf32>, tensor<8xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<4x8xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<4x8x4xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<4x8x4xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<4x4x8xf32>
  %sg = moe.param "layers.0.ffn.w_shared_gate" init <normal, std = 0.02> : tensor<8x2xf32>
  %su = moe.param "layers.0.ffn.w_shared_up" init <normal, std = 0.02> : tensor<8x2xf32>
  %sd = moe.param "layers.0.ffn.w_shared_down" init <normal, std = 0.02> : tensor<2x8xf32>
  %f, %load, %next_bias = moe.moe_ffn %x1 router(%wr, %rb) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8x4xf32>,
         tensor<4x8x4xf32>, tensor<4x4x8xf32>, tensor<8x2xf32>, tensor<8x2xf32>,
         tensor<2x8xf32>) -> (tensor<?x?x8xf32>, tensor<4xi64>, tensor<4xf32>)
  %h2 = arith.addf %h1, %f : tensor<?x?x8xf32>

  %n2 = moe.param "layers.1.ffn_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x2 = moe.rms_norm %h2, %n2 : tensor<?x?x8xf32>, tensor<8xf32>
  %dg = moe.param "layers.1.ffn.w_gate" init <normal, std = 0.02> : tensor<8x4xf32>
  %du = moe.param "layers.1.ffn.w_up" init <normal, std = 0.02> : tensor<8x4xf32>
  %dd = moe.param "layers.1.ffn.w_down" init <normal, std = 0.02> : tensor<4x8xf32>
  %g = moe.glu_ffn %x2, %dg, %du, %dd {activation = #moe.activation<swiglu>}
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
  %h3 = arith.addf %h2, %g : tensor<?x?x8xf32>

  %unused = moe.param "unused" init <zeros> : tensor<3xf32>
  %nf = moe.param "final_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %out = moe.rms_norm %h3, %nf : tensor<?x?x8xf32>, tensor<8xf32>
  %head = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %loss = moe.lm_head %out, %head, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
