// RUN: moe-opt %s -moe-lower-dynamic-expand-shape | FileCheck %s
// RUN: moe-opt %s -moe-lower-dynamic-expand-shape -expand-strided-metadata -o /dev/null

// [N, 256] into [B, T, 256]: strides T*256, 256, 1 from the sizes.
// CHECK-LABEL: func.func @unflatten
// CHECK-SAME: (%[[A:.*]]: memref<?x256xf32>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[S0:.*]] = arith.muli %[[C256]], %[[T]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[T]], 256], strides: [%[[S0]], 256, 1]
// CHECK-NOT: memref.expand_shape
func.func @unflatten(%a: memref<?x256xf32>, %b: index, %t: index) -> memref<?x?x256xf32> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%b, %t, 256]
      : memref<?x256xf32> into memref<?x?x256xf32>
  return %e : memref<?x?x256xf32>
}

// A strided source keeps its dynamic offset and inner stride.
// CHECK-LABEL: func.func @strided
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %[[STRIDE:.*]] = memref.extract_strided_metadata
// CHECK: %[[S0:.*]] = arith.muli %[[STRIDE]], %{{.*}} : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.*}}, %{{.*}}], strides: [%[[S0]], %[[STRIDE]]]
func.func @strided(%a: memref<?xf32, strided<[?], offset: ?>>, %m: index, %n: index)
    -> memref<?x?xf32, strided<[?, ?], offset: ?>> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%m, %n]
      : memref<?xf32, strided<[?], offset: ?>> into memref<?x?xf32, strided<[?, ?], offset: ?>>
  return %e : memref<?x?xf32, strided<[?, ?], offset: ?>>
}

// One dynamic size per group: left to -expand-strided-metadata.
// CHECK-LABEL: func.func @single_dynamic
// CHECK: memref.expand_shape
func.func @single_dynamic(%a: memref<?xf32>, %m: index) -> memref<?x4xf32> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%m, 4]
      : memref<?xf32> into memref<?x4xf32>
  return %e : memref<?x4xf32>
}
