// kimi-tiny: a small Kimi-Linear-style hybrid MoE language model that trains
// on one GPU. Byte-level (vocab 256), hidden size 256, 7,987,020 parameters,
// 3,203,148 of them active per token.
//
// Decoder layers (ALGORITHMS.md section 7.3), in the 3:1 KDA:MLA pattern:
//
//   layer      0    1    2    3
//   mixer      KDA  KDA  KDA  MLA
//   FFN        MoE  MoE  MoE  MoE
//
// * KDA (section 1.2): 4 heads x K = V = 64, short convolutions of width 4,
//   bounded decay gate g in (-5, 0) (section 2.1) behind a rank-64 low-rank
//   projection, rank-64 low-rank sigmoid output gate.
// * MLA (section 3.1): 4 heads, nope 32 / rope 16 (NoPE: never rotated) /
//   v 32, kv_lora 64, no q-LoRA, sigmoid output gate.
// * MoE FFN (sections 4.1, 4.3, 7.1): 16 routed SwiGLU experts of width 128,
//   top-4, routed scaling 2.5, one shared expert of width 128; the selection
//   bias is rebalanced by exact quantile balancing.
//
// Residuals are Block Attention Residuals (section 5.2) with blocks of 4
// sub-layers (two decoder layers); sub-layer s = 2 * layer + {0: mixer,
// 1: FFN}. Each sub-layer's input is moe.attn_res over the sources below,
// followed by its own pre-norm (moe.rms_norm); f_s is sub-layer s's output.
//
//   sub-layer 0        [b0]                    b0 = token embedding
//   sub-layers 1-3     [b0, f0 + ... + f(s-1)]
//   sub-layer 4        [b0, b1]                b1 = f0 + f1 + f2 + f3
//   sub-layers 5-7     [b0, b1, f4 + ... + f(s-1)]
//   output (8)         [b0, b1, b2]            b2 = f4 + f5 + f6 + f7
//
// The output mix is followed by the final norm and the untied lm_head with
// its mean cross-entropy loss. Batch and sequence length are dynamic.
//
// Initialisation (section 7.4): linear, convolution and embedding weights
// N(0, 0.02) (flash-linear-attention initialises Conv1d like Linear); norm
// weights ones; AttnRes queries zeros; KDA A_log zeros (bounded gate) and
// dt_bias the inverse softplus of dt ~ logU(0.001, 0.1). Norm weights,
// AttnRes queries, A_log and dt_bias have no weight decay. The router's
// selection bias starts at zero and is a buffer: the balancer, not the
// optimizer, writes it.
//
// Parameter names are checkpoint keys: "embed.weight",
// "layers.<i>.{mixer,ffn}_res.{query,key_norm}" (AttnRes),
// "layers.<i>.{mixer,ffn}_norm.weight", "layers.<i>.mixer.<w>",
// "layers.<i>.ffn.<w>", "final_res.*", "final_norm.weight",
// "lm_head.weight".

moe.model @kimi_tiny(vocab_size = 256, hidden_size = 256) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %embed_w = moe.param "embed.weight" init <normal, std = 0.02> : tensor<256x256xf32>
  %emb = moe.embedding %tokens, %embed_w
      : tensor<?x?xi32>, tensor<256x256xf32> -> tensor<?x?x256xf32>

  // --- layer 0: KDA mixer (sub-layer 0) and MoE FFN (sub-layer 1) ------------
  %l0_mixer_res_q = moe.param "layers.0.mixer_res.query"
      init <zeros> no_weight_decay : tensor<256xf32>
  %l0_mixer_res_kn = moe.param "layers.0.mixer_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l0_mixer_mix = moe.attn_res %emb query(%l0_mixer_res_q) key_norm(%l0_mixer_res_kn)
      {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l0_mixer_norm_w = moe.param "layers.0.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l0_mixer_in = moe.rms_norm %l0_mixer_mix, %l0_mixer_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l0_mixer_wq = moe.param "layers.0.mixer.w_q" init <normal, std = 0.02> : tensor<256x256xf32>
  %l0_mixer_wk = moe.param "layers.0.mixer.w_k" init <normal, std = 0.02> : tensor<256x256xf32>
  %l0_mixer_wv = moe.param "layers.0.mixer.w_v" init <normal, std = 0.02> : tensor<256x256xf32>
  %l0_mixer_cq = moe.param "layers.0.mixer.conv_q" init <normal, std = 0.02> : tensor<256x4xf32>
  %l0_mixer_ck = moe.param "layers.0.mixer.conv_k" init <normal, std = 0.02> : tensor<256x4xf32>
  %l0_mixer_cv = moe.param "layers.0.mixer.conv_v" init <normal, std = 0.02> : tensor<256x4xf32>
  %l0_mixer_wfd = moe.param "layers.0.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l0_mixer_wfu = moe.param "layers.0.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l0_mixer_alog = moe.param "layers.0.mixer.A_log" init <zeros> no_weight_decay : tensor<4xf32>
  %l0_mixer_dtb = moe.param "layers.0.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<4x64xf32>
  %l0_mixer_wb = moe.param "layers.0.mixer.w_beta" init <normal, std = 0.02> : tensor<256x4xf32>
  %l0_mixer_wgd = moe.param "layers.0.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l0_mixer_wgu = moe.param "layers.0.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l0_mixer_on = moe.param "layers.0.mixer.out_norm" init <ones> no_weight_decay : tensor<64xf32>
  %l0_mixer_wo = moe.param "layers.0.mixer.w_out" init <normal, std = 0.02> : tensor<256x256xf32>
  %l0_mixer_out = moe.kda_layer %l0_mixer_in
      q(%l0_mixer_wq) k(%l0_mixer_wk) v(%l0_mixer_wv)
      conv(%l0_mixer_cq, %l0_mixer_ck, %l0_mixer_cv)
      gate(%l0_mixer_wfd, %l0_mixer_wfu, %l0_mixer_alog, %l0_mixer_dtb) beta(%l0_mixer_wb)
      out_gate(%l0_mixer_wgd, %l0_mixer_wgu) out_norm(%l0_mixer_on) out(%l0_mixer_wo)
      {num_heads = 4 : i64, head_dim = 64 : i64, value_dim = 64 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>,
         tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x64xf32>,
         tensor<64x256xf32>, tensor<4xf32>, tensor<4x64xf32>, tensor<256x4xf32>,
         tensor<256x64xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<256x256xf32>)
      -> tensor<?x?x256xf32>
  %l0_ffn_res_q = moe.param "layers.0.ffn_res.query" init <zeros> no_weight_decay : tensor<256xf32>
  %l0_ffn_res_kn = moe.param "layers.0.ffn_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l0_ffn_mix = moe.attn_res %emb, %l0_mixer_out query(%l0_ffn_res_q) key_norm(%l0_ffn_res_kn)
      {block_size = 4 : i64, sublayer = 1 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l0_ffn_norm_w = moe.param "layers.0.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l0_ffn_in = moe.rms_norm %l0_ffn_mix, %l0_ffn_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l0_ffn_wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<16x256xf32>
  %l0_ffn_rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<16xf32>
  %l0_ffn_wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l0_ffn_wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l0_ffn_wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<16x128x256xf32>
  %l0_ffn_sg = moe.param "layers.0.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<256x128xf32>
  %l0_ffn_su = moe.param "layers.0.ffn.w_shared_up" init <normal, std = 0.02> : tensor<256x128xf32>
  %l0_ffn_sd = moe.param "layers.0.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<128x256xf32>
  %l0_ffn_out, %l0_ffn_load, %l0_ffn_next_bias = moe.moe_ffn %l0_ffn_in
      router(%l0_ffn_wr, %l0_ffn_rb) experts(%l0_ffn_wg, %l0_ffn_wu, %l0_ffn_wd)
      shared(%l0_ffn_sg, %l0_ffn_su, %l0_ffn_sd)
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x256xf32>, tensor<16x256xf32>, tensor<16xf32>,
         tensor<16x256x128xf32>, tensor<16x256x128xf32>, tensor<16x128x256xf32>,
         tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>)
      -> (tensor<?x?x256xf32>, tensor<16xi64>, tensor<16xf32>)
  %p1 = arith.addf %l0_mixer_out, %l0_ffn_out : tensor<?x?x256xf32>

  // --- layer 1: KDA mixer (sub-layer 2) and MoE FFN (sub-layer 3) ------------
  %l1_mixer_res_q = moe.param "layers.1.mixer_res.query"
      init <zeros> no_weight_decay : tensor<256xf32>
  %l1_mixer_res_kn = moe.param "layers.1.mixer_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l1_mixer_mix = moe.attn_res %emb, %p1 query(%l1_mixer_res_q) key_norm(%l1_mixer_res_kn)
      {block_size = 4 : i64, sublayer = 2 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l1_mixer_norm_w = moe.param "layers.1.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l1_mixer_in = moe.rms_norm %l1_mixer_mix, %l1_mixer_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l1_mixer_wq = moe.param "layers.1.mixer.w_q" init <normal, std = 0.02> : tensor<256x256xf32>
  %l1_mixer_wk = moe.param "layers.1.mixer.w_k" init <normal, std = 0.02> : tensor<256x256xf32>
  %l1_mixer_wv = moe.param "layers.1.mixer.w_v" init <normal, std = 0.02> : tensor<256x256xf32>
  %l1_mixer_cq = moe.param "layers.1.mixer.conv_q" init <normal, std = 0.02> : tensor<256x4xf32>
  %l1_mixer_ck = moe.param "layers.1.mixer.conv_k" init <normal, std = 0.02> : tensor<256x4xf32>
  %l1_mixer_cv = moe.param "layers.1.mixer.conv_v" init <normal, std = 0.02> : tensor<256x4xf32>
  %l1_mixer_wfd = moe.param "layers.1.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l1_mixer_wfu = moe.param "layers.1.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l1_mixer_alog = moe.param "layers.1.mixer.A_log" init <zeros> no_weight_decay : tensor<4xf32>
  %l1_mixer_dtb = moe.param "layers.1.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<4x64xf32>
  %l1_mixer_wb = moe.param "layers.1.mixer.w_beta" init <normal, std = 0.02> : tensor<256x4xf32>
  %l1_mixer_wgd = moe.param "layers.1.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l1_mixer_wgu = moe.param "layers.1.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l1_mixer_on = moe.param "layers.1.mixer.out_norm" init <ones> no_weight_decay : tensor<64xf32>
  %l1_mixer_wo = moe.param "layers.1.mixer.w_out" init <normal, std = 0.02> : tensor<256x256xf32>
  %l1_mixer_out = moe.kda_layer %l1_mixer_in
      q(%l1_mixer_wq) k(%l1_mixer_wk) v(%l1_mixer_wv)
      conv(%l1_mixer_cq, %l1_mixer_ck, %l1_mixer_cv)
      gate(%l1_mixer_wfd, %l1_mixer_wfu, %l1_mixer_alog, %l1_mixer_dtb) beta(%l1_mixer_wb)
      out_gate(%l1_mixer_wgd, %l1_mixer_wgu) out_norm(%l1_mixer_on) out(%l1_mixer_wo)
      {num_heads = 4 : i64, head_dim = 64 : i64, value_dim = 64 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>,
         tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x64xf32>,
         tensor<64x256xf32>, tensor<4xf32>, tensor<4x64xf32>, tensor<256x4xf32>,
         tensor<256x64xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<256x256xf32>)
      -> tensor<?x?x256xf32>
  %p2 = arith.addf %p1, %l1_mixer_out : tensor<?x?x256xf32>
  %l1_ffn_res_q = moe.param "layers.1.ffn_res.query" init <zeros> no_weight_decay : tensor<256xf32>
  %l1_ffn_res_kn = moe.param "layers.1.ffn_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l1_ffn_mix = moe.attn_res %emb, %p2 query(%l1_ffn_res_q) key_norm(%l1_ffn_res_kn)
      {block_size = 4 : i64, sublayer = 3 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l1_ffn_norm_w = moe.param "layers.1.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l1_ffn_in = moe.rms_norm %l1_ffn_mix, %l1_ffn_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l1_ffn_wr = moe.param "layers.1.ffn.w_router" init <normal, std = 0.02> : tensor<16x256xf32>
  %l1_ffn_rb = moe.param "layers.1.ffn.router_bias" init <zeros> buffer : tensor<16xf32>
  %l1_ffn_wg = moe.param "layers.1.ffn.w_gate" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l1_ffn_wu = moe.param "layers.1.ffn.w_up" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l1_ffn_wd = moe.param "layers.1.ffn.w_down" init <normal, std = 0.02> : tensor<16x128x256xf32>
  %l1_ffn_sg = moe.param "layers.1.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<256x128xf32>
  %l1_ffn_su = moe.param "layers.1.ffn.w_shared_up" init <normal, std = 0.02> : tensor<256x128xf32>
  %l1_ffn_sd = moe.param "layers.1.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<128x256xf32>
  %l1_ffn_out, %l1_ffn_load, %l1_ffn_next_bias = moe.moe_ffn %l1_ffn_in
      router(%l1_ffn_wr, %l1_ffn_rb) experts(%l1_ffn_wg, %l1_ffn_wu, %l1_ffn_wd)
      shared(%l1_ffn_sg, %l1_ffn_su, %l1_ffn_sd)
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x256xf32>, tensor<16x256xf32>, tensor<16xf32>,
         tensor<16x256x128xf32>, tensor<16x256x128xf32>, tensor<16x128x256xf32>,
         tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>)
      -> (tensor<?x?x256xf32>, tensor<16xi64>, tensor<16xf32>)
  %p3 = arith.addf %p2, %l1_ffn_out : tensor<?x?x256xf32>

  // --- layer 2: KDA mixer (sub-layer 4) and MoE FFN (sub-layer 5) ------------
  // Sub-layers 0-3 form block 1: b1 = %p3.
  %l2_mixer_res_q = moe.param "layers.2.mixer_res.query"
      init <zeros> no_weight_decay : tensor<256xf32>
  %l2_mixer_res_kn = moe.param "layers.2.mixer_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l2_mixer_mix = moe.attn_res %emb, %p3 query(%l2_mixer_res_q) key_norm(%l2_mixer_res_kn)
      {block_size = 4 : i64, sublayer = 4 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l2_mixer_norm_w = moe.param "layers.2.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l2_mixer_in = moe.rms_norm %l2_mixer_mix, %l2_mixer_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l2_mixer_wq = moe.param "layers.2.mixer.w_q" init <normal, std = 0.02> : tensor<256x256xf32>
  %l2_mixer_wk = moe.param "layers.2.mixer.w_k" init <normal, std = 0.02> : tensor<256x256xf32>
  %l2_mixer_wv = moe.param "layers.2.mixer.w_v" init <normal, std = 0.02> : tensor<256x256xf32>
  %l2_mixer_cq = moe.param "layers.2.mixer.conv_q" init <normal, std = 0.02> : tensor<256x4xf32>
  %l2_mixer_ck = moe.param "layers.2.mixer.conv_k" init <normal, std = 0.02> : tensor<256x4xf32>
  %l2_mixer_cv = moe.param "layers.2.mixer.conv_v" init <normal, std = 0.02> : tensor<256x4xf32>
  %l2_mixer_wfd = moe.param "layers.2.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l2_mixer_wfu = moe.param "layers.2.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l2_mixer_alog = moe.param "layers.2.mixer.A_log" init <zeros> no_weight_decay : tensor<4xf32>
  %l2_mixer_dtb = moe.param "layers.2.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<4x64xf32>
  %l2_mixer_wb = moe.param "layers.2.mixer.w_beta" init <normal, std = 0.02> : tensor<256x4xf32>
  %l2_mixer_wgd = moe.param "layers.2.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<256x64xf32>
  %l2_mixer_wgu = moe.param "layers.2.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<64x256xf32>
  %l2_mixer_on = moe.param "layers.2.mixer.out_norm" init <ones> no_weight_decay : tensor<64xf32>
  %l2_mixer_wo = moe.param "layers.2.mixer.w_out" init <normal, std = 0.02> : tensor<256x256xf32>
  %l2_mixer_out = moe.kda_layer %l2_mixer_in
      q(%l2_mixer_wq) k(%l2_mixer_wk) v(%l2_mixer_wv)
      conv(%l2_mixer_cq, %l2_mixer_ck, %l2_mixer_cv)
      gate(%l2_mixer_wfd, %l2_mixer_wfu, %l2_mixer_alog, %l2_mixer_dtb) beta(%l2_mixer_wb)
      out_gate(%l2_mixer_wgd, %l2_mixer_wgu) out_norm(%l2_mixer_on) out(%l2_mixer_wo)
      {num_heads = 4 : i64, head_dim = 64 : i64, value_dim = 64 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>,
         tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x4xf32>, tensor<256x64xf32>,
         tensor<64x256xf32>, tensor<4xf32>, tensor<4x64xf32>, tensor<256x4xf32>,
         tensor<256x64xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<256x256xf32>)
      -> tensor<?x?x256xf32>
  %l2_ffn_res_q = moe.param "layers.2.ffn_res.query" init <zeros> no_weight_decay : tensor<256xf32>
  %l2_ffn_res_kn = moe.param "layers.2.ffn_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l2_ffn_mix = moe.attn_res %emb, %p3, %l2_mixer_out query(%l2_ffn_res_q) key_norm(%l2_ffn_res_kn)
      {block_size = 4 : i64, sublayer = 5 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l2_ffn_norm_w = moe.param "layers.2.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l2_ffn_in = moe.rms_norm %l2_ffn_mix, %l2_ffn_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l2_ffn_wr = moe.param "layers.2.ffn.w_router" init <normal, std = 0.02> : tensor<16x256xf32>
  %l2_ffn_rb = moe.param "layers.2.ffn.router_bias" init <zeros> buffer : tensor<16xf32>
  %l2_ffn_wg = moe.param "layers.2.ffn.w_gate" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l2_ffn_wu = moe.param "layers.2.ffn.w_up" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l2_ffn_wd = moe.param "layers.2.ffn.w_down" init <normal, std = 0.02> : tensor<16x128x256xf32>
  %l2_ffn_sg = moe.param "layers.2.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<256x128xf32>
  %l2_ffn_su = moe.param "layers.2.ffn.w_shared_up" init <normal, std = 0.02> : tensor<256x128xf32>
  %l2_ffn_sd = moe.param "layers.2.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<128x256xf32>
  %l2_ffn_out, %l2_ffn_load, %l2_ffn_next_bias = moe.moe_ffn %l2_ffn_in
      router(%l2_ffn_wr, %l2_ffn_rb) experts(%l2_ffn_wg, %l2_ffn_wu, %l2_ffn_wd)
      shared(%l2_ffn_sg, %l2_ffn_su, %l2_ffn_sd)
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x256xf32>, tensor<16x256xf32>, tensor<16xf32>,
         tensor<16x256x128xf32>, tensor<16x256x128xf32>, tensor<16x128x256xf32>,
         tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>)
      -> (tensor<?x?x256xf32>, tensor<16xi64>, tensor<16xf32>)
  %p5 = arith.addf %l2_mixer_out, %l2_ffn_out : tensor<?x?x256xf32>

  // --- layer 3: MLA mixer (sub-layer 6) and MoE FFN (sub-layer 7) ------------
  %l3_mixer_res_q = moe.param "layers.3.mixer_res.query"
      init <zeros> no_weight_decay : tensor<256xf32>
  %l3_mixer_res_kn = moe.param "layers.3.mixer_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l3_mixer_mix = moe.attn_res %emb, %p3, %p5 query(%l3_mixer_res_q) key_norm(%l3_mixer_res_kn)
      {block_size = 4 : i64, sublayer = 6 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l3_mixer_norm_w = moe.param "layers.3.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l3_mixer_in = moe.rms_norm %l3_mixer_mix, %l3_mixer_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l3_mixer_wq = moe.param "layers.3.mixer.w_q" init <normal, std = 0.02> : tensor<256x192xf32>
  %l3_mixer_wkvd = moe.param "layers.3.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<256x80xf32>
  %l3_mixer_kvn = moe.param "layers.3.mixer.kv_norm" init <ones> no_weight_decay : tensor<64xf32>
  %l3_mixer_wkvu = moe.param "layers.3.mixer.w_kv_up" init <normal, std = 0.02> : tensor<64x256xf32>
  %l3_mixer_wg = moe.param "layers.3.mixer.w_gate" init <normal, std = 0.02> : tensor<256x128xf32>
  %l3_mixer_wo = moe.param "layers.3.mixer.w_out" init <normal, std = 0.02> : tensor<128x256xf32>
  %l3_mixer_out = moe.mla_layer %l3_mixer_in q(%l3_mixer_wq)
      kv(%l3_mixer_wkvd, %l3_mixer_kvn, %l3_mixer_wkvu) gate(%l3_mixer_wg) out(%l3_mixer_wo)
      {num_heads = 4 : i64, nope_head_dim = 32 : i64,
       rope_head_dim = 16 : i64, v_head_dim = 32 : i64}
      : (tensor<?x?x256xf32>, tensor<256x192xf32>, tensor<256x80xf32>, tensor<64xf32>,
         tensor<64x256xf32>, tensor<256x128xf32>, tensor<128x256xf32>)
      -> tensor<?x?x256xf32>
  %p6 = arith.addf %p5, %l3_mixer_out : tensor<?x?x256xf32>
  %l3_ffn_res_q = moe.param "layers.3.ffn_res.query" init <zeros> no_weight_decay : tensor<256xf32>
  %l3_ffn_res_kn = moe.param "layers.3.ffn_res.key_norm"
      init <ones> no_weight_decay : tensor<256xf32>
  %l3_ffn_mix = moe.attn_res %emb, %p3, %p6 query(%l3_ffn_res_q) key_norm(%l3_ffn_res_kn)
      {block_size = 4 : i64, sublayer = 7 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %l3_ffn_norm_w = moe.param "layers.3.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<256xf32>
  %l3_ffn_in = moe.rms_norm %l3_ffn_mix, %l3_ffn_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %l3_ffn_wr = moe.param "layers.3.ffn.w_router" init <normal, std = 0.02> : tensor<16x256xf32>
  %l3_ffn_rb = moe.param "layers.3.ffn.router_bias" init <zeros> buffer : tensor<16xf32>
  %l3_ffn_wg = moe.param "layers.3.ffn.w_gate" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l3_ffn_wu = moe.param "layers.3.ffn.w_up" init <normal, std = 0.02> : tensor<16x256x128xf32>
  %l3_ffn_wd = moe.param "layers.3.ffn.w_down" init <normal, std = 0.02> : tensor<16x128x256xf32>
  %l3_ffn_sg = moe.param "layers.3.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<256x128xf32>
  %l3_ffn_su = moe.param "layers.3.ffn.w_shared_up" init <normal, std = 0.02> : tensor<256x128xf32>
  %l3_ffn_sd = moe.param "layers.3.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<128x256xf32>
  %l3_ffn_out, %l3_ffn_load, %l3_ffn_next_bias = moe.moe_ffn %l3_ffn_in
      router(%l3_ffn_wr, %l3_ffn_rb) experts(%l3_ffn_wg, %l3_ffn_wu, %l3_ffn_wd)
      shared(%l3_ffn_sg, %l3_ffn_su, %l3_ffn_sd)
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x256xf32>, tensor<16x256xf32>, tensor<16xf32>,
         tensor<16x256x128xf32>, tensor<16x256x128xf32>, tensor<16x128x256xf32>,
         tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>)
      -> (tensor<?x?x256xf32>, tensor<16xi64>, tensor<16xf32>)
  %p7 = arith.addf %p6, %l3_ffn_out : tensor<?x?x256xf32>

  // --- output: final mix (sub-layer 8), norm and loss head -------------------
  // Sub-layers 4-7 form block 2: b2 = %p7.
  %final_res_q = moe.param "final_res.query" init <zeros> no_weight_decay : tensor<256xf32>
  %final_res_kn = moe.param "final_res.key_norm" init <ones> no_weight_decay : tensor<256xf32>
  %final_mix = moe.attn_res %emb, %p3, %p7 query(%final_res_q) key_norm(%final_res_kn)
      {block_size = 4 : i64, sublayer = 8 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
         tensor<256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %final_norm_w = moe.param "final_norm.weight" init <ones> no_weight_decay : tensor<256xf32>
  %out = moe.rms_norm %final_mix, %final_norm_w : tensor<?x?x256xf32>, tensor<256xf32>
  %lm_head_w = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<256x256xf32>
  %loss = moe.lm_head %out, %lm_head_w, %labels
      : (tensor<?x?x256xf32>, tensor<256x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
