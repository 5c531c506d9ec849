// RUN: moe-opt %s -test-moe-adjoints -split-input-file | FileCheck %s

// DifferentiableOpInterface of the forward ops of the common family: each
// builds its gradient op from the forward's operands and the result adjoint
// (here a function argument), returns one adjoint per operand (none for
// token ids), and builds nothing when the result adjoint is null.

// CHECK-LABEL: func.func @decay_gate
// CHECK-SAME: (%[[DG:.*]]: tensor<?x?x4x16xf32>, %[[Z:.*]]: tensor<?x?x4x16xbf16>, %[[B:.*]]: tensor<4x16xf32>, %[[A:.*]]: tensor<4xf32>)
// CHECK-SAME: -> (tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
// CHECK: %[[G:.*]] = moe.decay_gate <softplus> %[[Z]], %[[B]], %[[A]] :
// CHECK: %[[DZ:.*]], %[[DB:.*]], %[[DA:.*]] = moe.decay_gate_grad <softplus> %[[DG]], %[[Z]], %[[B]], %[[A]] : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>) -> (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
// CHECK: return %[[G]], %[[DZ]], %[[DB]], %[[DA]]
func.func @decay_gate(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xbf16>, %b: tensor<4x16xf32>, %a: tensor<4xf32>)
    -> tensor<?x?x4x16xf32> {
  %g = moe.decay_gate <softplus> %z, %b, %a {test.adjoints = array<i64: 0>}
      : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @decay_gate_no_a_log
// CHECK: %[[DZ:.*]], %[[DB:.*]] = moe.decay_gate_grad <bounded, g_min = -5.000000e+00> %arg0, %arg1, %arg2 : (tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>, tensor<4x16xf32>) -> (tensor<2x3x4x16xf32>, tensor<4x16xf32>)
// CHECK: return %{{.*}}, %[[DZ]], %[[DB]] : tensor<2x3x4x16xf32>, tensor<2x3x4x16xf32>, tensor<4x16xf32>
func.func @decay_gate_no_a_log(%dg: tensor<2x3x4x16xf32>, %z: tensor<2x3x4x16xf32>, %b: tensor<4x16xf32>)
    -> tensor<2x3x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b {test.adjoints = array<i64: 0>}
      : (tensor<2x3x4x16xf32>, tensor<4x16xf32>) -> tensor<2x3x4x16xf32>
  return %g : tensor<2x3x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @norms
// CHECK: %[[L2:.*]] = moe.l2_norm %arg1 {epsilon = 1.000000e-03 : f64} : tensor<?x8xf32>
// CHECK: %[[DX1:.*]] = moe.l2_norm_grad %arg0, %arg1 {epsilon = 1.000000e-03 : f64} : tensor<?x8xf32>
// CHECK: %[[RMS:.*]] = moe.rms_norm %arg1, %arg2 {epsilon = 1.000000e-04 : f64} : tensor<?x8xf32>, tensor<8xf32>
// CHECK: %[[DX2:.*]], %[[DW:.*]] = moe.rms_norm_grad %arg0, %arg1, %arg2 {epsilon = 1.000000e-04 : f64} : tensor<?x8xf32>, tensor<8xf32>
// CHECK: return %[[L2]], %[[RMS]], %[[DX1]], %[[DX2]], %[[DW]]
func.func @norms(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>, %w: tensor<8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %y = moe.l2_norm %x {epsilon = 1.0e-3 : f64, test.adjoints = array<i64: 0>} : tensor<?x8xf32>
  %r = moe.rms_norm %x, %w {epsilon = 1.0e-4 : f64, test.adjoints = array<i64: 0>} : tensor<?x8xf32>, tensor<8xf32>
  return %y, %r : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @short_conv
// CHECK: %[[DX:.*]], %[[DW:.*]] = moe.short_conv_grad %arg0, %arg1, %arg2 {silu} : tensor<?x?x32xf32>, tensor<32x4xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DW]]
func.func @short_conv(%dy: tensor<?x?x32xf32>, %x: tensor<?x?x32xf32>, %w: tensor<32x4xf32>)
    -> tensor<?x?x32xf32> {
  %y = moe.short_conv %x, %w {silu, test.adjoints = array<i64: 0>} : tensor<?x?x32xf32>, tensor<32x4xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The token ids get no adjoint: only the table's is returned.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: -> (tensor<?x?x16xf32>, tensor<64x16xf32>)
// CHECK: %[[DT:.*]] = moe.embedding_grad %arg0, %arg1, %arg2 : tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<64x16xf32>
// CHECK: return %{{.*}}, %[[DT]] : tensor<?x?x16xf32>, tensor<64x16xf32>
func.func @embedding(%dh: tensor<?x?x16xf32>, %tokens: tensor<?x?xi32>, %table: tensor<64x16xf32>)
    -> tensor<?x?x16xf32> {
  %h = moe.embedding %tokens, %table {test.adjoints = array<i64: 0>}
      : tensor<?x?xi32>, tensor<64x16xf32> -> tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @attn_res_mix
// CHECK: %[[GRADS:.*]]:2, %[[DU:.*]] = moe.attn_res_mix_grad %arg0, %arg1, %arg2 query(%arg3) {epsilon = 1.000000e-03 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>)
// CHECK: return %{{.*}}, %[[GRADS]]#0, %[[GRADS]]#1, %[[DU]]
func.func @attn_res_mix(%dh: tensor<?x?x16xf32>, %b0: tensor<?x?x16xf32>, %b1: tensor<?x?x16xf32>, %u: tensor<16xf32>)
    -> tensor<?x?x16xf32> {
  %h = moe.attn_res_mix %b0, %b1 query(%u) {epsilon = 1.0e-3 : f64, test.adjoints = array<i64: 0>}
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// A null result adjoint: no gradient op, no operand adjoint.
// CHECK-LABEL: func.func @null_adjoints
// CHECK-SAME: -> (tensor<?x8xf32>, tensor<?x?x16xf32>)
// CHECK-NOT: _grad
// CHECK: return
func.func @null_adjoints(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %tokens: tensor<?x?xi32>, %table: tensor<64x16xf32>)
    -> (tensor<?x8xf32>, tensor<?x?x16xf32>) {
  %r = moe.rms_norm %x, %w {test.adjoints = array<i64: -1>} : tensor<?x8xf32>, tensor<8xf32>
  %h = moe.embedding %tokens, %table {test.adjoints = array<i64: -1>}
      : tensor<?x?xi32>, tensor<64x16xf32> -> tensor<?x?x16xf32>
  return %r, %h : tensor<?x8xf32>, tensor<?x?x16xf32>
}
