// RUN: moe-opt %s --moe-tile-loss="token-tile=4 vocab-chunk=8" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.linear_cross_entropy --implicit-check-not=moe.cross_entropy_grad
// RUN: not moe-opt %s --moe-tile-loss="vocab-chunk=0" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO

// -moe-tile-loss on 4-token tiles and 8-row vocabulary chunks, V = 20: two
// full chunks in an scf.for and a static remainder chunk of 4 rows. The
// tokens are flattened and padded to whole tiles; the [tokens, V] logits
// never appear, only [4, 8] and [4, 4] score tiles.

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<20x8xf32>, %[[L:.*]]: tensor<?x?xi32>)
// CHECK: %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[XF]], %{{.*}} : tensor<?x8xf32>
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[N]], %{{.*}} : index
// CHECK: %[[FWD:.*]]:2 = scf.forall (%{{.*}}) in (%[[TILES]]) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<?xf32>, tensor<?xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0] [4, 8] [1, 1] : tensor<?x8xf32> to tensor<4x8xf32>
// CHECK: %[[CHUNKS:.*]]:3 = scf.for %[[C:.*]] = %{{.*}} to %c2 step %{{.*}} iter_args({{.*}}) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: tensor.extract_slice %[[W]][%{{.*}}, 0] [8, 8] [1, 1] : tensor<20x8xf32> to tensor<8x8xf32>
// CHECK: outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: tensor.extract_slice %[[W]][%c16, 0] [4, 8] [1, 1] : tensor<20x8xf32> to tensor<4x8xf32>
// CHECK: outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: math.log
// CHECK: scf.forall.in_parallel
// CHECK: %[[LSE:.*]] = tensor.extract_slice %[[FWD]]#0[0] [%[[N]]] [1]
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%{{.*}}#0, %{{.*}}#1 : tensor<f32>, tensor<f32>)
// CHECK: %[[LSE2:.*]] = tensor.expand_shape %[[LSE]] {{\[}}[0, 1]] output_shape
// CHECK: return %[[MEAN]], %[[LSE2]] : tensor<f32>, tensor<?x?xf32>
// CHECK-NOT: tensor<?x20xf32>

// ZERO: error: 'moe.linear_cross_entropy' op cannot be tiled: expects positive token-tile (32) and vocab-chunk (0)
func.func @fused(%x: tensor<?x?x8xf32>, %w: tensor<20x8xf32>, %l: tensor<?x?xi32>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %l
      : (tensor<?x?x8xf32>, tensor<20x8xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return %loss, %lse : tensor<f32>, tensor<?x?xf32>
}

// -----

// The adjoint: per-token coefficients d_loss / N_valid (0 where ignored), a
// forall over token tiles walking the chunks for d_input, then one forall
// over the two full chunks and one over the remainder chunk, each walking
// the token tiles, for d_weight.

// CHECK-LABEL: func.func @fused_grad
// CHECK: arith.divf
// CHECK: %[[DX:.*]] = scf.forall (%{{.*}}) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x8xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2 step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: %[[DW1:.*]] = scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<20x8xf32>)
// CHECK: scf.for {{.*}} -> (tensor<8x8xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<20x8xf32>
// CHECK: %[[DW2:.*]] = scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}} = %[[DW1]]) -> (tensor<20x8xf32>)
// CHECK: scf.for {{.*}} -> (tensor<4x8xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<20x8xf32>
// CHECK: return %{{.*}}, %[[DW2]] : tensor<?x8xbf16>, tensor<20x8xf32>
func.func @fused_grad(%x: tensor<?x8xbf16>, %w: tensor<20x8xf32>, %l: tensor<?xi64>,
    %lse: tensor<?xf32>, %d: tensor<f32>) -> (tensor<?x8xbf16>, tensor<20x8xf32>) {
  %dx, %dw = moe.linear_cross_entropy_grad %x, %w, %l, %lse, %d {ignore_index = -1 : i64}
      : (tensor<?x8xbf16>, tensor<20x8xf32>, tensor<?xi64>, tensor<?xf32>, tensor<f32>)
      -> (tensor<?x8xbf16>, tensor<20x8xf32>)
  return %dx, %dw : tensor<?x8xbf16>, tensor<20x8xf32>
}

// -----

// cross_entropy_grad on explicit logits: row max, log-sum-exp, coefficients,
// then one element-wise generic in the logits' type.

// CHECK-LABEL: func.func @explicit
// CHECK: math.log
// CHECK: %[[DZ:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x?x50xf16>)
// CHECK: return %[[DZ]]
func.func @explicit(%z: tensor<?x?x50xf16>, %l: tensor<?x?xi32>, %d: tensor<f32>)
    -> tensor<?x?x50xf16> {
  %dz = moe.cross_entropy_grad %z, %l, %d
      : (tensor<?x?x50xf16>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x50xf16>
  return %dz : tensor<?x?x50xf16>
}

// -----

func.func @dynamic_vocab(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>, %l: tensor<?xi32>)
    -> tensor<f32> {
  // expected-error @+1 {{'moe.linear_cross_entropy' op cannot be tiled: expects a static weight shape (vocabulary and hidden size), found 'tensor<?x8xf32>'}}
  %loss, %lse = moe.linear_cross_entropy %x, %w, %l
      : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>) -> (tensor<f32>, tensor<?xf32>)
  return %loss : tensor<f32>
}
