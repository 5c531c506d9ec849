// RUN: moe-opt %s -split-input-file -moe-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A chain exp(x) * y + x (three element-wise generics, each result read by
// the next only) becomes one generic over x, y and x again.

// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    %[[X:.+]]: tensor<?x64xf32>, %[[Y:.+]]: tensor<?x64xf32>
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[Y]], %[[X]] : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK:           math.exp
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @chain(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %y : tensor<?x64xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b, %x : tensor<?x64xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  return %c : tensor<?x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// Left alone: a producer with two users (it would be computed twice), one
// read under a broadcasting map (each element read 64 times), and one that
// feeds a contraction (whose body the GEMM generators match). A transposed
// read is one-to-one and fuses.

// CHECK-LABEL: func.func @kept(
// CHECK:         %[[TWICE:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<64x64xf32>)
// CHECK:           math.exp
// CHECK:         linalg.generic {{.*}} ins(%[[TWICE]], %[[TWICE]] : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK:         %[[COL:.+]] = linalg.generic
// CHECK:           math.sqrt
// CHECK:         linalg.generic {{.*}} ins(%[[COL]], %{{.+}} : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK:         %[[NEG:.+]] = linalg.generic
// CHECK:           arith.negf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[NEG]], %{{.+}} : tensor<64x64xf32>, tensor<64x64xf32>)
// CHECK:         linalg.generic {{.*}} ins(%{{.+}} : tensor<64x64xf32>)
// CHECK:           math.log
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      linalg.yield
func.func @kept(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = tensor.empty() : tensor<64x64xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%twice, %twice : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %col = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.sqrt %in : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %bcast = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%col, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %mm = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%neg, %w : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  %log = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.log %in : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%log, %x : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %v = arith.mulf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  return %sum, %bcast, %mm, %t : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Inside a tile program (an scf.forall iteration's tiles), with a producer
// that reads its indices: the causal mask and the scaling become one op,
// its linalg.index ops those of the fused loops.

// CHECK-LABEL: func.func @tile_program(
// CHECK:         scf.forall
// CHECK:           linalg.generic
// CHECK:             linalg.index 0
// CHECK:             linalg.index 1
// CHECK:             arith.cmpi ule
// CHECK:             arith.select
// CHECK:             arith.mulf
// CHECK-NEXT:        linalg.yield
// CHECK-NOT:       linalg.generic
// CHECK:           scf.forall.in_parallel
func.func @tile_program(%x: tensor<8x64x64xf32>, %s: f32) -> tensor<8x64x64xf32> {
  %r = scf.forall (%i) in (8) shared_outs(%o = %x) -> (tensor<8x64x64xf32>) {
    %t = tensor.extract_slice %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<8x64x64xf32> to tensor<64x64xf32>
    %e = tensor.empty() : tensor<64x64xf32>
    %masked = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %row = linalg.index 0 : index
      %col = linalg.index 1 : index
      %keep = arith.cmpi ule, %col, %row : index
      %zero = arith.constant 0.0 : f32
      %v = arith.select %keep, %in, %zero : f32
      linalg.yield %v : f32
    } -> tensor<64x64xf32>
    %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%masked : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %v = arith.mulf %in, %s : f32
      linalg.yield %v : f32
    } -> tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %scaled into %o[%i, 0, 0] [1, 64, 64] [1, 1, 1] : tensor<64x64xf32> into tensor<8x64x64xf32>
    }
  }
  return %r : tensor<8x64x64xf32>
}
