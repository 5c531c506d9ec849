// RUN: moe-opt %s --split-input-file --moe-outline-kinds | FileCheck %s

// The glue between the layer ops, each op alone: two projections of one
// kind share a function, the scalar their bodies read from above becomes an
// argument, and the fresh output (a fill of an empty tensor, with its
// dynamic size) is copied in, so the function writes nothing it is given.
// Two residual sums share another function; a generic that accumulates
// into a tensor it is given, and arithmetic on scalars, stay inline.
// CHECK-LABEL: func.func @glue
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<8x4xf32>, %[[S:.*]]: f32, %[[ACC:.*]]: tensor<?x4xf32>)
// CHECK:         %[[N:.*]] = tensor.dim %[[X]]
// CHECK:         %[[P:.*]] = call @__moe_kind_generic(%[[X]], %[[W]], %[[N]], %[[S]]) {moe.outlined_kind}
// CHECK:         %[[T:.*]] = arith.mulf %[[S]], %[[S]] : f32
// CHECK:         %[[Q:.*]] = call @__moe_kind_generic(%[[X]], %[[W]], %[[N]], %[[T]]) {moe.outlined_kind}
// CHECK:         %[[R:.*]] = call @__moe_kind_addf(%[[P]], %[[Q]]) {moe.outlined_kind}
// CHECK:         %[[U:.*]] = call @__moe_kind_addf(%[[R]], %[[Q]]) {moe.outlined_kind}
// CHECK:         %[[V:.*]] = linalg.generic {{.*}} ins(%[[U]] : tensor<?x4xf32>) outs(%[[ACC]] : tensor<?x4xf32>)
// CHECK:         return %[[V]]
// CHECK:       func.func private @__moe_kind_generic(%[[A:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<8x4xf32>, %[[D:.*]]: index, %[[C:.*]]: f32) -> tensor<?x4xf32>
// CHECK-SAME:    attributes {moe.outlined_kind}
// CHECK:         %[[ZERO:.*]] = arith.constant 0.0
// CHECK:         %[[E:.*]] = tensor.empty(%[[D]]) : tensor<?x4xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<?x4xf32>)
// CHECK:         %[[G:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<?x8xf32>, tensor<8x4xf32>) outs(%[[F]] : tensor<?x4xf32>)
// CHECK:           arith.mulf {{.*}}, %[[C]]
// CHECK:         return %[[G]]
// CHECK:       func.func private @__moe_kind_addf(
// CHECK-SAME:    attributes {moe.outlined_kind}
// CHECK:         arith.addf {{.*}} : tensor<?x4xf32>
// CHECK-NOT:   func.func private @__moe_kind
#lhs = affine_map<(i, j, k) -> (i, k)>
#rhs = affine_map<(i, j, k) -> (k, j)>
#out = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @glue(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %s: f32, %acc: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x8xf32>, tensor<8x4xf32>) outs(%f : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %ms = arith.mulf %m, %s : f32
    %r = arith.addf %c, %ms : f32
    linalg.yield %r : f32
  } -> tensor<?x4xf32>
  %t = arith.mulf %s, %s : f32
  %q = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x8xf32>, tensor<8x4xf32>) outs(%f : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %ms = arith.mulf %m, %t : f32
    %r = arith.addf %c, %ms : f32
    linalg.yield %r : f32
  } -> tensor<?x4xf32>
  %sum = arith.addf %p, %q : tensor<?x4xf32>
  %sum2 = arith.addf %sum, %q : tensor<?x4xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum2 : tensor<?x4xf32>) outs(%acc : tensor<?x4xf32>) {
  ^bb0(%a: f32, %c: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x4xf32>
  return %v : tensor<?x4xf32>
}

// -----

// Without the option the glue stays inline.
// CHECK-LABEL: func.func @sum
// CHECK:         call @__moe_kind_addf
// RUN: moe-opt %s --split-input-file --moe-outline-kinds=glue=false | FileCheck %s --check-prefix=NOGLUE
// NOGLUE-LABEL: func.func @sum
// NOGLUE:         arith.addf %{{.*}}, %{{.*}} : tensor<4xf32>
// NOGLUE-NOT:     call
func.func @sum(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}
