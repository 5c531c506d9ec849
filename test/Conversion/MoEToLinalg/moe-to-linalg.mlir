// RUN: moe-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(convert-moe-to-linalg,cse))" | FileCheck %s --implicit-check-not=moe.l2_norm --implicit-check-not=moe.rms_norm --implicit-check-not=moe.decay_gate --implicit-check-not=moe.short_conv --implicit-check-not=moe.cross_entropy --implicit-check-not=moe.embedding --implicit-check-not=moe.glu_ffn --implicit-check-not=moe.attn_res_mix

// l2_norm (ALGORITHMS.md section 1.2): sum of squares over the last dim, then
// x / sqrt(sum + eps). Batch and sequence are dynamic.

// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[LEAD4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @l2_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4x8xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x4xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x?x4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[LEAD4]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x?x4x8xf32>) outs(%[[INIT]] : tensor<?x?x4xf32>)
// CHECK:   %[[SQ:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK:   arith.addf %{{.*}}, %[[SQ]] : f32
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[LEAD4]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]], %[[SUM]] : tensor<?x?x4x8xf32>, tensor<?x?x4xf32>)
// CHECK:   ^bb0(%[[V:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK:   %[[SHIFTED:.*]] = arith.addf %[[S]], %[[EPS]] : f32
// CHECK:   %[[NORM:.*]] = math.sqrt %[[SHIFTED]] : f32
// CHECK:   %[[R:.*]] = arith.divf %[[V]], %[[NORM]] : f32
// CHECK:   linalg.yield %[[R]] : f32
// CHECK: return %[[Y]]
func.func @l2_norm(%x: tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32> {
  %y = moe.l2_norm %x : tensor<?x?x4x8xf32>
  return %y : tensor<?x?x4x8xf32>
}

// -----

// rms_norm in bf16 (ALGORITHMS.md section 7.2): the math is fp32, the
// result is truncated back; mean = sum / 8 with a constant width.

// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[LEAD3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[LAST3:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @rms_norm_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xbf16>, %[[W:.*]]: tensor<8xbf16>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x?x8xbf16>) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[WIDTH:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[LEAD3]], #[[LAST3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[SUM]], %[[W]] : tensor<?x?x8xbf16>, tensor<?x?xf32>, tensor<8xbf16>) outs(%{{.*}} : tensor<?x?x8xbf16>)
// CHECK:   ^bb0(%[[V:.*]]: bf16, %[[S:.*]]: f32, %[[WV:.*]]: bf16, %{{.*}}: bf16):
// CHECK:   %[[VF:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK:   %[[WF:.*]] = arith.extf %[[WV]] : bf16 to f32
// CHECK:   %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK:   %[[MEAN:.*]] = arith.divf %[[S]], %[[WIDTH]] : f32
// CHECK:   %[[SHIFTED:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK:   %[[RSTD:.*]] = math.rsqrt %[[SHIFTED]] : f32
// CHECK:   %[[NORMED:.*]] = arith.mulf %[[VF]], %[[RSTD]] : f32
// CHECK:   %[[SCALED:.*]] = arith.mulf %[[NORMED]], %[[WF]] : f32
// CHECK:   %[[T:.*]] = arith.truncf %[[SCALED]] : f32 to bf16
// CHECK:   linalg.yield %[[T]] : bf16
// CHECK: return %[[Y]]
func.func @rms_norm_bf16(%x: tensor<?x?x8xbf16>, %w: tensor<8xbf16>) -> tensor<?x?x8xbf16> {
  %y = moe.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<?x?x8xbf16>, tensor<8xbf16>
  return %y : tensor<?x?x8xbf16>
}

// -----

// A dynamic last dimension: the width comes from tensor.dim.

// CHECK-LABEL: func.func @rms_norm_dynamic_width
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[W:.*]]: tensor<?xf32>)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[DIM:.*]] = tensor.dim %[[X]], %[[C1]] : tensor<?x?xf32>
// CHECK: %[[I:.*]] = arith.index_cast %[[DIM]] : index to i64
// CHECK: %[[WIDTH:.*]] = arith.sitofp %[[I]] : i64 to f32
// CHECK: linalg.generic
// CHECK:   arith.divf %{{.*}}, %[[WIDTH]] : f32
// CHECK:   math.rsqrt
func.func @rms_norm_dynamic_width(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32> {
  %y = moe.rms_norm %x, %w : tensor<?x?xf32>, tensor<?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Bounded gate with A_log (ALGORITHMS.md section 2.1):
// g = g_min * sigmoid(exp(A_log[h]) * (z + dt_bias[h, c])).

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[HK:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[H:.*]] = affine_map<(d0, d1, d2, d3) -> (d2)>
// CHECK-LABEL: func.func @decay_gate_bounded
// CHECK-SAME: (%[[Z:.*]]: tensor<?x?x4x8xbf16>, %[[B:.*]]: tensor<4x8xf32>, %[[A:.*]]: tensor<4xf32>)
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[HK]], #[[H]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[Z]], %[[B]], %[[A]] : tensor<?x?x4x8xbf16>, tensor<4x8xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<?x?x4x8xf32>)
// CHECK:   ^bb0(%[[ZV:.*]]: bf16, %[[BV:.*]]: f32, %[[AV:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[ZF:.*]] = arith.extf %[[ZV]] : bf16 to f32
// CHECK:   %[[X:.*]] = arith.addf %[[ZF]], %[[BV]] : f32
// CHECK:   %[[RATE:.*]] = math.exp %[[AV]] : f32
// CHECK:   %[[P:.*]] = arith.mulf %[[RATE]], %[[X]] : f32
// CHECK:   %[[GMIN:.*]] = arith.constant -5.000000e+00 : f32
// CHECK:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:   %[[NP:.*]] = arith.negf %[[P]] : f32
// CHECK:   %[[E:.*]] = math.exp %[[NP]] : f32
// CHECK:   %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK:   %[[SIG:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK:   %[[R:.*]] = arith.mulf %[[GMIN]], %[[SIG]] : f32
// CHECK:   linalg.yield %[[R]] : f32
// CHECK: return %[[G]]
func.func @decay_gate_bounded(%z: tensor<?x?x4x8xbf16>, %b: tensor<4x8xf32>, %a: tensor<4xf32>) -> tensor<?x?x4x8xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b, %a
      : (tensor<?x?x4x8xbf16>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4x8xf32>
  return %g : tensor<?x?x4x8xf32>
}

// -----

// Bounded gate without A_log: g = g_min * sigmoid(z + dt_bias[h, c]).

// CHECK-LABEL: func.func @decay_gate_bounded_no_a_log
// CHECK-SAME: (%[[Z:.*]]: tensor<?x?x4x8xf32>, %[[B:.*]]: tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Z]], %[[B]] : tensor<?x?x4x8xf32>, tensor<4x8xf32>)
// CHECK:   %[[X:.*]] = arith.addf
// CHECK-NOT: math.exp %{{.*}} : f32
// CHECK:   %[[GMIN:.*]] = arith.constant -2.500000e+00 : f32
// CHECK:   arith.negf %[[X]] : f32
// CHECK:   arith.mulf %[[GMIN]], %{{.*}} : f32
func.func @decay_gate_bounded_no_a_log(%z: tensor<?x?x4x8xf32>, %b: tensor<4x8xf32>) -> tensor<?x?x4x8xf32> {
  %g = moe.decay_gate <bounded, g_min = -2.5> %z, %b
      : (tensor<?x?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4x8xf32>
  return %g : tensor<?x?x4x8xf32>
}

// -----

// Softplus gate: g = -exp(A_log[h]) * softplus(x), with the stable
// softplus(x) = max(x, 0) + log1p(exp(-|x|)).

// CHECK-LABEL: func.func @decay_gate_softplus
// CHECK-SAME: (%[[Z:.*]]: tensor<2x?x4x8xf32>, %[[B:.*]]: tensor<4x8xf32>, %[[A:.*]]: tensor<4xf32>)
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[Z]], %[[B]], %[[A]] : {{.*}}) outs(%{{.*}} : tensor<2x?x4x8xf32>)
// CHECK:   ^bb0(%[[ZV:.*]]: f32, %[[BV:.*]]: f32, %[[AV:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[X:.*]] = arith.addf %[[ZV]], %[[BV]] : f32
// CHECK:   %[[RATE:.*]] = math.exp %[[AV]] : f32
// CHECK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[POS:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK:   %[[ABS:.*]] = math.absf %[[X]] : f32
// CHECK:   %[[NEG:.*]] = arith.negf %[[ABS]] : f32
// CHECK:   %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK:   %[[L:.*]] = math.log1p %[[E]] : f32
// CHECK:   %[[SP:.*]] = arith.addf %[[POS]], %[[L]] : f32
// CHECK:   %[[SCALED:.*]] = arith.mulf %[[RATE]], %[[SP]] : f32
// CHECK:   %[[R:.*]] = arith.negf %[[SCALED]] : f32
// CHECK:   linalg.yield %[[R]] : f32
// CHECK: return %[[G]]
func.func @decay_gate_softplus(%z: tensor<2x?x4x8xf32>, %b: tensor<4x8xf32>, %a: tensor<4xf32>) -> tensor<2x?x4x8xf32> {
  %g = moe.decay_gate <softplus> %z, %b, %a
      : (tensor<2x?x4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x?x4x8xf32>
  return %g : tensor<2x?x4x8xf32>
}

// -----

// short_conv with SiLU (ALGORITHMS.md section 1.2), static window W = 4:
// one element-wise generic over (b, t, c) that sums the taps in order from
// zero, w[c, i] * x[b, t - 3 + i, c], a tap before t = 0 reading a clamped
// step and adding w * 0 (as a zero-padded copy would), then SiLU: no padded
// copy, no accumulator fill, no second pass.

// CHECK-LABEL: func.func @short_conv_silu
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x16xf32>, %[[W:.*]]: tensor<16x4xf32>)
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.fill
// CHECK: %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} outs(
// CHECK:   %[[B:.*]] = linalg.index 0 : index
// CHECK:   %[[T:.*]] = linalg.index 1 : index
// CHECK:   %[[CH:.*]] = linalg.index 2 : index
// CHECK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[C3:.*]] = arith.constant 3 : index
// CHECK:   %[[IN0:.*]] = arith.cmpi uge, %[[T]], %[[C3]] : index
// CHECK:   %[[BACK0:.*]] = arith.subi %[[T]], %[[C3]] : index
// CHECK:   %[[STEP0:.*]] = arith.select %[[IN0]], %[[BACK0]], %[[T]] : index
// CHECK:   %[[X0:.*]] = tensor.extract %[[X]][%[[B]], %[[STEP0]], %[[CH]]]
// CHECK:   %[[XZ0:.*]] = arith.select %[[IN0]], %[[X0]], %[[ZERO]] : f32
// CHECK:   %[[W0:.*]] = tensor.extract %[[W]][%[[CH]], %{{.*}}] : tensor<16x4xf32>
// CHECK:   %[[P0:.*]] = arith.mulf %[[XZ0]], %[[W0]] : f32
// CHECK:   %[[S0:.*]] = arith.addf %[[ZERO]], %[[P0]] : f32
// CHECK:   arith.cmpi uge, %[[T]], %{{.*}} : index
// CHECK:   arith.cmpi uge, %[[T]], %{{.*}} : index
// The last tap reads step t itself, unguarded.
// CHECK:   %[[X3:.*]] = tensor.extract %[[X]][%[[B]], %[[T]], %[[CH]]]
// CHECK:   %[[W3:.*]] = tensor.extract %[[W]][%[[CH]], %[[C3]]] : tensor<16x4xf32>
// CHECK:   %[[P3:.*]] = arith.mulf %[[X3]], %[[W3]] : f32
// CHECK:   %[[CV:.*]] = arith.addf %{{.*}}, %[[P3]] : f32
// CHECK:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:   %[[NEG:.*]] = arith.negf %[[CV]] : f32
// CHECK:   %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK:   %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK:   %[[SIG:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK:   %[[S:.*]] = arith.mulf %[[CV]], %[[SIG]] : f32
// CHECK:   linalg.yield %[[S]] : f32
// CHECK: return %[[Y]]
func.func @short_conv_silu(%x: tensor<?x?x16xf32>, %w: tensor<16x4xf32>) -> tensor<?x?x16xf32> {
  %y = moe.short_conv %x, %w {silu} : tensor<?x?x16xf32>, tensor<16x4xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Without SiLU, in f16, with a dynamic window: the padding is
// dim(weight, 1) - 1 and the fp32 sum is truncated back.

// CHECK-LABEL: func.func @short_conv_dynamic_window
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x8xf16>, %[[W:.*]]: tensor<8x?xf16>)
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[WIN:.*]] = tensor.dim %[[W]], %[[C1]] : tensor<8x?xf16>
// CHECK: %[[PADW:.*]] = arith.subi %[[WIN]], %[[C1]] : index
// CHECK: %[[PADDED:.*]] = tensor.pad %[[X]] low[0, %[[PADW]], 0] high[0, 0, 0]
// CHECK: } : tensor<2x?x8xf16> to tensor<2x?x8xf16>
// CHECK: %[[C:.*]] = linalg.generic {{.*}} ins(%[[PADDED]], %[[W]] : tensor<2x?x8xf16>, tensor<8x?xf16>) outs(%{{.*}} : tensor<2x?x8xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<2x?x8xf32>) outs(%{{.*}} : tensor<2x?x8xf16>)
// CHECK-NOT: math.exp
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[Y]]
func.func @short_conv_dynamic_window(%x: tensor<2x?x8xf16>, %w: tensor<8x?xf16>) -> tensor<2x?x8xf16> {
  %y = moe.short_conv %x, %w : tensor<2x?x8xf16>, tensor<8x?xf16>
  return %y : tensor<2x?x8xf16>
}

// -----

// cross_entropy (ALGORITHMS.md section 7.2): max, then sumexp and the
// picked logit in one reduction, then the valid sum and count, then the mean.

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<?x?x32xf32>, %[[T:.*]]: tensor<?x?xi32>)
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[L]] : tensor<?x?x32xf32>) outs(%[[MAXINIT]] : tensor<?x?xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[TOK:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[L]], %[[MAX]], %[[T]] : tensor<?x?x32xf32>, tensor<?x?xf32>, tensor<?x?xi32>)
// CHECK:   ^bb0(%[[Z:.*]]: f32, %[[M:.*]]: f32, %[[LABEL:.*]]: i32, %[[SUM:.*]]: f32, %[[PICK:.*]]: f32):
// CHECK:   %[[SH:.*]] = arith.subf %[[Z]], %[[M]] : f32
// CHECK:   %[[E:.*]] = math.exp %[[SH]] : f32
// CHECK:   %[[NSUM:.*]] = arith.addf %[[SUM]], %[[E]] : f32
// CHECK:   %[[COL:.*]] = linalg.index 2 : index
// CHECK:   %[[LI:.*]] = arith.index_cast %[[LABEL]] : i32 to index
// CHECK:   %[[IS:.*]] = arith.cmpi eq, %[[COL]], %[[LI]] : index
// CHECK:   %[[NPICK:.*]] = arith.select %[[IS]], %[[Z]], %[[PICK]] : f32
// CHECK:   linalg.yield %[[NSUM]], %[[NPICK]] : f32, f32
// CHECK: %[[TOT:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[MAX]], %[[TOK]]#0, %[[TOK]]#1, %[[T]] : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK:   %[[LOG:.*]] = math.log
// CHECK:   %[[LSE:.*]] = arith.addf %{{.*}}, %[[LOG]] : f32
// CHECK:   %[[LOSS:.*]] = arith.subf %[[LSE]], %{{.*}} : f32
// CHECK:   %[[IGN:.*]] = arith.constant -100 : i32
// CHECK:   %[[VALID:.*]] = arith.cmpi ne, %{{.*}}, %[[IGN]] : i32
// CHECK:   arith.select %[[VALID]], %[[LOSS]], %{{.*}} : f32
// CHECK:   arith.select %[[VALID]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%[[TOT]]#0, %[[TOT]]#1 : tensor<f32>, tensor<f32>)
// CHECK:   arith.divf
// CHECK: return %[[MEAN]] : tensor<f32>
func.func @cross_entropy(%l: tensor<?x?x32xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %loss = moe.cross_entropy %l, %t : (tensor<?x?x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A single position (logits [V], labels []): the token reductions have no
// loops; the ignore index is the op's.

// CHECK-LABEL: func.func @cross_entropy_single
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<16xbf16>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<16xbf16>, tensor<f32>, tensor<i64>)
// CHECK: linalg.generic {{.*}} iterator_types = []}
// CHECK:   arith.constant 0 : i64
// CHECK: linalg.generic {{.*}} iterator_types = []}
func.func @cross_entropy_single(%l: tensor<16xbf16>, %t: tensor<i64>) -> tensor<f32> {
  %loss = moe.cross_entropy %l, %t {ignore_index = 0 : i64}
      : (tensor<16xbf16>, tensor<i64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// embedding (ALGORITHMS.md section 7.2): a gather through tensor.extract.

// CHECK-DAG: #[[TOKMAP:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[OUTMAP:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<?x?xi32>, %[[TABLE:.*]]: tensor<32x8xf32>)
// CHECK: %[[EMPTY:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?x8xf32>
// CHECK: %[[H:.*]] = linalg.generic {indexing_maps = [#[[TOKMAP]], #[[OUTMAP]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[T]] : tensor<?x?xi32>) outs(%[[EMPTY]] : tensor<?x?x8xf32>)
// CHECK:   ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
// CHECK:   %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:   %[[COL:.*]] = linalg.index 2 : index
// CHECK:   %[[E:.*]] = tensor.extract %[[TABLE]][%[[ROW]], %[[COL]]] : tensor<32x8xf32>
// CHECK:   linalg.yield %[[E]] : f32
// CHECK: return %[[H]]
func.func @embedding(%t: tensor<?x?xi32>, %table: tensor<32x8xf32>) -> tensor<?x?x8xf32> {
  %h = moe.embedding %t, %table : tensor<?x?xi32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  return %h : tensor<?x?x8xf32>
}

// -----

// glu_ffn (ALGORITHMS.md sections 6 and 7.1) with SiTU-GLU on bf16 tokens of
// any rank: the gate and up contractions in fp32, the activation
// 4 tanh(a / 4) sigmoid(a) * 25 tanh(u / 25), the down contraction in fp32,
// then the conversion back to bf16.

// CHECK-LABEL: func.func @glu_ffn_situ
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xbf16>, %[[WG:[^:]*]]: tensor<8x4xbf16>, %[[WU:[^:]*]]: tensor<8x4xbf16>, %[[WD:[^:]*]]: tensor<4x8xbf16>)
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WG]] : tensor<?x?x8xbf16>, tensor<8x4xbf16>) outs(%{{.*}} : tensor<?x?x4xf32>)
// CHECK: %[[U:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[WU]] : tensor<?x?x8xbf16>, tensor<8x4xbf16>) outs(%{{.*}} : tensor<?x?x4xf32>)
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[U]] : tensor<?x?x4xf32>, tensor<?x?x4xf32>)
// CHECK: ^bb0(%[[AV:.*]]: f32, %[[UV:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[GB:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: arith.divf %[[AV]], %[[GB]] : f32
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: %[[UB:.*]] = arith.constant 2.500000e+01 : f32
// CHECK: arith.divf %[[UV]], %[[UB]] : f32
// CHECK: math.tanh
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[WD]] : tensor<?x?x4xf32>, tensor<4x8xbf16>) outs(%{{.*}} : tensor<?x?x8xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<?x?x8xf32>) outs(%{{.*}} : tensor<?x?x8xbf16>)
// CHECK: arith.truncf
// CHECK: return %[[OUT]]
func.func @glu_ffn_situ(%x: tensor<?x?x8xbf16>, %wg: tensor<8x4xbf16>, %wu: tensor<8x4xbf16>,
                        %wd: tensor<4x8xbf16>) -> tensor<?x?x8xbf16> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x?x8xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>
  return %y : tensor<?x?x8xbf16>
}

// -----

// SwiGLU: a sigmoid(a) u, no soft caps.

// CHECK-LABEL: func.func @glu_ffn_swiglu
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: ^bb0(%[[AV:.*]]: f32, %[[UV:.*]]: f32, %{{.*}}: f32):
// CHECK-NOT: math.tanh
// CHECK: %[[SIG:.*]] = arith.divf
// CHECK: %[[G:.*]] = arith.mulf %[[AV]], %[[SIG]] : f32
// CHECK: arith.mulf %[[G]], %[[UV]] : f32
func.func @glu_ffn_swiglu(%x: tensor<?x8xf32>, %wg: tensor<8x4xf32>, %wu: tensor<8x4xf32>,
                          %wd: tensor<4x8xf32>) -> tensor<?x8xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Ops the pass does not lower stay: moe.kda consumes the lowered l2_norm.

// CHECK-LABEL: func.func @kda_untouched
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: %[[O:.*]], %{{.*}} = moe.kda %[[Q]], %[[Q]], %[[Q]], %{{.*}}, %{{.*}} :
// CHECK: return %[[O]]
func.func @kda_untouched(%q: tensor<?x?x4x64xf32>, %g: tensor<?x?x4x64xf32>, %b: tensor<?x?x4xf32>) -> tensor<?x?x4x64xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %o, %s = moe.kda %qn, %qn, %qn, %g, %b
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return %o : tensor<?x?x4x64xf32>
}

// -----

// A function without moe ops is left as it is.

// CHECK-LABEL: func.func @nothing_to_do
// CHECK-NEXT: return %{{.*}} : tensor<4xf32>
func.func @nothing_to_do(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// attn_res_mix (ALGORITHMS.md section 5.5): per source one reduction giving
// sum(v^2) and v . u, the score rstd * (v . u); a softmax over the two
// sources shifted by their max; the weighted sum of the raw sources.

// CHECK-LABEL: func.func @attn_res_mix
// CHECK-SAME: (%[[V0:.*]]: tensor<?x?x16xf32>, %[[V1:.*]]: tensor<?x?x16xf32>, %[[U:.*]]: tensor<16xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[V0]], %[[U]] :
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[V1]], %[[U]] :
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.maximumf
// CHECK-COUNT-2: math.exp
// CHECK: linalg.generic {{.*}}ins(%[[V0]], %[[V1]], %{{.*}}, %{{.*}} :
func.func @attn_res_mix(%v0: tensor<?x?x16xf32>, %v1: tensor<?x?x16xf32>,
                        %u: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %y = moe.attn_res_mix %v0, %v1 query(%u)
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// short_conv_grad with SiLU and a static window: dc is one element-wise
// generic (the forward's window sum recomputed, times dy and SiLU's slope),
// dx another that reads dc at t, t + 1, ... with the taps reversed (a step
// past T reads zero); only dw, a reduction over the tokens, reads a padded
// copy of x.

// CHECK-LABEL: func.func @short_conv_grad_silu
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<?x?x16xf32>, %[[X:[^:]*]]: tensor<?x?x16xf32>, %[[W:[^:]*]]: tensor<16x4xf32>)
// CHECK: %[[PADDED:.*]] = tensor.pad %[[X]] low[0, 3, 0] high[0, 0, 0]
// CHECK: %[[DC:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[DY]] : tensor<?x?x16xf32>)
// CHECK:   tensor.extract %[[X]]
// CHECK:   math.exp
// CHECK: %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} outs(
// CHECK:   tensor.extract %[[DC]][%{{.*}}, %[[T:[^,]*]], %{{.*}}]
// CHECK:   tensor.extract %[[W]][%{{.*}}, %[[C3:.*]]] : tensor<16x4xf32>
// CHECK:   arith.cmpi ult
// CHECK: %[[DW:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[DC]], %[[PADDED]] :
// CHECK-NOT: tensor.pad
// CHECK: return %[[DX]], %[[DW]]
func.func @short_conv_grad_silu(%dy: tensor<?x?x16xf32>, %x: tensor<?x?x16xf32>, %w: tensor<16x4xf32>) -> (tensor<?x?x16xf32>, tensor<16x4xf32>) {
  %0:2 = moe.short_conv_grad %dy, %x, %w {silu} : tensor<?x?x16xf32>, tensor<16x4xf32>
  return %0#0, %0#1 : tensor<?x?x16xf32>, tensor<16x4xf32>
}
