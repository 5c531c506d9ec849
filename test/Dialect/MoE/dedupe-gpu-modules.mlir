// RUN: moe-opt %s --moe-dedupe-gpu-modules --split-input-file | FileCheck %s

// @scale_b is @scale_a under other names: its launch launches @scale_a's
// kernel and @scale_b goes. @add differs in one op and stays; @kept is the
// same as @scale_a too but a symbol reference other than a launch names it,
// so it stays as it is.

// CHECK-LABEL: func.func @host
// CHECK:      gpu.launch_func @scale_a::@scale_a_kernel
// CHECK-NEXT: gpu.launch_func @scale_a::@scale_a_kernel
// CHECK-NEXT: gpu.launch_func @add::@add_kernel
// CHECK-NEXT: gpu.launch_func @kept::@kept_kernel
// CHECK:      gpu.module @scale_a
// CHECK-NOT:  gpu.module @scale_b
// CHECK:      gpu.module @add
// CHECK:      gpu.module @kept
module attributes {gpu.container_module, moe.refers_to = @kept} {
  func.func @host(%b: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @scale_a::@scale_a_kernel blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    gpu.launch_func @scale_b::@scale_b_kernel blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    gpu.launch_func @add::@add_kernel blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    gpu.launch_func @kept::@kept_kernel blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    return
  }
  gpu.module @scale_a {
    gpu.func @scale_a_kernel(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
  gpu.module @scale_b {
    gpu.func @scale_b_kernel(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
  gpu.module @add {
    gpu.func @add_kernel(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
  gpu.module @kept {
    gpu.func @kept_kernel(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Modules of two kernels are matched kernel by kernel, in order: a launch
// of @two_b's second kernel launches @two_a's second.

// CHECK-LABEL: func.func @host2
// CHECK:      gpu.launch_func @two_a::@second_a
// CHECK-NEXT: gpu.launch_func @two_a::@first_a
// CHECK-NOT:  gpu.module @two_b
module attributes {gpu.container_module} {
  func.func @host2(%b: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @two_b::@second_b blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    gpu.launch_func @two_a::@first_a blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    return
  }
  gpu.module @two_a {
    gpu.func @first_a(%b: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @second_a(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      memref.store %v, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
  gpu.module @two_b {
    gpu.func @first_b(%b: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @second_b(%b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<?xf32>
      memref.store %v, %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
