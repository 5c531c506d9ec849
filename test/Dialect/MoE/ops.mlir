// RUN: moe-opt %s | moe-opt | FileCheck %s
// RUN: moe-opt %s --mlir-print-op-generic | moe-opt | FileCheck %s

// Round trip of every moe op in every form its assembly format has: custom
// form to custom form, and generic form back to custom form. Attributes that
// equal their default are elided when printed.

//===----------------------------------------------------------------------===//
// Structure: model, param, return (with embedding, rms_norm and lm_head)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: moe.model @tiny(vocab_size = 256, hidden_size = 64) {
// CHECK-NEXT:  ^bb0(%[[TOKENS:[^:]+]]: tensor<?x?xi32>, %[[LABELS:[^:]+]]: tensor<?x?xi32>):
// CHECK-NEXT:    %[[TABLE:.+]] = moe.param "embed" init <normal, std = 2.000000e-02> : tensor<256x64xf32>
// CHECK-NEXT:    %[[NORM:.+]] = moe.param "final_norm" init <ones> no_weight_decay : tensor<64xf32>
// CHECK-NEXT:    %[[BIAS:.+]] = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<8xf32>
// CHECK-NEXT:    %[[ALOG:.+]] = moe.param "layers.0.mixer.A_log" init <log_uniform, low = 1.000000e+00, high = 1.600000e+01> no_weight_decay buffer : tensor<4xf32>
// CHECK-NEXT:    %[[DTB:.+]] = moe.param "layers.0.mixer.dt_bias" init <inverse_softplus_dt, low = 1.000000e-03, high = 1.000000e-01> no_weight_decay : tensor<4x16xf32>
// CHECK-NEXT:    %[[HEAD:.+]] = moe.param "lm_head" init <normal, std = 2.000000e-02> : tensor<256x64xf32>
// CHECK-NEXT:    %[[H:.+]] = moe.embedding %[[TOKENS]], %[[TABLE]] : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
// CHECK-NEXT:    %[[N:.+]] = moe.rms_norm %[[H]], %[[NORM]] : tensor<?x?x64xf32>, tensor<64xf32>
// CHECK-NEXT:    %[[LOSS:.+]] = moe.lm_head %[[N]], %[[HEAD]], %[[LABELS]] : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK-NEXT:    moe.return %[[LOSS]] : tensor<f32>
// CHECK-NEXT:  }
moe.model @tiny(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<256x64xf32>
  %norm = moe.param "final_norm" init <ones> no_weight_decay : tensor<64xf32>
  %bias = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<8xf32>
  %alog = moe.param "layers.0.mixer.A_log" init <log_uniform, low = 1.0, high = 16.0>
      no_weight_decay buffer : tensor<4xf32>
  %dtb = moe.param "layers.0.mixer.dt_bias"
      init <inverse_softplus_dt, low = 0.001, high = 0.1> no_weight_decay
      : tensor<4x16xf32>
  %head = moe.param "lm_head" init <normal, std = 0.02> : tensor<256x64xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  %n = moe.rms_norm %h, %norm : tensor<?x?x64xf32>, tensor<64xf32>
  %loss = moe.lm_head %n, %head, %labels
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// A model with static batch and sequence, 64-bit token ids, attributes on
// the model and a bf16 embedding table.
// CHECK-LABEL: moe.model @static_bf16(vocab_size = 128, hidden_size = 32) attributes {moe.note = "static"} {
// CHECK-NEXT:  ^bb0(%[[TOKENS:[^:]+]]: tensor<2x16xi64>, %[[LABELS:[^:]+]]: tensor<2x16xi64>):
// CHECK:         %[[H:.+]] = moe.embedding %[[TOKENS]], %{{.+}} : tensor<2x16xi64>, tensor<128x32xbf16> -> tensor<2x16x32xbf16>
// CHECK:         %[[N:.+]] = moe.rms_norm %[[H]], %{{.+}} {epsilon = 2.000000e-06 : f64} : tensor<2x16x32xbf16>, tensor<32xbf16>
// CHECK:         %[[LOSS:.+]] = moe.lm_head %[[N]], %{{.+}}, %[[LABELS]] {ignore_index = -1 : i64} : (tensor<2x16x32xbf16>, tensor<128x32xbf16>, tensor<2x16xi64>) -> tensor<f32>
// CHECK-NEXT:    moe.return %[[LOSS]] : tensor<f32>
moe.model @static_bf16(vocab_size = 128, hidden_size = 32)
    attributes {moe.note = "static"} {
^bb0(%tokens: tensor<2x16xi64>, %labels: tensor<2x16xi64>):
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<128x32xbf16>
  %norm = moe.param "final_norm" init <ones> no_weight_decay : tensor<32xbf16>
  %head = moe.param "lm_head" init <normal, std = 0.02> : tensor<128x32xbf16>
  %h = moe.embedding %tokens, %table
      : tensor<2x16xi64>, tensor<128x32xbf16> -> tensor<2x16x32xbf16>
  %n = moe.rms_norm %h, %norm {epsilon = 2.0e-06 : f64}
      : tensor<2x16x32xbf16>, tensor<32xbf16>
  %loss = moe.lm_head %n, %head, %labels {ignore_index = -1 : i64}
      : (tensor<2x16x32xbf16>, tensor<128x32xbf16>, tensor<2x16xi64>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Layer ops
//===----------------------------------------------------------------------===//

// moe.param is not tied to a model; the embedding takes ids of any rank.
// CHECK-LABEL: func.func @param_embedding
// CHECK-SAME:    (%[[IDS:[^:]+]]: tensor<?xi32>)
// CHECK:         %[[TABLE:.+]] = moe.param "table" init <normal, std = 1.000000e+00> no_weight_decay buffer : tensor<256x64xf16>
// CHECK:         %[[E:.+]] = moe.embedding %[[IDS]], %[[TABLE]] : tensor<?xi32>, tensor<256x64xf16> -> tensor<?x64xf16>
// CHECK:         return %[[E]]
func.func @param_embedding(%ids: tensor<?xi32>) -> tensor<?x64xf16> {
  %table = moe.param "table" init <normal, std = 1.0> no_weight_decay buffer
      : tensor<256x64xf16>
  %e = moe.embedding %ids, %table : tensor<?xi32>, tensor<256x64xf16> -> tensor<?x64xf16>
  return %e : tensor<?x64xf16>
}

// H = 4, K = 16, V = 8 on d = 64: W_q, W_k: [64, 64], W_v: [64, 32].
// CHECK-LABEL: func.func @kda_layer
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x64xf32>, %[[WQ:[^:]+]]: tensor<64x64xf32>, %[[WK:[^:]+]]: tensor<64x64xf32>, %[[WV:[^:]+]]: tensor<64x32xf32>,
// CHECK-SAME:     %[[CQ:[^:]+]]: tensor<64x4xf32>, %[[CK:[^:]+]]: tensor<64x4xf32>, %[[CV:[^:]+]]: tensor<32x4xf32>,
// CHECK-SAME:     %[[WFD:[^:]+]]: tensor<64x16xf32>, %[[WFU:[^:]+]]: tensor<16x64xf32>, %[[ALOG:[^:]+]]: tensor<4xf32>, %[[DTB:[^:]+]]: tensor<4x16xf32>,
// CHECK-SAME:     %[[WB:[^:]+]]: tensor<64x4xf32>, %[[WGD:[^:]+]]: tensor<64x16xf32>, %[[WGU:[^:]+]]: tensor<16x32xf32>, %[[ON:[^:]+]]: tensor<8xf32>, %[[WO:[^:]+]]: tensor<32x64xf32>)
// CHECK:         %[[B:.+]] = moe.kda_layer %[[X]] q(%[[WQ]]) k(%[[WK]]) v(%[[WV]]) conv(%[[CQ]], %[[CK]], %[[CV]]) gate(%[[WFD]], %[[WFU]], %[[ALOG]], %[[DTB]]) beta(%[[WB]]) out_gate(%[[WGD]], %[[WGU]]) out_norm(%[[ON]]) out(%[[WO]])
// CHECK-SAME:      {gate = #moe.decay_gate<bounded, g_min = -5.000000e+00>, head_dim = 16 : i64, num_heads = 4 : i64, value_dim = 8 : i64}
// CHECK-SAME:      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<64x4xf32>, tensor<32x4xf32>, tensor<64x16xf32>, tensor<16x64xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<64x4xf32>, tensor<64x16xf32>, tensor<16x32xf32>, tensor<8xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
// CHECK:         %[[S:.+]] = moe.kda_layer %[[X]] q(%[[WQ]]) k(%[[WK]]) v(%[[WV]]) conv(%[[CQ]], %[[CK]], %[[CV]]) gate(%[[WFD]], %[[WFU]], %[[ALOG]], %[[DTB]]) beta(%[[WB]]) out_gate(%[[WGD]], %[[WGU]]) out_norm(%[[ON]]) out(%[[WO]])
// CHECK-SAME:      {chunk_size = 32 : i64, gate = #moe.decay_gate<softplus>, head_dim = 16 : i64, norm_eps = 5.000000e-06 : f64, num_heads = 4 : i64, state_layout = #moe.state_layout<value_major>, value_dim = 8 : i64}
// CHECK-SAME:      -> tensor<?x?x64xf32>
// CHECK:         return %[[B]], %[[S]]
func.func @kda_layer(%x: tensor<?x?x64xf32>,
    %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x32xf32>,
    %cq: tensor<64x4xf32>, %ck: tensor<64x4xf32>, %cv: tensor<32x4xf32>,
    %wfd: tensor<64x16xf32>, %wfu: tensor<16x64xf32>, %alog: tensor<4xf32>,
    %dtb: tensor<4x16xf32>, %wb: tensor<64x4xf32>, %wgd: tensor<64x16xf32>,
    %wgu: tensor<16x32xf32>, %on: tensor<8xf32>, %wo: tensor<32x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %bounded = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 4 : i64, head_dim = 16 : i64, value_dim = 8 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>,
       chunk_size = 64 : i64, state_layout = #moe.state_layout<key_major>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64x32xf32>, tensor<64x4xf32>, tensor<64x4xf32>, tensor<32x4xf32>,
         tensor<64x16xf32>, tensor<16x64xf32>, tensor<4xf32>, tensor<4x16xf32>,
         tensor<64x4xf32>, tensor<64x16xf32>, tensor<16x32xf32>, tensor<8xf32>,
         tensor<32x64xf32>) -> tensor<?x?x64xf32>
  %softplus = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 4 : i64, head_dim = 16 : i64, value_dim = 8 : i64,
       gate = #moe.decay_gate<softplus>, chunk_size = 32 : i64,
       state_layout = #moe.state_layout<value_major>, norm_eps = 5.0e-06 : f64}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
         tensor<64x32xf32>, tensor<64x4xf32>, tensor<64x4xf32>, tensor<32x4xf32>,
         tensor<64x16xf32>, tensor<16x64xf32>, tensor<4xf32>, tensor<4x16xf32>,
         tensor<64x4xf32>, tensor<64x16xf32>, tensor<16x32xf32>, tensor<8xf32>,
         tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %bounded, %softplus : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// H = 2, nope = 16, rope = 8, v = 16 on d = 64: d_qk = 24, so W_q: [64, 48];
// W_kv_down: [64, 32 + 8], W_kv_up: [32, 2 * (16 + 16)].
// CHECK-LABEL: func.func @mla_layer
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x?x64xbf16>, %[[WQ:[^:]+]]: tensor<64x48xbf16>, %[[WQD:[^:]+]]: tensor<64x24xbf16>, %[[QN:[^:]+]]: tensor<24xbf16>, %[[WQU:[^:]+]]: tensor<24x48xbf16>,
// CHECK-SAME:     %[[WKVD:[^:]+]]: tensor<64x40xbf16>, %[[KVN:[^:]+]]: tensor<32xbf16>, %[[WKVU:[^:]+]]: tensor<32x64xbf16>, %[[WG:[^:]+]]: tensor<64x32xbf16>, %[[WO:[^:]+]]: tensor<32x64xbf16>,
// CHECK-SAME:     %[[WQU_NOPE:[^:]+]]: tensor<24x32xbf16>, %[[WKVD_NOPE:[^:]+]]: tensor<64x32xbf16>)
// CHECK:         moe.mla_layer %[[X]] q(%[[WQ]]) kv(%[[WKVD]], %[[KVN]], %[[WKVU]]) gate(%[[WG]]) out(%[[WO]])
// CHECK-SAME:      {nope_head_dim = 16 : i64, num_heads = 2 : i64, rope_head_dim = 8 : i64, v_head_dim = 16 : i64}
// CHECK-SAME:      : (tensor<2x?x64xbf16>, tensor<64x48xbf16>, tensor<64x40xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
// CHECK:         moe.mla_layer %[[X]] q(%[[WQ]]) kv(%[[WKVD]], %[[KVN]], %[[WKVU]]) out(%[[WO]])
// CHECK-SAME:      {nope_head_dim = 16 : i64, num_heads = 2 : i64, rope_head_dim = 8 : i64, v_head_dim = 16 : i64}
// CHECK-SAME:      : (tensor<2x?x64xbf16>, tensor<64x48xbf16>, tensor<64x40xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
// CHECK:         moe.mla_layer %[[X]] q_lora(%[[WQD]], %[[QN]], %[[WQU]]) kv(%[[WKVD]], %[[KVN]], %[[WKVU]]) gate(%[[WG]]) out(%[[WO]])
// CHECK-SAME:      {nope_head_dim = 16 : i64, norm_eps = 1.000000e-05 : f64, num_heads = 2 : i64, rope_head_dim = 8 : i64, v_head_dim = 16 : i64}
// CHECK-SAME:      : (tensor<2x?x64xbf16>, tensor<64x24xbf16>, tensor<24xbf16>, tensor<24x48xbf16>, tensor<64x40xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
// CHECK:         moe.mla_layer %[[X]] q_lora(%[[WQD]], %[[QN]], %[[WQU_NOPE]]) kv(%[[WKVD_NOPE]], %[[KVN]], %[[WKVU]]) out(%[[WO]])
// CHECK-SAME:      {nope_head_dim = 16 : i64, num_heads = 2 : i64, rope_head_dim = 0 : i64, v_head_dim = 16 : i64}
// CHECK-SAME:      : (tensor<2x?x64xbf16>, tensor<64x24xbf16>, tensor<24xbf16>, tensor<24x32xbf16>, tensor<64x32xbf16>, tensor<32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
func.func @mla_layer(%x: tensor<2x?x64xbf16>, %wq: tensor<64x48xbf16>,
    %wqd: tensor<64x24xbf16>, %qn: tensor<24xbf16>, %wqu: tensor<24x48xbf16>,
    %wkvd: tensor<64x40xbf16>, %kvn: tensor<32xbf16>, %wkvu: tensor<32x64xbf16>,
    %wg: tensor<64x32xbf16>, %wo: tensor<32x64xbf16>,
    %wqu_nope: tensor<24x32xbf16>, %wkvd_nope: tensor<64x32xbf16>) {
  %q_gate = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 16 : i64}
      : (tensor<2x?x64xbf16>, tensor<64x48xbf16>, tensor<64x40xbf16>,
         tensor<32xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>,
         tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
  %q = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 16 : i64}
      : (tensor<2x?x64xbf16>, tensor<64x48xbf16>, tensor<64x40xbf16>,
         tensor<32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>)
      -> tensor<2x?x64xbf16>
  %lora_gate = moe.mla_layer %x q_lora(%wqd, %qn, %wqu)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 16 : i64, norm_eps = 1.0e-05 : f64}
      : (tensor<2x?x64xbf16>, tensor<64x24xbf16>, tensor<24xbf16>,
         tensor<24x48xbf16>, tensor<64x40xbf16>, tensor<32xbf16>,
         tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>)
      -> tensor<2x?x64xbf16>
  // rope_head_dim = 0: W_kv_down holds only the latent.
  %lora = moe.mla_layer %x q_lora(%wqd, %qn, %wqu_nope)
      kv(%wkvd_nope, %kvn, %wkvu) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 0 : i64,
       v_head_dim = 16 : i64}
      : (tensor<2x?x64xbf16>, tensor<64x24xbf16>, tensor<24xbf16>,
         tensor<24x32xbf16>, tensor<64x32xbf16>, tensor<32xbf16>,
         tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<2x?x64xbf16>
  return
}

// E = 8, k = 2, F = 32 on d = 64; the shared expert has width 48.
// CHECK-LABEL: func.func @moe_ffn
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x64xf32>, %[[WR:[^:]+]]: tensor<8x64xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[WG:[^:]+]]: tensor<8x64x32xf32>, %[[WU:[^:]+]]: tensor<8x64x32xf32>, %[[WD:[^:]+]]: tensor<8x32x64xf32>,
// CHECK-SAME:     %[[SG:[^:]+]]: tensor<64x48xf32>, %[[SU:[^:]+]]: tensor<64x48xf32>, %[[SD:[^:]+]]: tensor<48x64xf32>)
// CHECK:         %[[Y:[^,]+]], %[[LOAD:[^,]+]], %[[NB:[^ ]+]] = moe.moe_ffn %[[X]] router(%[[WR]], %[[B]]) experts(%[[WG]], %[[WU]], %[[WD]]) shared(%[[SG]], %[[SU]], %[[SD]])
// CHECK-SAME:      {activation = #moe.activation<swiglu>, routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.500000e+00, balance = #moe.quantile_balance<exact>>}
// CHECK-SAME:      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<48x64xf32>) -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
// CHECK:         %[[Y2:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = moe.moe_ffn %[[X]] router(%[[WR]], %[[B]]) experts(%[[WG]], %[[WU]], %[[WD]]) {
// CHECK-SAME:      activation = #moe.activation<situ_glu, gate_beta = 4.000000e+00, up_beta = 2.500000e+01>, routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.000000e+00, balance = #moe.sign_bias<rate = 1.000000e-03>>}
// CHECK-SAME:      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
// CHECK:         return %[[Y]], %[[LOAD]], %[[NB]], %[[Y2]]
func.func @moe_ffn(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>,
    %b: tensor<8xf32>, %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x32x64xf32>, %sg: tensor<64x48xf32>, %su: tensor<64x48xf32>,
    %sd: tensor<48x64xf32>)
    -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>, tensor<?x64xf32>) {
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>,
         tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>,
         tensor<64x48xf32>, tensor<64x48xf32>, tensor<48x64xf32>)
      -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
  %y2, %load2, %nb2 = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-03>>,
       activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>,
         tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>)
      -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %nb, %y2
      : tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func.func @glu_ffn
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x64xf32>, %[[WG:[^:]+]]: tensor<64x128xf32>, %[[WU:[^:]+]]: tensor<64x128xf32>, %[[WD:[^:]+]]: tensor<128x64xf32>)
// CHECK:         %[[Y:.+]] = moe.glu_ffn %[[X]], %[[WG]], %[[WU]], %[[WD]] {activation = #moe.activation<swiglu>} : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>
// CHECK:         %[[Z:.+]] = moe.glu_ffn %[[Y]], %[[WG]], %[[WU]], %[[WD]] {activation = #moe.activation<situ_glu, gate_beta = 2.000000e+00>} : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>
// CHECK:         return %[[Z]]
func.func @glu_ffn(%x: tensor<?x?x64xf32>, %wg: tensor<64x128xf32>,
    %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
        tensor<128x64xf32>
  %z = moe.glu_ffn %y, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 2.0>}
      : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>,
        tensor<128x64xf32>
  return %z : tensor<?x?x64xf32>
}

// Sub-layer 0 reads b_0 only; sub-layer 5 with block_size 4 reads b_0, b_1
// and the partial sum; sub-layer 4 (a block boundary) reads b_0 and b_1.
// CHECK-LABEL: func.func @attn_res
// CHECK-SAME:    (%[[B0:[^:]+]]: tensor<?x?x64xf32>, %[[B1:[^:]+]]: tensor<?x?x64xf32>, %[[P:[^:]+]]: tensor<?x?x64xf32>, %[[W:[^:]+]]: tensor<64xf32>, %[[RHO:[^:]+]]: tensor<64xf32>)
// CHECK:         moe.attn_res %[[B0]] query(%[[W]]) key_norm(%[[RHO]]) {block_size = 4 : i64, sublayer = 0 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK:         moe.attn_res %[[B0]], %[[B1]], %[[P]] query(%[[W]]) key_norm(%[[RHO]]) {block_size = 4 : i64, epsilon = 2.000000e-06 : f64, sublayer = 5 : i64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK:         moe.attn_res %[[B0]], %[[B1]] query(%[[W]]) key_norm(%[[RHO]]) {block_size = 4 : i64, sublayer = 4 : i64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
func.func @attn_res(%b0: tensor<?x?x64xf32>, %b1: tensor<?x?x64xf32>,
    %partial: tensor<?x?x64xf32>, %w: tensor<64xf32>, %rho: tensor<64xf32>) {
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho)
      {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %1 = moe.attn_res %b0, %b1, %partial query(%w) key_norm(%rho)
      {block_size = 4 : i64, sublayer = 5 : i64, epsilon = 2.0e-06 : f64}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
         tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = moe.attn_res %b0, %b1 query(%w) key_norm(%rho)
      {block_size = 4 : i64, sublayer = 4 : i64}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>,
         tensor<64xf32>) -> tensor<?x?x64xf32>
  return
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @decay_gate
// CHECK-SAME:    (%[[Z:[^:]+]]: tensor<?x?x4x16xbf16>, %[[DTB:[^:]+]]: tensor<4x16xf32>, %[[ALOG:[^:]+]]: tensor<4xf32>)
// CHECK:         moe.decay_gate <bounded, g_min = -5.000000e+00> %[[Z]], %[[DTB]], %[[ALOG]] : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
// CHECK:         moe.decay_gate <bounded, g_min = -5.000000e+00> %[[Z]], %[[DTB]] : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
// CHECK:         moe.decay_gate <softplus> %[[Z]], %[[DTB]], %[[ALOG]] : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
func.func @decay_gate(%z: tensor<?x?x4x16xbf16>, %dtb: tensor<4x16xf32>,
    %alog: tensor<4xf32>) {
  %0 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb, %alog
      : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
      -> tensor<?x?x4x16xf32>
  %1 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb
      : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
  %2 = moe.decay_gate <softplus> %z, %dtb, %alog
      : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
      -> tensor<?x?x4x16xf32>
  return
}

// H = 4, K = 16, V = 8; key_major states are [B, H, K, V], value_major ones
// [B, H, V, K].
// CHECK-LABEL: func.func @kda
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<?x?x4x16xbf16>, %[[K:[^:]+]]: tensor<?x?x4x16xbf16>, %[[V:[^:]+]]: tensor<?x?x4x8xbf16>, %[[G:[^:]+]]: tensor<?x?x4x16xf32>, %[[BETA:[^:]+]]: tensor<?x?x4xbf16>,
// CHECK-SAME:     %[[SK:[^:]+]]: tensor<?x4x16x8xf32>, %[[SV:[^:]+]]: tensor<?x4x8x16xf32>)
// CHECK:         moe.kda %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>)
// CHECK:         moe.kda %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[SK]]) {scale = 1.250000e-01 : f64} : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>, tensor<?x4x16x8xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>)
// CHECK:         moe.kda %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[SV]]) {state_layout = #moe.state_layout<value_major>} : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>, tensor<?x4x8x16xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x16xf32>)
// CHECK:         moe.kda %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] {scale = 2.500000e-01 : f64, state_layout = #moe.state_layout<value_major>} : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x16xf32>)
func.func @kda(%q: tensor<?x?x4x16xbf16>, %k: tensor<?x?x4x16xbf16>,
    %v: tensor<?x?x4x8xbf16>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xbf16>, %s_key: tensor<?x4x16x8xf32>,
    %s_value: tensor<?x4x8x16xf32>) {
  %o0, %f0 = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>)
  %o1, %f1 = moe.kda %q, %k, %v, %g, %beta initial_state(%s_key)
      {scale = 0.125 : f64, state_layout = #moe.state_layout<key_major>}
      : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>, tensor<?x4x16x8xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>)
  %o2, %f2 = moe.kda %q, %k, %v, %g, %beta initial_state(%s_value)
      {state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>, tensor<?x4x8x16xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x16xf32>)
  %o3, %f3 = moe.kda %q, %k, %v, %g, %beta
      {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x4x16xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4x8xbf16>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xbf16>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x16xf32>)
  return
}

// CHECK-LABEL: func.func @l2_norm
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x4x16xf32>)
// CHECK:         %[[A:.+]] = moe.l2_norm %[[X]] : tensor<?x?x4x16xf32>
// CHECK:         %[[B:.+]] = moe.l2_norm %[[A]] {epsilon = 1.000000e-05 : f64} : tensor<?x?x4x16xf32>
// CHECK:         return %[[B]]
func.func @l2_norm(%x: tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32> {
  %a = moe.l2_norm %x : tensor<?x?x4x16xf32>
  %b = moe.l2_norm %a {epsilon = 1.0e-05 : f64} : tensor<?x?x4x16xf32>
  return %b : tensor<?x?x4x16xf32>
}

// CHECK-LABEL: func.func @short_conv
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x?x64xf32>, %[[W:[^:]+]]: tensor<64x4xf32>)
// CHECK:         %[[A:.+]] = moe.short_conv %[[X]], %[[W]] : tensor<?x?x64xf32>, tensor<64x4xf32>
// CHECK:         %[[B:.+]] = moe.short_conv %[[A]], %[[W]] {silu} : tensor<?x?x64xf32>, tensor<64x4xf32>
// CHECK:         return %[[B]]
func.func @short_conv(%x: tensor<?x?x64xf32>, %w: tensor<64x4xf32>)
    -> tensor<?x?x64xf32> {
  %a = moe.short_conv %x, %w : tensor<?x?x64xf32>, tensor<64x4xf32>
  %b = moe.short_conv %a, %w {silu} : tensor<?x?x64xf32>, tensor<64x4xf32>
  return %b : tensor<?x?x64xf32>
}

// D_qk = 24 and D_v = 16 differ; lse is [B, H, T].
// CHECK-LABEL: func.func @mla_attention
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<?x?x2x24xf32>, %[[K:[^:]+]]: tensor<?x?x2x24xf32>, %[[V:[^:]+]]: tensor<?x?x2x16xf32>, %[[G:[^:]+]]: tensor<?x?x2x16xf32>)
// CHECK:         %[[O:[^,]+]], %[[LSE:[^ ]+]] = moe.mla_attention %[[Q]], %[[K]], %[[V]] gate(%[[G]]) : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
// CHECK:         %[[O2:[^,]+]], %{{[^ ]+}} = moe.mla_attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64} : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
// CHECK:         return %[[O]], %[[LSE]], %[[O2]]
func.func @mla_attention(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2x16xf32>)
    -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>, tensor<?x?x2x16xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x16xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  %o2, %lse2 = moe.mla_attention %q, %k, %v {scale = 0.25 : f64}
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return %o, %lse, %o2
      : tensor<?x?x2x16xf32>, tensor<?x2x?xf32>, tensor<?x?x2x16xf32>
}

// The MoE FFN in primitives: route, dispatch, grouped experts, combine.
// CHECK-LABEL: func.func @route_dispatch_combine
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<?x64xf32>, %[[WR:[^:]+]]: tensor<8x64xf32>, %[[B:[^:]+]]: tensor<8xf32>, %[[WG:[^:]+]]: tensor<8x64x32xf32>, %[[WU:[^:]+]]: tensor<8x64x32xf32>, %[[WD:[^:]+]]: tensor<8x32x64xf32>)
// CHECK:         %[[W:[^,]+]], %[[IDX:[^,]+]], %[[LOAD:[^,]+]], %[[NB:[^ ]+]] = moe.route %[[X]], %[[WR]], %[[B]]
// CHECK-SAME:      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.500000e+00, balance = #moe.quantile_balance<histogram, bins = 256>>}
// CHECK-SAME:      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
// CHECK:         %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} = moe.route %[[X]], %[[WR]], %[[B]]
// CHECK-SAME:      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.000000e+00, balance = #moe.sign_bias<rate = 1.000000e-03>>}
// CHECK-SAME:      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>, tensor<8xi64>, tensor<8xf32>)
// CHECK:         %[[XP:[^,]+]], %[[OFF:[^,]+]], %[[SLOT:[^ ]+]] = moe.dispatch %[[X]], %[[IDX]] {num_experts = 8 : i64} : (tensor<?x64xf32>, tensor<?x2xi64>) -> (tensor<?x64xf32>, tensor<9xi64>, tensor<?xi64>)
// CHECK:         %[[YP:.+]] = moe.expert_ffn %[[XP]], %[[OFF]], %[[WG]], %[[WU]], %[[WD]] {activation = #moe.activation<swiglu>} : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
// CHECK:         %[[Y:.+]] = moe.combine %[[YP]], %[[SLOT]], %[[W]] : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x64xf32>
// CHECK:         return %[[Y]], %[[LOAD]], %[[NB]]
func.func @route_dispatch_combine(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>,
    %b: tensor<8xf32>, %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x32x64xf32>)
    -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
         balance = #moe.quantile_balance<histogram, bins = 256>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  %w2, %idx2, %load2, %nb2 = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
         balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi32>, tensor<8xi64>, tensor<8xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x64xf32>, tensor<?x2xi64>)
      -> (tensor<?x64xf32>, tensor<9xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x64xf32>
  return %y, %load, %nb : tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>
}

// Static token count: N = 6, k = 2, so 12 token-slots.
// CHECK-LABEL: func.func @dispatch_combine_static
// CHECK:         moe.dispatch %{{.+}}, %{{.+}} {num_experts = 4 : i64} : (tensor<6x32xbf16>, tensor<6x2xi32>) -> (tensor<12x32xbf16>, tensor<5xi64>, tensor<12xi64>)
// CHECK:         moe.expert_ffn %{{.+}} {activation = #moe.activation<situ_glu, gate_beta = 3.000000e+00, up_beta = 1.000000e+01>} : (tensor<12x32xbf16>, tensor<5xi64>, tensor<4x32x16xbf16>, tensor<4x32x16xbf16>, tensor<4x16x32xbf16>) -> tensor<12x32xbf16>
// CHECK:         moe.combine %{{.+}} : (tensor<12x32xbf16>, tensor<12xi64>, tensor<6x2xf32>) -> tensor<6x32xbf16>
func.func @dispatch_combine_static(%x: tensor<6x32xbf16>,
    %idx: tensor<6x2xi32>, %w: tensor<6x2xf32>, %wg: tensor<4x32x16xbf16>,
    %wu: tensor<4x32x16xbf16>, %wd: tensor<4x16x32xbf16>) -> tensor<6x32xbf16> {
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 4 : i64}
      : (tensor<6x32xbf16>, tensor<6x2xi32>)
      -> (tensor<12x32xbf16>, tensor<5xi64>, tensor<12xi64>)
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 3.0, up_beta = 10.0>}
      : (tensor<12x32xbf16>, tensor<5xi64>, tensor<4x32x16xbf16>,
         tensor<4x32x16xbf16>, tensor<4x16x32xbf16>) -> tensor<12x32xbf16>
  %y = moe.combine %yp, %slot, %w
      : (tensor<12x32xbf16>, tensor<12xi64>, tensor<6x2xf32>) -> tensor<6x32xbf16>
  return %y : tensor<6x32xbf16>
}

// CHECK-LABEL: func.func @attn_res_mix
// CHECK-SAME:    (%[[B0:[^:]+]]: tensor<?x?x64xf32>, %[[B1:[^:]+]]: tensor<?x?x64xf32>, %[[U:[^:]+]]: tensor<64xf32>)
// CHECK:         moe.attn_res_mix %[[B0]], %[[B1]] query(%[[U]]) : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK:         moe.attn_res_mix %[[B0]] query(%[[U]]) {epsilon = 2.000000e-06 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
func.func @attn_res_mix(%b0: tensor<?x?x64xf32>, %b1: tensor<?x?x64xf32>,
    %u: tensor<64xf32>) {
  %0 = moe.attn_res_mix %b0, %b1 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> tensor<?x?x64xf32>
  %1 = moe.attn_res_mix %b0 query(%u) {epsilon = 2.0e-06 : f64}
      : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME:    (%[[LOGITS:[^:]+]]: tensor<?x?x256xf32>, %[[LABELS:[^:]+]]: tensor<?x?xi32>)
// CHECK:         moe.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
// CHECK:         moe.cross_entropy %[[LOGITS]], %[[LABELS]] {ignore_index = 0 : i64} : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
func.func @cross_entropy(%logits: tensor<?x?x256xf32>, %labels: tensor<?x?xi32>) {
  %0 = moe.cross_entropy %logits, %labels
      : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  %1 = moe.cross_entropy %logits, %labels {ignore_index = 0 : i64}
      : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  return
}
