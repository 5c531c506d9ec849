// RUN: moe-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(moe-chunk-loss{vocab-chunk=128}))' -verify-diagnostics | FileCheck %s

// V = 300 in chunks of 128: two full chunks and a remainder of 44, each a
// projection of all the tokens onto its rows of W, its row maximum, the sum
// of exp(z - m') and the label's logit; then lse = m + log l and the mean
// over the valid labels, and lse back in the labels' shape.

// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[W:.*]]: tensor<300x64xf32>, %[[L:.*]]: tensor<?x?xi32>)
// CHECK:      %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]]
// CHECK:      %[[W0:.*]] = tensor.extract_slice %[[W]][0, 0] [128, 64] [1, 1]
// CHECK:      linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XF]], %[[W0]] : tensor<?x64xf32>, tensor<128x64xf32>)
// CHECK:        arith.maxnumf
// CHECK:        math.exp
// CHECK:        tensor.extract
// CHECK:      tensor.extract_slice %[[W]][128, 0] [128, 64] [1, 1]
// CHECK:      tensor.extract_slice %[[W]][256, 0] [44, 64] [1, 1]
// CHECK-NOT:  tensor.extract_slice %[[W]]
// CHECK:        math.log
// CHECK:      linalg.generic {{.*}} iterator_types = ["reduction"]}
// CHECK:        arith.cmpi ne, %{{.*}}, %c-100_i32
// CHECK:        arith.divf
// CHECK:      %[[LSE:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]]
// CHECK:      return %{{.*}}, %[[LSE]] : tensor<f32>, tensor<?x?xf32>
// CHECK-NOT:  moe.linear_cross_entropy
func.func @loss(%x: tensor<?x?x64xf32>, %w: tensor<300x64xf32>, %labels: tensor<?x?xi32>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels
      : (tensor<?x?x64xf32>, tensor<300x64xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return %loss, %lse : tensor<f32>, tensor<?x?xf32>
}

// -----

func.func @dynamic_vocab(%x: tensor<?x64xf32>, %w: tensor<?x64xf32>, %labels: tensor<?xi32>)
    -> (tensor<f32>, tensor<?xf32>) {
  // expected-error @below {{-moe-chunk-loss needs a static vocabulary and width}}
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?xi32>) -> (tensor<f32>, tensor<?xf32>)
  return %loss, %lse : tensor<f32>, tensor<?xf32>
}

// -----

// The adjoint in the same chunks: per chunk the logits again (a projection
// onto the chunk's rows of W), their adjoint G (exp(z - lse) minus the
// label's one-hot, times the token's coefficient), G W_c added into
// d_input and G^T x, the chunk's rows of d_weight, concatenated; d_input
// back in the input's shape and bf16.

// CHECK-LABEL: func.func @grad
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xbf16>, %[[W:.*]]: tensor<300x64xbf16>
// CHECK:      %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]]
// CHECK:      %[[W0:.*]] = tensor.extract_slice %[[W]][0, 0] [128, 64] [1, 1]
// CHECK:      %[[Z0:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XF]], %[[W0]] : tensor<?x64xbf16>, tensor<128x64xbf16>)
// CHECK:      %[[G0:.*]] = linalg.generic {{.*}} ins(%[[Z0]], {{.*}} : tensor<?x128xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xi32>)
// CHECK:        math.exp
// CHECK:        arith.cmpi eq
// CHECK:      linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[G0]], %[[W0]] : tensor<?x128xf32>, tensor<128x64xbf16>)
// CHECK:      linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[G0]], %[[XF]] : tensor<?x128xf32>, tensor<?x64xbf16>) outs(%{{.*}} : tensor<128x64xf32>)
// CHECK:      tensor.extract_slice %[[W]][128, 0] [128, 64] [1, 1]
// CHECK:      tensor.extract_slice %[[W]][256, 0] [44, 64] [1, 1]
// CHECK-NOT:  tensor.extract_slice %[[W]]
// CHECK:      tensor.concat dim(0) {{.*}} : (tensor<128x64xf32>, tensor<128x64xf32>, tensor<44x64xf32>) -> tensor<300x64xf32>
// CHECK:      arith.truncf
// CHECK:      return %{{.*}}, %{{.*}} : tensor<?x?x64xbf16>, tensor<300x64xbf16>
// CHECK-NOT:  moe.linear_cross_entropy_grad
func.func @grad(%x: tensor<?x?x64xbf16>, %w: tensor<300x64xbf16>, %labels: tensor<?x?xi32>,
                %lse: tensor<?x?xf32>, %dloss: tensor<f32>) -> (tensor<?x?x64xbf16>, tensor<300x64xbf16>) {
  %dx, %dw = moe.linear_cross_entropy_grad %x, %w, %labels, %lse, %dloss
      : (tensor<?x?x64xbf16>, tensor<300x64xbf16>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<f32>)
      -> (tensor<?x?x64xbf16>, tensor<300x64xbf16>)
  return %dx, %dw : tensor<?x?x64xbf16>, tensor<300x64xbf16>
}
