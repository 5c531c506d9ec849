// RUN: moe-opt %s --moe-async-gpu-stream --split-input-file | FileCheck %s

// Straight-line host code: every GPU op joins one chain that starts with a
// `gpu.wait async`; a generator's own waits around its allocations are
// subsumed; a host-shared allocation stays synchronous and off the chain;
// the host waits before it loads what a kernel wrote and before returning.

// CHECK-LABEL: func.func @chain
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[A:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%{{.*}}) : memref<?xf32>
// CHECK-NEXT: %[[B:.*]], %[[T2:.*]] = gpu.alloc async [%[[T1]]] (%{{.*}}) : memref<?xf32>
// CHECK-NEXT: %[[S:.*]] = gpu.alloc  host_shared () : memref<2xi64>
// CHECK-NEXT: %[[T3:.*]] = gpu.launch async [%[[T2]]] blocks
// CHECK:      %[[T4:.*]] = gpu.memcpy async [%[[T3]]] %[[B]], %[[A]]
// CHECK-NEXT: %[[T5:.*]] = gpu.launch async [%[[T4]]] blocks
// CHECK:      gpu.wait [%[[T5]]]
// CHECK-NEXT: memref.load %[[S]]
// CHECK-NEXT: %[[T6:.*]] = gpu.wait async
// CHECK-NEXT: %[[T7:.*]] = gpu.dealloc async [%[[T6]]] %[[A]]
// CHECK-NEXT: %[[T8:.*]] = gpu.dealloc async [%[[T7]]] %[[B]]
// CHECK-NEXT: gpu.wait [%[[T8]]]
// CHECK-NEXT: return
// CHECK-NOT:  gpu.wait
func.func @chain(%n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = gpu.wait async
  %a, %ta = gpu.alloc async [%t] (%n) : memref<?xf32>
  %b, %tb = gpu.alloc async [%ta] (%n) : memref<?xf32>
  gpu.wait [%tb]
  %s = gpu.alloc host_shared () : memref<2xi64>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.memcpy %b, %a : memref<?xf32>, memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %i = arith.index_cast %n : index to i64
    memref.store %i, %s[%c0] : memref<2xi64>
    gpu.terminator
  }
  %count = memref.load %s[%c0] : memref<2xi64>
  gpu.dealloc %a : memref<?xf32>
  gpu.dealloc %b : memref<?xf32>
  return %count : i64
}

// -----

// A host loop: the host waits before it, and its body gets a chain of its
// own that the host waits for before the next iteration.

// CHECK-LABEL: func.func @loop
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[A:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]]
// CHECK-NEXT: gpu.wait [%[[T1]]]
// CHECK-NEXT: scf.for
// CHECK-NEXT:   %[[U0:.*]] = gpu.wait async
// CHECK-NEXT:   %[[U1:.*]] = gpu.launch async [%[[U0]]] blocks
// CHECK:        gpu.wait [%[[U1]]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[V0:.*]] = gpu.wait async
// CHECK-NEXT: %[[V1:.*]] = gpu.dealloc async [%[[V0]]] %[[A]]
// CHECK-NEXT: gpu.wait [%[[V1]]]
// CHECK-NEXT: return
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = gpu.alloc (%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %a[%i] : memref<?xf32>
      gpu.terminator
    }
  }
  gpu.dealloc %a : memref<?xf32>
  return
}

// -----

// Host code without GPU work is left alone.

// CHECK-LABEL: func.func @no_gpu
// CHECK-NOT:   gpu.wait
// CHECK:       return
func.func @no_gpu(%m: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}
