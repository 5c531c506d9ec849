// A small model with the variants kimi-tiny does not use, for
// kimi-tiny-model-reference.test: a KDA layer with the softplus gate, the
// value-major state, K != V, chunks of 16 and its own norm_eps; a dense
// SiTU-GLU FFN; an MLA layer with q-LoRA, no output gate and its own
// norm_eps; a MoE FFN without a shared expert, under sign-bias balancing;
// RMSNorm and AttnRes epsilons other than the defaults; a loss with
// ignore_index = 3. Blocks of 2 sub-layers.

moe.model @variants(vocab_size = 64, hidden_size = 32) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %embed = moe.param "embed" init <normal, std = 0.02> : tensor<64x32xf32>
  %b0 = moe.embedding %tokens, %embed
      : tensor<?x?xi32>, tensor<64x32xf32> -> tensor<?x?x32xf32>

  // Sub-layer 0: [b0] -> KDA, softplus gate, value-major state.
  %q0 = moe.param "l0.res.query" init <zeros> no_weight_decay : tensor<32xf32>
  %k0 = moe.param "l0.res.key_norm" init <ones> no_weight_decay : tensor<32xf32>
  %m0 = moe.attn_res %b0 query(%q0) key_norm(%k0)
      {block_size = 2 : i64, sublayer = 0 : i64}
      : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %n0 = moe.param "l0.norm" init <ones> no_weight_decay : tensor<32xf32>
  %x0 = moe.rms_norm %m0, %n0 {epsilon = 1.0e-06 : f64} : tensor<?x?x32xf32>, tensor<32xf32>
  %wq = moe.param "l0.w_q" init <normal, std = 0.02> : tensor<32x32xf32>
  %wk = moe.param "l0.w_k" init <normal, std = 0.02> : tensor<32x32xf32>
  %wv = moe.param "l0.w_v" init <normal, std = 0.02> : tensor<32x16xf32>
  %cq = moe.param "l0.conv_q" init <normal, std = 0.02> : tensor<32x4xf32>
  %ck = moe.param "l0.conv_k" init <normal, std = 0.02> : tensor<32x4xf32>
  %cv = moe.param "l0.conv_v" init <normal, std = 0.02> : tensor<16x4xf32>
  %wfd = moe.param "l0.w_gate_down" init <normal, std = 0.02> : tensor<32x8xf32>
  %wfu = moe.param "l0.w_gate_up" init <normal, std = 0.02> : tensor<8x32xf32>
  %alog = moe.param "l0.A_log" init <zeros> no_weight_decay : tensor<2xf32>
  %dtb = moe.param "l0.dt_bias" init <inverse_softplus_dt, low = 0.001, high = 0.1>
      no_weight_decay : tensor<2x16xf32>
  %wb = moe.param "l0.w_beta" init <normal, std = 0.02> : tensor<32x2xf32>
  %wgd = moe.param "l0.w_out_gate_down" init <normal, std = 0.02> : tensor<32x8xf32>
  %wgu = moe.param "l0.w_out_gate_up" init <normal, std = 0.02> : tensor<8x16xf32>
  %on = moe.param "l0.out_norm" init <ones> no_weight_decay : tensor<8xf32>
  %wo = moe.param "l0.w_out" init <normal, std = 0.02> : tensor<16x32xf32>
  %f0 = moe.kda_layer %x0 q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb)
      out_gate(%wgd, %wgu) out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 16 : i64, value_dim = 8 : i64,
       gate = #moe.decay_gate<softplus>, chunk_size = 16 : i64,
       state_layout = #moe.state_layout<value_major>, norm_eps = 1.0e-04 : f64}
      : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x16xf32>,
         tensor<32x4xf32>, tensor<32x4xf32>, tensor<16x4xf32>, tensor<32x8xf32>,
         tensor<8x32xf32>, tensor<2xf32>, tensor<2x16xf32>, tensor<32x2xf32>,
         tensor<32x8xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<16x32xf32>)
      -> tensor<?x?x32xf32>

  // Sub-layer 1: [b0, f0] -> dense SiTU-GLU FFN.
  %q1 = moe.param "l1.res.query" init <zeros> no_weight_decay : tensor<32xf32>
  %k1 = moe.param "l1.res.key_norm" init <ones> no_weight_decay : tensor<32xf32>
  %m1 = moe.attn_res %b0, %f0 query(%q1) key_norm(%k1)
      {block_size = 2 : i64, sublayer = 1 : i64, epsilon = 1.0e-03 : f64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>)
      -> tensor<?x?x32xf32>
  %n1 = moe.param "l1.norm" init <ones> no_weight_decay : tensor<32xf32>
  %x1 = moe.rms_norm %m1, %n1 : tensor<?x?x32xf32>, tensor<32xf32>
  %g1 = moe.param "l1.w_gate" init <normal, std = 0.02> : tensor<32x24xf32>
  %u1 = moe.param "l1.w_up" init <normal, std = 0.02> : tensor<32x24xf32>
  %d1 = moe.param "l1.w_down" init <normal, std = 0.02> : tensor<24x32xf32>
  %f1 = moe.glu_ffn %x1, %g1, %u1, %d1
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x?x32xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<24x32xf32>
  %b1 = arith.addf %f0, %f1 : tensor<?x?x32xf32>

  // Sub-layer 2: [b0, b1] -> MLA with q-LoRA and no gate.
  %q2 = moe.param "l2.res.query" init <zeros> no_weight_decay : tensor<32xf32>
  %k2 = moe.param "l2.res.key_norm" init <ones> no_weight_decay : tensor<32xf32>
  %m2 = moe.attn_res %b0, %b1 query(%q2) key_norm(%k2)
      {block_size = 2 : i64, sublayer = 2 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>)
      -> tensor<?x?x32xf32>
  %n2 = moe.param "l2.norm" init <ones> no_weight_decay : tensor<32xf32>
  %x2 = moe.rms_norm %m2, %n2 : tensor<?x?x32xf32>, tensor<32xf32>
  %wqd = moe.param "l2.w_q_down" init <normal, std = 0.02> : tensor<32x12xf32>
  %qn = moe.param "l2.q_norm" init <ones> no_weight_decay : tensor<12xf32>
  %wqu = moe.param "l2.w_q_up" init <normal, std = 0.02> : tensor<12x48xf32>
  %wkvd = moe.param "l2.w_kv_down" init <normal, std = 0.02> : tensor<32x24xf32>
  %kvn = moe.param "l2.kv_norm" init <ones> no_weight_decay : tensor<16xf32>
  %wkvu = moe.param "l2.w_kv_up" init <normal, std = 0.02> : tensor<16x72xf32>
  %wo2 = moe.param "l2.w_out" init <normal, std = 0.02> : tensor<40x32xf32>
  %f2 = moe.mla_layer %x2 q_lora(%wqd, %qn, %wqu) kv(%wkvd, %kvn, %wkvu) out(%wo2)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 20 : i64, norm_eps = 1.0e-05 : f64}
      : (tensor<?x?x32xf32>, tensor<32x12xf32>, tensor<12xf32>, tensor<12x48xf32>,
         tensor<32x24xf32>, tensor<16xf32>, tensor<16x72xf32>, tensor<40x32xf32>)
      -> tensor<?x?x32xf32>

  // Sub-layer 3: [b0, b1, f2] -> MoE FFN, 4 experts, top-2, no shared expert.
  %q3 = moe.param "l3.res.query" init <zeros> no_weight_decay : tensor<32xf32>
  %k3 = moe.param "l3.res.key_norm" init <ones> no_weight_decay : tensor<32xf32>
  %m3 = moe.attn_res %b0, %b1, %f2 query(%q3) key_norm(%k3)
      {block_size = 2 : i64, sublayer = 3 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>,
         tensor<32xf32>) -> tensor<?x?x32xf32>
  %n3 = moe.param "l3.norm" init <ones> no_weight_decay : tensor<32xf32>
  %x3 = moe.rms_norm %m3, %n3 : tensor<?x?x32xf32>, tensor<32xf32>
  %wr = moe.param "l3.w_router" init <normal, std = 0.02> : tensor<4x32xf32>
  %rb = moe.param "l3.router_bias" init <zeros> buffer : tensor<4xf32>
  %eg = moe.param "l3.w_gate" init <normal, std = 0.02> : tensor<4x32x16xf32>
  %eu = moe.param "l3.w_up" init <normal, std = 0.02> : tensor<4x32x16xf32>
  %ed = moe.param "l3.w_down" init <normal, std = 0.02> : tensor<4x16x32xf32>
  %f3, %load, %bias = moe.moe_ffn %x3 router(%wr, %rb) experts(%eg, %eu, %ed)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x32xf32>, tensor<4x32xf32>, tensor<4xf32>, tensor<4x32x16xf32>,
         tensor<4x32x16xf32>, tensor<4x16x32xf32>)
      -> (tensor<?x?x32xf32>, tensor<4xi64>, tensor<4xf32>)
  %b2 = arith.addf %f2, %f3 : tensor<?x?x32xf32>

  // Output: [b0, b1, b2].
  %qf = moe.param "final.res.query" init <zeros> no_weight_decay : tensor<32xf32>
  %kf = moe.param "final.res.key_norm" init <ones> no_weight_decay : tensor<32xf32>
  %mf = moe.attn_res %b0, %b1, %b2 query(%qf) key_norm(%kf)
      {block_size = 2 : i64, sublayer = 4 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>,
         tensor<32xf32>) -> tensor<?x?x32xf32>
  %nf = moe.param "final.norm" init <ones> no_weight_decay : tensor<32xf32>
  %out = moe.rms_norm %mf, %nf : tensor<?x?x32xf32>, tensor<32xf32>
  %head = moe.param "lm_head" init <normal, std = 0.02> : tensor<64x32xf32>
  %loss = moe.lm_head %out, %head, %labels {ignore_index = 3 : i64}
      : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
