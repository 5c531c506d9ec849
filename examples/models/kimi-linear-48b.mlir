// kimi-linear-48b: the shapes of Kimi-Linear-48B-A3B (ALGORITHMS.md sections
// 1.9, 3.6 and 7.5). 49,122,681,728 parameters, 3,106,974,848 of them active
// per token; without the embedding and lm_head, 48.37B. The file describes
// the architecture for shape checks and parameter counts; nobody trains it
// from here.
//
// * vocab 163840, hidden size 2304, 27 decoder layers, pre-norm with plain
//   residual adds (no AttnRes): h += Mixer(RMSNorm(h)); h += FFN(RMSNorm(h)).
// * Mixers: MLA at 1-based layers 4, 8, 12, 16, 20, 24, 27 (0-based 3, 7,
//   11, 15, 19, 23, 26), KDA at the other 20.
// * KDA: 32 heads x K = V = 128, short convolutions of width 4, the
//   unbounded softplus decay gate behind a rank-128 low-rank projection,
//   rank-128 low-rank sigmoid output gate.
// * MLA: 32 heads, nope 128 / rope 64 (NoPE: never rotated) / v 128,
//   kv_lora 512, no q-LoRA, no output gate.
// * FFN: layer 0 is a dense SwiGLU FFN of width 9216; layers 1-26 route to
//   8 of 256 SwiGLU experts of width 1024 with routed scaling 2.446, plus one
//   shared expert of width 1024. The published model balances its experts
//   with DeepSeek-V3's noaux_tc bias updates, written here as
//   #moe.sign_bias<rate = 1.0e-3> (section 4.2).
// * Final RMSNorm, untied lm_head with mean cross-entropy.
//
// Weights are bf16 as in the released checkpoint; the router's selection
// bias is f32 (moe.moe_ffn requires it). Initialisers follow section 7.4
// and the flash-linear-attention KDA layer: N(0, 0.02) for linear,
// convolution and embedding weights, ones for norm weights, A_log ~
// ln U(1, 16) for the softplus gate, dt_bias the inverse softplus of
// dt ~ logU(0.001, 0.1). Parameter names follow kimi-tiny.mlir.
//
// Parameter count, per piece:
//   embedding, lm_head        2 x 163840 x 2304        =    754,974,720
//   KDA layer                                          =     39,514,272 (x 20)
//   MLA layer                                          =     29,114,880 (x 7)
//   dense FFN (layer 0)       3 x 2304 x 9216          =     63,700,992
//   MoE FFN, routed           3 x 256 x 2304 x 1024    =  1,811,939,328 (x 26)
//   MoE FFN, router + shared  256 x 2304 + 256 + 3 x 2304 x 1024
//                                                      =      7,667,968 (x 26)
//   norms                     (2 x 27 + 1) x 2304      =        126,720
// Active per token: the routed experts count 8/256, the embedding one row.

moe.model @kimi_linear_48b(vocab_size = 163840, hidden_size = 2304) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %embed_w = moe.param "embed.weight" init <normal, std = 0.02> : tensor<163840x2304xbf16>
  %h0 = moe.embedding %tokens, %embed_w
      : tensor<?x?xi32>, tensor<163840x2304xbf16> -> tensor<?x?x2304xbf16>

  // --- layer 0: KDA mixer, dense FFN -----------------------------------------
  %l0_mixer_norm_w = moe.param "layers.0.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l0_mixer_in = moe.rms_norm %h0, %l0_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l0_mixer_wq = moe.param "layers.0.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l0_mixer_wk = moe.param "layers.0.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l0_mixer_wv = moe.param "layers.0.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l0_mixer_cq = moe.param "layers.0.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l0_mixer_ck = moe.param "layers.0.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l0_mixer_cv = moe.param "layers.0.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l0_mixer_wfd = moe.param "layers.0.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l0_mixer_wfu = moe.param "layers.0.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l0_mixer_alog = moe.param "layers.0.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l0_mixer_dtb = moe.param "layers.0.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l0_mixer_wb = moe.param "layers.0.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l0_mixer_wgd = moe.param "layers.0.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l0_mixer_wgu = moe.param "layers.0.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l0_mixer_on = moe.param "layers.0.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l0_mixer_wo = moe.param "layers.0.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l0_mixer_out = moe.kda_layer %l0_mixer_in
      q(%l0_mixer_wq) k(%l0_mixer_wk) v(%l0_mixer_wv)
      conv(%l0_mixer_cq, %l0_mixer_ck, %l0_mixer_cv)
      gate(%l0_mixer_wfd, %l0_mixer_wfu, %l0_mixer_alog, %l0_mixer_dtb) beta(%l0_mixer_wb)
      out_gate(%l0_mixer_wgd, %l0_mixer_wgu) out_norm(%l0_mixer_on) out(%l0_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l0_h_mid = arith.addf %h0, %l0_mixer_out : tensor<?x?x2304xbf16>
  %l0_ffn_norm_w = moe.param "layers.0.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l0_ffn_in = moe.rms_norm %l0_h_mid, %l0_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l0_ffn_wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<2304x9216xbf16>
  %l0_ffn_wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<2304x9216xbf16>
  %l0_ffn_wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<9216x2304xbf16>
  %l0_ffn_out = moe.glu_ffn %l0_ffn_in, %l0_ffn_wg, %l0_ffn_wu, %l0_ffn_wd
      {activation = #moe.activation<swiglu>}
      : tensor<?x?x2304xbf16>, tensor<2304x9216xbf16>,
        tensor<2304x9216xbf16>, tensor<9216x2304xbf16>
  %l0_h = arith.addf %l0_h_mid, %l0_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 1: KDA mixer, MoE FFN -------------------------------------------
  %l1_mixer_norm_w = moe.param "layers.1.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l1_mixer_in = moe.rms_norm %l0_h, %l1_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l1_mixer_wq = moe.param "layers.1.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l1_mixer_wk = moe.param "layers.1.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l1_mixer_wv = moe.param "layers.1.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l1_mixer_cq = moe.param "layers.1.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l1_mixer_ck = moe.param "layers.1.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l1_mixer_cv = moe.param "layers.1.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l1_mixer_wfd = moe.param "layers.1.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l1_mixer_wfu = moe.param "layers.1.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l1_mixer_alog = moe.param "layers.1.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l1_mixer_dtb = moe.param "layers.1.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l1_mixer_wb = moe.param "layers.1.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l1_mixer_wgd = moe.param "layers.1.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l1_mixer_wgu = moe.param "layers.1.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l1_mixer_on = moe.param "layers.1.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l1_mixer_wo = moe.param "layers.1.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l1_mixer_out = moe.kda_layer %l1_mixer_in
      q(%l1_mixer_wq) k(%l1_mixer_wk) v(%l1_mixer_wv)
      conv(%l1_mixer_cq, %l1_mixer_ck, %l1_mixer_cv)
      gate(%l1_mixer_wfd, %l1_mixer_wfu, %l1_mixer_alog, %l1_mixer_dtb) beta(%l1_mixer_wb)
      out_gate(%l1_mixer_wgd, %l1_mixer_wgu) out_norm(%l1_mixer_on) out(%l1_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l1_h_mid = arith.addf %l0_h, %l1_mixer_out : tensor<?x?x2304xbf16>
  %l1_ffn_norm_w = moe.param "layers.1.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l1_ffn_in = moe.rms_norm %l1_h_mid, %l1_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l1_ffn_wr = moe.param "layers.1.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l1_ffn_rb = moe.param "layers.1.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l1_ffn_wg = moe.param "layers.1.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l1_ffn_wu = moe.param "layers.1.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l1_ffn_wd = moe.param "layers.1.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l1_ffn_sg = moe.param "layers.1.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l1_ffn_su = moe.param "layers.1.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l1_ffn_sd = moe.param "layers.1.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l1_ffn_out, %l1_ffn_load, %l1_ffn_next_bias = moe.moe_ffn %l1_ffn_in
      router(%l1_ffn_wr, %l1_ffn_rb) experts(%l1_ffn_wg, %l1_ffn_wu, %l1_ffn_wd)
      shared(%l1_ffn_sg, %l1_ffn_su, %l1_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l1_h = arith.addf %l1_h_mid, %l1_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 2: KDA mixer, MoE FFN -------------------------------------------
  %l2_mixer_norm_w = moe.param "layers.2.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l2_mixer_in = moe.rms_norm %l1_h, %l2_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l2_mixer_wq = moe.param "layers.2.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l2_mixer_wk = moe.param "layers.2.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l2_mixer_wv = moe.param "layers.2.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l2_mixer_cq = moe.param "layers.2.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l2_mixer_ck = moe.param "layers.2.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l2_mixer_cv = moe.param "layers.2.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l2_mixer_wfd = moe.param "layers.2.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l2_mixer_wfu = moe.param "layers.2.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l2_mixer_alog = moe.param "layers.2.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l2_mixer_dtb = moe.param "layers.2.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l2_mixer_wb = moe.param "layers.2.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l2_mixer_wgd = moe.param "layers.2.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l2_mixer_wgu = moe.param "layers.2.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l2_mixer_on = moe.param "layers.2.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l2_mixer_wo = moe.param "layers.2.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l2_mixer_out = moe.kda_layer %l2_mixer_in
      q(%l2_mixer_wq) k(%l2_mixer_wk) v(%l2_mixer_wv)
      conv(%l2_mixer_cq, %l2_mixer_ck, %l2_mixer_cv)
      gate(%l2_mixer_wfd, %l2_mixer_wfu, %l2_mixer_alog, %l2_mixer_dtb) beta(%l2_mixer_wb)
      out_gate(%l2_mixer_wgd, %l2_mixer_wgu) out_norm(%l2_mixer_on) out(%l2_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l2_h_mid = arith.addf %l1_h, %l2_mixer_out : tensor<?x?x2304xbf16>
  %l2_ffn_norm_w = moe.param "layers.2.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l2_ffn_in = moe.rms_norm %l2_h_mid, %l2_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l2_ffn_wr = moe.param "layers.2.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l2_ffn_rb = moe.param "layers.2.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l2_ffn_wg = moe.param "layers.2.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l2_ffn_wu = moe.param "layers.2.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l2_ffn_wd = moe.param "layers.2.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l2_ffn_sg = moe.param "layers.2.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l2_ffn_su = moe.param "layers.2.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l2_ffn_sd = moe.param "layers.2.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l2_ffn_out, %l2_ffn_load, %l2_ffn_next_bias = moe.moe_ffn %l2_ffn_in
      router(%l2_ffn_wr, %l2_ffn_rb) experts(%l2_ffn_wg, %l2_ffn_wu, %l2_ffn_wd)
      shared(%l2_ffn_sg, %l2_ffn_su, %l2_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l2_h = arith.addf %l2_h_mid, %l2_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 3: MLA mixer, MoE FFN -------------------------------------------
  %l3_mixer_norm_w = moe.param "layers.3.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l3_mixer_in = moe.rms_norm %l2_h, %l3_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l3_mixer_wq = moe.param "layers.3.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l3_mixer_wkvd = moe.param "layers.3.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l3_mixer_kvn = moe.param "layers.3.mixer.kv_norm" init <ones> no_weight_decay : tensor<512xbf16>
  %l3_mixer_wkvu = moe.param "layers.3.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l3_mixer_wo = moe.param "layers.3.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l3_mixer_out = moe.mla_layer %l3_mixer_in q(%l3_mixer_wq)
      kv(%l3_mixer_wkvd, %l3_mixer_kvn, %l3_mixer_wkvu) out(%l3_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l3_h_mid = arith.addf %l2_h, %l3_mixer_out : tensor<?x?x2304xbf16>
  %l3_ffn_norm_w = moe.param "layers.3.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l3_ffn_in = moe.rms_norm %l3_h_mid, %l3_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l3_ffn_wr = moe.param "layers.3.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l3_ffn_rb = moe.param "layers.3.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l3_ffn_wg = moe.param "layers.3.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l3_ffn_wu = moe.param "layers.3.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l3_ffn_wd = moe.param "layers.3.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l3_ffn_sg = moe.param "layers.3.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l3_ffn_su = moe.param "layers.3.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l3_ffn_sd = moe.param "layers.3.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l3_ffn_out, %l3_ffn_load, %l3_ffn_next_bias = moe.moe_ffn %l3_ffn_in
      router(%l3_ffn_wr, %l3_ffn_rb) experts(%l3_ffn_wg, %l3_ffn_wu, %l3_ffn_wd)
      shared(%l3_ffn_sg, %l3_ffn_su, %l3_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l3_h = arith.addf %l3_h_mid, %l3_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 4: KDA mixer, MoE FFN -------------------------------------------
  %l4_mixer_norm_w = moe.param "layers.4.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l4_mixer_in = moe.rms_norm %l3_h, %l4_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l4_mixer_wq = moe.param "layers.4.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l4_mixer_wk = moe.param "layers.4.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l4_mixer_wv = moe.param "layers.4.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l4_mixer_cq = moe.param "layers.4.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l4_mixer_ck = moe.param "layers.4.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l4_mixer_cv = moe.param "layers.4.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l4_mixer_wfd = moe.param "layers.4.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l4_mixer_wfu = moe.param "layers.4.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l4_mixer_alog = moe.param "layers.4.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l4_mixer_dtb = moe.param "layers.4.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l4_mixer_wb = moe.param "layers.4.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l4_mixer_wgd = moe.param "layers.4.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l4_mixer_wgu = moe.param "layers.4.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l4_mixer_on = moe.param "layers.4.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l4_mixer_wo = moe.param "layers.4.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l4_mixer_out = moe.kda_layer %l4_mixer_in
      q(%l4_mixer_wq) k(%l4_mixer_wk) v(%l4_mixer_wv)
      conv(%l4_mixer_cq, %l4_mixer_ck, %l4_mixer_cv)
      gate(%l4_mixer_wfd, %l4_mixer_wfu, %l4_mixer_alog, %l4_mixer_dtb) beta(%l4_mixer_wb)
      out_gate(%l4_mixer_wgd, %l4_mixer_wgu) out_norm(%l4_mixer_on) out(%l4_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l4_h_mid = arith.addf %l3_h, %l4_mixer_out : tensor<?x?x2304xbf16>
  %l4_ffn_norm_w = moe.param "layers.4.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l4_ffn_in = moe.rms_norm %l4_h_mid, %l4_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l4_ffn_wr = moe.param "layers.4.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l4_ffn_rb = moe.param "layers.4.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l4_ffn_wg = moe.param "layers.4.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l4_ffn_wu = moe.param "layers.4.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l4_ffn_wd = moe.param "layers.4.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l4_ffn_sg = moe.param "layers.4.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l4_ffn_su = moe.param "layers.4.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l4_ffn_sd = moe.param "layers.4.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l4_ffn_out, %l4_ffn_load, %l4_ffn_next_bias = moe.moe_ffn %l4_ffn_in
      router(%l4_ffn_wr, %l4_ffn_rb) experts(%l4_ffn_wg, %l4_ffn_wu, %l4_ffn_wd)
      shared(%l4_ffn_sg, %l4_ffn_su, %l4_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l4_h = arith.addf %l4_h_mid, %l4_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 5: KDA mixer, MoE FFN -------------------------------------------
  %l5_mixer_norm_w = moe.param "layers.5.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l5_mixer_in = moe.rms_norm %l4_h, %l5_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l5_mixer_wq = moe.param "layers.5.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l5_mixer_wk = moe.param "layers.5.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l5_mixer_wv = moe.param "layers.5.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l5_mixer_cq = moe.param "layers.5.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l5_mixer_ck = moe.param "layers.5.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l5_mixer_cv = moe.param "layers.5.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l5_mixer_wfd = moe.param "layers.5.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l5_mixer_wfu = moe.param "layers.5.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l5_mixer_alog = moe.param "layers.5.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l5_mixer_dtb = moe.param "layers.5.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l5_mixer_wb = moe.param "layers.5.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l5_mixer_wgd = moe.param "layers.5.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l5_mixer_wgu = moe.param "layers.5.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l5_mixer_on = moe.param "layers.5.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l5_mixer_wo = moe.param "layers.5.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l5_mixer_out = moe.kda_layer %l5_mixer_in
      q(%l5_mixer_wq) k(%l5_mixer_wk) v(%l5_mixer_wv)
      conv(%l5_mixer_cq, %l5_mixer_ck, %l5_mixer_cv)
      gate(%l5_mixer_wfd, %l5_mixer_wfu, %l5_mixer_alog, %l5_mixer_dtb) beta(%l5_mixer_wb)
      out_gate(%l5_mixer_wgd, %l5_mixer_wgu) out_norm(%l5_mixer_on) out(%l5_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l5_h_mid = arith.addf %l4_h, %l5_mixer_out : tensor<?x?x2304xbf16>
  %l5_ffn_norm_w = moe.param "layers.5.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l5_ffn_in = moe.rms_norm %l5_h_mid, %l5_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l5_ffn_wr = moe.param "layers.5.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l5_ffn_rb = moe.param "layers.5.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l5_ffn_wg = moe.param "layers.5.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l5_ffn_wu = moe.param "layers.5.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l5_ffn_wd = moe.param "layers.5.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l5_ffn_sg = moe.param "layers.5.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l5_ffn_su = moe.param "layers.5.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l5_ffn_sd = moe.param "layers.5.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l5_ffn_out, %l5_ffn_load, %l5_ffn_next_bias = moe.moe_ffn %l5_ffn_in
      router(%l5_ffn_wr, %l5_ffn_rb) experts(%l5_ffn_wg, %l5_ffn_wu, %l5_ffn_wd)
      shared(%l5_ffn_sg, %l5_ffn_su, %l5_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l5_h = arith.addf %l5_h_mid, %l5_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 6: KDA mixer, MoE FFN -------------------------------------------
  %l6_mixer_norm_w = moe.param "layers.6.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l6_mixer_in = moe.rms_norm %l5_h, %l6_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l6_mixer_wq = moe.param "layers.6.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l6_mixer_wk = moe.param "layers.6.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l6_mixer_wv = moe.param "layers.6.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l6_mixer_cq = moe.param "layers.6.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l6_mixer_ck = moe.param "layers.6.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l6_mixer_cv = moe.param "layers.6.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l6_mixer_wfd = moe.param "layers.6.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l6_mixer_wfu = moe.param "layers.6.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l6_mixer_alog = moe.param "layers.6.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l6_mixer_dtb = moe.param "layers.6.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l6_mixer_wb = moe.param "layers.6.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l6_mixer_wgd = moe.param "layers.6.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l6_mixer_wgu = moe.param "layers.6.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l6_mixer_on = moe.param "layers.6.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l6_mixer_wo = moe.param "layers.6.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l6_mixer_out = moe.kda_layer %l6_mixer_in
      q(%l6_mixer_wq) k(%l6_mixer_wk) v(%l6_mixer_wv)
      conv(%l6_mixer_cq, %l6_mixer_ck, %l6_mixer_cv)
      gate(%l6_mixer_wfd, %l6_mixer_wfu, %l6_mixer_alog, %l6_mixer_dtb) beta(%l6_mixer_wb)
      out_gate(%l6_mixer_wgd, %l6_mixer_wgu) out_norm(%l6_mixer_on) out(%l6_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l6_h_mid = arith.addf %l5_h, %l6_mixer_out : tensor<?x?x2304xbf16>
  %l6_ffn_norm_w = moe.param "layers.6.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l6_ffn_in = moe.rms_norm %l6_h_mid, %l6_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l6_ffn_wr = moe.param "layers.6.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l6_ffn_rb = moe.param "layers.6.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l6_ffn_wg = moe.param "layers.6.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l6_ffn_wu = moe.param "layers.6.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l6_ffn_wd = moe.param "layers.6.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l6_ffn_sg = moe.param "layers.6.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l6_ffn_su = moe.param "layers.6.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l6_ffn_sd = moe.param "layers.6.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l6_ffn_out, %l6_ffn_load, %l6_ffn_next_bias = moe.moe_ffn %l6_ffn_in
      router(%l6_ffn_wr, %l6_ffn_rb) experts(%l6_ffn_wg, %l6_ffn_wu, %l6_ffn_wd)
      shared(%l6_ffn_sg, %l6_ffn_su, %l6_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l6_h = arith.addf %l6_h_mid, %l6_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 7: MLA mixer, MoE FFN -------------------------------------------
  %l7_mixer_norm_w = moe.param "layers.7.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l7_mixer_in = moe.rms_norm %l6_h, %l7_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l7_mixer_wq = moe.param "layers.7.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l7_mixer_wkvd = moe.param "layers.7.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l7_mixer_kvn = moe.param "layers.7.mixer.kv_norm" init <ones> no_weight_decay : tensor<512xbf16>
  %l7_mixer_wkvu = moe.param "layers.7.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l7_mixer_wo = moe.param "layers.7.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l7_mixer_out = moe.mla_layer %l7_mixer_in q(%l7_mixer_wq)
      kv(%l7_mixer_wkvd, %l7_mixer_kvn, %l7_mixer_wkvu) out(%l7_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l7_h_mid = arith.addf %l6_h, %l7_mixer_out : tensor<?x?x2304xbf16>
  %l7_ffn_norm_w = moe.param "layers.7.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l7_ffn_in = moe.rms_norm %l7_h_mid, %l7_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l7_ffn_wr = moe.param "layers.7.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l7_ffn_rb = moe.param "layers.7.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l7_ffn_wg = moe.param "layers.7.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l7_ffn_wu = moe.param "layers.7.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l7_ffn_wd = moe.param "layers.7.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l7_ffn_sg = moe.param "layers.7.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l7_ffn_su = moe.param "layers.7.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l7_ffn_sd = moe.param "layers.7.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l7_ffn_out, %l7_ffn_load, %l7_ffn_next_bias = moe.moe_ffn %l7_ffn_in
      router(%l7_ffn_wr, %l7_ffn_rb) experts(%l7_ffn_wg, %l7_ffn_wu, %l7_ffn_wd)
      shared(%l7_ffn_sg, %l7_ffn_su, %l7_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l7_h = arith.addf %l7_h_mid, %l7_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 8: KDA mixer, MoE FFN -------------------------------------------
  %l8_mixer_norm_w = moe.param "layers.8.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l8_mixer_in = moe.rms_norm %l7_h, %l8_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l8_mixer_wq = moe.param "layers.8.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l8_mixer_wk = moe.param "layers.8.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l8_mixer_wv = moe.param "layers.8.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l8_mixer_cq = moe.param "layers.8.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l8_mixer_ck = moe.param "layers.8.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l8_mixer_cv = moe.param "layers.8.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l8_mixer_wfd = moe.param "layers.8.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l8_mixer_wfu = moe.param "layers.8.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l8_mixer_alog = moe.param "layers.8.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l8_mixer_dtb = moe.param "layers.8.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l8_mixer_wb = moe.param "layers.8.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l8_mixer_wgd = moe.param "layers.8.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l8_mixer_wgu = moe.param "layers.8.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l8_mixer_on = moe.param "layers.8.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l8_mixer_wo = moe.param "layers.8.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l8_mixer_out = moe.kda_layer %l8_mixer_in
      q(%l8_mixer_wq) k(%l8_mixer_wk) v(%l8_mixer_wv)
      conv(%l8_mixer_cq, %l8_mixer_ck, %l8_mixer_cv)
      gate(%l8_mixer_wfd, %l8_mixer_wfu, %l8_mixer_alog, %l8_mixer_dtb) beta(%l8_mixer_wb)
      out_gate(%l8_mixer_wgd, %l8_mixer_wgu) out_norm(%l8_mixer_on) out(%l8_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l8_h_mid = arith.addf %l7_h, %l8_mixer_out : tensor<?x?x2304xbf16>
  %l8_ffn_norm_w = moe.param "layers.8.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l8_ffn_in = moe.rms_norm %l8_h_mid, %l8_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l8_ffn_wr = moe.param "layers.8.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l8_ffn_rb = moe.param "layers.8.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l8_ffn_wg = moe.param "layers.8.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l8_ffn_wu = moe.param "layers.8.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l8_ffn_wd = moe.param "layers.8.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l8_ffn_sg = moe.param "layers.8.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l8_ffn_su = moe.param "layers.8.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l8_ffn_sd = moe.param "layers.8.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l8_ffn_out, %l8_ffn_load, %l8_ffn_next_bias = moe.moe_ffn %l8_ffn_in
      router(%l8_ffn_wr, %l8_ffn_rb) experts(%l8_ffn_wg, %l8_ffn_wu, %l8_ffn_wd)
      shared(%l8_ffn_sg, %l8_ffn_su, %l8_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l8_h = arith.addf %l8_h_mid, %l8_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 9: KDA mixer, MoE FFN -------------------------------------------
  %l9_mixer_norm_w = moe.param "layers.9.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l9_mixer_in = moe.rms_norm %l8_h, %l9_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l9_mixer_wq = moe.param "layers.9.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l9_mixer_wk = moe.param "layers.9.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l9_mixer_wv = moe.param "layers.9.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l9_mixer_cq = moe.param "layers.9.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l9_mixer_ck = moe.param "layers.9.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l9_mixer_cv = moe.param "layers.9.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l9_mixer_wfd = moe.param "layers.9.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l9_mixer_wfu = moe.param "layers.9.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l9_mixer_alog = moe.param "layers.9.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l9_mixer_dtb = moe.param "layers.9.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l9_mixer_wb = moe.param "layers.9.mixer.w_beta" init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l9_mixer_wgd = moe.param "layers.9.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l9_mixer_wgu = moe.param "layers.9.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l9_mixer_on = moe.param "layers.9.mixer.out_norm" init <ones> no_weight_decay : tensor<128xbf16>
  %l9_mixer_wo = moe.param "layers.9.mixer.w_out" init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l9_mixer_out = moe.kda_layer %l9_mixer_in
      q(%l9_mixer_wq) k(%l9_mixer_wk) v(%l9_mixer_wv)
      conv(%l9_mixer_cq, %l9_mixer_ck, %l9_mixer_cv)
      gate(%l9_mixer_wfd, %l9_mixer_wfu, %l9_mixer_alog, %l9_mixer_dtb) beta(%l9_mixer_wb)
      out_gate(%l9_mixer_wgd, %l9_mixer_wgu) out_norm(%l9_mixer_on) out(%l9_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l9_h_mid = arith.addf %l8_h, %l9_mixer_out : tensor<?x?x2304xbf16>
  %l9_ffn_norm_w = moe.param "layers.9.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l9_ffn_in = moe.rms_norm %l9_h_mid, %l9_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l9_ffn_wr = moe.param "layers.9.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l9_ffn_rb = moe.param "layers.9.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l9_ffn_wg = moe.param "layers.9.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l9_ffn_wu = moe.param "layers.9.ffn.w_up" init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l9_ffn_wd = moe.param "layers.9.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l9_ffn_sg = moe.param "layers.9.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l9_ffn_su = moe.param "layers.9.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l9_ffn_sd = moe.param "layers.9.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l9_ffn_out, %l9_ffn_load, %l9_ffn_next_bias = moe.moe_ffn %l9_ffn_in
      router(%l9_ffn_wr, %l9_ffn_rb) experts(%l9_ffn_wg, %l9_ffn_wu, %l9_ffn_wd)
      shared(%l9_ffn_sg, %l9_ffn_su, %l9_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l9_h = arith.addf %l9_h_mid, %l9_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 10: KDA mixer, MoE FFN ------------------------------------------
  %l10_mixer_norm_w = moe.param "layers.10.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l10_mixer_in = moe.rms_norm %l9_h, %l10_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l10_mixer_wq = moe.param "layers.10.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l10_mixer_wk = moe.param "layers.10.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l10_mixer_wv = moe.param "layers.10.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l10_mixer_cq = moe.param "layers.10.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l10_mixer_ck = moe.param "layers.10.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l10_mixer_cv = moe.param "layers.10.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l10_mixer_wfd = moe.param "layers.10.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l10_mixer_wfu = moe.param "layers.10.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l10_mixer_alog = moe.param "layers.10.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l10_mixer_dtb = moe.param "layers.10.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l10_mixer_wb = moe.param "layers.10.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l10_mixer_wgd = moe.param "layers.10.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l10_mixer_wgu = moe.param "layers.10.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l10_mixer_on = moe.param "layers.10.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l10_mixer_wo = moe.param "layers.10.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l10_mixer_out = moe.kda_layer %l10_mixer_in
      q(%l10_mixer_wq) k(%l10_mixer_wk) v(%l10_mixer_wv)
      conv(%l10_mixer_cq, %l10_mixer_ck, %l10_mixer_cv)
      gate(%l10_mixer_wfd, %l10_mixer_wfu, %l10_mixer_alog, %l10_mixer_dtb) beta(%l10_mixer_wb)
      out_gate(%l10_mixer_wgd, %l10_mixer_wgu) out_norm(%l10_mixer_on) out(%l10_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l10_h_mid = arith.addf %l9_h, %l10_mixer_out : tensor<?x?x2304xbf16>
  %l10_ffn_norm_w = moe.param "layers.10.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l10_ffn_in = moe.rms_norm %l10_h_mid, %l10_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l10_ffn_wr = moe.param "layers.10.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l10_ffn_rb = moe.param "layers.10.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l10_ffn_wg = moe.param "layers.10.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l10_ffn_wu = moe.param "layers.10.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l10_ffn_wd = moe.param "layers.10.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l10_ffn_sg = moe.param "layers.10.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l10_ffn_su = moe.param "layers.10.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l10_ffn_sd = moe.param "layers.10.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l10_ffn_out, %l10_ffn_load, %l10_ffn_next_bias = moe.moe_ffn %l10_ffn_in
      router(%l10_ffn_wr, %l10_ffn_rb) experts(%l10_ffn_wg, %l10_ffn_wu, %l10_ffn_wd)
      shared(%l10_ffn_sg, %l10_ffn_su, %l10_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l10_h = arith.addf %l10_h_mid, %l10_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 11: MLA mixer, MoE FFN ------------------------------------------
  %l11_mixer_norm_w = moe.param "layers.11.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l11_mixer_in = moe.rms_norm %l10_h, %l11_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l11_mixer_wq = moe.param "layers.11.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l11_mixer_wkvd = moe.param "layers.11.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l11_mixer_kvn = moe.param "layers.11.mixer.kv_norm"
      init <ones> no_weight_decay : tensor<512xbf16>
  %l11_mixer_wkvu = moe.param "layers.11.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l11_mixer_wo = moe.param "layers.11.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l11_mixer_out = moe.mla_layer %l11_mixer_in q(%l11_mixer_wq)
      kv(%l11_mixer_wkvd, %l11_mixer_kvn, %l11_mixer_wkvu) out(%l11_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l11_h_mid = arith.addf %l10_h, %l11_mixer_out : tensor<?x?x2304xbf16>
  %l11_ffn_norm_w = moe.param "layers.11.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l11_ffn_in = moe.rms_norm %l11_h_mid, %l11_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l11_ffn_wr = moe.param "layers.11.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l11_ffn_rb = moe.param "layers.11.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l11_ffn_wg = moe.param "layers.11.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l11_ffn_wu = moe.param "layers.11.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l11_ffn_wd = moe.param "layers.11.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l11_ffn_sg = moe.param "layers.11.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l11_ffn_su = moe.param "layers.11.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l11_ffn_sd = moe.param "layers.11.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l11_ffn_out, %l11_ffn_load, %l11_ffn_next_bias = moe.moe_ffn %l11_ffn_in
      router(%l11_ffn_wr, %l11_ffn_rb) experts(%l11_ffn_wg, %l11_ffn_wu, %l11_ffn_wd)
      shared(%l11_ffn_sg, %l11_ffn_su, %l11_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l11_h = arith.addf %l11_h_mid, %l11_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 12: KDA mixer, MoE FFN ------------------------------------------
  %l12_mixer_norm_w = moe.param "layers.12.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l12_mixer_in = moe.rms_norm %l11_h, %l12_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l12_mixer_wq = moe.param "layers.12.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l12_mixer_wk = moe.param "layers.12.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l12_mixer_wv = moe.param "layers.12.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l12_mixer_cq = moe.param "layers.12.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l12_mixer_ck = moe.param "layers.12.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l12_mixer_cv = moe.param "layers.12.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l12_mixer_wfd = moe.param "layers.12.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l12_mixer_wfu = moe.param "layers.12.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l12_mixer_alog = moe.param "layers.12.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l12_mixer_dtb = moe.param "layers.12.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l12_mixer_wb = moe.param "layers.12.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l12_mixer_wgd = moe.param "layers.12.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l12_mixer_wgu = moe.param "layers.12.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l12_mixer_on = moe.param "layers.12.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l12_mixer_wo = moe.param "layers.12.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l12_mixer_out = moe.kda_layer %l12_mixer_in
      q(%l12_mixer_wq) k(%l12_mixer_wk) v(%l12_mixer_wv)
      conv(%l12_mixer_cq, %l12_mixer_ck, %l12_mixer_cv)
      gate(%l12_mixer_wfd, %l12_mixer_wfu, %l12_mixer_alog, %l12_mixer_dtb) beta(%l12_mixer_wb)
      out_gate(%l12_mixer_wgd, %l12_mixer_wgu) out_norm(%l12_mixer_on) out(%l12_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l12_h_mid = arith.addf %l11_h, %l12_mixer_out : tensor<?x?x2304xbf16>
  %l12_ffn_norm_w = moe.param "layers.12.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l12_ffn_in = moe.rms_norm %l12_h_mid, %l12_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l12_ffn_wr = moe.param "layers.12.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l12_ffn_rb = moe.param "layers.12.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l12_ffn_wg = moe.param "layers.12.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l12_ffn_wu = moe.param "layers.12.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l12_ffn_wd = moe.param "layers.12.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l12_ffn_sg = moe.param "layers.12.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l12_ffn_su = moe.param "layers.12.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l12_ffn_sd = moe.param "layers.12.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l12_ffn_out, %l12_ffn_load, %l12_ffn_next_bias = moe.moe_ffn %l12_ffn_in
      router(%l12_ffn_wr, %l12_ffn_rb) experts(%l12_ffn_wg, %l12_ffn_wu, %l12_ffn_wd)
      shared(%l12_ffn_sg, %l12_ffn_su, %l12_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l12_h = arith.addf %l12_h_mid, %l12_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 13: KDA mixer, MoE FFN ------------------------------------------
  %l13_mixer_norm_w = moe.param "layers.13.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l13_mixer_in = moe.rms_norm %l12_h, %l13_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l13_mixer_wq = moe.param "layers.13.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l13_mixer_wk = moe.param "layers.13.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l13_mixer_wv = moe.param "layers.13.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l13_mixer_cq = moe.param "layers.13.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l13_mixer_ck = moe.param "layers.13.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l13_mixer_cv = moe.param "layers.13.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l13_mixer_wfd = moe.param "layers.13.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l13_mixer_wfu = moe.param "layers.13.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l13_mixer_alog = moe.param "layers.13.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l13_mixer_dtb = moe.param "layers.13.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l13_mixer_wb = moe.param "layers.13.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l13_mixer_wgd = moe.param "layers.13.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l13_mixer_wgu = moe.param "layers.13.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l13_mixer_on = moe.param "layers.13.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l13_mixer_wo = moe.param "layers.13.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l13_mixer_out = moe.kda_layer %l13_mixer_in
      q(%l13_mixer_wq) k(%l13_mixer_wk) v(%l13_mixer_wv)
      conv(%l13_mixer_cq, %l13_mixer_ck, %l13_mixer_cv)
      gate(%l13_mixer_wfd, %l13_mixer_wfu, %l13_mixer_alog, %l13_mixer_dtb) beta(%l13_mixer_wb)
      out_gate(%l13_mixer_wgd, %l13_mixer_wgu) out_norm(%l13_mixer_on) out(%l13_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l13_h_mid = arith.addf %l12_h, %l13_mixer_out : tensor<?x?x2304xbf16>
  %l13_ffn_norm_w = moe.param "layers.13.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l13_ffn_in = moe.rms_norm %l13_h_mid, %l13_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l13_ffn_wr = moe.param "layers.13.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l13_ffn_rb = moe.param "layers.13.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l13_ffn_wg = moe.param "layers.13.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l13_ffn_wu = moe.param "layers.13.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l13_ffn_wd = moe.param "layers.13.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l13_ffn_sg = moe.param "layers.13.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l13_ffn_su = moe.param "layers.13.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l13_ffn_sd = moe.param "layers.13.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l13_ffn_out, %l13_ffn_load, %l13_ffn_next_bias = moe.moe_ffn %l13_ffn_in
      router(%l13_ffn_wr, %l13_ffn_rb) experts(%l13_ffn_wg, %l13_ffn_wu, %l13_ffn_wd)
      shared(%l13_ffn_sg, %l13_ffn_su, %l13_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l13_h = arith.addf %l13_h_mid, %l13_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 14: KDA mixer, MoE FFN ------------------------------------------
  %l14_mixer_norm_w = moe.param "layers.14.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l14_mixer_in = moe.rms_norm %l13_h, %l14_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l14_mixer_wq = moe.param "layers.14.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l14_mixer_wk = moe.param "layers.14.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l14_mixer_wv = moe.param "layers.14.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l14_mixer_cq = moe.param "layers.14.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l14_mixer_ck = moe.param "layers.14.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l14_mixer_cv = moe.param "layers.14.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l14_mixer_wfd = moe.param "layers.14.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l14_mixer_wfu = moe.param "layers.14.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l14_mixer_alog = moe.param "layers.14.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l14_mixer_dtb = moe.param "layers.14.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l14_mixer_wb = moe.param "layers.14.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l14_mixer_wgd = moe.param "layers.14.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l14_mixer_wgu = moe.param "layers.14.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l14_mixer_on = moe.param "layers.14.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l14_mixer_wo = moe.param "layers.14.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l14_mixer_out = moe.kda_layer %l14_mixer_in
      q(%l14_mixer_wq) k(%l14_mixer_wk) v(%l14_mixer_wv)
      conv(%l14_mixer_cq, %l14_mixer_ck, %l14_mixer_cv)
      gate(%l14_mixer_wfd, %l14_mixer_wfu, %l14_mixer_alog, %l14_mixer_dtb) beta(%l14_mixer_wb)
      out_gate(%l14_mixer_wgd, %l14_mixer_wgu) out_norm(%l14_mixer_on) out(%l14_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l14_h_mid = arith.addf %l13_h, %l14_mixer_out : tensor<?x?x2304xbf16>
  %l14_ffn_norm_w = moe.param "layers.14.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l14_ffn_in = moe.rms_norm %l14_h_mid, %l14_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l14_ffn_wr = moe.param "layers.14.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l14_ffn_rb = moe.param "layers.14.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l14_ffn_wg = moe.param "layers.14.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l14_ffn_wu = moe.param "layers.14.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l14_ffn_wd = moe.param "layers.14.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l14_ffn_sg = moe.param "layers.14.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l14_ffn_su = moe.param "layers.14.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l14_ffn_sd = moe.param "layers.14.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l14_ffn_out, %l14_ffn_load, %l14_ffn_next_bias = moe.moe_ffn %l14_ffn_in
      router(%l14_ffn_wr, %l14_ffn_rb) experts(%l14_ffn_wg, %l14_ffn_wu, %l14_ffn_wd)
      shared(%l14_ffn_sg, %l14_ffn_su, %l14_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l14_h = arith.addf %l14_h_mid, %l14_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 15: MLA mixer, MoE FFN ------------------------------------------
  %l15_mixer_norm_w = moe.param "layers.15.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l15_mixer_in = moe.rms_norm %l14_h, %l15_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l15_mixer_wq = moe.param "layers.15.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l15_mixer_wkvd = moe.param "layers.15.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l15_mixer_kvn = moe.param "layers.15.mixer.kv_norm"
      init <ones> no_weight_decay : tensor<512xbf16>
  %l15_mixer_wkvu = moe.param "layers.15.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l15_mixer_wo = moe.param "layers.15.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l15_mixer_out = moe.mla_layer %l15_mixer_in q(%l15_mixer_wq)
      kv(%l15_mixer_wkvd, %l15_mixer_kvn, %l15_mixer_wkvu) out(%l15_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l15_h_mid = arith.addf %l14_h, %l15_mixer_out : tensor<?x?x2304xbf16>
  %l15_ffn_norm_w = moe.param "layers.15.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l15_ffn_in = moe.rms_norm %l15_h_mid, %l15_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l15_ffn_wr = moe.param "layers.15.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l15_ffn_rb = moe.param "layers.15.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l15_ffn_wg = moe.param "layers.15.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l15_ffn_wu = moe.param "layers.15.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l15_ffn_wd = moe.param "layers.15.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l15_ffn_sg = moe.param "layers.15.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l15_ffn_su = moe.param "layers.15.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l15_ffn_sd = moe.param "layers.15.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l15_ffn_out, %l15_ffn_load, %l15_ffn_next_bias = moe.moe_ffn %l15_ffn_in
      router(%l15_ffn_wr, %l15_ffn_rb) experts(%l15_ffn_wg, %l15_ffn_wu, %l15_ffn_wd)
      shared(%l15_ffn_sg, %l15_ffn_su, %l15_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l15_h = arith.addf %l15_h_mid, %l15_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 16: KDA mixer, MoE FFN ------------------------------------------
  %l16_mixer_norm_w = moe.param "layers.16.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l16_mixer_in = moe.rms_norm %l15_h, %l16_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l16_mixer_wq = moe.param "layers.16.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l16_mixer_wk = moe.param "layers.16.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l16_mixer_wv = moe.param "layers.16.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l16_mixer_cq = moe.param "layers.16.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l16_mixer_ck = moe.param "layers.16.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l16_mixer_cv = moe.param "layers.16.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l16_mixer_wfd = moe.param "layers.16.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l16_mixer_wfu = moe.param "layers.16.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l16_mixer_alog = moe.param "layers.16.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l16_mixer_dtb = moe.param "layers.16.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l16_mixer_wb = moe.param "layers.16.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l16_mixer_wgd = moe.param "layers.16.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l16_mixer_wgu = moe.param "layers.16.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l16_mixer_on = moe.param "layers.16.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l16_mixer_wo = moe.param "layers.16.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l16_mixer_out = moe.kda_layer %l16_mixer_in
      q(%l16_mixer_wq) k(%l16_mixer_wk) v(%l16_mixer_wv)
      conv(%l16_mixer_cq, %l16_mixer_ck, %l16_mixer_cv)
      gate(%l16_mixer_wfd, %l16_mixer_wfu, %l16_mixer_alog, %l16_mixer_dtb) beta(%l16_mixer_wb)
      out_gate(%l16_mixer_wgd, %l16_mixer_wgu) out_norm(%l16_mixer_on) out(%l16_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l16_h_mid = arith.addf %l15_h, %l16_mixer_out : tensor<?x?x2304xbf16>
  %l16_ffn_norm_w = moe.param "layers.16.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l16_ffn_in = moe.rms_norm %l16_h_mid, %l16_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l16_ffn_wr = moe.param "layers.16.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l16_ffn_rb = moe.param "layers.16.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l16_ffn_wg = moe.param "layers.16.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l16_ffn_wu = moe.param "layers.16.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l16_ffn_wd = moe.param "layers.16.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l16_ffn_sg = moe.param "layers.16.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l16_ffn_su = moe.param "layers.16.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l16_ffn_sd = moe.param "layers.16.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l16_ffn_out, %l16_ffn_load, %l16_ffn_next_bias = moe.moe_ffn %l16_ffn_in
      router(%l16_ffn_wr, %l16_ffn_rb) experts(%l16_ffn_wg, %l16_ffn_wu, %l16_ffn_wd)
      shared(%l16_ffn_sg, %l16_ffn_su, %l16_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l16_h = arith.addf %l16_h_mid, %l16_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 17: KDA mixer, MoE FFN ------------------------------------------
  %l17_mixer_norm_w = moe.param "layers.17.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l17_mixer_in = moe.rms_norm %l16_h, %l17_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l17_mixer_wq = moe.param "layers.17.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l17_mixer_wk = moe.param "layers.17.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l17_mixer_wv = moe.param "layers.17.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l17_mixer_cq = moe.param "layers.17.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l17_mixer_ck = moe.param "layers.17.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l17_mixer_cv = moe.param "layers.17.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l17_mixer_wfd = moe.param "layers.17.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l17_mixer_wfu = moe.param "layers.17.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l17_mixer_alog = moe.param "layers.17.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l17_mixer_dtb = moe.param "layers.17.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l17_mixer_wb = moe.param "layers.17.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l17_mixer_wgd = moe.param "layers.17.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l17_mixer_wgu = moe.param "layers.17.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l17_mixer_on = moe.param "layers.17.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l17_mixer_wo = moe.param "layers.17.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l17_mixer_out = moe.kda_layer %l17_mixer_in
      q(%l17_mixer_wq) k(%l17_mixer_wk) v(%l17_mixer_wv)
      conv(%l17_mixer_cq, %l17_mixer_ck, %l17_mixer_cv)
      gate(%l17_mixer_wfd, %l17_mixer_wfu, %l17_mixer_alog, %l17_mixer_dtb) beta(%l17_mixer_wb)
      out_gate(%l17_mixer_wgd, %l17_mixer_wgu) out_norm(%l17_mixer_on) out(%l17_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l17_h_mid = arith.addf %l16_h, %l17_mixer_out : tensor<?x?x2304xbf16>
  %l17_ffn_norm_w = moe.param "layers.17.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l17_ffn_in = moe.rms_norm %l17_h_mid, %l17_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l17_ffn_wr = moe.param "layers.17.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l17_ffn_rb = moe.param "layers.17.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l17_ffn_wg = moe.param "layers.17.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l17_ffn_wu = moe.param "layers.17.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l17_ffn_wd = moe.param "layers.17.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l17_ffn_sg = moe.param "layers.17.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l17_ffn_su = moe.param "layers.17.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l17_ffn_sd = moe.param "layers.17.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l17_ffn_out, %l17_ffn_load, %l17_ffn_next_bias = moe.moe_ffn %l17_ffn_in
      router(%l17_ffn_wr, %l17_ffn_rb) experts(%l17_ffn_wg, %l17_ffn_wu, %l17_ffn_wd)
      shared(%l17_ffn_sg, %l17_ffn_su, %l17_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l17_h = arith.addf %l17_h_mid, %l17_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 18: KDA mixer, MoE FFN ------------------------------------------
  %l18_mixer_norm_w = moe.param "layers.18.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l18_mixer_in = moe.rms_norm %l17_h, %l18_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l18_mixer_wq = moe.param "layers.18.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l18_mixer_wk = moe.param "layers.18.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l18_mixer_wv = moe.param "layers.18.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l18_mixer_cq = moe.param "layers.18.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l18_mixer_ck = moe.param "layers.18.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l18_mixer_cv = moe.param "layers.18.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l18_mixer_wfd = moe.param "layers.18.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l18_mixer_wfu = moe.param "layers.18.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l18_mixer_alog = moe.param "layers.18.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l18_mixer_dtb = moe.param "layers.18.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l18_mixer_wb = moe.param "layers.18.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l18_mixer_wgd = moe.param "layers.18.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l18_mixer_wgu = moe.param "layers.18.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l18_mixer_on = moe.param "layers.18.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l18_mixer_wo = moe.param "layers.18.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l18_mixer_out = moe.kda_layer %l18_mixer_in
      q(%l18_mixer_wq) k(%l18_mixer_wk) v(%l18_mixer_wv)
      conv(%l18_mixer_cq, %l18_mixer_ck, %l18_mixer_cv)
      gate(%l18_mixer_wfd, %l18_mixer_wfu, %l18_mixer_alog, %l18_mixer_dtb) beta(%l18_mixer_wb)
      out_gate(%l18_mixer_wgd, %l18_mixer_wgu) out_norm(%l18_mixer_on) out(%l18_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l18_h_mid = arith.addf %l17_h, %l18_mixer_out : tensor<?x?x2304xbf16>
  %l18_ffn_norm_w = moe.param "layers.18.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l18_ffn_in = moe.rms_norm %l18_h_mid, %l18_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l18_ffn_wr = moe.param "layers.18.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l18_ffn_rb = moe.param "layers.18.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l18_ffn_wg = moe.param "layers.18.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l18_ffn_wu = moe.param "layers.18.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l18_ffn_wd = moe.param "layers.18.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l18_ffn_sg = moe.param "layers.18.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l18_ffn_su = moe.param "layers.18.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l18_ffn_sd = moe.param "layers.18.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l18_ffn_out, %l18_ffn_load, %l18_ffn_next_bias = moe.moe_ffn %l18_ffn_in
      router(%l18_ffn_wr, %l18_ffn_rb) experts(%l18_ffn_wg, %l18_ffn_wu, %l18_ffn_wd)
      shared(%l18_ffn_sg, %l18_ffn_su, %l18_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l18_h = arith.addf %l18_h_mid, %l18_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 19: MLA mixer, MoE FFN ------------------------------------------
  %l19_mixer_norm_w = moe.param "layers.19.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l19_mixer_in = moe.rms_norm %l18_h, %l19_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l19_mixer_wq = moe.param "layers.19.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l19_mixer_wkvd = moe.param "layers.19.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l19_mixer_kvn = moe.param "layers.19.mixer.kv_norm"
      init <ones> no_weight_decay : tensor<512xbf16>
  %l19_mixer_wkvu = moe.param "layers.19.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l19_mixer_wo = moe.param "layers.19.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l19_mixer_out = moe.mla_layer %l19_mixer_in q(%l19_mixer_wq)
      kv(%l19_mixer_wkvd, %l19_mixer_kvn, %l19_mixer_wkvu) out(%l19_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l19_h_mid = arith.addf %l18_h, %l19_mixer_out : tensor<?x?x2304xbf16>
  %l19_ffn_norm_w = moe.param "layers.19.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l19_ffn_in = moe.rms_norm %l19_h_mid, %l19_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l19_ffn_wr = moe.param "layers.19.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l19_ffn_rb = moe.param "layers.19.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l19_ffn_wg = moe.param "layers.19.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l19_ffn_wu = moe.param "layers.19.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l19_ffn_wd = moe.param "layers.19.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l19_ffn_sg = moe.param "layers.19.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l19_ffn_su = moe.param "layers.19.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l19_ffn_sd = moe.param "layers.19.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l19_ffn_out, %l19_ffn_load, %l19_ffn_next_bias = moe.moe_ffn %l19_ffn_in
      router(%l19_ffn_wr, %l19_ffn_rb) experts(%l19_ffn_wg, %l19_ffn_wu, %l19_ffn_wd)
      shared(%l19_ffn_sg, %l19_ffn_su, %l19_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l19_h = arith.addf %l19_h_mid, %l19_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 20: KDA mixer, MoE FFN ------------------------------------------
  %l20_mixer_norm_w = moe.param "layers.20.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l20_mixer_in = moe.rms_norm %l19_h, %l20_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l20_mixer_wq = moe.param "layers.20.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l20_mixer_wk = moe.param "layers.20.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l20_mixer_wv = moe.param "layers.20.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l20_mixer_cq = moe.param "layers.20.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l20_mixer_ck = moe.param "layers.20.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l20_mixer_cv = moe.param "layers.20.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l20_mixer_wfd = moe.param "layers.20.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l20_mixer_wfu = moe.param "layers.20.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l20_mixer_alog = moe.param "layers.20.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l20_mixer_dtb = moe.param "layers.20.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l20_mixer_wb = moe.param "layers.20.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l20_mixer_wgd = moe.param "layers.20.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l20_mixer_wgu = moe.param "layers.20.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l20_mixer_on = moe.param "layers.20.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l20_mixer_wo = moe.param "layers.20.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l20_mixer_out = moe.kda_layer %l20_mixer_in
      q(%l20_mixer_wq) k(%l20_mixer_wk) v(%l20_mixer_wv)
      conv(%l20_mixer_cq, %l20_mixer_ck, %l20_mixer_cv)
      gate(%l20_mixer_wfd, %l20_mixer_wfu, %l20_mixer_alog, %l20_mixer_dtb) beta(%l20_mixer_wb)
      out_gate(%l20_mixer_wgd, %l20_mixer_wgu) out_norm(%l20_mixer_on) out(%l20_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l20_h_mid = arith.addf %l19_h, %l20_mixer_out : tensor<?x?x2304xbf16>
  %l20_ffn_norm_w = moe.param "layers.20.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l20_ffn_in = moe.rms_norm %l20_h_mid, %l20_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l20_ffn_wr = moe.param "layers.20.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l20_ffn_rb = moe.param "layers.20.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l20_ffn_wg = moe.param "layers.20.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l20_ffn_wu = moe.param "layers.20.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l20_ffn_wd = moe.param "layers.20.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l20_ffn_sg = moe.param "layers.20.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l20_ffn_su = moe.param "layers.20.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l20_ffn_sd = moe.param "layers.20.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l20_ffn_out, %l20_ffn_load, %l20_ffn_next_bias = moe.moe_ffn %l20_ffn_in
      router(%l20_ffn_wr, %l20_ffn_rb) experts(%l20_ffn_wg, %l20_ffn_wu, %l20_ffn_wd)
      shared(%l20_ffn_sg, %l20_ffn_su, %l20_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l20_h = arith.addf %l20_h_mid, %l20_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 21: KDA mixer, MoE FFN ------------------------------------------
  %l21_mixer_norm_w = moe.param "layers.21.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l21_mixer_in = moe.rms_norm %l20_h, %l21_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l21_mixer_wq = moe.param "layers.21.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l21_mixer_wk = moe.param "layers.21.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l21_mixer_wv = moe.param "layers.21.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l21_mixer_cq = moe.param "layers.21.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l21_mixer_ck = moe.param "layers.21.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l21_mixer_cv = moe.param "layers.21.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l21_mixer_wfd = moe.param "layers.21.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l21_mixer_wfu = moe.param "layers.21.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l21_mixer_alog = moe.param "layers.21.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l21_mixer_dtb = moe.param "layers.21.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l21_mixer_wb = moe.param "layers.21.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l21_mixer_wgd = moe.param "layers.21.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l21_mixer_wgu = moe.param "layers.21.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l21_mixer_on = moe.param "layers.21.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l21_mixer_wo = moe.param "layers.21.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l21_mixer_out = moe.kda_layer %l21_mixer_in
      q(%l21_mixer_wq) k(%l21_mixer_wk) v(%l21_mixer_wv)
      conv(%l21_mixer_cq, %l21_mixer_ck, %l21_mixer_cv)
      gate(%l21_mixer_wfd, %l21_mixer_wfu, %l21_mixer_alog, %l21_mixer_dtb) beta(%l21_mixer_wb)
      out_gate(%l21_mixer_wgd, %l21_mixer_wgu) out_norm(%l21_mixer_on) out(%l21_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l21_h_mid = arith.addf %l20_h, %l21_mixer_out : tensor<?x?x2304xbf16>
  %l21_ffn_norm_w = moe.param "layers.21.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l21_ffn_in = moe.rms_norm %l21_h_mid, %l21_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l21_ffn_wr = moe.param "layers.21.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l21_ffn_rb = moe.param "layers.21.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l21_ffn_wg = moe.param "layers.21.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l21_ffn_wu = moe.param "layers.21.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l21_ffn_wd = moe.param "layers.21.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l21_ffn_sg = moe.param "layers.21.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l21_ffn_su = moe.param "layers.21.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l21_ffn_sd = moe.param "layers.21.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l21_ffn_out, %l21_ffn_load, %l21_ffn_next_bias = moe.moe_ffn %l21_ffn_in
      router(%l21_ffn_wr, %l21_ffn_rb) experts(%l21_ffn_wg, %l21_ffn_wu, %l21_ffn_wd)
      shared(%l21_ffn_sg, %l21_ffn_su, %l21_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l21_h = arith.addf %l21_h_mid, %l21_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 22: KDA mixer, MoE FFN ------------------------------------------
  %l22_mixer_norm_w = moe.param "layers.22.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l22_mixer_in = moe.rms_norm %l21_h, %l22_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l22_mixer_wq = moe.param "layers.22.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l22_mixer_wk = moe.param "layers.22.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l22_mixer_wv = moe.param "layers.22.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l22_mixer_cq = moe.param "layers.22.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l22_mixer_ck = moe.param "layers.22.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l22_mixer_cv = moe.param "layers.22.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l22_mixer_wfd = moe.param "layers.22.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l22_mixer_wfu = moe.param "layers.22.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l22_mixer_alog = moe.param "layers.22.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l22_mixer_dtb = moe.param "layers.22.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l22_mixer_wb = moe.param "layers.22.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l22_mixer_wgd = moe.param "layers.22.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l22_mixer_wgu = moe.param "layers.22.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l22_mixer_on = moe.param "layers.22.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l22_mixer_wo = moe.param "layers.22.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l22_mixer_out = moe.kda_layer %l22_mixer_in
      q(%l22_mixer_wq) k(%l22_mixer_wk) v(%l22_mixer_wv)
      conv(%l22_mixer_cq, %l22_mixer_ck, %l22_mixer_cv)
      gate(%l22_mixer_wfd, %l22_mixer_wfu, %l22_mixer_alog, %l22_mixer_dtb) beta(%l22_mixer_wb)
      out_gate(%l22_mixer_wgd, %l22_mixer_wgu) out_norm(%l22_mixer_on) out(%l22_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l22_h_mid = arith.addf %l21_h, %l22_mixer_out : tensor<?x?x2304xbf16>
  %l22_ffn_norm_w = moe.param "layers.22.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l22_ffn_in = moe.rms_norm %l22_h_mid, %l22_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l22_ffn_wr = moe.param "layers.22.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l22_ffn_rb = moe.param "layers.22.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l22_ffn_wg = moe.param "layers.22.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l22_ffn_wu = moe.param "layers.22.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l22_ffn_wd = moe.param "layers.22.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l22_ffn_sg = moe.param "layers.22.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l22_ffn_su = moe.param "layers.22.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l22_ffn_sd = moe.param "layers.22.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l22_ffn_out, %l22_ffn_load, %l22_ffn_next_bias = moe.moe_ffn %l22_ffn_in
      router(%l22_ffn_wr, %l22_ffn_rb) experts(%l22_ffn_wg, %l22_ffn_wu, %l22_ffn_wd)
      shared(%l22_ffn_sg, %l22_ffn_su, %l22_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l22_h = arith.addf %l22_h_mid, %l22_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 23: MLA mixer, MoE FFN ------------------------------------------
  %l23_mixer_norm_w = moe.param "layers.23.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l23_mixer_in = moe.rms_norm %l22_h, %l23_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l23_mixer_wq = moe.param "layers.23.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l23_mixer_wkvd = moe.param "layers.23.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l23_mixer_kvn = moe.param "layers.23.mixer.kv_norm"
      init <ones> no_weight_decay : tensor<512xbf16>
  %l23_mixer_wkvu = moe.param "layers.23.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l23_mixer_wo = moe.param "layers.23.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l23_mixer_out = moe.mla_layer %l23_mixer_in q(%l23_mixer_wq)
      kv(%l23_mixer_wkvd, %l23_mixer_kvn, %l23_mixer_wkvu) out(%l23_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l23_h_mid = arith.addf %l22_h, %l23_mixer_out : tensor<?x?x2304xbf16>
  %l23_ffn_norm_w = moe.param "layers.23.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l23_ffn_in = moe.rms_norm %l23_h_mid, %l23_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l23_ffn_wr = moe.param "layers.23.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l23_ffn_rb = moe.param "layers.23.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l23_ffn_wg = moe.param "layers.23.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l23_ffn_wu = moe.param "layers.23.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l23_ffn_wd = moe.param "layers.23.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l23_ffn_sg = moe.param "layers.23.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l23_ffn_su = moe.param "layers.23.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l23_ffn_sd = moe.param "layers.23.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l23_ffn_out, %l23_ffn_load, %l23_ffn_next_bias = moe.moe_ffn %l23_ffn_in
      router(%l23_ffn_wr, %l23_ffn_rb) experts(%l23_ffn_wg, %l23_ffn_wu, %l23_ffn_wd)
      shared(%l23_ffn_sg, %l23_ffn_su, %l23_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l23_h = arith.addf %l23_h_mid, %l23_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 24: KDA mixer, MoE FFN ------------------------------------------
  %l24_mixer_norm_w = moe.param "layers.24.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l24_mixer_in = moe.rms_norm %l23_h, %l24_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l24_mixer_wq = moe.param "layers.24.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l24_mixer_wk = moe.param "layers.24.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l24_mixer_wv = moe.param "layers.24.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l24_mixer_cq = moe.param "layers.24.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l24_mixer_ck = moe.param "layers.24.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l24_mixer_cv = moe.param "layers.24.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l24_mixer_wfd = moe.param "layers.24.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l24_mixer_wfu = moe.param "layers.24.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l24_mixer_alog = moe.param "layers.24.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l24_mixer_dtb = moe.param "layers.24.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l24_mixer_wb = moe.param "layers.24.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l24_mixer_wgd = moe.param "layers.24.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l24_mixer_wgu = moe.param "layers.24.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l24_mixer_on = moe.param "layers.24.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l24_mixer_wo = moe.param "layers.24.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l24_mixer_out = moe.kda_layer %l24_mixer_in
      q(%l24_mixer_wq) k(%l24_mixer_wk) v(%l24_mixer_wv)
      conv(%l24_mixer_cq, %l24_mixer_ck, %l24_mixer_cv)
      gate(%l24_mixer_wfd, %l24_mixer_wfu, %l24_mixer_alog, %l24_mixer_dtb) beta(%l24_mixer_wb)
      out_gate(%l24_mixer_wgd, %l24_mixer_wgu) out_norm(%l24_mixer_on) out(%l24_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l24_h_mid = arith.addf %l23_h, %l24_mixer_out : tensor<?x?x2304xbf16>
  %l24_ffn_norm_w = moe.param "layers.24.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l24_ffn_in = moe.rms_norm %l24_h_mid, %l24_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l24_ffn_wr = moe.param "layers.24.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l24_ffn_rb = moe.param "layers.24.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l24_ffn_wg = moe.param "layers.24.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l24_ffn_wu = moe.param "layers.24.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l24_ffn_wd = moe.param "layers.24.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l24_ffn_sg = moe.param "layers.24.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l24_ffn_su = moe.param "layers.24.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l24_ffn_sd = moe.param "layers.24.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l24_ffn_out, %l24_ffn_load, %l24_ffn_next_bias = moe.moe_ffn %l24_ffn_in
      router(%l24_ffn_wr, %l24_ffn_rb) experts(%l24_ffn_wg, %l24_ffn_wu, %l24_ffn_wd)
      shared(%l24_ffn_sg, %l24_ffn_su, %l24_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l24_h = arith.addf %l24_h_mid, %l24_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 25: KDA mixer, MoE FFN ------------------------------------------
  %l25_mixer_norm_w = moe.param "layers.25.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l25_mixer_in = moe.rms_norm %l24_h, %l25_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l25_mixer_wq = moe.param "layers.25.mixer.w_q" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l25_mixer_wk = moe.param "layers.25.mixer.w_k" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l25_mixer_wv = moe.param "layers.25.mixer.w_v" init <normal, std = 0.02> : tensor<2304x4096xbf16>
  %l25_mixer_cq = moe.param "layers.25.mixer.conv_q" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l25_mixer_ck = moe.param "layers.25.mixer.conv_k" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l25_mixer_cv = moe.param "layers.25.mixer.conv_v" init <normal, std = 0.02> : tensor<4096x4xbf16>
  %l25_mixer_wfd = moe.param "layers.25.mixer.w_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l25_mixer_wfu = moe.param "layers.25.mixer.w_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l25_mixer_alog = moe.param "layers.25.mixer.A_log"
      init <log_uniform, low = 1.0, high = 16.0> no_weight_decay : tensor<32xbf16>
  %l25_mixer_dtb = moe.param "layers.25.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay : tensor<32x128xbf16>
  %l25_mixer_wb = moe.param "layers.25.mixer.w_beta"
      init <normal, std = 0.02> : tensor<2304x32xbf16>
  %l25_mixer_wgd = moe.param "layers.25.mixer.w_out_gate_down"
      init <normal, std = 0.02> : tensor<2304x128xbf16>
  %l25_mixer_wgu = moe.param "layers.25.mixer.w_out_gate_up"
      init <normal, std = 0.02> : tensor<128x4096xbf16>
  %l25_mixer_on = moe.param "layers.25.mixer.out_norm"
      init <ones> no_weight_decay : tensor<128xbf16>
  %l25_mixer_wo = moe.param "layers.25.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l25_mixer_out = moe.kda_layer %l25_mixer_in
      q(%l25_mixer_wq) k(%l25_mixer_wk) v(%l25_mixer_wv)
      conv(%l25_mixer_cq, %l25_mixer_ck, %l25_mixer_cv)
      gate(%l25_mixer_wfd, %l25_mixer_wfu, %l25_mixer_alog, %l25_mixer_dtb) beta(%l25_mixer_wb)
      out_gate(%l25_mixer_wgd, %l25_mixer_wgu) out_norm(%l25_mixer_on) out(%l25_mixer_wo)
      {num_heads = 32 : i64, head_dim = 128 : i64, value_dim = 128 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x2304xbf16>, tensor<2304x4096xbf16>, tensor<2304x4096xbf16>,
         tensor<2304x4096xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>, tensor<4096x4xbf16>,
         tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<32xbf16>, tensor<32x128xbf16>,
         tensor<2304x32xbf16>, tensor<2304x128xbf16>, tensor<128x4096xbf16>, tensor<128xbf16>,
         tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l25_h_mid = arith.addf %l24_h, %l25_mixer_out : tensor<?x?x2304xbf16>
  %l25_ffn_norm_w = moe.param "layers.25.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l25_ffn_in = moe.rms_norm %l25_h_mid, %l25_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l25_ffn_wr = moe.param "layers.25.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l25_ffn_rb = moe.param "layers.25.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l25_ffn_wg = moe.param "layers.25.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l25_ffn_wu = moe.param "layers.25.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l25_ffn_wd = moe.param "layers.25.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l25_ffn_sg = moe.param "layers.25.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l25_ffn_su = moe.param "layers.25.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l25_ffn_sd = moe.param "layers.25.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l25_ffn_out, %l25_ffn_load, %l25_ffn_next_bias = moe.moe_ffn %l25_ffn_in
      router(%l25_ffn_wr, %l25_ffn_rb) experts(%l25_ffn_wg, %l25_ffn_wu, %l25_ffn_wd)
      shared(%l25_ffn_sg, %l25_ffn_su, %l25_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l25_h = arith.addf %l25_h_mid, %l25_ffn_out : tensor<?x?x2304xbf16>

  // --- layer 26: MLA mixer, MoE FFN ------------------------------------------
  %l26_mixer_norm_w = moe.param "layers.26.mixer_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l26_mixer_in = moe.rms_norm %l25_h, %l26_mixer_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l26_mixer_wq = moe.param "layers.26.mixer.w_q" init <normal, std = 0.02> : tensor<2304x6144xbf16>
  %l26_mixer_wkvd = moe.param "layers.26.mixer.w_kv_down"
      init <normal, std = 0.02> : tensor<2304x576xbf16>
  %l26_mixer_kvn = moe.param "layers.26.mixer.kv_norm"
      init <ones> no_weight_decay : tensor<512xbf16>
  %l26_mixer_wkvu = moe.param "layers.26.mixer.w_kv_up"
      init <normal, std = 0.02> : tensor<512x8192xbf16>
  %l26_mixer_wo = moe.param "layers.26.mixer.w_out"
      init <normal, std = 0.02> : tensor<4096x2304xbf16>
  %l26_mixer_out = moe.mla_layer %l26_mixer_in q(%l26_mixer_wq)
      kv(%l26_mixer_wkvd, %l26_mixer_kvn, %l26_mixer_wkvu) out(%l26_mixer_wo)
      {num_heads = 32 : i64, nope_head_dim = 128 : i64,
       rope_head_dim = 64 : i64, v_head_dim = 128 : i64}
      : (tensor<?x?x2304xbf16>, tensor<2304x6144xbf16>, tensor<2304x576xbf16>, tensor<512xbf16>,
         tensor<512x8192xbf16>, tensor<4096x2304xbf16>)
      -> tensor<?x?x2304xbf16>
  %l26_h_mid = arith.addf %l25_h, %l26_mixer_out : tensor<?x?x2304xbf16>
  %l26_ffn_norm_w = moe.param "layers.26.ffn_norm.weight"
      init <ones> no_weight_decay : tensor<2304xbf16>
  %l26_ffn_in = moe.rms_norm %l26_h_mid, %l26_ffn_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %l26_ffn_wr = moe.param "layers.26.ffn.w_router" init <normal, std = 0.02> : tensor<256x2304xbf16>
  %l26_ffn_rb = moe.param "layers.26.ffn.router_bias" init <zeros> buffer : tensor<256xf32>
  %l26_ffn_wg = moe.param "layers.26.ffn.w_gate"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l26_ffn_wu = moe.param "layers.26.ffn.w_up"
      init <normal, std = 0.02> : tensor<256x2304x1024xbf16>
  %l26_ffn_wd = moe.param "layers.26.ffn.w_down"
      init <normal, std = 0.02> : tensor<256x1024x2304xbf16>
  %l26_ffn_sg = moe.param "layers.26.ffn.w_shared_gate"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l26_ffn_su = moe.param "layers.26.ffn.w_shared_up"
      init <normal, std = 0.02> : tensor<2304x1024xbf16>
  %l26_ffn_sd = moe.param "layers.26.ffn.w_shared_down"
      init <normal, std = 0.02> : tensor<1024x2304xbf16>
  %l26_ffn_out, %l26_ffn_load, %l26_ffn_next_bias = moe.moe_ffn %l26_ffn_in
      router(%l26_ffn_wr, %l26_ffn_rb) experts(%l26_ffn_wg, %l26_ffn_wu, %l26_ffn_wd)
      shared(%l26_ffn_sg, %l26_ffn_su, %l26_ffn_sd)
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.446,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x2304xbf16>, tensor<256x2304xbf16>, tensor<256xf32>,
         tensor<256x2304x1024xbf16>, tensor<256x2304x1024xbf16>, tensor<256x1024x2304xbf16>,
         tensor<2304x1024xbf16>, tensor<2304x1024xbf16>, tensor<1024x2304xbf16>)
      -> (tensor<?x?x2304xbf16>, tensor<256xi64>, tensor<256xf32>)
  %l26_h = arith.addf %l26_h_mid, %l26_ffn_out : tensor<?x?x2304xbf16>

  // --- output: final norm and loss head --------------------------------------
  %final_norm_w = moe.param "final_norm.weight" init <ones> no_weight_decay : tensor<2304xbf16>
  %out = moe.rms_norm %l26_h, %final_norm_w : tensor<?x?x2304xbf16>, tensor<2304xbf16>
  %lm_head_w = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<163840x2304xbf16>
  %loss = moe.lm_head %out, %lm_head_w, %labels
      : (tensor<?x?x2304xbf16>, tensor<163840x2304xbf16>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
