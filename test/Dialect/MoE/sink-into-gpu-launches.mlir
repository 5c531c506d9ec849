// RUN: moe-opt %s -split-input-file -moe-sink-into-gpu-launches | FileCheck %s
// RUN: moe-opt %s -split-input-file -moe-sink-into-gpu-launches -gpu-kernel-outlining | FileCheck %s --check-prefix=OUTLINED

// The constants and memref.dim a launch body uses get copies inside it; the
// originals stay for the launch's sizes. Outlined, the kernel takes only the
// memref and the value computed on the host: the divisor 256 and the dim's
// index are its own.

// CHECK-LABEL: func.func @sink(
// CHECK:         %[[C256:.+]] = arith.constant 256 : index
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.+}} = %[[C256]],
// CHECK-DAG:       %[[IN256:.+]] = arith.constant 256 : index
// CHECK-DAG:       %[[IN0:.+]] = arith.constant 0 : index
// CHECK-DAG:       %[[DIM:.+]] = memref.dim %{{.+}}, %[[IN0]]
// CHECK:           arith.divui %{{.+}}, %[[IN256]] : index
// CHECK:           arith.minui %{{.+}}, %[[DIM]]

// OUTLINED-LABEL: func.func @sink(
// OUTLINED:         gpu.launch_func @sink_kernel::@sink_kernel {{.*}} args(%{{.+}} : memref<?x256xf32>, %{{.+}} : index)
// OUTLINED:       gpu.func @sink_kernel(%{{.+}}: memref<?x256xf32>, %{{.+}}: index) kernel
func.func @sink(%m: memref<?x256xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c0 = arith.constant 0 : index
  %rows = memref.dim %m, %c0 : memref<?x256xf32>
  %last = arith.subi %rows, %n : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %row = arith.divui %tx, %c256 : index
    %clamped = arith.minui %row, %rows : index
    %v = memref.load %m[%clamped, %tx] : memref<?x256xf32>
    memref.store %v, %m[%last, %c0] : memref<?x256xf32>
    gpu.terminator
  }
  return
}
