// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu | FileCheck %s
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu=share-tile-memory=true | FileCheck %s --check-prefix=SHARE
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu=elide-barriers=false | FileCheck %s --check-prefix=ALL

// A tile program's barriers go where the ops before (since the last barrier
// kept) and after (up to the next one) touch no common bytes: filling %b
// needs no barrier after copying into %a; the sum reads both, so one
// barrier stays; the copies out of %c and of %a both write %out (memory the
// program does not own: assumed to overlap), so a barrier stays between
// them; filling %a after copying out of it keeps one; the barrier before
// the end goes. Without elision each of the six ops ends with a barrier.

// CHECK-LABEL: func.func @independent(
// CHECK:         gpu.launch
// CHECK:           scf.for
// CHECK:             memref.store %{{.+}}, %[[A:memspacecast[_0-9]*]]
// CHECK-NOT:       gpu.barrier
// CHECK:           scf.for
// CHECK:             memref.store %{{.+}}, %[[B:memspacecast[_0-9]*]]
// CHECK:           gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK:           scf.for
// CHECK:             memref.load %[[A]]
// CHECK:             memref.load %[[B]]
// CHECK:           gpu.barrier
// CHECK:           gpu.barrier
// CHECK:           gpu.barrier
// CHECK:           scf.for
// CHECK-NOT:       gpu.barrier
// CHECK:           gpu.terminator
// ALL-LABEL: func.func @independent(
// ALL-COUNT-6:     gpu.barrier
// ALL-NOT:         gpu.barrier
// ALL:             gpu.terminator
func.func @independent(%x: memref<?x64xf32>, %out: memref<?x3x64xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    %c = memref.alloc() : memref<64xf32>
    %row = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<64xf32, strided<[1], offset: ?>>) outs(%a : memref<64xf32>)
    linalg.fill ins(%one : f32) outs(%b : memref<64xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>) {
    ^bb0(%p: f32, %q: f32, %r: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    }
    %row0 = memref.subview %out[%i, 0, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%c : memref<64xf32>) outs(%row0 : memref<64xf32, strided<[1], offset: ?>>)
    %row1 = memref.subview %out[%i, 1, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%a : memref<64xf32>) outs(%row1 : memref<64xf32, strided<[1], offset: ?>>)
    linalg.fill ins(%zero : f32) outs(%a : memref<64xf32>)
  }
  return
}

// -----

// A loop whose body holds barriers depends on everything: the barrier
// before it and the one after it stay, and so do its own.

// CHECK-LABEL: func.func @loop_inside(
// CHECK:           scf.for
// CHECK:           gpu.barrier
// CHECK-NEXT:      scf.for %{{.+}} = %c0
// CHECK:             scf.for
// CHECK:             gpu.barrier
// CHECK-NEXT:      }
// CHECK-NOT:       gpu.barrier
// CHECK:           scf.for
// CHECK-NOT:       gpu.barrier
// CHECK:           gpu.terminator
func.func @loop_inside(%out: memref<?x2x64xf32>, %n: index) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.forall (%i) in (%n) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    linalg.fill ins(%one : f32) outs(%a : memref<64xf32>)
    scf.for %k = %c0 to %c4 step %c1 {
      linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%b : memref<64xf32>) {
      ^bb0(%r: f32):
        %s = arith.addf %r, %one : f32
        linalg.yield %s : f32
      }
    }
    %row0 = memref.subview %out[%i, 0, 0] [1, 1, 64] [1, 1, 1] : memref<?x2x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%a : memref<64xf32>) outs(%row0 : memref<64xf32, strided<[1], offset: ?>>)
  }
  return
}

// -----

// Tiles sharing bytes (share-tile-memory): %c takes %a's bytes, so the
// barrier between copying out of %a and writing %c stays; the one before
// %a's view (nothing before it) and the one between the two fills go.

// SHARE-LABEL: func.func @tile_sharing(
// SHARE:           %[[VA:.+]] = memref.view %{{.+}}[%{{.+}}][] {{.*}} to memref<64xf32
// SHARE-NOT:       gpu.barrier
// SHARE:           memref.view
// SHARE-NOT:       gpu.barrier
// SHARE:           scf.for
// SHARE-NOT:       gpu.barrier
// SHARE:           scf.for
// SHARE:           gpu.barrier
// SHARE-NOT:       gpu.barrier
// SHARE:           scf.for
// SHARE:           gpu.barrier
// SHARE-NEXT:      %{{.+}} = arith.constant 0 : index
// SHARE-NEXT:      %[[AT:.+]] = arith.addi
// SHARE-NEXT:      memref.view %{{.+}}[%[[AT]]][]
// SHARE:           scf.for
// SHARE:           gpu.barrier
// SHARE-NEXT:      memref.subview
// SHARE-NOT:       gpu.barrier
// SHARE:           scf.for
// SHARE-NOT:       gpu.barrier
// SHARE:           gpu.terminator
func.func @tile_sharing(%out: memref<?x3x64xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    linalg.fill ins(%zero : f32) outs(%a : memref<64xf32>)
    linalg.fill ins(%one : f32) outs(%b : memref<64xf32>)
    %row0 = memref.subview %out[%i, 0, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%a : memref<64xf32>) outs(%row0 : memref<64xf32, strided<[1], offset: ?>>)
    %c = memref.alloc() : memref<64xf32>
    linalg.copy ins(%b : memref<64xf32>) outs(%c : memref<64xf32>)
    %row1 = memref.subview %out[%i, 1, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%c : memref<64xf32>) outs(%row1 : memref<64xf32, strided<[1], offset: ?>>)
  }
  return
}

// -----

// A reduction to a scalar runs on one thread (linalg ops left in place under
// `scf.if`): a barrier stays before the reduction (which reads %a, written
// by every thread; the fill of %s touches other bytes) and after it (every
// thread loads its result). Linalg ops on memrefs are recursive and also
// declare their operands' effects; elision must see the latter (the KDA
// gradient's guard read a maximum that thread 0 had not yet written).

// CHECK-LABEL: func.func @one_thread_reduction(
// CHECK:           scf.for
// CHECK:             memref.store %{{.+}}, %[[A:memspacecast[_0-9]*]]
// CHECK-NOT:       gpu.barrier
// CHECK:           scf.if
// CHECK:             linalg.fill
// CHECK:           gpu.barrier
// CHECK:           scf.if
// CHECK:             linalg.generic
// CHECK-SAME:          ins(%[[A]] : memref<64xf32>) outs(%[[S:memspacecast[_0-9]*]] : memref<f32>)
// CHECK:           gpu.barrier
// CHECK:           memref.load %[[S]][]
func.func @one_thread_reduction(%x: memref<?x64xf32>, %out: memref<?x64xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %a = memref.alloc() : memref<64xf32>
    %s = memref.alloc() : memref<f32>
    %row = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<64xf32, strided<[1], offset: ?>>) outs(%a : memref<64xf32>)
    linalg.fill ins(%zero : f32) outs(%s : memref<f32>)
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%a : memref<64xf32>) outs(%s : memref<f32>) {
    ^bb0(%p: f32, %r: f32):
      %m = arith.maximumf %p, %r : f32
      linalg.yield %m : f32
    }
    %max = memref.load %s[] : memref<f32>
    %orow = memref.subview %out[%i, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : memref<64xf32>) outs(%orow : memref<64xf32, strided<[1], offset: ?>>) {
    ^bb0(%p: f32, %o: f32):
      %d = arith.subf %p, %max : f32
      linalg.yield %d : f32
    }
  }
  return
}
