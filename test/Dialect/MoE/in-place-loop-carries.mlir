// RUN: moe-opt %s -moe-in-place-loop-carries | FileCheck %s

// In a loop of a forall body, a yielded tensor made afresh (a generic into
// a tensor.empty) is copied into the loop's iteration argument; one already
// written into it (through linalg outs, insert_slice dests or an inner loop
// started from it) is not; nor is a loop outside any forall.

// CHECK-LABEL: func.func @carries(
// CHECK:         scf.forall
// CHECK:           %[[OUTER:.+]]:2 = scf.for %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %[[T:.+]] = %{{.+}}) -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK:             %[[FRESH:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<4x4xf32>)
// CHECK:             %[[INNER:.+]] = scf.for %{{.+}} iter_args(%[[U:.+]] = %[[T]]) -> (tensor<4x4xf32>)
// CHECK:               %[[INPLACE:.+]] = linalg.generic {{.*}} outs(%[[U]] : tensor<4x4xf32>)
// CHECK-NOT:           linalg.copy
// CHECK:               scf.yield %[[INPLACE]]
// CHECK:             %[[COPY:.+]] = linalg.copy ins(%[[FRESH]] : tensor<4x4xf32>) outs(%[[S]] : tensor<4x4xf32>)
// CHECK-NOT:         linalg.copy
// CHECK:             scf.yield %[[COPY]], %[[INNER]]
// CHECK:       scf.for
// CHECK-NOT:     linalg.copy
// CHECK:         scf.yield
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @carries(%init: tensor<4x4xf32>, %out: tensor<2x4x4xf32>, %n: index)
    -> (tensor<2x4x4xf32>, tensor<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> tensor<2x4x4xf32> {
    %loop:2 = scf.for %k = %c0 to %n step %c1 iter_args(%s = %init, %t = %init)
        -> (tensor<4x4xf32>, tensor<4x4xf32>) {
      %e = tensor.empty() : tensor<4x4xf32>
      %fresh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
      ^bb0(%a: f32, %b: f32):
        %m = arith.mulf %a, %a : f32
        linalg.yield %m : f32
      } -> tensor<4x4xf32>
      %inner = scf.for %j = %c0 to %n step %c1 iter_args(%u = %t) -> (tensor<4x4xf32>) {
        %inplace = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
            outs(%u : tensor<4x4xf32>) {
        ^bb0(%b: f32):
          %p = arith.addf %b, %b : f32
          linalg.yield %p : f32
        } -> tensor<4x4xf32>
        scf.yield %inplace : tensor<4x4xf32>
      }
      scf.yield %fresh, %inner : tensor<4x4xf32>, tensor<4x4xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %loop#0 into %o[%i, 0, 0] [1, 4, 4] [1, 1, 1]
          : tensor<4x4xf32> into tensor<2x4x4xf32>
    }
  }
  %host = scf.for %k = %c0 to %n step %c1 iter_args(%s = %init) -> (tensor<4x4xf32>) {
    %e = tensor.empty() : tensor<4x4xf32>
    %fresh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %a : f32
      linalg.yield %m : f32
    } -> tensor<4x4xf32>
    scf.yield %fresh : tensor<4x4xf32>
  }
  return %r, %host : tensor<2x4x4xf32>, tensor<4x4xf32>
}
