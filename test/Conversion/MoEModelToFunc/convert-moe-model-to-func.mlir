// RUN: moe-opt %s -convert-moe-model-to-func -split-input-file | FileCheck %s

// Parameters are packed in body order: 8x4 at 0, 4 at 32, 0-d at 36; the
// bf16 one is converted from its fp32 master value; moe.return becomes
// func.return.

// CHECK-LABEL: func.func @tiny
// CHECK-SAME: (%[[P:.*]]: tensor<41xf32>, %[[T:.*]]: tensor<?x?xi32>, %[[L:.*]]: tensor<?x?xi32>) -> tensor<f32>
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[P]][0] [32] [1] : tensor<41xf32> to tensor<32xf32>
// CHECK: %[[W:.*]] = tensor.expand_shape %[[S0]] {{\[\[}}0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
// CHECK: %[[E:.*]] = moe.embedding %[[T]], %[[W]]
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[P]][32] [4] [1] : tensor<41xf32> to tensor<4xf32>
// CHECK: moe.rms_norm %[[E]], %[[S1]]
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[P]][36] [1] [1] : tensor<41xf32> to tensor<1xf32>
// CHECK: tensor.collapse_shape %[[S2]] [] : tensor<1xf32> into tensor<f32>
// CHECK: %[[S3:.*]] = tensor.extract_slice %[[P]][37] [4] [1] : tensor<41xf32> to tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[LOSS:.*]] = moe.lm_head
// CHECK: return %[[LOSS]] : tensor<f32>
// CHECK-NOT: moe.param
// CHECK-NOT: moe.model
moe.model @tiny(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %w = moe.param "embed" init <normal, std = 0.02> : tensor<8x4xf32>
  %h = moe.embedding %tokens, %w : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %n = moe.param "norm" init <ones> : tensor<4xf32>
  %x = moe.rms_norm %h, %n : tensor<?x?x4xf32>, tensor<4xf32>
  %s = moe.param "scalar" init <zeros> : tensor<f32>
  %b = moe.param "bf16" init <zeros> : tensor<4xbf16>
  %loss = moe.lm_head %x, %w, %labels
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// A model without parameters takes an empty buffer; functions are left alone.

// CHECK-LABEL: func.func @untouched
// CHECK-LABEL: func.func @empty
// CHECK-SAME: (%{{.*}}: tensor<0xf32>, %{{.*}}: tensor<2x3xi32>, %{{.*}}: tensor<2x3xi32>) -> tensor<f32>
func.func @untouched() {
  return
}
moe.model @empty(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<2x3xi32>, %labels: tensor<2x3xi32>):
  %zero = arith.constant dense<0.0> : tensor<f32>
  moe.return %zero : tensor<f32>
}
