// RUN: moe-opt %s --moe-prepare-gpu-mapping --split-input-file | FileCheck %s

// A forall body (a future kernel) that reads an argument and copies tiles:
// the argument is copied once into host-shared memory, which the body then
// reads; host allocations become host-shared gpu.alloc; the copy inside the
// body becomes linalg.copy; the argument copy is freed before the return.

// CHECK-LABEL: func.func @kernel_reads_argument
// CHECK-SAME: (%[[ARG:.*]]: memref<?x4xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[ARG]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[SHARED:.*]] = gpu.alloc  host_shared (%[[N]]) : memref<?x4xf32>
// CHECK: memref.copy %[[ARG]], %[[SHARED]]
// CHECK: %[[OUT:.*]] = gpu.alloc  host_shared (%{{.*}}) : memref<?x4xf32>
// CHECK: scf.forall (%[[I:.*]]) in
// CHECK: %[[SRC:.*]] = memref.subview %[[SHARED]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: %[[DST:.*]] = memref.subview %[[OUT]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: linalg.copy ins(%[[SRC]] : {{.*}}) outs(%[[DST]] : {{.*}})
// CHECK-NOT: memref.copy
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[T1:.*]] = gpu.dealloc async [%[[T0]]] %[[SHARED]]
// CHECK: gpu.wait [%[[T1]]]
// CHECK: return %[[OUT]]
func.func @kernel_reads_argument(%arg0: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x4xf32>
  %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x4xf32>
  scf.forall (%i) in (%dim) {
    %src = memref.subview %arg0[%i, 0] [1, 4] [1, 1] : memref<?x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    %dst = memref.subview %alloc[%i, 0] [1, 4] [1, 1] : memref<?x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %src, %dst : memref<1x4xf32, strided<[4, 1], offset: ?>> to memref<1x4xf32, strided<[4, 1], offset: ?>>
  }
  return %alloc : memref<?x4xf32>
}

// -----

// Outside any forall nothing moves to the device: an argument only the host
// reads is not copied, and a copy on the host stays memref.copy. Buffers
// inside a forall body stay memref.alloc (the kernel's own heap).

// CHECK-LABEL: func.func @host_only
// CHECK-SAME: (%[[ARG:.*]]: memref<4xf32>)
// CHECK-NEXT: %[[BUF:.*]] = gpu.alloc  host_shared () : memref<4xf32>
// CHECK-NEXT: memref.copy %[[ARG]], %[[BUF]]
// CHECK: scf.forall
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: memref.dealloc
// CHECK: gpu.dealloc async
func.func @host_only(%arg0: memref<4xf32>) {
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %arg0, %buf : memref<4xf32> to memref<4xf32>
  %c2 = arith.constant 2 : index
  scf.forall (%i) in (%c2) {
    %tile = memref.alloc() : memref<8xf32>
    memref.dealloc %tile : memref<8xf32>
  }
  memref.dealloc %buf : memref<4xf32>
  return
}
