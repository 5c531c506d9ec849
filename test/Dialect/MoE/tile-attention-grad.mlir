// RUN: moe-opt %s --moe-tile-attention="query-tile=4 key-tile=4" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.mla_attention_grad
// RUN: not moe-opt %s --moe-tile-attention="query-tile=6 key-tile=4" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOT-DIVIDING

// The flash-attention backward of -moe-tile-attention (ALGORITHMS.md section
// 3.3) on 4 x 4 tiles, gated, d_qk = 8 != d_v = 4, dynamic batch and length.
// dK and dV: an scf.forall over (batch, head, key tile) with one scf.for
// over the query tiles from key start / 4 that carries dK | dV side by side
// in one [4, 8 + 4] tile, updated in place; every tile causally masked (the
// mask keeps every score past the diagonal); P = exp(S - lse) is
// recomputed from the saved log-sum-exp. dQ: an scf.forall over (batch,
// head, query tile), one masked scf.for over the key tiles up to the
// diagonal, accumulating in place. The results are the unpadded rows.

// CHECK-LABEL: func.func @gated
// CHECK: %[[DKV:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[J:.*]]) in (%{{.*}}, 2, %{{.*}}) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>)
// CHECK: %[[KSTART:.*]] = arith.muli %[[J]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[KSTART]], %{{.*}} : index
// CHECK: %[[KV:.*]] = scf.for %{{.*}} = %[[FIRST]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<4x12xf32>)
// CHECK: arith.select
// CHECK: math.exp
// CHECK: tensor.extract_slice %[[ACC]][0, 0] [4, 8] [1, 1]
// CHECK: tensor.extract_slice %[[ACC]][0, 8] [4, 4] [1, 1]
// CHECK: %[[WITHK:.*]] = tensor.insert_slice %{{.*}} into %[[ACC]][0, 0] [4, 8] [1, 1]
// CHECK: %[[WITHKV:.*]] = tensor.insert_slice %{{.*}} into %[[WITHK]][0, 8] [4, 4] [1, 1]
// CHECK: scf.yield %[[WITHKV]]
// CHECK-NOT: {{scf\.for }}
// CHECK: %[[DKT:.*]] = tensor.extract_slice %[[KV]][0, 0] [4, 8] [1, 1]
// CHECK: %[[DVT:.*]] = tensor.extract_slice %[[KV]][0, 8] [4, 4] [1, 1]
// CHECK: tensor.parallel_insert_slice %[[DKT]] into %{{.*}}[%[[B]], %[[KSTART]], %[[H]], 0] [1, 4, 1, 8]
// CHECK: tensor.parallel_insert_slice %[[DVT]] into %{{.*}}[%[[B]], %[[KSTART]], %[[H]], 0] [1, 4, 1, 4]
// CHECK: %[[DQ:.*]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, %{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x?x2x8xf32>)
// CHECK: %[[BELOW:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[END:.*]] = arith.addi %[[BELOW]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args(%[[DQACC:.*]] = %{{.*}}) -> (tensor<4x8xf32>)
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} outs(%[[DQACC]] : tensor<4x8xf32>)
// CHECK: scf.yield
// CHECK-NOT: {{scf\.for }}
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
