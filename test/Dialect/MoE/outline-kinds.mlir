// RUN: moe-opt %s --split-input-file --allow-unregistered-dialect --moe-outline-kinds=glue=false | FileCheck %s

// Two groups of the same kind share one function; a group of other
// attributes, or whose results are used otherwise, is another kind. A group
// is the ops tied by their operands (an rms_norm reading an l2_norm); its
// results used outside become the function's results, in op order.
// CHECK-LABEL: func.func @same_kind
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?x64xf32>, %[[Y:.*]]: tensor<?x?x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK:         %[[A:.*]]:2 = call @__moe_kind_l2_norm_rms_norm(%[[X]], %[[W]]) {moe.outlined_kind}
// CHECK:         %[[S:.*]] = arith.addf %[[A]]#0, %[[A]]#1
// CHECK:         %[[B:.*]]:2 = call @__moe_kind_l2_norm_rms_norm(%[[Y]], %[[W]])
// CHECK:         %[[T:.*]] = arith.addf %[[B]]#0, %[[B]]#1
// CHECK:         %[[C:.*]] = call @__moe_kind_rms_norm(%[[S]], %[[W]])
// CHECK:         %[[D:.*]] = call @__moe_kind_l2_norm_rms_norm_0(%[[T]], %[[W]])
// CHECK:         return %[[C]], %[[D]]
// CHECK:       func.func private @__moe_kind_l2_norm_rms_norm(%[[P:.*]]: tensor<?x?x64xf32>, %[[Q:.*]]: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
// CHECK-SAME:    attributes {moe.outlined_kind}
// CHECK:         %[[N:.*]] = moe.l2_norm %[[P]]
// CHECK:         %[[R:.*]] = moe.rms_norm %[[N]], %[[Q]] :
// CHECK:         return %[[N]], %[[R]]
// CHECK:       func.func private @__moe_kind_rms_norm(
// CHECK:         moe.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-04 : f64}
// CHECK:       func.func private @__moe_kind_l2_norm_rms_norm_0(
// CHECK-SAME:    -> tensor<?x?x64xf32>
// CHECK-NOT:   func.func
func.func @same_kind(%x: tensor<?x?x64xf32>, %y: tensor<?x?x64xf32>,
                     %w: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %a = moe.l2_norm %x : tensor<?x?x64xf32>
  %b = moe.rms_norm %a, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %s = arith.addf %a, %b : tensor<?x?x64xf32>
  %c = moe.l2_norm %y : tensor<?x?x64xf32>
  %d = moe.rms_norm %c, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %t = arith.addf %c, %d : tensor<?x?x64xf32>
  %e = moe.rms_norm %s, %w {epsilon = 1.0e-4 : f64} : tensor<?x?x64xf32>, tensor<64xf32>
  %f = moe.l2_norm %t : tensor<?x?x64xf32>
  %g = moe.rms_norm %f, %w : tensor<?x?x64xf32>, tensor<64xf32>
  return %e, %g : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// A result used outside the group before a later member would read it
// (the forward goes on between a forward op and its gradient): the later
// op starts a group of its own. Constants are copied into the function.
// CHECK-LABEL: func.func @apart
// CHECK:         %[[N:.*]] = call @__moe_kind_l2_norm(%{{.*}})
// CHECK:         %[[M:.*]] = arith.mulf %[[N]], %[[N]]
// CHECK:         %[[G:.*]] = arith.addf %{{.*}}, %[[M]]
// CHECK:         call @__moe_kind_rms_norm_grad(%[[G]], %[[N]])
// CHECK:       func.func private @__moe_kind_l2_norm(
// CHECK:       func.func private @__moe_kind_rms_norm_grad(
// CHECK:         arith.constant dense<1.000000e+00> : tensor<64xf32>
// CHECK:         moe.rms_norm_grad
func.func @apart(%x: tensor<?x?x64xf32>, %dy: tensor<?x?x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<64xf32>) {
  %ones = arith.constant dense<1.0> : tensor<64xf32>
  %n = moe.l2_norm %x : tensor<?x?x64xf32>
  %m = arith.mulf %n, %n : tensor<?x?x64xf32>
  %dy2 = arith.addf %dy, %m : tensor<?x?x64xf32>
  %dx, %dw = moe.rms_norm_grad %dy2, %n, %ones : tensor<?x?x64xf32>, tensor<64xf32>
  return %dx, %dw : tensor<?x?x64xf32>, tensor<64xf32>
}

// -----

// Collectives stay where they are, and so do ops of other dialects.
// CHECK-LABEL: func.func @stays
// CHECK:         moe.all_reduce
// CHECK-NOT:     call
// CHECK-NOT:   func.func private
func.func @stays(%g: tensor<?xf32>) -> tensor<?xf32> {
  %0 = moe.all_reduce %g {ranks = 2} : tensor<?xf32>
  %1 = arith.addf %0, %0 : tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// An op of no registered dialect stays (and is no moe op's group).
// CHECK-LABEL: func.func @unregistered
// CHECK:         %[[U:.*]] = "foo.bar"
// CHECK:         call @__moe_kind_l2_norm(%[[U]])
func.func @unregistered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = moe.l2_norm %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
