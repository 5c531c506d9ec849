// A small training model for cuda-train.test: an embedding, one gated MLA
// layer (d_qk = 48, d_v = 32, which the forward's attention generator takes;
// its backward is the flash-attention tile program of -moe-tile-attention),
// an RMS norm and the lm_head loss.

moe.model @small(vocab_size = 64, hidden_size = 32) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.5> : tensor<64x32xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  %wq = moe.param "layers.0.mixer.q_proj" init <normal, std = 0.02> : tensor<32x96xf32>
  %wkvd = moe.param "layers.0.mixer.kv_down" init <normal, std = 0.02> : tensor<32x32xf32>
  %kvn = moe.param "layers.0.mixer.kv_norm" init <ones> no_weight_decay : tensor<16xf32>
  %wkvu = moe.param "layers.0.mixer.kv_up" init <normal, std = 0.02> : tensor<16x128xf32>
  %wg = moe.param "layers.0.mixer.gate" init <normal, std = 0.02> : tensor<32x64xf32>
  %wo = moe.param "layers.0.mixer.o_proj" init <normal, std = 0.02> : tensor<64x32xf32>
  %a = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 32 : i64,
       rope_head_dim = 16 : i64, v_head_dim = 32 : i64}
      : (tensor<?x?x32xf32>, tensor<32x96xf32>, tensor<32x32xf32>, tensor<16xf32>,
         tensor<16x128xf32>, tensor<32x64xf32>, tensor<64x32xf32>)
      -> tensor<?x?x32xf32>
  %h = arith.addf %x, %a : tensor<?x?x32xf32>
  %nw = moe.param "norm.weight" init <ones> no_weight_decay : tensor<32xf32>
  %n = moe.rms_norm %h, %nw : tensor<?x?x32xf32>, tensor<32xf32>
  %loss = moe.lm_head %n, %table, %labels
      : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
