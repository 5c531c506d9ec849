// RUN: moe-opt %s --moe-split-fresh-deallocs --split-input-file | FileCheck %s
// With upstream's simplification after it, each fresh buffer that no
// retained value can be is freed unconditionally:
// RUN: moe-opt %s --moe-split-fresh-deallocs --buffer-deallocation-simplification --bufferization-lower-deallocations --canonicalize --split-input-file | FileCheck %s --check-prefix=LOWERED

// Buffers of memref.allocs and of calls of outlined kinds are distinct
// allocations: each gets its own dealloc with its condition and the whole
// retain list; a used updated condition is the disjunction of the new ops'.

func.func private @__moe_kind_a(%x: memref<4xf32>) -> (memref<4xf32>, memref<2xf32>) attributes {moe.outlined_kind}

// CHECK-LABEL: func.func @fresh
// CHECK-SAME:    (%[[IN:.*]]: memref<4xf32>, %[[C:.*]]: i1)
// CHECK:      %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:      %[[R:.*]]:2 = call @__moe_kind_a(%[[A]])
// CHECK:      %[[K:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: %[[D0:.*]]:2 = bufferization.dealloc (%[[A]] : memref<4xf32>) if (%[[C]]) retain (%[[K]], %[[IN]] :
// CHECK-NEXT: %[[D1:.*]]:2 = bufferization.dealloc (%[[R]]#0 : memref<4xf32>) if (%true) retain (%[[K]], %[[IN]] :
// CHECK-NEXT: %[[O1:.*]] = arith.ori %[[D0]]#1, %[[D1]]#1
// CHECK-NEXT: %[[D2:.*]]:2 = bufferization.dealloc (%[[R]]#1 : memref<2xf32>) if (%true) retain (%[[K]], %[[IN]] :
// CHECK-NEXT: %[[O2:.*]] = arith.ori %[[O1]], %[[D2]]#1
// CHECK-NOT:  bufferization.dealloc
// CHECK:      return %[[K]], %[[O2]]

// LOWERED-LABEL: func.func @fresh
// LOWERED-DAG: %[[FALSE:.*]] = arith.constant false
// LOWERED:     %[[A:.*]] = memref.alloc() : memref<4xf32>
// LOWERED:     %[[R:.*]]:2 = call @__moe_kind_a(%[[A]])
// LOWERED:     %[[K:.*]] = memref.alloc() : memref<8xf32>
// LOWERED-NEXT: scf.if %{{.*}} {
// LOWERED-NEXT:   memref.dealloc %[[A]] : memref<4xf32>
// LOWERED-NEXT: }
// LOWERED-NEXT: memref.dealloc %[[R]]#0 : memref<4xf32>
// LOWERED-NEXT: memref.dealloc %[[R]]#1 : memref<2xf32>
// LOWERED-NEXT: return %[[K]], %[[FALSE]]
func.func @fresh(%in: memref<4xf32>, %c: i1) -> (memref<8xf32>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  memref.copy %in, %a : memref<4xf32> to memref<4xf32>
  %r:2 = func.call @__moe_kind_a(%a) {moe.outlined_kind} : (memref<4xf32>) -> (memref<4xf32>, memref<2xf32>)
  %k = memref.alloc() : memref<8xf32>
  %d:2 = bufferization.dealloc (%a, %r#0, %r#1 : memref<4xf32>, memref<4xf32>, memref<2xf32>) if (%c, %true, %true) retain (%k, %in : memref<8xf32>, memref<4xf32>)
  return %k, %d#1 : memref<8xf32>, i1
}

// -----

// A buffer that is not fresh (a view, a block argument, the result of a
// call that is not of an outlined kind) or a repeated one leaves the
// dealloc to upstream.

func.func private @other(%x: memref<4xf32>) -> memref<4xf32>

// CHECK-LABEL: func.func @not_fresh
// CHECK-COUNT-4: bufferization.dealloc ({{%[^,]*}}, {{%[^,]*}} :
// CHECK-NOT:     bufferization.dealloc
func.func @not_fresh(%in: memref<8xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %b = memref.alloc() : memref<4xf32>
  %o = func.call @other(%b) : (memref<4xf32>) -> memref<4xf32>
  bufferization.dealloc (%a, %v : memref<8xf32>, memref<4xf32, strided<[1]>>) if (%true, %true)
  bufferization.dealloc (%a, %in : memref<8xf32>, memref<8xf32>) if (%true, %true)
  bufferization.dealloc (%b, %o : memref<4xf32>, memref<4xf32>) if (%true, %true)
  bufferization.dealloc (%b, %b : memref<4xf32>, memref<4xf32>) if (%true, %true)
  return
}

// -----

// A dealloc of one buffer, or of none, is already split.

// CHECK-LABEL: func.func @single
// CHECK-NEXT:  %[[A:.*]] = memref.alloc
// CHECK-NEXT:  bufferization.dealloc (%[[A]] : memref<4xf32>) if (%{{.*}}) retain (%[[A]] : memref<4xf32>)
// CHECK-NEXT:  bufferization.dealloc retain (%[[A]] : memref<4xf32>)
// CHECK-NEXT:  return
func.func @single(%c: i1) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  %0 = bufferization.dealloc (%a : memref<4xf32>) if (%c) retain (%a : memref<4xf32>)
  %1 = bufferization.dealloc retain (%a : memref<4xf32>)
  return %a : memref<4xf32>
}
