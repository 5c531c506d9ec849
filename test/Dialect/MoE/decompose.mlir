// RUN: moe-opt %s --moe-decompose --split-input-file | FileCheck %s --implicit-check-not=moe.kda_layer --implicit-check-not=moe.mla_layer --implicit-check-not=moe.moe_ffn --implicit-check-not='moe.attn_res ' --implicit-check-not=moe.lm_head

// KDA (ALGORITHMS.md section 1.2): q and k go through projection, short conv
// with SiLU, head split and L2 norm; the gate is low rank; beta is a sigmoid
// computed in fp32; the output is normed per head, gated and projected.

// CHECK-LABEL: func.func @kda_layer
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[WQ:[^:]*]]: {{.*}}, %[[WK:[^:]*]]: {{.*}}, %[[WV:[^:]*]]: {{.*}}, %[[CQ:[^:]*]]: {{.*}}, %[[CK:[^:]*]]: {{.*}}, %[[CV:[^:]*]]: {{.*}}, %[[WFD:[^:]*]]: {{.*}}, %[[WFU:[^:]*]]: {{.*}}, %[[ALOG:[^:]*]]: {{.*}}, %[[DTB:[^:]*]]: {{.*}}, %[[WB:[^:]*]]: {{.*}}, %[[WGD:[^:]*]]: {{.*}}, %[[WGU:[^:]*]]: {{.*}}, %[[ON:[^:]*]]: {{.*}}, %[[WO:[^:]*]]: {{.*}})
// CHECK: %[[QP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WQ]] : tensor<?x?x64xf32>, tensor<64x64xf32>)
// CHECK: %[[QC:.*]] = moe.short_conv %[[QP]], %[[CQ]] {silu} : tensor<?x?x64xf32>, tensor<64x4xf32>
// CHECK: %[[QE:.*]] = tensor.expand_shape %[[QC]] {{\[}}[0], [1], [2, 3]] {{.*}} into tensor<?x?x2x32xf32>
// CHECK: %[[Q:.*]] = moe.l2_norm %[[QE]] : tensor<?x?x2x32xf32>
// CHECK: ins(%[[X]], %[[WK]] :
// CHECK: moe.short_conv {{.*}}, %[[CK]] {silu}
// CHECK: %[[K:.*]] = moe.l2_norm
// CHECK: ins(%[[X]], %[[WV]] :
// CHECK: moe.short_conv {{.*}}, %[[CV]] {silu}
// CHECK: %[[V:.*]] = tensor.expand_shape {{.*}} into tensor<?x?x2x16xf32>
// CHECK: ins(%[[X]], %[[WFD]] :
// CHECK: %[[Z:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[WFU]] :
// CHECK: %[[ZE:.*]] = tensor.expand_shape %[[Z]] {{.*}} into tensor<?x?x2x32xf32>
// CHECK: %[[G:.*]] = moe.decay_gate <bounded, g_min = -5.000000e+00> %[[ZE]], %[[DTB]], %[[ALOG]] : (tensor<?x?x2x32xf32>, tensor<2x32xf32>, tensor<2xf32>) -> tensor<?x?x2x32xf32>
// CHECK: ins(%[[X]], %[[WB]] : tensor<?x?x64xf32>, tensor<64x2xf32>) outs(%{{.*}} : tensor<?x?x2xf32>)
// CHECK: %[[BETA:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: %[[O:.*]], %{{.*}} = moe.kda %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] {state_layout = #moe.state_layout<value_major>} : ({{.*}}) -> (tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>)
// CHECK: %[[N:.*]] = moe.rms_norm %[[O]], %[[ON]] : tensor<?x?x2x16xf32>, tensor<16xf32>
// CHECK: ins(%[[X]], %[[WGD]] :
// CHECK: ins(%{{.*}}, %[[WGU]] :
// CHECK: %[[GATE:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<?x?x2x16xf32>)
// CHECK: arith.negf
// CHECK: %[[GATED:.*]] = linalg.generic {{.*}} ins(%[[N]], %[[GATE]] :
// CHECK: arith.mulf
// CHECK: %[[MERGED:.*]] = tensor.collapse_shape %[[GATED]] {{\[}}[0], [1], [2, 3]] : tensor<?x?x2x16xf32> into tensor<?x?x32xf32>
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[MERGED]], %[[WO]] : tensor<?x?x32xf32>, tensor<32x64xf32>)
// CHECK: return %[[OUT]]
func.func @kda_layer(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>,
    %wv: tensor<64x32xf32>, %cq: tensor<64x4xf32>, %ck: tensor<64x4xf32>, %cv: tensor<32x4xf32>,
    %wfd: tensor<64x8xf32>, %wfu: tensor<8x64xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x32xf32>,
    %wb: tensor<64x2xf32>, %wgd: tensor<64x8xf32>, %wgu: tensor<8x32xf32>, %on: tensor<16xf32>,
    %wo: tensor<32x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu) out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 32 : i64, value_dim = 16 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>,
       state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>,
         tensor<64x4xf32>, tensor<64x4xf32>, tensor<32x4xf32>, tensor<64x8xf32>, tensor<8x64xf32>,
         tensor<2xf32>, tensor<2x32xf32>, tensor<64x2xf32>, tensor<64x8xf32>, tensor<8x32xf32>,
         tensor<16xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// bf16 activations and weights: contractions accumulate in fp32 and truncate
// back; the decay gate and beta stay fp32.

// CHECK-LABEL: func.func @kda_layer_bf16_softplus
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: moe.decay_gate <softplus> {{.*}} -> tensor<?x?x2x32xf32>
// CHECK: moe.kda {{.*}} : (tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x32x32xf32>)
func.func @kda_layer_bf16_softplus(%x: tensor<?x?x64xbf16>, %w: tensor<64x64xbf16>,
    %c: tensor<64x4xbf16>, %wfd: tensor<64x8xbf16>, %wfu: tensor<8x64xbf16>, %alog: tensor<2xf32>,
    %dtb: tensor<2x32xf32>, %wb: tensor<64x2xbf16>, %on: tensor<32xbf16>) -> tensor<?x?x64xbf16> {
  %y = moe.kda_layer %x q(%w) k(%w) v(%w) conv(%c, %c, %c)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wfd, %wfu) out_norm(%on) out(%w)
      {num_heads = 2 : i64, head_dim = 32 : i64, value_dim = 32 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>,
         tensor<64x4xbf16>, tensor<64x4xbf16>, tensor<64x4xbf16>, tensor<64x8xbf16>, tensor<8x64xbf16>,
         tensor<2xf32>, tensor<2x32xf32>, tensor<64x2xbf16>, tensor<64x8xbf16>, tensor<8x64xbf16>,
         tensor<32xbf16>, tensor<64x64xbf16>) -> tensor<?x?x64xbf16>
  return %y : tensor<?x?x64xbf16>
}

// -----

// MLA (section 3.1, NoPE): the kv latent is sliced into [c_kv ; k_rope], c_kv
// is normed and up-projected into [k_nope ; v] per head, and the unrotated
// shared rope key is broadcast over heads and concatenated to k_nope.

// CHECK-LABEL: func.func @mla_layer
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[WQ:[^:]*]]: {{.*}}, %[[WKVD:[^:]*]]: {{.*}}, %[[KVN:[^:]*]]: {{.*}}, %[[WKVU:[^:]*]]: {{.*}}, %[[WG:[^:]*]]: {{.*}}, %[[WO:[^:]*]]: {{.*}})
// CHECK: %[[QP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WQ]] :
// CHECK: %[[Q:.*]] = tensor.expand_shape %[[QP]] {{.*}} into tensor<?x?x2x24xf32>
// CHECK: %[[KVD:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WKVD]] : {{.*}}) outs({{.*}} : tensor<?x?x40xf32>)
// CHECK: %[[C:.*]] = tensor.extract_slice %[[KVD]][0, 0, 0] [{{.*}}, {{.*}}, 32] [1, 1, 1] : tensor<?x?x40xf32> to tensor<?x?x32xf32>
// CHECK: %[[CN:.*]] = moe.rms_norm %[[C]], %[[KVN]] {epsilon = 9.9999999999999995E-7 : f64}
// CHECK: %[[KV:.*]] = linalg.generic {{.*}} ins(%[[CN]], %[[WKVU]] :
// CHECK: %[[KVH:.*]] = tensor.expand_shape %[[KV]] {{.*}} into tensor<?x?x2x32xf32>
// CHECK: %[[KNOPE:.*]] = tensor.extract_slice %[[KVH]][0, 0, 0, 0] [{{.*}}, {{.*}}, 2, 16] [1, 1, 1, 1]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[KVH]][0, 0, 0, 16] [{{.*}}, {{.*}}, 2, 16] [1, 1, 1, 1]
// CHECK: %[[KROPE:.*]] = tensor.extract_slice %[[KVD]][0, 0, 32] [{{.*}}, {{.*}}, 8] [1, 1, 1] : tensor<?x?x40xf32> to tensor<?x?x8xf32>
// CHECK: %[[KROPEH:.*]] = linalg.broadcast ins(%[[KROPE]] : tensor<?x?x8xf32>) outs(%{{.*}} : tensor<?x?x2x8xf32>) dimensions = [2]
// CHECK: %[[K:.*]] = tensor.concat dim(3) %[[KNOPE]], %[[KROPEH]] : (tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>) -> tensor<?x?x2x24xf32>
// CHECK: %[[GP:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WG]] :
// CHECK: %[[GATE:.*]] = tensor.expand_shape %[[GP]] {{.*}} into tensor<?x?x2x16xf32>
// CHECK: %[[O:.*]], %{{.*}} = moe.mla_attention %[[Q]], %[[K]], %[[V]] gate(%[[GATE]]) : ({{.*}}) -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
// CHECK: %[[OM:.*]] = tensor.collapse_shape %[[O]]
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[OM]], %[[WO]] :
// CHECK: return %[[OUT]]
func.func @mla_layer(%x: tensor<?x?x64xf32>, %wq: tensor<64x48xf32>, %wkvd: tensor<64x40xf32>,
    %kvn: tensor<32xf32>, %wkvu: tensor<32x64xf32>, %wg: tensor<64x32xf32>,
    %wo: tensor<32x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 16 : i64, rope_head_dim = 8 : i64,
       v_head_dim = 16 : i64}
      : (tensor<?x?x64xf32>, tensor<64x48xf32>, tensor<64x40xf32>, tensor<32xf32>,
         tensor<32x64xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// q-LoRA, no rope dims and no gate: q goes through its own latent norm, keys
// are k_nope alone, and mla_attention has no gate.

// CHECK-LABEL: func.func @mla_layer_q_lora
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x64xf32>, %[[WQD:[^:]*]]: {{.*}}, %[[QN:[^:]*]]: {{.*}}, %[[WQU:[^:]*]]: {{.*}},
// CHECK: ins(%[[X]], %[[WQD]] :
// CHECK: %[[QL:.*]] = moe.rms_norm %{{.*}}, %[[QN]]
// CHECK: ins(%[[QL]], %[[WQU]] :
// CHECK-NOT: tensor.concat
// CHECK-NOT: linalg.broadcast
// CHECK: moe.mla_attention %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x5x4x16xf32>, tensor<2x5x4x16xf32>, tensor<2x5x4x8xf32>) -> (tensor<2x5x4x8xf32>, tensor<2x4x5xf32>)
func.func @mla_layer_q_lora(%x: tensor<2x5x64xf32>, %wqd: tensor<64x24xf32>, %qn: tensor<24xf32>,
    %wqu: tensor<24x64xf32>, %wkvd: tensor<64x32xf32>, %kvn: tensor<32xf32>,
    %wkvu: tensor<32x96xf32>, %wo: tensor<32x64xf32>) -> tensor<2x5x64xf32> {
  %y = moe.mla_layer %x q_lora(%wqd, %qn, %wqu) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 4 : i64, nope_head_dim = 16 : i64, rope_head_dim = 0 : i64,
       v_head_dim = 8 : i64}
      : (tensor<2x5x64xf32>, tensor<64x24xf32>, tensor<24xf32>, tensor<24x64xf32>,
         tensor<64x32xf32>, tensor<32xf32>, tensor<32x96xf32>, tensor<32x64xf32>)
      -> tensor<2x5x64xf32>
  return %y : tensor<2x5x64xf32>
}

// -----

// MoE FFN (sections 4.1 and 7.1): tokens are flattened, routed, dispatched by
// expert, run through the grouped experts, combined with the routing weights,
// and the shared expert is added before the shape is restored.

// CHECK-LABEL: func.func @moe_ffn
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[WR:[^:]*]]: {{.*}}, %[[B:[^:]*]]: {{.*}}, %[[WG:[^:]*]]: {{.*}}, %[[WU:[^:]*]]: {{.*}}, %[[WD:[^:]*]]: {{.*}}, %[[SG:[^:]*]]: {{.*}}, %[[SU:[^:]*]]: {{.*}}, %[[SD:[^:]*]]: {{.*}})
// CHECK: %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
// CHECK: %[[W:.*]], %[[IDX:.*]], %[[LOAD:.*]], %[[NB:.*]] = moe.route %[[XF]], %[[WR]], %[[B]] {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.500000e+00, balance = #moe.quantile_balance<exact>>} : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
// CHECK: %[[XP:.*]], %[[OFF:.*]], %[[SLOT:.*]] = moe.dispatch %[[XF]], %[[IDX]] {num_experts = 8 : i64} : (tensor<?x64xf32>, tensor<?x2xi64>) -> (tensor<?x64xf32>, tensor<9xi64>, tensor<?xi64>)
// CHECK: %[[YP:.*]] = moe.expert_ffn %[[XP]], %[[OFF]], %[[WG]], %[[WU]], %[[WD]] {activation = #moe.activation<swiglu>}
// CHECK: %[[Y:.*]] = moe.combine %[[YP]], %[[SLOT]], %[[W]]
// CHECK: %[[S:.*]] = moe.glu_ffn %[[XF]], %[[SG]], %[[SU]], %[[SD]] {activation = #moe.activation<swiglu>}
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[Y]], %[[S]] :
// CHECK: arith.addf
// CHECK: %[[OUT:.*]] = tensor.expand_shape %[[SUM]] {{\[}}[0, 1], [2]] {{.*}} into tensor<?x?x64xf32>
// CHECK: return %[[OUT]], %[[LOAD]], %[[NB]]
func.func @moe_ffn(%x: tensor<?x?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>, %wd: tensor<8x32x64xf32>,
    %sg: tensor<64x32xf32>, %su: tensor<64x32xf32>, %sd: tensor<32x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<8xi64>, tensor<8xf32>) {
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd) shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>,
         tensor<32x64xf32>) -> (tensor<?x?x64xf32>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %nb : tensor<?x?x64xf32>, tensor<8xi64>, tensor<8xf32>
}

// -----

// A 2-D input needs no reshape, and without a shared expert nothing is added.

// CHECK-LABEL: func.func @moe_ffn_tokens_no_shared
// CHECK-NOT: tensor.collapse_shape
// CHECK: moe.route
// CHECK: moe.dispatch
// CHECK: moe.expert_ffn {{.*}} {activation = #moe.activation<situ_glu, gate_beta = 4.000000e+00, up_beta = 2.500000e+01>}
// CHECK: %[[Y:.*]] = moe.combine
// CHECK-NOT: moe.glu_ffn
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[Y]]
func.func @moe_ffn_tokens_no_shared(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>, %wd: tensor<8x32x64xf32>)
    -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>) {
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>,
       activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> (tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %nb : tensor<?x64xf32>, tensor<8xi64>, tensor<8xf32>
}

// -----

// lm_head: the projection fused with the cross-entropy (no [tokens, vocab]
// logits; the per-token lse is unused here); attn_res: the key norm is folded
// into the query (u = w * rho) before the mix.

// CHECK-LABEL: func.func @head_and_attn_res
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[W:[^:]*]]: {{.*}}, %[[L:[^:]*]]: {{.*}}, %[[B0:[^:]*]]: {{.*}}, %[[Q:[^:]*]]: {{.*}}, %[[R:[^:]*]]: {{.*}})
// CHECK: %[[LOSS:.*]], %{{.*}} = moe.linear_cross_entropy %[[X]], %[[W]], %[[L]] {ignore_index = -1 : i64} : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
// CHECK: %[[U:.*]] = linalg.generic {{.*}} ins(%[[Q]], %[[R]] : tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[H:.*]] = moe.attn_res_mix %[[B0]], %[[X]] query(%[[U]]) {epsilon = 9.9999999999999995E-7 : f64}
// CHECK: return %[[LOSS]], %[[H]]
func.func @head_and_attn_res(%x: tensor<?x?x64xf32>, %w: tensor<256x64xf32>, %l: tensor<?x?xi32>,
    %b0: tensor<?x?x64xf32>, %q: tensor<64xf32>, %r: tensor<64xf32>)
    -> (tensor<f32>, tensor<?x?x64xf32>) {
  %loss = moe.lm_head %x, %w, %l {ignore_index = -1 : i64}
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  %h = moe.attn_res %b0, %x query(%q) key_norm(%r)
      {block_size = 2 : i64, sublayer = 1 : i64, epsilon = 1.0e-6 : f64}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> tensor<?x?x64xf32>
  return %loss, %h : tensor<f32>, tensor<?x?x64xf32>
}

// -----

// lm_head of a single position (x: [d]) keeps the fp32 logits (one vocabulary
// row) and cross_entropy.

// CHECK-DAG: #[[XMAP1:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[WTMAP1:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @head_single_position
// CHECK-SAME: (%[[X:.*]]: tensor<64xf32>, %[[W:[^:]*]]: {{.*}}, %[[L:[^:]*]]: {{.*}})
// CHECK: %[[LOGITS:.*]] = linalg.generic {indexing_maps = [#[[XMAP1]], #[[WTMAP1]], {{.*}}]{{.*}} ins(%[[X]], %[[W]] : tensor<64xf32>, tensor<256x64xf32>) outs(%{{.*}} : tensor<256xf32>)
// CHECK: moe.cross_entropy %[[LOGITS]], %[[L]] : (tensor<256xf32>, tensor<i32>) -> tensor<f32>
// CHECK-NOT: moe.linear_cross_entropy
func.func @head_single_position(%x: tensor<64xf32>, %w: tensor<256x64xf32>, %l: tensor<i32>)
    -> tensor<f32> {
  %loss = moe.lm_head %x, %w, %l : (tensor<64xf32>, tensor<256x64xf32>, tensor<i32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Primitive ops that are also layer-level (embedding, rms_norm, glu_ffn) are
// left as they are.

// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: %[[E:.*]] = moe.embedding
// CHECK-NEXT: %[[N:.*]] = moe.rms_norm %[[E]]
// CHECK-NEXT: %[[F:.*]] = moe.glu_ffn %[[N]]
// CHECK-NEXT: return %[[F]]
func.func @untouched(%t: tensor<?x?xi32>, %table: tensor<256x64xf32>, %w: tensor<64xf32>,
    %g: tensor<64x128xf32>, %u: tensor<64x128xf32>, %d: tensor<128x64xf32>) -> tensor<?x?x64xf32> {
  %e = moe.embedding %t, %table : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  %n = moe.rms_norm %e, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %f = moe.glu_ffn %n, %g, %u, %d {activation = #moe.activation<swiglu>}
      : tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>
  return %f : tensor<?x?x64xf32>
}
