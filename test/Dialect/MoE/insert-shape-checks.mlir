// RUN: moe-opt %s -split-input-file -moe-insert-shape-checks -verify-diagnostics | FileCheck %s

// Each dynamic dimension that moe.kda ties to the query's gets one call of
// the run-time check, against the query's size (B and T of key, value,
// log_decay and beta: 8 calls); the strings name the op, its location and
// both operand dimensions.

// CHECK-DAG: llvm.mlir.global internal constant @[[KEY_B:.+]]("moe.kda at {{.*}}insert-shape-checks.mlir:{{[0-9]+}}:12: dimension 0 (B) of key\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[QUERY_B:.+]]("dimension 0 (B) of query\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[BETA_T:.+]]("moe.kda at {{.*}}: dimension 1 (T) of beta\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[QUERY_T:.+]]("dimension 1 (T) of query\00")
// CHECK-LABEL: func.func @kda(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<?x?x2x16xf32>, %[[K:[^:]+]]: tensor<?x?x2x16xf32>
// CHECK:         %[[KB:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x?x2x16xf32>
// CHECK:         %[[KB64:.+]] = arith.index_cast %[[KB]] : index to i64
// CHECK:         %[[QB:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x?x2x16xf32>
// CHECK:         %[[QB64:.+]] = arith.index_cast %[[QB]] : index to i64
// CHECK:         %[[WHAT:.+]] = llvm.mlir.addressof @[[KEY_B]]
// CHECK:         %[[AGAINST:.+]] = llvm.mlir.addressof @[[QUERY_B]]
// CHECK:         call @moe_check_dim(%[[KB64]], %[[QB64]], %[[WHAT]], %[[AGAINST]])
// CHECK-COUNT-7: call @moe_check_dim
// CHECK-NOT:     call @moe_check_dim
// CHECK:         moe.kda
func.func @kda(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x8xf32>, %g: tensor<?x?x2x16xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<?x?x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>)
  return %o : tensor<?x?x2x8xf32>
}
// CHECK: func.func private @moe_check_dim(i64, i64, !llvm.ptr, !llvm.ptr)

// -----

// A static size is the reference the dynamic ones are compared with, as a
// constant; sizes static on both sides are the verifier's and emit nothing.

// CHECK-LABEL: func.func @static_reference(
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x8x2x16xf32>, %[[K:[^:]+]]: tensor<?x8x2x16xf32>
// CHECK:         %[[KB:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x8x2x16xf32>
// CHECK:         %[[KB64:.+]] = arith.index_cast %[[KB]] : index to i64
// CHECK:         %[[TWO:.+]] = arith.constant 2 : i64
// CHECK:         call @moe_check_dim(%[[KB64]], %[[TWO]],
// CHECK-NOT:     call @moe_check_dim
// CHECK:         moe.kda
func.func @static_reference(%q: tensor<2x8x2x16xf32>, %k: tensor<?x8x2x16xf32>,
    %v: tensor<2x8x2x8xf32>, %g: tensor<2x8x2x16xf32>,
    %beta: tensor<2x8x2xf32>) -> tensor<2x8x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<2x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<2x8x2x8xf32>,
         tensor<2x8x2x16xf32>, tensor<2x8x2xf32>)
      -> (tensor<2x8x2x8xf32>, tensor<2x2x16x8xf32>)
  return %o : tensor<2x8x2x8xf32>
}

// -----

// All static: no check and no declaration.

// CHECK-LABEL: func.func @all_static
// CHECK-NOT:     moe_check_dim
func.func @all_static(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = moe.rms_norm %x, %w : tensor<4x16xf32>, tensor<16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// The sources of a mix agree on every dimension (3 calls for source #1);
// their width ties the query (1 call).

// CHECK-DAG: @[[S1B:.+]]("moe.attn_res_mix at {{.*}}: dimension 0 of source #1\00")
// CHECK-DAG: @[[S0B:.+]]("dimension 0 of source #0\00")
// CHECK-DAG: @[[QD:.+]]("moe.attn_res_mix at {{.*}}: dimension 0 of query\00")
// CHECK-DAG: @[[S0D:.+]]("dimension 2 of source #0\00")
// CHECK-LABEL: func.func @mix
// CHECK-COUNT-4: call @moe_check_dim
// CHECK-NOT:     call @moe_check_dim
// CHECK:         moe.attn_res_mix
func.func @mix(%b0: tensor<?x?x?xf32>, %b1: tensor<?x?x?xf32>,
    %w: tensor<?xf32>) -> tensor<?x?x?xf32> {
  %0 = moe.attn_res_mix %b0, %b1 query(%w)
      : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// The symbol belongs to the run-time function; another use is an error.

// expected-error @+1 {{'func.func' op uses the symbol @moe_check_dim, which -moe-insert-shape-checks reserves for a run-time function of type '(i64, i64, !llvm.ptr, !llvm.ptr) -> ()'}}
func.func private @moe_check_dim(i64)

func.func @taken(%x: tensor<?x16xf32>, %w: tensor<?xf32>) -> tensor<?x16xf32> {
  %0 = moe.rms_norm %x, %w : tensor<?x16xf32>, tensor<?xf32>
  return %0 : tensor<?x16xf32>
}
