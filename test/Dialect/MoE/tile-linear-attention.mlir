// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.kda
// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4 runtime-guard=false" --split-input-file 2>&1 | FileCheck %s --check-prefix=NOGUARD
// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4 test-force-dense=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=64 sub-chunk-size=16 reference=pre" --split-input-file 2>&1 | FileCheck %s --check-prefix=PRE

// A bounded gate: the analysis proves the diagonal tiles (mid reference,
// 2 steps of at most 5 nats: exponent 10 <= 87.34), so every tile is dense:
// no run-time guard and no per-position reduction.

// CHECK-LABEL: func.func @bounded
// CHECK: %[[G:.*]] = moe.decay_gate
// CHECK: tensor.insert_slice %[[G]] into
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]]) in (%{{.*}}, 2)
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<8x4xf32>, tensor<?x4xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %{{.*}}, %[[H]], 0] [1, 8, 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<8x8xf32>
// Forward substitution for (I + L)^-1 over the 8 rows of the chunk.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x8xf32>)
// CHECK-NOT: scf.if
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.parallel_insert_slice
// CHECK: %[[OUT:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [%{{.*}}, %{{.*}}, 2, 4] [1, 1, 1, 1]
// CHECK: return %[[OUT]]

// NOGUARD: remark: kda tiled with chunk 8, sub-chunk 4: dense diagonal tiles, proven safe (bound -5.00, mid reference over 4 rows: exponent 10.00 vs limit 87.34 for f32, margin 77.34)
// FORCED: remark: kda tiled with chunk 8, sub-chunk 4: dense diagonal tiles forced by test-force-dense
// PRE: remark: kda tiled with chunk 64, sub-chunk 16: dense diagonal tiles, proven safe (bound -5.00, pre reference over 16 rows: exponent 80.00 vs limit 87.34 for f32, margin 7.34)
func.func @bounded(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                   %z: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %b: tensor<2x8xf32>)
    -> tensor<?x?x2x4xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b
      : (tensor<?x?x2x8xf32>, tensor<2x8xf32>) -> tensor<?x?x2x8xf32>
  // expected-remark @+1 {{kda tiled with chunk 8, sub-chunk 4: dense diagonal tiles, proven safe (bound -5.00, mid reference over 4 rows: exponent 10.00 vs limit 87.34 for f32, margin 77.34)}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}

// -----

// A softplus gate is unbounded: nothing is proven, so each diagonal tile is
// guarded by its exact exponent range (an scf.if per tile: two per chunk of
// 8 with tiles of 4), falling back to the per-position path.

// CHECK-LABEL: func.func @softplus
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: %[[SAFE:.*]] = arith.cmpf ole, %{{.*}}, %{{.*}} : f32
// CHECK: scf.if %[[SAFE]] -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: scf.yield
// CHECK: } else {
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs({{.*}} : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: scf.if
// CHECK: return

// Without the guard, the unproven tiles take the per-position path only.
// NOGUARD: remark: kda tiled with chunk 8, sub-chunk 4: per-position diagonal tiles, not proven (bound none, mid reference over 4 rows: exponent INF vs limit 87.34 for f32, margin -INF)
// NOGUARD-LABEL: func.func @softplus
// NOGUARD-NOT: scf.if
// NOGUARD: outs({{.*}} : tensor<4x4xf32>, tensor<4x4xf32>)
// NOGUARD-NOT: scf.if
// NOGUARD: return
// FORCED: remark: kda tiled with chunk 8, sub-chunk 4: dense diagonal tiles forced by test-force-dense (bound none
func.func @softplus(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                    %z: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %b: tensor<2x8xf32>,
                    %a: tensor<2xf32>) -> tensor<?x?x2x4xf32> {
  %g = moe.decay_gate <softplus> %z, %b, %a
      : (tensor<?x?x2x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<?x?x2x8xf32>
  // expected-remark @+1 {{kda tiled with chunk 8, sub-chunk 4: runtime-guarded diagonal tiles, not proven (bound none, mid reference over 4 rows: exponent INF vs limit 87.34 for f32, margin -INF)}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}

// -----

// A value-major initial state is transposed in and the final state out; an
// explicit scale is applied to q.

// CHECK-LABEL: func.func @value_major_state
// CHECK: linalg.transpose ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>) permutation = [1, 0]
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: %[[S:.*]] = linalg.transpose ins(%{{.*}} : tensor<?x2x8x4xf32>) outs(%{{.*}} : tensor<?x2x4x8xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[SC:.*]] = tensor.cast %[[S]] : tensor<?x2x4x8xf32> to tensor<3x2x4x8xf32>
// CHECK: return %{{.*}}, %[[SC]]
func.func @value_major_state(%q: tensor<3x?x2x8xf32>, %k: tensor<3x?x2x8xf32>,
    %v: tensor<3x?x2x4xf32>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xf32>,
    %s0: tensor<3x2x4x8xf32>) -> (tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>) {
  // expected-remark @+1 {{runtime-guarded diagonal tiles, not proven (bound none}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<3x?x2x8xf32>, tensor<3x?x2x8xf32>, tensor<3x?x2x4xf32>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xf32>, tensor<3x2x4x8xf32>) -> (tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>)
  return %o, %s : tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>
}
