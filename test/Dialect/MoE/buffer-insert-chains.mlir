// RUN: moe-opt %s --split-input-file --moe-buffer-insert-chains=min-links=3 | FileCheck %s
// RUN: moe-opt %s --split-input-file --moe-buffer-insert-chains | FileCheck %s --check-prefix=DEFAULT
// RUN: moe-opt %s --split-input-file --moe-buffer-insert-chains=min-links=3 --one-shot-bufferize="bufferize-function-boundaries allow-return-allocs-from-loops" | FileCheck %s --check-prefix=BUFFERS

// A chain into a filled tensor (the packed gradient's form): one buffer of
// bytes, seen whole through a view at shift 0 and filled; each source
// written, in the links' order, into a view of its contiguous run (an
// identity layout, whose shift is in the pointer); read back once; the fill
// and its empty tensor go.
// CHECK-LABEL: func.func @filled_root
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<2xf32>, %[[C:.*]]: tensor<4xf32>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NEXT:    %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK-NEXT:    %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[BUF:.*]] = memref.view %[[BYTES]][%[[S0]]][] : memref<64xi8> to memref<16xf32>
// CHECK-NEXT:    linalg.fill ins(%[[ZERO]] : f32) outs(%[[BUF]] : memref<16xf32>)
// CHECK-NEXT:    %[[SA:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[V0:.*]] = memref.view %[[BYTES]][%[[SA]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    bufferization.materialize_in_destination %[[A]] in writable %[[V0]] : (tensor<4xf32>, memref<4xf32>)
// CHECK-NEXT:    %[[SB:.*]] = arith.constant 24 : index
// CHECK-NEXT:    %[[V1:.*]] = memref.view %[[BYTES]][%[[SB]]][] : memref<64xi8> to memref<2xf32>
// CHECK-NEXT:    bufferization.materialize_in_destination %[[B]] in writable %[[V1]]
// CHECK-NEXT:    %[[SC:.*]] = arith.constant 48 : index
// CHECK-NEXT:    %[[V2:.*]] = memref.view %[[BYTES]][%[[SC]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    bufferization.materialize_in_destination %[[C]] in writable %[[V2]]
// CHECK-NEXT:    %[[T:.*]] = bufferization.to_tensor %[[BUF]] restrict writable : memref<16xf32> to tensor<16xf32>
// CHECK-NEXT:    return %[[T]]
// Below the default length of 8 links the chain stays.
// DEFAULT-LABEL: func.func @filled_root
// DEFAULT-COUNT-3: tensor.insert_slice
// DEFAULT-NOT:     memref.alloc
// Bufferized: the one buffer, three copies into its views (identity
// layouts), no other alloc.
// BUFFERS-LABEL: func.func @filled_root
// BUFFERS:         memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// BUFFERS-NOT:     memref.alloc
// BUFFERS-COUNT-3: memref.copy %{{.*}}, %{{.*}} : memref<{{.*}}> to memref<{{[0-9]+}}xf32>{{$}}
// BUFFERS-NOT:     memref.alloc
// BUFFERS:         return
func.func @filled_root(%a: tensor<4xf32>, %b: tensor<2xf32>, %c: tensor<4xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %0 = tensor.insert_slice %a into %z[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %1 = tensor.insert_slice %b into %0[6] [2] [1] : tensor<2xf32> into tensor<16xf32>
  %2 = tensor.insert_slice %c into %1[12] [4] [1] : tensor<4xf32> into tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// A tensor.empty root with dynamic sizes and boxes at dynamic offsets: the
// buffer takes the empty's sizes, the views the links' offsets and strides.
// CHECK-LABEL: func.func @dynamic_root
// CHECK-SAME:    (%[[N:.*]]: index, %[[I:.*]]: index, %[[X:.*]]: tensor<2x?xf32>)
// CHECK:         %[[BUF:.*]] = memref.alloc(%[[N]]) {alignment = 64 : i64} : memref<?x8xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         memref.subview %[[BUF]][0, 0] [2, 8] [1, 1]
// CHECK:         memref.subview %[[BUF]][%[[I]], 0] [2, 8] [1, 1]
// CHECK:         memref.subview %[[BUF]][4, 0] [2, 4] [1, 2]
// CHECK:         bufferization.to_tensor %[[BUF]] restrict writable : memref<?x8xf32> to tensor<?x8xf32>
func.func @dynamic_root(%n: index, %i: index, %x: tensor<2x?xf32>) -> tensor<?x8xf32> {
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %y = tensor.cast %x : tensor<2x?xf32> to tensor<2x8xf32>
  %h = tensor.extract_slice %y[0, 0] [2, 4] [1, 1] : tensor<2x8xf32> to tensor<2x4xf32>
  %0 = tensor.insert_slice %y into %e[0, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<?x8xf32>
  %1 = tensor.insert_slice %y into %0[%i, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<?x8xf32>
  %2 = tensor.insert_slice %h into %1[4, 0] [2, 4] [1, 2] : tensor<2x4xf32> into tensor<?x8xf32>
  return %2 : tensor<?x8xf32>
}

// -----

// A link read by another op ends the chain after it: the two links before
// the reader are fewer than three and stay, and so does everything after.
// A fill that something else reads stays too.
// CHECK-LABEL: func.func @read_in_the_middle
// CHECK-NOT:     memref.alloc
// CHECK-COUNT-4: tensor.insert_slice
// CHECK-NOT:     memref.alloc
func.func @read_in_the_middle(%a: tensor<4xf32>) -> (tensor<16xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %0 = tensor.insert_slice %a into %z[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %1 = tensor.insert_slice %a into %0[4] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %r = tensor.extract_slice %1[2] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %2 = tensor.insert_slice %a into %1[8] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %3 = tensor.insert_slice %a into %2[12] [4] [1] : tensor<4xf32> into tensor<16xf32>
  return %3, %r : tensor<16xf32>, tensor<4xf32>
}

// -----

// The prefix before the reader is long enough: it becomes the buffer, and
// the reader and the later links read and extend the tensor read back from
// it. The fill, which a second chain starts from, stays for that chain.
// CHECK-LABEL: func.func @long_prefix
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK:         %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         %[[BUF:.*]] = memref.view %[[BYTES]]
// CHECK-COUNT-3: bufferization.materialize_in_destination
// CHECK:         %[[T:.*]] = bufferization.to_tensor %[[BUF]]
// CHECK-NEXT:    %[[R:.*]] = tensor.extract_slice %[[T]][2] [4] [1]
// CHECK-NEXT:    %[[L:.*]] = tensor.insert_slice %{{.*}} into %[[T]][12] [4] [1]
// CHECK-NEXT:    %[[O:.*]] = tensor.insert_slice %{{.*}} into %[[Z]][0] [4] [1]
// CHECK-NEXT:    return %[[L]], %[[R]], %[[O]]
func.func @long_prefix(%a: tensor<4xf32>) -> (tensor<16xf32>, tensor<4xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %0 = tensor.insert_slice %a into %z[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %1 = tensor.insert_slice %a into %0[4] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %2 = tensor.insert_slice %a into %1[8] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %r = tensor.extract_slice %2[2] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %3 = tensor.insert_slice %a into %2[12] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %o = tensor.insert_slice %a into %z[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
  return %3, %r, %o : tensor<16xf32>, tensor<4xf32>, tensor<16xf32>
}

// -----

// A rank-reducing insert ends the chain before it (two links, too short);
// a chain inside a loop body is not looked at; a destination that is not a
// fresh tensor starts no chain.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     bufferization.to_tensor
// CHECK:         return
func.func @left_alone(%a: tensor<4xf32>, %row: tensor<8xf32>, %d: tensor<4x8xf32>, %n: index) -> (tensor<4x8xf32>, tensor<16xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = tensor.insert_slice %row into %e[0, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> tensor<4xf32> {
    %f = tensor.empty() : tensor<16xf32>
    %1 = tensor.insert_slice %acc into %f[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
    %2 = tensor.insert_slice %acc into %1[4] [4] [1] : tensor<4xf32> into tensor<16xf32>
    %3 = tensor.insert_slice %acc into %2[8] [4] [1] : tensor<4xf32> into tensor<16xf32>
    %s = tensor.extract_slice %3[6] [4] [1] : tensor<16xf32> to tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  %g = tensor.empty() : tensor<16xf32>
  %4 = tensor.insert_slice %l into %g[0] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %5 = tensor.insert_slice %l into %4[4] [4] [1] : tensor<4xf32> into tensor<16xf32>
  %6 = tensor.insert_slice %row into %0[1, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<4x8xf32>
  %r0 = tensor.extract_slice %d[0, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
  %7 = tensor.insert_slice %r0 into %d[1, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %8 = tensor.insert_slice %r0 into %7[2, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  %9 = tensor.insert_slice %r0 into %8[3, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
  return %6, %5, %9 : tensor<4x8xf32>, tensor<16xf32>, tensor<4x8xf32>
}

// -----

// A static 2-D root: boxes that are one contiguous run of its rows (whole
// rows; part of one row) get byte views at the run's shift; a box of part
// of two rows, or with a stride, gets a subview of the whole view.
// CHECK-LABEL: func.func @runs_and_boxes
// CHECK:         %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK:         %[[BUF:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<128xi8> to memref<4x8xf32>
// CHECK:         %[[S1:.*]] = arith.constant 32 : index
// CHECK-NEXT:    memref.view %[[BYTES]][%[[S1]]][] : memref<128xi8> to memref<2x8xf32>
// CHECK:         %[[S2:.*]] = arith.constant 108 : index
// CHECK-NEXT:    memref.view %[[BYTES]][%[[S2]]][] : memref<128xi8> to memref<1x5xf32>
// CHECK:         memref.subview %[[BUF]][0, 0] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1]>>
// CHECK:         memref.subview %[[BUF]][0, 0] [1, 4] [1, 2] : memref<4x8xf32> to memref<1x4xf32, strided<[8, 2]>>
// CHECK:         bufferization.to_tensor %[[BUF]] restrict writable : memref<4x8xf32> to tensor<4x8xf32>
func.func @runs_and_boxes(%rows: tensor<2x8xf32>, %part: tensor<1x5xf32>, %box: tensor<2x4xf32>, %strided: tensor<1x4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = tensor.insert_slice %rows into %e[1, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  %1 = tensor.insert_slice %part into %0[3, 3] [1, 5] [1, 1] : tensor<1x5xf32> into tensor<4x8xf32>
  %2 = tensor.insert_slice %box into %1[0, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x8xf32>
  %3 = tensor.insert_slice %strided into %2[0, 0] [1, 4] [1, 2] : tensor<1x4xf32> into tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Index elements have no byte width before lowering: the buffer keeps its
// element type and the links their subviews (no crash).
// CHECK-LABEL: func.func @index_root
// CHECK:         %[[BUF:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16xindex>
// CHECK-NOT:     memref.view
// CHECK-COUNT-3: memref.subview %[[BUF]]
// CHECK:         bufferization.to_tensor %[[BUF]] restrict writable : memref<16xindex> to tensor<16xindex>
func.func @index_root(%a: tensor<4xindex>) -> tensor<16xindex> {
  %e = tensor.empty() : tensor<16xindex>
  %0 = tensor.insert_slice %a into %e[0] [4] [1] : tensor<4xindex> into tensor<16xindex>
  %1 = tensor.insert_slice %a into %0[4] [4] [1] : tensor<4xindex> into tensor<16xindex>
  %2 = tensor.insert_slice %a into %1[8] [4] [1] : tensor<4xindex> into tensor<16xindex>
  return %2 : tensor<16xindex>
}
