// RUN: moe-opt -moe-build-training-step -split-input-file -verify-diagnostics %s | FileCheck %s

// The three functions of docs/Training.md on a model whose loss reads two
// parameters; a moe.moe_ffn beside it supplies the load and next_bias.
// Layout: embed 0 (32), w_router 32 (16), router_bias 48 (4, buffer),
// w_gate 52, w_up 84, w_down 116 (32 each), a 148 (6), s 154 (6, no decay).

// CHECK-LABEL: func.func @quad(
// CHECK-SAME: %{{.*}}: tensor<160xf32>, %{{.*}}: tensor<?x?xi32>, %{{.*}}: tensor<?x?xi32>) -> tensor<f32>
// CHECK: moe.moe_ffn

// @quad_train_step: the clip factor, AdamW on three runs of slots (decayed
// 0..47, buffer 48..51 copied, decayed 52..153 with "a", not decayed
// 154..159), the router bias overwrite, the metrics.
// CHECK-LABEL: func.func @quad_train_step(
// CHECK-SAME: %[[P:[^:]*]]: tensor<160xf32>, %[[M:[^:]*]]: tensor<160xf32>, %[[V:[^:]*]]: tensor<160xf32>, %{{.*}}: tensor<?x?xi32>, %{{.*}}: tensor<?x?xi32>, %[[H:[^:]*]]: tensor<8xf32>)
// CHECK-SAME: -> (tensor<f32>, tensor<160xf32>, tensor<160xf32>, tensor<160xf32>, tensor<6xf32>)
// CHECK-SAME: moe.metric_names = ["grad_norm", "layers.0.ffn.max_vio", "layers.0.ffn.load", "layers.0.ffn.load", "layers.0.ffn.load", "layers.0.ffn.load"]
// CHECK: %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[NEXT:[^ ]*]] = moe.route
// The hyper-parameters, gradient norm and clip factor stay 0-D tensors
// (kernels read them; the host never extracts a scalar).
// CHECK-NOT: tensor.extract %
// CHECK: %[[LR:.*]] = tensor.extract_slice %[[H]][0] [1] [1] : tensor<8xf32> to tensor<f32>
// CHECK: %[[MAXNORM:.*]] = tensor.extract_slice %[[H]][5] [1] [1] : tensor<8xf32> to tensor<f32>
// CHECK: %[[NORM:.*]] = linalg.generic {{.*}}iterator_types = []} ins(%{{.*}} : tensor<f32>)
// CHECK: math.sqrt
// CHECK: %[[CLIP:.*]] = linalg.generic {{.*}}iterator_types = []} ins(%[[NORM]], %[[MAXNORM]] : tensor<f32>, tensor<f32>)
// CHECK: arith.minimumf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: tensor.extract_slice %[[P]][0] [48] [1]
// CHECK: linalg.generic {{.*}}ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CLIP]], %[[LR]],
// CHECK: ^bb0(%{{[^:]*}}: f32, %[[G:[^:]*]]: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[CLIPV:[^:]*]]: f32,
// CHECK: arith.mulf %[[CLIPV]], %[[G]]
// CHECK: math.sqrt
// CHECK: tensor.extract_slice %[[P]][48] [4] [1]
// CHECK: tensor.extract_slice %[[M]][48] [4] [1]
// CHECK: tensor.extract_slice %[[V]][48] [4] [1]
// CHECK: tensor.insert_slice %{{.*}}[48] [4] [1]
// CHECK: tensor.extract_slice %[[P]][52] [102] [1]
// CHECK: tensor.extract_slice %[[P]][154] [6] [1]
// CHECK: tensor.insert_slice %[[NEXT]] into %{{.*}}[48] [4] [1]
// CHECK: tensor.expand_shape %[[NORM]] [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: arith.sitofp
// MaxVio from the 0-D maximum and total of the loads.
// CHECK: linalg.generic {{.*}}iterator_types = []} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK: arith.divf
// CHECK-NOT: tensor.extract %
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<160xf32>, tensor<160xf32>, tensor<160xf32>, tensor<6xf32>

// @quad_grad: the gradient of "a" and "s" inserted at their slots of zeros.
// CHECK-LABEL: func.func @quad_grad(
// CHECK-SAME: %[[GP:[^:]*]]: tensor<160xf32>, %{{.*}}: tensor<?x?xi32>, %{{.*}}: tensor<?x?xi32>) -> (tensor<f32>, tensor<160xf32>)
// CHECK-NOT: moe.moe_ffn
// CHECK: moe.route
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<160xf32>)
// CHECK: %[[G1:.*]] = tensor.insert_slice %{{.*}} into %[[ZERO]][154] [6] [1]
// CHECK: %[[G2:.*]] = tensor.insert_slice %{{.*}} into %[[G1]][148] [6] [1]
// CHECK: return %{{.*}}, %[[G2]] : tensor<f32>, tensor<160xf32>
// CHECK-NOT: moe.model
moe.model @quad(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<4x4xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<4x2x4xf32>
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %a = moe.param "a" init <normal, std = 0.02> : tensor<6xf32>
  %s = moe.param "s" init <ones> no_weight_decay : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%a, %s : tensor<6xf32>, tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %sv: f32, %acc: f32):
    %as = arith.mulf %av, %sv : f32
    %sq = arith.mulf %as, %as : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// The router bias must be a buffer parameter.
moe.model @not_buffer(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "w_router" init <normal, std = 0.02> : tensor<4x4xf32>
  %rb = moe.param "router_bias" init <zeros> : tensor<4xf32>
  %wg = moe.param "w_gate" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wu = moe.param "w_up" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wd = moe.param "w_down" init <normal, std = 0.02> : tensor<4x2x4xf32>
  // expected-error @+1 {{-moe-build-training-step needs the router bias to be a moe.param marked 'buffer'}}
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %zero = arith.constant dense<0.0> : tensor<f32>
  moe.return %zero : tensor<f32>
}

// -----

func.func @taken_grad() {
  return
}
// expected-error @+1 {{cannot build @taken_grad: the module already defines that symbol}}
moe.model @taken(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %zero = arith.constant dense<0.0> : tensor<f32>
  moe.return %zero : tensor<f32>
}

// -----

// A loss computed through an op without an adjoint rule.
moe.model @no_rule(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %a = moe.param "a" init <normal, std = 0.02> : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{cannot differentiate 'tensor.pad': no adjoint rule}}
  %padded = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<6xf32> to tensor<8xf32>
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%padded : tensor<8xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %acc: f32):
    %r = arith.addf %acc, %av : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
