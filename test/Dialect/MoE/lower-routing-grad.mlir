// RUN: moe-opt %s --moe-lower-routing-grad="row-tile=8" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.route_grad --implicit-check-not=moe.dispatch_grad --implicit-check-not=moe.expert_ffn_grad --implicit-check-not=moe.glu_ffn_grad --implicit-check-not=moe.combine_grad
// RUN: not moe-opt %s --moe-lower-routing-grad="row-tile=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not moe-opt %s --moe-lower-routing-grad="expert-blocks=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: moe-opt %s --moe-lower-routing-grad="row-tile=8 expert-blocks=10" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SPLIT

// OPTIONS: error: expects a positive row-tile, got 0
// BLOCKS: error: expects a positive expert-blocks and a non-negative expert-partial-bytes, got 0 and 268435456

// The grouped expert gradient (E = 4, d = 16, width 8): one scf.forall over
// the experts; each walks its rows in 8-row tiles padded with zeros,
// recomputes the gate and up GEMMs, forms dh = dy W_down^T, the
// activation's value and derivatives in one generic, the tile's input
// gradient, and accumulates its own [16, 8] / [8, 16] fp32 weight
// gradients, written to its slice of the [4, ...] results.

// CHECK-LABEL: func.func @experts
// CHECK: %[[G:.*]]:4 = scf.forall (%[[E:.*]]) in (4) shared_outs({{.*}}) -> (tensor<?x16xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>)
// The tile loop writes the input gradient into the expert's rows of the
// shared result.
// CHECK: %[[DXS:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [%{{.*}}, 16] [1, 1] : tensor<?x16xf32> to tensor<?x16xf32>
// CHECK: %[[T:.*]]:4 = scf.for {{.*}} iter_args(%{{.*}} = %[[DXS]], {{.*}}) -> (tensor<?x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
// CHECK: %[[X:.*]] = tensor.pad
// CHECK: %[[DY:.*]] = tensor.pad
// CHECK: linalg.generic {{.*}} ins(%[[X]], %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[DY]], %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: %[[ACT:.*]]:3 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACT]]#1, %[[ACT]]#2, %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: tensor.insert_slice
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[ACT]]#1, %[[ACT]]#2 : tensor<8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ACT]]#0, %[[DY]] : tensor<8x8xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %[[T]]#0 into %{{.*}} : tensor<?x16xf32> into tensor<?x16xf32>
// CHECK: tensor.parallel_insert_slice %[[T]]#1 into %{{.*}}[%[[E]], 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<4x16x8xf32>
// CHECK: tensor.parallel_insert_slice %[[T]]#2 into %{{.*}}[%[[E]], 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<4x16x8xf32>
// CHECK: tensor.parallel_insert_slice %[[T]]#3 into %{{.*}}[%[[E]], 0, 0] [1, 8, 16] [1, 1, 1] : tensor<8x16xf32> into tensor<4x8x16xf32>
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3

// With expert-blocks = 10, 3 splits of each expert's rows: one iteration
// per (expert, split), fp32 partials [4, 3, ...] summed over the splits.
// SPLIT-LABEL: func.func @experts
// SPLIT: %[[G:.*]]:4 = scf.forall (%[[E:.*]], %[[S:.*]]) in (4, 3) shared_outs({{.*}}) -> (tensor<?x16xf32>, tensor<4x3x16x8xf32>, tensor<4x3x16x8xf32>, tensor<4x3x8x16xf32>)
// SPLIT: scf.for
// SPLIT: scf.forall.in_parallel
// SPLIT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[E]], %[[S]], 0, 0] [1, 1, 16, 8] [1, 1, 1, 1] : tensor<16x8xf32> into tensor<4x3x16x8xf32>
// SPLIT: %[[DG:.*]] = linalg.reduce { arith.addf } ins(%[[G]]#1 : tensor<4x3x16x8xf32>) outs(%{{.*}} : tensor<4x16x8xf32>) dimensions = [1]
// SPLIT: %[[DU:.*]] = linalg.reduce { arith.addf } ins(%[[G]]#2 : tensor<4x3x16x8xf32>) outs(%{{.*}} : tensor<4x16x8xf32>) dimensions = [1]
// SPLIT: %[[DD:.*]] = linalg.reduce { arith.addf } ins(%[[G]]#3 : tensor<4x3x8x16xf32>) outs(%{{.*}} : tensor<4x8x16xf32>) dimensions = [1]
// SPLIT: return %[[G]]#0, %[[DG]], %[[DU]], %[[DD]]
func.func @experts(%xp: tensor<?x16xf32>, %off: tensor<5xi64>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>,
    %wd: tensor<4x8x16xf32>, %dyp: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>,
        tensor<4x8x16xf32>) {
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<5xi64>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<?x16xf32>)
      -> (tensor<?x16xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>,
          tensor<4x8x16xf32>)
  return %a, %b, %c, %d : tensor<?x16xf32>, tensor<4x16x8xf32>,
      tensor<4x16x8xf32>, tensor<4x8x16xf32>
}

// -----

// The router gradient: the selected logits by a gather of router rows
// ([N, k], never [N, E] scores), the logit gradient, then the input gradient
// by the same gather and the router-weight gradient by one contraction of
// the dense [N, E] logit gradient with the tokens.

// CHECK-LABEL: func.func @route
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x2xi64>, tensor<?x16xf32>) outs(%{{.*}} : tensor<?x2xf32>)
// CHECK: tensor.extract %{{.*}} : tensor<4x16xf32>
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[L]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?xf32>) outs(%{{.*}} : tensor<?x2xf32>)
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<?x2xf32>, tensor<?x2xi64>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<?x2xf32>, tensor<?x2xi64>) outs(%{{.*}} : tensor<?x4xf32>)
// CHECK: %[[DW:.*]] = linalg.generic {{.*}} ins(%[[D]], %{{.*}} : tensor<?x4xf32>, tensor<?x16xf32>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: return %[[DX]], %[[DW]]
func.func @route(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>,
    %idx: tensor<?x2xi64>, %dw: tensor<?x2xf32>)
    -> (tensor<?x16xf32>, tensor<4x16xf32>) {
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<?x2xi64>,
         tensor<?x2xf32>) -> (tensor<?x16xf32>, tensor<4x16xf32>)
  return %dx, %dwr : tensor<?x16xf32>, tensor<4x16xf32>
}

// -----

// dispatch_grad and combine_grad go through the inverse of source_slot (an
// scf.forall of one-element parallel inserts).

// CHECK-LABEL: func.func @slots
// CHECK: scf.forall
// CHECK: tensor.parallel_insert_slice %{{.*}} : tensor<1xi64> into tensor<?xi64>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x2xi64>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?xi64>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK: scf.forall
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x16xf32>) outs(%{{.*}} : tensor<?x2xf32>)
func.func @slots(%g: tensor<?x16xf32>, %slot: tensor<?xi64>,
    %idx: tensor<?x2xi64>, %w: tensor<?x2xf32>, %dy: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x2xf32>) {
  %dx = moe.dispatch_grad %g, %slot, %idx
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xi64>) -> tensor<?x16xf32>
  %dyp, %dw = moe.combine_grad %g, %slot, %w, %dy
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xf32>, tensor<?x16xf32>)
      -> (tensor<?x16xf32>, tensor<?x2xf32>)
  return %dx, %dyp, %dw : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x2xf32>
}

// -----

// The dense FFN gradient on [B, T, d]: one contraction per product, the
// input gradient as two projections by the transposed weights and a sum,
// each weight gradient contracting over both leading dimensions.

// CHECK-LABEL: func.func @dense
// CHECK: %[[ACT:.*]]:3 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[ACT]]#1, %{{.*}} : tensor<?x?x8xf32>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<?x?x16xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[ACT]]#2, %{{.*}} : tensor<?x?x8xf32>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<?x?x16xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[ACT]]#1 : tensor<?x?x16xbf16>, tensor<?x?x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %[[ACT]]#2 : tensor<?x?x16xbf16>, tensor<?x?x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[ACT]]#0, %{{.*}} : tensor<?x?x8xf32>, tensor<?x?x16xbf16>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @dense(%x: tensor<?x?x16xbf16>, %wg: tensor<16x8xbf16>,
    %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>, %dy: tensor<?x?x16xbf16>)
    -> (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
        tensor<8x16xbf16>) {
  %a, %b, %c, %d = moe.glu_ffn_grad %x, %wg, %wu, %wd, %dy
      {activation = #moe.activation<situ_glu, gate_beta = 4.0>}
      : (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
         tensor<8x16xbf16>, tensor<?x?x16xbf16>)
      -> (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
          tensor<8x16xbf16>)
  return %a, %b, %c, %d : tensor<?x?x16xbf16>, tensor<16x8xbf16>,
      tensor<16x8xbf16>, tensor<8x16xbf16>
}

// -----

func.func @dynamic_weights(%xp: tensor<?x16xf32>, %off: tensor<5xi64>,
    %wg: tensor<4x16x?xf32>, %wu: tensor<4x16x?xf32>,
    %wd: tensor<4x?x16xf32>, %dyp: tensor<?x16xf32>) {
  // expected-error @+1 {{'moe.expert_ffn_grad' op expects a static shape for w_gate, got 'tensor<4x16x?xf32>'}}
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<5xi64>, tensor<4x16x?xf32>,
         tensor<4x16x?xf32>, tensor<4x?x16xf32>, tensor<?x16xf32>)
      -> (tensor<?x16xf32>, tensor<4x16x?xf32>, tensor<4x16x?xf32>,
          tensor<4x?x16xf32>)
  return
}
