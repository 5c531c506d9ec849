// RUN: moe-opt %s -moe-map-forall-to-gpu | FileCheck %s

// Host copies between the program's buffers run on the GPU. Between two
// identity layouts of one type (the byte views -moe-buffer-insert-chains
// gives the packed gradient's parameters) a copy is one gpu.memcpy; into a
// strided view it is a kernel, as before; from the caller's memory (an
// argument of a public function) it stays on the host.
// CHECK-LABEL: func.func @host_copies
// CHECK-SAME:    (%[[ARG:.*]]: memref<16xf32>)
// CHECK-DAG:     %[[BYTES:.*]] = gpu.alloc  () : memref<128xi8>
// CHECK-DAG:     %[[WHOLE:.*]] = memref.view %[[BYTES]]
// CHECK-DAG:     %[[PART:.*]] = memref.view %[[BYTES]]
// CHECK-DAG:     %[[SRC:.*]] = gpu.alloc  () : memref<16xf32>
// CHECK:         memref.copy %[[ARG]], %[[SRC]]
// CHECK-NEXT:    gpu.memcpy  %[[PART]], %[[SRC]] : memref<16xf32>, memref<16xf32>
// CHECK-NEXT:    %[[SUB:.*]] = memref.subview %[[WHOLE]][8] [16] [1]
// CHECK-NOT:     gpu.memcpy
// CHECK:         gpu.launch
// CHECK:           memref.load %[[SRC]]
// CHECK:           memref.store %{{.*}}, %[[SUB]]
// CHECK:         gpu.terminator
// CHECK-NOT:     gpu.memcpy
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @host_copies(%arg: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %bytes = gpu.alloc () : memref<128xi8>
  %whole = memref.view %bytes[%c0][] : memref<128xi8> to memref<32xf32>
  %part = memref.view %bytes[%c16][] : memref<128xi8> to memref<16xf32>
  %src = gpu.alloc () : memref<16xf32>
  memref.copy %arg, %src : memref<16xf32> to memref<16xf32>
  memref.copy %src, %part : memref<16xf32> to memref<16xf32>
  %sub = memref.subview %whole[8] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 8>>
  memref.copy %src, %sub : memref<16xf32> to memref<16xf32, strided<[1], offset: 8>>
  return
}
