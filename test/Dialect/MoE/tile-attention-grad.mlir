// RUN: moe-opt %s --moe-tile-attention="query-tile=4 key-tile=4" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.mla_attention_grad
// RUN: not moe-opt %s --moe-tile-attention="query-tile=6 key-tile=4" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOT-DIVIDING

// The flash-attention backward of -moe-tile-attention (ALGORITHMS.md section
// 3.3) on 4 x 4 tiles, gated, d_qk = 8 != d_v = 4, dynamic batch and length.
// dK and dV: an scf.forall over (batch, head, key tile) with an scf.for over
// the masked query tiles [key start / 4, min(ceil(key end / 4), tiles)) (the
// only loop with the causal select) and one over the later, unmasked ones;
// P = exp(S - lse) is recomputed from the saved log-sum-exp. dQ: an
// scf.forall over (batch, head, query tile), an unmasked scf.for over the
// key tiles below the diagonal, then the masked diagonal one. The results
// are the unpadded rows.

// CHECK-LABEL: func.func @gated
// CHECK: %[[DKV:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[J:.*]]) in (%{{.*}}, 2, %{{.*}}) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>)
// CHECK: %[[KSTART:.*]] = arith.muli %[[J]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[KSTART]], %{{.*}} : index
// CHECK: %[[CEIL:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// CHECK: %[[UNMASKED:.*]] = arith.minui %[[CEIL]], %{{.*}} : index
// CHECK: %[[MASKED:.*]]:2 = scf.for %{{.*}} = %[[FIRST]] to %[[UNMASKED]] step %{{.*}} iter_args({{.*}}) -> (tensor<4x8xf32>, tensor<4x4xf32>)
// CHECK: arith.select
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: %[[REST:.*]]:2 = scf.for %{{.*}} = %[[UNMASKED]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[MASKED]]#0, %{{.*}} = %[[MASKED]]#1) -> (tensor<4x8xf32>, tensor<4x4xf32>)
// CHECK-NOT: arith.select
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: tensor.parallel_insert_slice %[[REST]]#0 into %{{.*}}[%[[B]], %[[KSTART]], %[[H]], 0] [1, 4, 1, 8]
// CHECK: tensor.parallel_insert_slice %[[REST]]#1 into %{{.*}}[%[[B]], %[[KSTART]], %[[H]], 0] [1, 4, 1, 4]
// CHECK: %[[DQ:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, %{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x?x2x8xf32>)
// CHECK: %[[BELOW:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[FULL:.*]] = scf.for %{{.*}} = %{{.*}} to %[[BELOW]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<4x8xf32>)
// CHECK-NOT: arith.select
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[BELOW]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[FULL]]) -> (tensor<4x8xf32>)
// CHECK: arith.select
// CHECK: scf.yield
// CHECK: %[[DQOUT:.*]] = tensor.extract_slice %[[DQ]][0, 0, 0, 0]
// CHECK: %[[DKOUT:.*]] = tensor.extract_slice %[[DKV]]#0[0, 0, 0, 0]
// CHECK: %[[DVOUT:.*]] = tensor.extract_slice %[[DKV]]#1[0, 0, 0, 0]
// CHECK: return %[[DQOUT]], %[[DKOUT]], %[[DVOUT]], %{{.*}} :

// NOT-DIVIDING: error: 'moe.mla_attention_grad' op cannot be tiled: expects one of query-tile (6) and key-tile (4) to divide the other
func.func @gated(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                 %g: tensor<?x?x2x4xf32>, %o: tensor<?x?x2x4xf32>, %lse: tensor<?x2x?xf32>,
                 %dy: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) {
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %dy
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>,
         tensor<?x?x2x4xf32>, tensor<?x2x?xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
}

// -----

func.func @dynamic_value_dim(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %lse: tensor<?x2x?xf32>)
    -> tensor<?x?x2x8xf32> {
  // expected-error @+1 {{'moe.mla_attention_grad' op cannot be tiled: expects a static value head dimension, found 'tensor<?x?x2x?xf32>'}}
  %dq, %dk, %dv = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
         tensor<?x2x?xf32>, tensor<?x?x2x?xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>)
  return %dq : tensor<?x?x2x8xf32>
}
