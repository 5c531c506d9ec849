// RUN: moe-opt %s --moe-tile-attention="query-tile=4 key-tile=4" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.mla_attention
// RUN: moe-opt %s --moe-tile-attention="query-tile=8 key-tile=4" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=TWO
// RUN: moe-opt %s --moe-tile-attention="query-tile=4 key-tile=16" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=WIDE

// Invalid tile sizes are reported on each moe.mla_attention op (the op that
// cannot be tiled). Each needs its own run, so these are checked on stderr
// rather than with -verify-diagnostics.
// RUN: not moe-opt %s --moe-tile-attention="query-tile=0" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not moe-opt %s --moe-tile-attention="key-tile=-16" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not moe-opt %s --moe-tile-attention="query-tile=48 key-tile=64" --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOT-DIVIDING

// Gated attention, dynamic batch and length, d_qk = 8 != d_v = 4, tiles of
// 4 x 4. The inputs are padded with zeros to whole tiles; an scf.forall
// runs over (batch, head, query tile); the query tile is scaled once by
// 8^-1/2 * log2(e). The key tiles below the diagonal go through an scf.for
// whose body has no mask; then the diagonal tile, the only one with the
// causal select. The epilogue divides by the running sum, applies the
// sigmoid gate and forms the log-sum-exp ln(2) m + ln(l).

// CHECK-LABEL: func.func @gated
// CHECK-SAME: (%[[Q:.*]]: tensor<?x?x2x8xf32>, %[[K:.*]]: tensor<?x?x2x8xf32>, %[[V:.*]]: tensor<?x?x2x4xf32>, %[[G:.*]]: tensor<?x?x2x4xf32>)
// CHECK: %[[T:.*]] = tensor.dim %[[Q]], %c1 : tensor<?x?x2x8xf32>
// CHECK: %[[PADDED:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[T]], %{{.*}} : index
// CHECK: %[[QP:.*]] = tensor.insert_slice %[[Q]] into
// CHECK: %[[KP:.*]] = tensor.insert_slice %[[K]] into
// CHECK: %[[VP:.*]] = tensor.insert_slice %[[V]] into
// CHECK: %[[GP:.*]] = tensor.insert_slice %[[G]] into
// CHECK: %[[ATT:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[I:.*]]) in (%{{.*}}, 2, %[[TILES]]) shared_outs(%[[OUT:.*]] = %{{.*}}, %[[LSE:.*]] = %{{.*}}) -> (tensor<?x?x2x4xf32>, tensor<?x2x?xf32>)
// CHECK: %[[QSTART:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK: tensor.extract_slice %[[QP]][%[[B]], %[[QSTART]], %[[H]], 0] [1, 4, 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<4x8xf32>
// CHECK: arith.constant 0.510069728 : f32
// CHECK: %[[BELOW:.*]] = arith.divui %[[QSTART]], %{{.*}} : index
// CHECK: %[[FULL:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %[[BELOW]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
// CHECK: tensor.extract_slice %[[KP]][%[[B]], %{{.*}}, %[[H]], 0] [1, 4, 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<4x8xf32>
// CHECK: tensor.extract_slice %[[VP]][%[[B]], %{{.*}}, %[[H]], 0] [1, 4, 1, 4] [1, 1, 1, 1] : tensor<?x?x2x4xf32> to tensor<4x4xf32>
// CHECK-NOT: arith.select
// CHECK: arith.maximumf
// CHECK-NOT: arith.select
// CHECK: math.exp2
// CHECK-NOT: arith.select
// CHECK: scf.yield
// The diagonal tile: key tile BELOW, masked by key position <= query position.
// CHECK: %[[KSTART:.*]] = arith.muli %[[BELOW]], %{{.*}} : index
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[ROW:.*]] = arith.addi %[[QSTART]], %[[R]] : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[COL:.*]] = arith.addi %[[KSTART]], %[[C]] : index
// CHECK: %[[VISIBLE:.*]] = arith.cmpi ule, %[[COL]], %[[ROW]] : index
// CHECK: arith.select %[[VISIBLE]], %{{.*}}, %{{.*}} : f32
// CHECK: math.exp2
// CHECK-NOT: arith.select
// CHECK: tensor.extract_slice %[[GP]][%[[B]], %[[QSTART]], %[[H]], 0] [1, 4, 1, 4]
// CHECK: %[[O:.*]] = linalg.generic
// CHECK: arith.divf
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: %[[L:.*]] = linalg.generic
// CHECK: arith.constant 0.693147182 : f32
// CHECK: math.log
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %[[O]] into %[[OUT]][%[[B]], %[[QSTART]], %[[H]], 0] [1, 4, 1, 4] [1, 1, 1, 1] : tensor<4x4xf32> into tensor<?x?x2x4xf32>
// CHECK: tensor.parallel_insert_slice %[[L]] into %[[LSE]][%[[B]], %[[H]], %[[QSTART]]] [1, 1, 4] [1, 1, 1] : tensor<4xf32> into tensor<?x2x?xf32>
// CHECK: %[[RO:.*]] = tensor.extract_slice %[[ATT]]#0[0, 0, 0, 0] [%{{.*}}, %[[T]], 2, 4] [1, 1, 1, 1]
// CHECK: %[[RL:.*]] = tensor.extract_slice %[[ATT]]#1[0, 0, 0] [%{{.*}}, 2, %[[T]]] [1, 1, 1]
// CHECK: return %[[RO]], %[[RL]]

// With 8-row query tiles and 4-key tiles, two key tiles overlap each query
// tile: they are visited by a second scf.for, the only one with the mask.
// TWO-LABEL: func.func @gated
// TWO: scf.forall
// TWO: arith.constant 8 : index
// TWO: %[[BELOW:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// TWO: scf.for %{{.*}} = %{{.*}} to %[[BELOW]] step
// TWO-SAME: -> (tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>)
// TWO-NOT: arith.select
// TWO: scf.yield
// TWO: %[[END:.*]] = arith.addi %[[BELOW]], %{{.*}} : index
// TWO: scf.for %{{.*}} = %[[BELOW]] to %[[END]] step
// TWO: arith.cmpi ule
// TWO: arith.select
// TWO: scf.yield
// TWO-NOT: arith.select
// TWO: scf.forall.in_parallel

// With 4-row query tiles and 16-key tiles, one key tile holds the diagonal
// of each query tile; the sequence is padded to a multiple of 16.
// WIDE-LABEL: func.func @gated
// WIDE: arith.ceildivui %{{.*}}, %c16
// WIDE: scf.forall
// WIDE: scf.for
// WIDE-SAME: -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>)
// WIDE: tensor.extract_slice {{.*}} [1, 16, 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<16x8xf32>
// WIDE-NOT: arith.select
// WIDE: scf.yield
// WIDE: arith.select
// WIDE-NOT: arith.select
// WIDE: scf.forall.in_parallel

func.func @gated(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                 %g: tensor<?x?x2x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x?xf32>) {
  // Invalid tile sizes are reported at the op:
  // ZERO: tile-attention.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'moe.mla_attention' op cannot be tiled: expects positive query-tile (0) and key-tile (64)
  // NEGATIVE: tile-attention.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: 'moe.mla_attention' op cannot be tiled: expects positive query-tile (64) and key-tile (-16)
  // NOT-DIVIDING: tile-attention.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'moe.mla_attention' op cannot be tiled: expects one of query-tile (48) and key-tile (64) to divide the other
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x4xf32>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x?x2x4xf32>, tensor<?x2x?xf32>
}

// -----

// No gate, static shapes, bf16 operands and an explicit scale: tiles are
// fp32 (the operands are extended), the query is scaled by 0.5 * log2(e),
// the epilogue has no sigmoid, and the output is truncated back to bf16 and
// cast to the static result type. T = 6 is padded to 8.

// CHECK-LABEL: func.func @no_gate_bf16
// CHECK-COUNT-3: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.forall
// CHECK: arith.constant 0.72134751 : f32
// CHECK: arith.divf
// CHECK-NOT: math.exp
// CHECK: math.log
// CHECK: scf.forall.in_parallel
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[OUT:.*]] = tensor.cast %{{.*}} : tensor<?x?x2x4xbf16> to tensor<3x6x2x4xbf16>
// CHECK: %[[LSE:.*]] = tensor.cast %{{.*}} : tensor<?x2x?xf32> to tensor<3x2x6xf32>
// CHECK: return %[[OUT]], %[[LSE]]
func.func @no_gate_bf16(%q: tensor<3x6x2x8xbf16>, %k: tensor<3x6x2x8xbf16>, %v: tensor<3x6x2x4xbf16>)
    -> (tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.5 : f64}
      : (tensor<3x6x2x8xbf16>, tensor<3x6x2x8xbf16>, tensor<3x6x2x4xbf16>)
      -> (tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>)
  return %o, %lse : tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>
}

// -----

// A dynamic number of heads is a dimension of the forall.

// CHECK-LABEL: func.func @dynamic_heads
// CHECK: %[[H:.*]] = tensor.dim %{{.*}}, %c2 : tensor<1x?x?x8xf32>
// CHECK: scf.forall ({{.*}}) in (%{{.*}}, %[[H]], %{{.*}})
func.func @dynamic_heads(%q: tensor<1x?x?x8xf32>, %k: tensor<1x?x?x8xf32>, %v: tensor<1x?x?x8xf32>)
    -> tensor<1x?x?x8xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>)
      -> (tensor<1x?x?x8xf32>, tensor<1x?x?xf32>)
  return %o : tensor<1x?x?x8xf32>
}

// -----

// Other moe ops are left alone.

// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: moe.l2_norm
// CHECK-NEXT: return
func.func @untouched(%x: tensor<?x?x2x8xf32>) -> tensor<?x?x2x8xf32> {
  %y = moe.l2_norm %x : tensor<?x?x2x8xf32>
  return %y : tensor<?x?x2x8xf32>
}

// -----

// The value head dimension must be static: it is a dimension of the tiles.

func.func @dynamic_value_dim(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>)
    -> tensor<?x?x2x?xf32> {
  // expected-error @+1 {{'moe.mla_attention' op cannot be tiled: expects a static value head dimension, found 'tensor<?x?x2x?xf32>'}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>)
      -> (tensor<?x?x2x?xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x?xf32>
}
