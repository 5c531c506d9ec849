// RUN: moe-opt %s --moe-prepare-gpu-mapping --split-input-file | FileCheck %s

// A forall body (a future kernel) that reads an argument and copies tiles:
// the argument is copied once into device memory, which the body then
// reads; the result, which the caller receives, is host-shared; the copy
// inside the body becomes linalg.copy; the argument's copy is freed before
// the return (synchronous GPU ops, which -moe-async-gpu-stream orders).

// CHECK-LABEL: func.func @kernel_reads_argument
// CHECK-SAME: (%[[ARG:.*]]: memref<?x4xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[ARG]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[COPY:.*]] = gpu.alloc  (%[[N]]) : memref<?x4xf32>
// CHECK: gpu.memcpy  %[[COPY]], %[[ARG]]
// CHECK: %[[OUT:.*]] = gpu.alloc  host_shared (%{{.*}}) : memref<?x4xf32>
// CHECK: scf.forall (%[[I:.*]]) in
// CHECK: %[[SRC:.*]] = memref.subview %[[COPY]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: %[[DST:.*]] = memref.subview %[[OUT]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: linalg.copy ins(%[[SRC]] : {{.*}}) outs(%[[DST]] : {{.*}})
// CHECK-NOT: memref.copy
// CHECK: gpu.dealloc  %[[COPY]]
// CHECK-NEXT: return %[[OUT]]
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
// reads is not copied, and a copy from it on the host stays memref.copy, so
// its target is host-shared. Buffers inside a forall body stay memref.alloc
// (the kernel's own heap).

// CHECK-LABEL: func.func @host_only
// CHECK-SAME: (%[[ARG:.*]]: memref<4xf32>)
// CHECK-NEXT: %[[BUF:.*]] = gpu.alloc  host_shared () : memref<4xf32>
// CHECK-NEXT: memref.copy %[[ARG]], %[[BUF]]
// CHECK: scf.forall
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: memref.dealloc
// CHECK: gpu.dealloc  %[[BUF]]
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

// -----

// Where each buffer lives: kernels alone touch %dev (a structured op, a
// forall, a generated launch, views of it, a load inside a structured
// op's body), so it is device memory; the host reads %read (a count that
// sizes later work) and the caller receives a view of %ret, so those two are
// host-shared.

// CHECK-LABEL: func.func @placement
// CHECK: %[[DEV:.*]] = gpu.alloc  (%{{.*}}) : memref<?xf32>
// CHECK: %[[READ:.*]] = gpu.alloc  host_shared () : memref<2xi64>
// CHECK: %[[RET:.*]] = gpu.alloc  host_shared (%{{.*}}) : memref<?xf32>
// CHECK: memref.load %[[READ]]
// CHECK: memref.expand_shape %[[RET]]
func.func @placement(%n: index, %idx: memref<?xindex>) -> memref<?x1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %dev = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%dev : memref<?xf32>)
  %read = memref.alloc() : memref<2xi64>
  %ret = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%idx : memref<?xindex>) outs(%ret : memref<?xf32>) {
  ^bb0(%i: index, %out: f32):
    %v = memref.load %dev[%i] : memref<?xf32>
    linalg.yield %v : f32
  }
  scf.forall (%i) in (%n) {
    %view = memref.subview %dev[%i] [1] [1] : memref<?xf32> to memref<1xf32, strided<[1], offset: ?>>
    memref.store %zero, %view[%c0] : memref<1xf32, strided<[1], offset: ?>>
    %ci = arith.index_cast %i : index to i64
    memref.store %ci, %read[%c1] : memref<2xi64>
  }
  %count = memref.load %read[%c1] : memref<2xi64>
  %expanded = memref.expand_shape %ret [[0, 1]] output_shape [%n, 1] : memref<?xf32> into memref<?x1xf32>
  memref.dealloc %dev : memref<?xf32>
  memref.dealloc %read : memref<2xi64>
  return %expanded : memref<?x1xf32>
}

// -----

// Outlined kinds (-moe-outline-kinds) are called by the program only, so
// host reach is followed through their calls. @scale's argument is the
// program's buffer, not the caller's memory: it is neither copied at entry
// nor does a copy from it keep its target on the host. Its result is
// host-shared only because @step reads the second call's result on the
// host; @scale_device's result goes only to kernels and to another kind's
// argument that kernels read, so it stays in device memory, and so does the
// buffer @step passes to it. @step's own result goes to its caller:
// host-shared.

// CHECK-LABEL: func.func @step
// CHECK:      %[[IN:.*]] = gpu.alloc  () : memref<8xf32>
// CHECK:      call @scale_device(%[[IN]])
// CHECK:      %[[OUT:.*]] = gpu.alloc  host_shared () : memref<8xf32>
// CHECK:      return %[[OUT]]
// CHECK-LABEL: func.func private @scale(
// CHECK-SAME: %[[A:.*]]: memref<8xf32, strided<[1], offset: ?>>
// CHECK-NOT:  gpu.memcpy
// CHECK:      %[[R:.*]] = gpu.alloc  host_shared () : memref<8xf32>
// CHECK-NEXT: memref.copy %[[A]], %[[R]]
// CHECK-LABEL: func.func private @scale_device(
// CHECK:      %[[D:.*]] = gpu.alloc  () : memref<8xf32>
// CHECK-LABEL: func.func private @sum
// CHECK:      gpu.alloc  () : memref<8xf32>
func.func @step(%p: memref<16xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %view = memref.subview %p[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  %cast = memref.cast %view : memref<8xf32, strided<[1], offset: 8>> to memref<8xf32, strided<[1], offset: ?>>
  %in = memref.alloc() : memref<8xf32>
  %c8 = arith.constant 8 : index
  scf.forall (%i) in (%c8) {
    %v = memref.load %p[%i] : memref<16xf32>
    memref.store %v, %in[%i] : memref<8xf32>
  }
  %d = call @scale_device(%in) {moe.outlined_kind} : (memref<8xf32>) -> memref<8xf32>
  %s = call @sum(%d) {moe.outlined_kind} : (memref<8xf32>) -> memref<8xf32>
  %a = call @scale(%cast) {moe.outlined_kind} : (memref<8xf32, strided<[1], offset: ?>>) -> memref<8xf32>
  %b = call @scale(%cast) {moe.outlined_kind} : (memref<8xf32, strided<[1], offset: ?>>) -> memref<8xf32>
  %x = memref.load %b[%c0] : memref<8xf32>
  %out = memref.alloc() : memref<8xf32>
  memref.store %x, %out[%c0] : memref<8xf32>
  return %out : memref<8xf32>
}

func.func private @scale(%a: memref<8xf32, strided<[1], offset: ?>>) -> memref<8xf32>
    attributes {moe.outlined_kind} {
  %r = memref.alloc() : memref<8xf32>
  memref.copy %a, %r : memref<8xf32, strided<[1], offset: ?>> to memref<8xf32>
  return %r : memref<8xf32>
}

func.func private @scale_device(%a: memref<8xf32>) -> memref<8xf32>
    attributes {moe.outlined_kind} {
  %r = memref.alloc() : memref<8xf32>
  %c8 = arith.constant 8 : index
  scf.forall (%i) in (%c8) {
    %v = memref.load %a[%i] : memref<8xf32>
    memref.store %v, %r[%i] : memref<8xf32>
  }
  return %r : memref<8xf32>
}

func.func private @sum(%a: memref<8xf32>) -> memref<8xf32>
    attributes {moe.outlined_kind} {
  %r = memref.alloc() : memref<8xf32>
  linalg.copy ins(%a : memref<8xf32>) outs(%r : memref<8xf32>)
  return %r : memref<8xf32>
}
