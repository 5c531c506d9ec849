// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.kda_grad
// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4 runtime-guard=false" --split-input-file 2>&1 | FileCheck %s --check-prefix=NOGUARD
// RUN: moe-opt %s --moe-tile-linear-attention="chunk-size=8 sub-chunk-size=4 test-force-dense=true" --split-input-file 2>&1 | FileCheck %s --check-prefix=FORCED

// The backward of -moe-tile-linear-attention (moe.kda_grad, ALGORITHMS.md
// section 1.7) in three stages: every chunk on its own from a zero state
// (the WY factors, the decayed keys and queries, Aqk, the chunk's decay,
// M = (I + L)^-1 and KK);
// per (batch, head, value tile) a sequential forward sweep over the chunk
// states that stores each chunk's incoming state, then a reverse sweep that
// stores each chunk's outgoing state adjoint; and every chunk again, from
// its stored state and with its state adjoint, for the gradients, in two
// halves: the first reads W, U, the decayed keys and queries, Aqk, M and KK
// back instead of repeating the pairwise tiles, M's forward substitution and
// the WY products, and takes every gradient but the pairwise terms of Aqk
// and KK; the second adds those. Only the
// middle stage is sequential, and it carries states, not chunks. The
// diagonal path is decided exactly as for moe.kda.

// A bounded gate: the diagonal tiles are proven safe, so both the recompute
// and the backward pairwise terms are dense: no guard, no per-position
// reduction.

// CHECK-LABEL: func.func @bounded
// CHECK: moe.decay_gate
// CHECK: %[[LOCAL:.*]]:8 = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, %[[N:[0-9a-z_]+]]) shared_outs({{.*}}) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
// CHECK-NOT: scf.if
// Each value is copied into its place as soon as it is whole: Aqk and KK
// after their tiles, M after its substitution loop, then W, U, Qd, Kd and
// the chunk's decay.
// CHECK-COUNT-2: linalg.copy ins(%{{.*}} : tensor<8x8xf32>)
// CHECK-NOT: linalg.copy
// CHECK: scf.for
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: tensor.extract_slice
// CHECK-NEXT: linalg.copy ins(%{{.*}} : tensor<8x8xf32>)
// CHECK-COUNT-4: linalg.copy
// CHECK: math.exp
// CHECK: linalg.copy ins(%{{.*}} : tensor<8xf32>)
// CHECK-NOT: linalg.copy
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-8: tensor.parallel_insert_slice
// The sweeps: one value tile of 4 columns (V = 4).
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, 1) shared_outs({{.*}}) -> (tensor<?x2x?x8x4xf32>, tensor<?x2x?x8x4xf32>, tensor<?x2x8x4xf32>)
// CHECK: scf.for %[[C:[0-9a-z_]+]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[STARTS:[0-9a-z_]+]] = %{{.*}}) -> (tensor<8x4xf32>, tensor<?x8x4xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[STARTS]][%[[C]], 0, 0] [1, 8, 4] [1, 1, 1] : tensor<8x4xf32> into tensor<?x8x4xf32>
// CHECK: scf.for %[[I:[0-9a-z_]+]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[ENDS:[0-9a-z_]+]] = %{{.*}}) -> (tensor<8x4xf32>, tensor<?x8x4xf32>)
// CHECK: %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: %[[RC:.*]] = arith.subi %[[LAST]], %[[I]] : index
// CHECK: tensor.insert_slice %{{.*}} into %[[ENDS]][%[[RC]], 0, 0] [1, 8, 4] [1, 1, 1] : tensor<8x4xf32> into tensor<?x8x4xf32>
// CHECK-NOT: scf.for
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
// The gradients, chunk-parallel again, in two halves. The first reads the
// chunk's forward tiles from the first stage: M (no forward substitution
// loop), W, U, Kd, Qd, Aqk and KK, in that order, and copies each result
// into its place as soon as it is whole (dAqk first, dKK last); the
// terminator inserts those copies: dv and dbeta (whole), the adjoints of Aqk
// and KK, dq / s, dk and dGamma without their pairwise terms, and the last
// row's dGamma per chunk.
// CHECK: %[[HALF:.*]]:8 = scf.forall (%{{.*}}, %{{.*}}, %[[HC:[0-9a-z_]+]]) in (%{{.*}}, 2, %[[N]]) shared_outs(%[[DV:[0-9a-z_]+]] = %{{.*}}, %[[DB:[0-9a-z_]+]] = %{{.*}}, %[[DAQK:[0-9a-z_]+]] = %{{.*}}, %[[DKK:[0-9a-z_]+]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[DLAST:[0-9a-z_]+]] = %{{.*}}) -> (tensor<?x?x2x4xf32>, tensor<?x?x2xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK: tensor.extract_slice %[[LOCAL]]#6[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#0[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#1[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#2[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#3[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#4[
// CHECK-NEXT: tensor.extract_slice %[[LOCAL]]#7[
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK: %[[PLACE:.*]] = tensor.extract_slice %[[DAQK]][
// CHECK-NEXT: %[[COPY:.*]] = linalg.copy ins(%{{.*}} : tensor<8x8xf32>) outs(%[[PLACE]] : tensor<8x8xf32>)
// CHECK-COUNT-6: linalg.copy
// CHECK: %[[PLACE2:.*]] = tensor.extract_slice %[[DKK]][
// CHECK-NEXT: %[[COPY2:.*]] = linalg.copy ins(%{{.*}} : tensor<8x8xf32>) outs(%[[PLACE2]] : tensor<8x8xf32>)
// CHECK-NOT: linalg.copy
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-2: tensor.parallel_insert_slice
// CHECK-NEXT: tensor.parallel_insert_slice %[[COPY]] into %[[DAQK]]
// CHECK-NEXT: tensor.parallel_insert_slice %[[COPY2]] into %[[DKK]]
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[DLAST]][%{{.*}}, %[[HC]], %{{.*}}, 0] [1, 1, 1, 8]
// The second half adds the pairwise terms from those adjoints: dq, dk, dg.
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 2, %[[N]]) shared_outs({{.*}}) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>)
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK-COUNT-5: tensor.extract_slice %[[HALF]]#{{[2-6]}}[
// CHECK-NEXT: tensor.extract_slice %[[HALF]]#7[
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK: return

// NOGUARD: remark: kda_grad tiled with chunk 8, sub-chunk 4: dense diagonal tiles, proven safe (bound -5.00, mid reference over 4 rows: exponent 10.00 vs limit 87.34 for f32, margin 77.34)
// FORCED: remark: kda_grad tiled with chunk 8, sub-chunk 4: dense diagonal tiles forced by test-force-dense
func.func @bounded(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                   %z: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %b: tensor<2x8xf32>,
                   %do: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b
      : (tensor<?x?x2x8xf32>, tensor<2x8xf32>) -> tensor<?x?x2x8xf32>
  // expected-remark @+1 {{kda_grad tiled with chunk 8, sub-chunk 4: dense diagonal tiles, proven safe (bound -5.00, mid reference over 4 rows: exponent 10.00 vs limit 87.34 for f32, margin 77.34)}}
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?x2xf32>, tensor<?x2x8x4xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0 : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
      tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x2x8x4xf32>
}

// -----

// A log decay of unknown origin is never proven: each diagonal tile is
// guarded once per stage, in the chunk-local stage for its forward tile
// (Aqk, KK) and in the gradient stage, with the same verdict, for its
// backward pairwise terms (dQ, dK of the row side, dK of the column side),
// dense or per position.

// CHECK-LABEL: func.func @guarded
// The chunk-local stage's tiles are guarded, the sweeps have no diagonal
// tiles.
// CHECK: scf.forall
// CHECK: scf.if %{{.*}} -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: scf.forall
// CHECK-NOT: scf.if
// The gradient stage: no forward tile recomputed.
// CHECK: scf.forall
// CHECK-NOT: scf.if %{{.*}} -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: %[[SAFE:.*]] = arith.cmpf ole, %{{.*}}, %{{.*}} : f32
// CHECK-NOT: scf.if %{{.*}} -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: scf.if %[[SAFE]] -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: } else {
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs({{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}} : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs({{.*}} : tensor<4x8xf32>)
// CHECK: return

// Without the guard: per-position tiles only.
// NOGUARD: remark: kda_grad tiled with chunk 8, sub-chunk 4: per-position diagonal tiles, not proven (bound none, mid reference over 4 rows: exponent INF vs limit 87.34 for f32, margin -INF)
// NOGUARD-LABEL: func.func @guarded
// NOGUARD-NOT: scf.if
// NOGUARD: outs({{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
// NOGUARD-NOT: scf.if
// NOGUARD: return
// FORCED: remark: kda_grad tiled with chunk 8, sub-chunk 4: dense diagonal tiles forced by test-force-dense (bound none
func.func @guarded(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                   %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %do: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) {
  // expected-remark @+1 {{kda_grad tiled with chunk 8, sub-chunk 4: runtime-guarded diagonal tiles, not proven (bound none, mid reference over 4 rows: exponent INF vs limit 87.34 for f32, margin -INF)}}
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?x2xf32>, tensor<?x2x8x4xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0 : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
      tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x2x8x4xf32>
}

// -----

// Value-major states: the initial state and the final-state adjoint are
// transposed in, the initial-state gradient out; element types and static
// shapes of the results are restored.

// CHECK-LABEL: func.func @value_major_bf16
// CHECK-COUNT-2: linalg.transpose ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<8x4xf32>) permutation = [1, 0]
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: %[[DS0:.*]] = linalg.transpose ins(%{{.*}} : tensor<?x2x8x4xf32>) outs(%{{.*}} : tensor<?x2x4x8xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[CAST:.*]] = tensor.cast %[[DS0]] : tensor<?x2x4x8xf32> to tensor<3x2x4x8xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[CAST]] : tensor<3x?x2x8xbf16>, tensor<3x?x2xf32>, tensor<3x2x4x8xf32>
func.func @value_major_bf16(%q: tensor<3x?x2x8xbf16>, %k: tensor<3x?x2x8xbf16>,
    %v: tensor<3x?x2x4xbf16>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xf32>,
    %s0: tensor<3x2x4x8xf32>, %do: tensor<3x?x2x4xbf16>, %ds: tensor<3x2x4x8xf32>)
    -> (tensor<3x?x2x8xbf16>, tensor<3x?x2xf32>, tensor<3x2x4x8xf32>) {
  // expected-remark @+1 {{runtime-guarded diagonal tiles, not proven (bound none}}
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta initial_state(%s0)
      output_adjoint(%do) final_state_adjoint(%ds)
      {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xf32>, tensor<3x2x4x8xf32>, tensor<3x?x2x4xbf16>, tensor<3x2x4x8xf32>)
      -> (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
          tensor<3x?x2xf32>, tensor<3x2x4x8xf32>)
  return %dq, %dbeta, %ds0 : tensor<3x?x2x8xbf16>, tensor<3x?x2xf32>, tensor<3x2x4x8xf32>
}
