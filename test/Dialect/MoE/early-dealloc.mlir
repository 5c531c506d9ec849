// RUN: moe-opt %s --moe-early-dealloc --split-input-file | FileCheck %s

// Each buffer is freed right after the last op that reads it or one of its
// views, in the order the uses end; the ops after it are untouched.

// CHECK-LABEL: func.func @straight_line
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]]
// CHECK-NEXT: %[[C:.*]] = memref.alloc
// CHECK-NEXT: memref.copy %[[V]], %[[C]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: memref.copy %[[C]], %[[OUT:.*]] :
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
func.func @straight_line(%out: memref<4xf32>) {
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%f : f32) outs(%a : memref<8xf32>)
  memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  %v = memref.subview %b[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  %c = memref.alloc() : memref<4xf32>
  memref.copy %v, %c : memref<4xf32, strided<[1], offset: 2>> to memref<4xf32>
  memref.copy %c, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

// -----

// A use inside a loop or a kernel keeps the buffer until the op that holds
// it; a view that a loop carries is followed through the loop's result; a
// buffer allocated in the loop body is freed inside the body.

// CHECK-LABEL: func.func @regions
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK:      %[[R:.*]] = scf.for {{.*}} iter_args(%[[IT:.*]] = %[[A]])
// CHECK:        %[[T:.*]] = memref.alloc
// CHECK-NEXT:   memref.copy %[[IT]], %[[T]]
// CHECK-NEXT:   memref.copy %[[T]], %[[IT]]
// CHECK-NEXT:   memref.dealloc %[[T]]
// CHECK-NEXT:   linalg.fill
// CHECK-NEXT:   scf.yield %[[IT]]
// CHECK:      gpu.launch
// CHECK:        memref.load %[[R]]
// CHECK:        gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
func.func @regions(%n: index, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 2.0 : f32
  %a = memref.alloc() : memref<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %a) -> (memref<8xf32>) {
    %t = memref.alloc() : memref<8xf32>
    memref.copy %it, %t : memref<8xf32> to memref<8xf32>
    memref.copy %t, %it : memref<8xf32> to memref<8xf32>
    linalg.fill ins(%f : f32) outs(%out : memref<f32>)
    memref.dealloc %t : memref<8xf32>
    scf.yield %it : memref<8xf32>
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %r[%c0] : memref<8xf32>
    memref.store %x, %out[] : memref<f32>
    gpu.terminator
  }
  linalg.fill ins(%f : f32) outs(%out : memref<f32>)
  memref.dealloc %a : memref<8xf32>
  return
}

// -----

// Left in place: a buffer whose address leaves as an index (the analysis
// cannot follow it), a buffer that is not an alloc of the block, and one
// used by an op with a memref result the analysis does not relate to it.

// CHECK-LABEL: func.func @kept
// CHECK:      memref.extract_aligned_pointer_as_index
// CHECK:      linalg.fill
// CHECK-NEXT: memref.dealloc %[[P:.*]] :
// CHECK-NEXT: memref.dealloc %arg0
// CHECK-NEXT: return
func.func @kept(%arg: memref<8xf32>, %out: memref<f32>) -> index {
  %f = arith.constant 3.0 : f32
  %p = memref.alloc() : memref<8xf32>
  %addr = memref.extract_aligned_pointer_as_index %p : memref<8xf32> -> index
  linalg.fill ins(%f : f32) outs(%out : memref<f32>)
  memref.dealloc %p : memref<8xf32>
  memref.dealloc %arg : memref<8xf32>
  return %addr : index
}

// -----

// CHECK-LABEL: func.func @opaque_result
// CHECK:      call @wrap
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: return
func.func private @wrap(memref<8xf32>) -> memref<8xf32>
func.func @opaque_result(%out: memref<f32>) -> memref<8xf32> {
  %f = arith.constant 3.0 : f32
  %p = memref.alloc() : memref<8xf32>
  %w = call @wrap(%p) : (memref<8xf32>) -> memref<8xf32>
  linalg.fill ins(%f : f32) outs(%out : memref<f32>)
  memref.dealloc %p : memref<8xf32>
  return %w : memref<8xf32>
}

// -----

// A call of an outlined kind (-moe-outline-kinds) only reads what it is
// given and returns fresh buffers: its operand is freed right after it, and
// its result, like an alloc, after its own last use. Any other call with a
// memref result may return its operand: the operand lives as long as the
// result is used.
// CHECK-LABEL: func.func @outlined_kind_calls
// CHECK:      %[[A:.*]] = memref.alloc
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: %[[R:.*]] = call @kind(%[[A]]) {moe.outlined_kind}
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: memref.copy %[[R]], %[[OUT:.*]] :
// CHECK-NEXT: memref.dealloc %[[R]]
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: %[[S:.*]] = call @other(%[[B]])
// CHECK-NEXT: memref.copy %[[S]], %[[OUT]] :
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
func.func private @kind(%a: memref<4xf32>) -> memref<4xf32>
    attributes {moe.outlined_kind}
func.func private @other(%a: memref<4xf32>) -> memref<4xf32>
func.func @outlined_kind_calls(%out: memref<4xf32>) {
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%f : f32) outs(%a : memref<4xf32>)
  %r = func.call @kind(%a) {moe.outlined_kind} : (memref<4xf32>) -> memref<4xf32>
  memref.copy %r, %out : memref<4xf32> to memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %s = func.call @other(%b) : (memref<4xf32>) -> memref<4xf32>
  memref.copy %s, %out : memref<4xf32> to memref<4xf32>
  linalg.fill ins(%f : f32) outs(%out : memref<4xf32>)
  memref.dealloc %a : memref<4xf32>
  memref.dealloc %r : memref<4xf32>
  memref.dealloc %b : memref<4xf32>
  return
}
