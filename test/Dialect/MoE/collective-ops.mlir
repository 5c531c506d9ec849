// RUN: moe-opt %s --split-input-file | moe-opt --split-input-file | FileCheck %s
// RUN: moe-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// The collectives round-trip, tensor and buffer forms.

// CHECK-LABEL: func.func @tensors
// CHECK: moe.all_reduce %{{.*}} {ranks = 2 : i64} : tensor<?xf32>
// CHECK: moe.all_reduce %{{.*}} {ranks = 4 : i64} : tensor<8xi64>
// CHECK: moe.all_gather %{{.*}} {ranks = 2 : i64} : tensor<8x?xf32> -> tensor<2x8x?xf32>
func.func @tensors(%g: tensor<?xf32>, %l: tensor<8xi64>, %r: tensor<8x?xf32>)
    -> (tensor<?xf32>, tensor<8xi64>, tensor<2x8x?xf32>) {
  %0 = moe.all_reduce %g {ranks = 2} : tensor<?xf32>
  %1 = moe.all_reduce %l {ranks = 4} : tensor<8xi64>
  %2 = moe.all_gather %r {ranks = 2} : tensor<8x?xf32> -> tensor<2x8x?xf32>
  return %0, %1, %2 : tensor<?xf32>, tensor<8xi64>, tensor<2x8x?xf32>
}

// Bufferization: each result is a fresh contiguous buffer; the sum is taken
// in place on a copy (the input keeps its value for its other uses).
// BUF-LABEL: func.func @tensors
// BUF-SAME: (%[[G:.*]]: memref<?xf32{{.*}}>, %[[L:.*]]: memref<8xi64{{.*}}>, %[[R:.*]]: memref<8x?xf32{{.*}}>)
// BUF: %[[D:.*]] = memref.dim %[[G]]
// BUF: %[[SUM:.*]] = memref.alloc(%[[D]]) {{.*}}: memref<?xf32>
// BUF: memref.copy %[[G]], %[[SUM]]
// BUF: moe.all_reduce_in_place %[[SUM]] {ranks = 2 : i64} : memref<?xf32>
// BUF: %[[LSUM:.*]] = memref.alloc() {{.*}}: memref<8xi64>
// BUF: memref.copy %[[L]], %[[LSUM]]
// BUF: moe.all_reduce_in_place %[[LSUM]] {ranks = 4 : i64} : memref<8xi64>
// BUF: %[[STACK:.*]] = memref.alloc(%{{.*}}) {{.*}}: memref<2x8x?xf32>
// BUF: moe.all_gather_into %{{.*}}, %[[STACK]] {ranks = 2 : i64} : memref<8x?xf32>, memref<2x8x?xf32>
// BUF: return %[[SUM]], %[[LSUM]], %[[STACK]]

// -----

// CHECK-LABEL: func.func @buffers
// CHECK: moe.all_reduce_in_place %{{.*}} {ranks = 2 : i64} : memref<16xf64>
// CHECK: moe.all_gather_into %{{.*}}, %{{.*}} {ranks = 3 : i64} : memref<4x?xi64>, memref<3x4x?xi64>
func.func @buffers(%a: memref<16xf64>, %b: memref<4x?xi64>, %c: memref<3x4x?xi64>) {
  moe.all_reduce_in_place %a {ranks = 2} : memref<16xf64>
  moe.all_gather_into %b, %c {ranks = 3} : memref<4x?xi64>, memref<3x4x?xi64>
  return
}

// -----

// A collective is never dropped, even when its result is unused: every rank
// must make the same calls.
// CHECK-LABEL: func.func @unused
// CHECK: moe.all_reduce
func.func @unused(%g: tensor<4xf32>) {
  %0 = moe.all_reduce %g {ranks = 2} : tensor<4xf32>
  return
}

// -----

// The expert-parallel exchanges.
// CHECK-LABEL: func.func @exchanges
// CHECK: %[[RANK:.*]] = moe.expert_rank {ranks = 2 : i64}
// CHECK: moe.all_to_all %{{.*}} {ranks = 2 : i64} : tensor<2x4xi64>
// CHECK: moe.all_to_all_v %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {ranks = 2 : i64} : (tensor<?x8xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x8xf32>
func.func @exchanges(%counts: tensor<2x4xi64>, %rows: tensor<?x8xf32>,
                     %send: tensor<2xi64>, %recv: tensor<2xi64>, %total: index)
    -> (index, tensor<2x4xi64>, tensor<?x8xf32>) {
  %rank = moe.expert_rank {ranks = 2}
  %0 = moe.all_to_all %counts {ranks = 2} : tensor<2x4xi64>
  %1 = moe.all_to_all_v %rows, %send, %recv, %total {ranks = 2}
      : (tensor<?x8xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x8xf32>
  return %rank, %0, %1 : index, tensor<2x4xi64>, tensor<?x8xf32>
}

// The received rows get a buffer of `total` rows.
// BUF-LABEL: func.func @exchanges
// BUF-SAME: %[[TOTAL:[^:]*]]: index)
// BUF: moe.all_to_all_into %{{.*}}, %{{.*}} {ranks = 2 : i64} : memref<2x4xi64>, memref<2x4xi64>
// BUF: %[[ROWS:.*]] = memref.alloc(%[[TOTAL]]) {{.*}}: memref<?x8xf32>
// BUF: moe.all_to_all_v_into %{{.*}}, %{{.*}}, %[[ROWS]], %{{.*}} {ranks = 2 : i64} : memref<?x8xf32{{.*}}>, memref<2xi64{{.*}}>, memref<?x8xf32>, memref<2xi64{{.*}}>
