// RUN: moe-opt %s -moe-shard="dp=2" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MARK
// RUN: moe-opt %s -moe-shard="dp=1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: moe-opt %s -moe-shard="dp=2" -moe-build-training-step -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=STEP
// RUN: moe-opt %s -moe-shard="dp=2" -moe-build-training-step -moe-fuse-routing -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=ROUTE
// RUN: not moe-opt %s -moe-shard="dp=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not moe-opt %s -moe-shard="ep=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=EPZERO
// RUN: moe-opt %s -moe-shard="dp=1 ep=2" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=EPMARK
// RUN: moe-opt %s -moe-shard="dp=1 ep=2" -moe-build-training-step -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=EP
// RUN: not moe-opt %s -moe-shard="dp=1 ep=3" -moe-build-training-step -split-input-file 2>&1 | FileCheck %s --check-prefix=EP3

// -moe-shard marks the model; -moe-build-training-step then averages the
// loss and the gradient over the ranks and marks the routes, which
// -moe-fuse-routing balances on the global batch.

// MARK: moe.model @quad
// MARK-SAME: moe.data_parallel = 2 : i64
// ONE-NOT: moe.data_parallel = 2
// ZERO: error: -moe-shard: dp must be at least 1, got 0
// EPZERO: error: -moe-shard: ep must be at least 1, got 0

// Expert parallel: the world is dp * ep ranks, each with its own tokens.
// EPMARK: moe.model @quad
// EPMARK-SAME: moe.data_parallel = 2 : i64, moe.expert_parallel = 2 : i64

// Each rank computes its 2 of the 4 experts on the rows every rank sends
// it: the counts [ranks, 2] first, the rows, the local weights at
// rank * 2, the rows back.
// EP-LABEL: func.func @quad_train_step(
// EP: %{{.*}}, %[[OFF:.*]], %{{.*}} = moe.dispatch
// EP: %[[RANK:.*]] = moe.expert_rank {ranks = 2 : i64}
// EP: %[[RECV:.*]] = moe.all_to_all %{{.*}} {ranks = 2 : i64} : tensor<2x2xi64>
// EP: moe.all_to_all_v %{{.*}} {ranks = 2 : i64} : (tensor<?x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x4xf32>
// EP: scf.for
// EP: %[[FIRST:.*]] = arith.muli %[[RANK]], %{{.*}} : index
// EP: tensor.extract_slice %{{.*}}[%[[FIRST]], 0, 0] [2, 4, 2] [1, 1, 1] : tensor<4x4x2xf32> to tensor<2x4x2xf32>
// EP: moe.expert_ffn %{{.*}} : (tensor<?x4xf32>, tensor<3xi64>, tensor<2x4x2xf32>, tensor<2x4x2xf32>, tensor<2x2x4xf32>) -> tensor<?x4xf32>
// EP: scf.for
// EP: moe.all_to_all_v %{{.*}} {ranks = 2 : i64} : (tensor<?x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x4xf32>
// EP: moe.combine
// EP: moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<160xf32>
// EP3: error: 'moe.expert_ffn' op has 4 experts, which the 3 expert-parallel ranks cannot share equally

// STEP-LABEL: func.func @quad_train_step(
// STEP: moe.route {{.*}}moe.data_parallel = 2 : i64
// STEP: %[[LSUM:.*]] = moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<f32>
// STEP: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// STEP: %[[LOSS:.*]] = linalg.generic {{.*}} ins(%[[LSUM]] : tensor<f32>)
// STEP: arith.divf %{{.*}}, %[[TWO]]
// STEP: %[[GSUM:.*]] = moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<160xf32>
// STEP: %[[GRAD:.*]] = linalg.generic {{.*}} ins(%[[GSUM]] : tensor<160xf32>)
// STEP: arith.divf
// STEP: math.sqrt
// STEP: return %[[LOSS]],
// STEP-LABEL: func.func @quad_grad(
// STEP: moe.route {{.*}}moe.data_parallel = 2 : i64
// STEP: moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<f32>
// STEP: moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<160xf32>

// The exact balancer gathers every rank's r = cut - s columns [E, N] as
// [D, E, N], lays them out as [E, D * N] and selects among the summed token
// count; the loads are summed too.
// ROUTE-LABEL: func.func @quad(
// ROUTE-NOT: moe.all_
// ROUTE-LABEL: func.func @quad_train_step(
// ROUTE: %[[LOAD:.*]] = moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<4xi64>
// ROUTE: %[[N:.*]] = moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<1xi64>
// ROUTE: %[[R:.*]] = tensor.extract_slice %{{.*}}[0, 0] [4, %{{.*}}] [1, 1] : tensor<4x?xf32> to tensor<4x?xf32>
// ROUTE: %[[ALL:.*]] = moe.all_gather %[[R]] {ranks = 2 : i64} : tensor<4x?xf32> -> tensor<2x4x?xf32>
// ROUTE: %[[T:.*]] = linalg.transpose ins(%[[ALL]] : tensor<2x4x?xf32>) outs(%{{.*}} : tensor<4x2x?xf32>) permutation = [1, 0, 2]
// ROUTE: tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]] : tensor<4x2x?xf32> into tensor<4x?xf32>
// ROUTE-NOT: moe.route
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

// A model sharded already with another degree.
// expected-error-re@+1 {{is already sharded over 4 ranks with ep = 1, not over 2 with ep = {{[12]}}}}
moe.model @twice(vocab_size = 8, hidden_size = 4) attributes {moe.data_parallel = 4 : i64} {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  moe.return %z : tensor<f32>
}
