// RUN: moe-opt %s --moe-collectives-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// The buffer forms become calls of the distributed runtime with the address
// of the first element (aligned pointer + offset * element bytes), the
// element count and the type code (f32 0, i64 1, f64 2), or the bytes per
// rank of a gather.

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[A:.*]]: memref<?x3xf32>, %[[B:.*]]: memref<5xi64>, %[[C:.*]]: memref<f64>)
// CHECK: %[[F32:.*]] = arith.constant 0 : index
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFF]], %[[C4]]
// CHECK: %[[ADDR:.*]] = arith.addi %[[PTR]], %[[BYTES]]
// CHECK: %[[D0:.*]] = memref.dim %[[A]], %{{.*}}
// CHECK: %[[N0:.*]] = arith.muli %{{.*}}, %[[D0]]
// CHECK: %[[D1:.*]] = memref.dim %[[A]], %{{.*}}
// CHECK: %[[N:.*]] = arith.muli %[[N0]], %[[D1]]
// CHECK: call @moe_dist_all_reduce_sum(%[[ADDR]], %[[N]], %[[F32]]) : (index, index, index) -> ()
// CHECK: call @moe_dist_all_reduce_sum(%{{.*}}, %{{.*}}, %{{.*}}) : (index, index, index) -> ()
// CHECK: call @moe_dist_all_reduce_sum(%{{.*}}, %{{.*}}, %{{.*}}) : (index, index, index) -> ()
// CHECK-NOT: moe.all_reduce_in_place
// CHECK: func.func private @moe_dist_all_reduce_sum(index, index, index)
func.func @reduce(%a: memref<?x3xf32>, %b: memref<5xi64>, %c: memref<f64>) {
  moe.all_reduce_in_place %a {ranks = 2} : memref<?x3xf32>
  moe.all_reduce_in_place %b {ranks = 2} : memref<5xi64>
  moe.all_reduce_in_place %c {ranks = 2} : memref<f64>
  return
}

// -----

// CHECK-LABEL: func.func @gather
// CHECK: memref.dim %{{.*}}, %{{.*}} : memref<4x?xi64>
// CHECK: %[[D1:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<4x?xi64>
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %[[D1]] : index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[N]], %[[C8]] : index
// CHECK: call @moe_dist_all_gather(%{{.*}}, %{{.*}}, %[[BYTES]]) : (index, index, index) -> ()
// CHECK: func.func private @moe_dist_all_gather(index, index, index)
func.func @gather(%a: memref<4x?xi64>, %b: memref<2x4x?xi64>) {
  moe.all_gather_into %a, %b {ranks = 2} : memref<4x?xi64>, memref<2x4x?xi64>
  return
}

// -----

// The runtime's names are reserved.
// expected-error@+1 {{'func.func' op uses the symbol @moe_dist_all_gather, which -moe-collectives-to-runtime reserves for the distributed runtime}}
func.func private @moe_dist_all_gather(i32)
func.func @clash(%a: memref<4xf32>, %b: memref<2x4xf32>) {
  moe.all_gather_into %a, %b {ranks = 2} : memref<4xf32>, memref<2x4xf32>
  return
}

// -----

// The expert group's calls: the rank, the fixed blocks (bytes per rank =
// all bytes / ranks) and the ragged rows, whose row counts become byte
// counts in stack buffers (rows * 8 * 4 bytes).
// CHECK-LABEL: func.func @expert_group
// CHECK: %[[G:.*]] = arith.constant 1 : index
// CHECK: %[[RANK:.*]] = call @moe_dist_group_rank(%[[G]]) : (index) -> index
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[PER:.*]] = arith.divui %{{.*}}, %[[TWO]] : index
// CHECK: call @moe_dist_all_to_all(%{{.*}}, %{{.*}}, %[[PER]], %{{.*}}) : (index, index, index, index) -> ()
// CHECK: %[[SEND:.*]] = memref.alloca() : memref<2xi64>
// CHECK: scf.for
// CHECK:   memref.load
// CHECK:   arith.muli
// CHECK:   memref.store
// CHECK: %[[RECV:.*]] = memref.alloca() : memref<2xi64>
// CHECK: call @moe_dist_all_to_all_v(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (index, index, index, index, index) -> ()
// CHECK: return %[[RANK]]
func.func @expert_group(%c: memref<2x4xi64>, %d: memref<2x4xi64>, %r: memref<?x8xf32>,
                        %s: memref<2xi64>, %o: memref<?x8xf32>, %t: memref<2xi64>) -> index {
  %rank = moe.expert_rank {ranks = 2}
  moe.all_to_all_into %c, %d {ranks = 2} : memref<2x4xi64>, memref<2x4xi64>
  moe.all_to_all_v_into %r, %s, %o, %t {ranks = 2} : memref<?x8xf32>, memref<2xi64>, memref<?x8xf32>, memref<2xi64>
  return %rank : index
}
