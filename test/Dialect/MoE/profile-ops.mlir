// RUN: moe-opt %s -split-input-file -moe-profile-ops -verify-diagnostics | FileCheck %s

// Each moe op is bracketed by begin(id, name) / end(id); ids number the op
// kinds in order of first appearance, and each kind's name is an internal
// constant string. Other ops are left alone.
// CHECK-DAG: llvm.mlir.global internal constant @__moe_prof_name_0("moe.rms_norm\00")
// CHECK-DAG: llvm.mlir.global internal constant @__moe_prof_name_1("moe.lm_head\00")
// CHECK-LABEL: func.func @two_kinds
// CHECK: %[[ID0:.*]] = arith.constant 0 : i64
// CHECK: %[[NAME0:.*]] = llvm.mlir.addressof @__moe_prof_name_0 : !llvm.ptr
// CHECK: call @moe_prof_begin(%[[ID0]], %[[NAME0]]) : (i64, !llvm.ptr) -> ()
// CHECK-NEXT: %[[N1:.*]] = moe.rms_norm
// CHECK-NEXT: call @moe_prof_end(%[[ID0]]) : (i64) -> ()
// CHECK-NEXT: arith.addf
// CHECK: %[[ID0B:.*]] = arith.constant 0 : i64
// CHECK: call @moe_prof_begin(%[[ID0B]],
// CHECK-NEXT: moe.rms_norm
// CHECK-NEXT: call @moe_prof_end(%[[ID0B]])
// CHECK: %[[ID1:.*]] = arith.constant 1 : i64
// CHECK: %[[NAME1:.*]] = llvm.mlir.addressof @__moe_prof_name_1 : !llvm.ptr
// CHECK: call @moe_prof_begin(%[[ID1]], %[[NAME1]])
// CHECK-NEXT: moe.lm_head
// CHECK-NEXT: call @moe_prof_end(%[[ID1]])
// CHECK: return
// CHECK-DAG: func.func private @moe_prof_begin(i64, !llvm.ptr)
// CHECK-DAG: func.func private @moe_prof_end(i64)
func.func @two_kinds(%h: tensor<?x?x64xf32>, %w: tensor<64xf32>,
                     %head: tensor<256x64xf32>, %labels: tensor<?x?xi32>)
    -> tensor<f32> {
  %n = moe.rms_norm %h, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %s = arith.addf %n, %h : tensor<?x?x64xf32>
  %m = moe.rms_norm %s, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %loss = moe.lm_head %m, %head, %labels
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// No moe op: nothing is added.
// CHECK-LABEL: func.func @no_moe_ops
// CHECK-NOT: moe_prof
func.func @no_moe_ops(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// The timer's symbols, taken by something else.
// expected-error @below {{uses the symbol @moe_prof_begin, which -moe-profile-ops reserves for a run-time function of type '(i64, !llvm.ptr) -> ()'}}
func.func private @moe_prof_begin(i32)

func.func @clash(%h: tensor<?x?x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %n = moe.rms_norm %h, %w : tensor<?x?x64xf32>, tensor<64xf32>
  return %n : tensor<?x?x64xf32>
}
