// RUN: moe-opt %s -split-input-file -moe-outline-gpu-kernels | FileCheck %s
// RUN: moe-opt %s -split-input-file -pass-pipeline='builtin.module(moe-outline-gpu-kernels,gpu.module(convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM

// A launch's nvvm.* attributes end on the kernel it becomes (upstream's
// outlining drops them); its other attributes and a launch without any do
// not.

// CHECK-LABEL: func.func @hinted(
// CHECK:         gpu.launch_func @tiles::@tiles
// CHECK:         gpu.launch_func @plain::@plain
// CHECK:       gpu.func @tiles(%{{.+}}: memref<256xf32>) kernel attributes {
// CHECK-SAME:    nvvm.minctasm = 2 : i32
// CHECK-NOT:     moe.other
// CHECK:       gpu.func @plain(
// CHECK-NOT:     nvvm.minctasm
// CHECK:         gpu.return
// NVVM:        llvm.func @tiles({{.*}} attributes {{{.*}}nvvm.minctasm = 2 : i32
func.func @hinted(%m: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             module(@tiles) function(@tiles) {
    %v = arith.constant 1.0 : f32
    memref.store %v, %m[%tx] : memref<256xf32>
    gpu.terminator
  } {nvvm.minctasm = 2 : i32, moe.other = 1 : i64}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             module(@plain) function(@plain) {
    %v = arith.constant 2.0 : f32
    memref.store %v, %m[%tx] : memref<256xf32>
    gpu.terminator
  }
  return
}

// -----

// Launches with hints but no name, or a name another hinted launch has,
// are named apart so that each kernel gets its own launch's hints.

// CHECK-LABEL: func.func @unnamed(
// CHECK:         gpu.launch_func @[[A:[a-z_0-9]+]]::@[[A]]
// CHECK:         gpu.launch_func @same::@same
// CHECK:         gpu.launch_func @[[B:[a-z_0-9]+]]::@[[B]]
// CHECK:       gpu.func @[[A]](
// CHECK-SAME:    nvvm.minctasm = 3 : i32
// CHECK:       gpu.func @same(
// CHECK-SAME:    nvvm.minctasm = 2 : i32
// CHECK:       gpu.func @[[B]](
// CHECK-SAME:    nvvm.minctasm = 4 : i32
func.func @unnamed(%m: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %v = arith.constant 1.0 : f32
    memref.store %v, %m[%tx] : memref<256xf32>
    gpu.terminator
  } {nvvm.minctasm = 3 : i32}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             module(@same) function(@same) {
    %v = arith.constant 2.0 : f32
    memref.store %v, %m[%tx] : memref<256xf32>
    gpu.terminator
  } {nvvm.minctasm = 2 : i32}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1)
             module(@same) function(@same) {
    %v = arith.constant 3.0 : f32
    memref.store %v, %m[%tx] : memref<256xf32>
    gpu.terminator
  } {nvvm.minctasm = 4 : i32}
  return
}
