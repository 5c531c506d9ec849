// RUN: moe-opt %s --moe-async-gpu-stream --split-input-file | FileCheck %s

// Straight-line host code: every GPU op joins one chain that starts with a
// `gpu.wait async`; a generator's own waits around its allocations are
// subsumed; a host-shared allocation stays synchronous and off the chain;
// the host waits before it loads what a kernel wrote and before returning.

// CHECK-LABEL: func.func @chain
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[A:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%{{.*}}) : memref<?xf32>
// CHECK-NEXT: %[[B:.*]], %[[T2:.*]] = gpu.alloc async [%[[T1]]] (%{{.*}}) : memref<?xf32>
// CHECK-NEXT: %[[S:.*]] = gpu.alloc  host_shared () : memref<2xi64>
// CHECK-NEXT: %[[T3:.*]] = gpu.launch async [%[[T2]]] blocks
// CHECK:      %[[T4:.*]] = gpu.memcpy async [%[[T3]]] %[[B]], %[[A]]
// CHECK-NEXT: %[[T5:.*]] = gpu.launch async [%[[T4]]] blocks
// CHECK:      gpu.wait [%[[T5]]]
// CHECK-NEXT: memref.load %[[S]]
// CHECK-NEXT: %[[T6:.*]] = gpu.wait async
// CHECK-NEXT: %[[T7:.*]] = gpu.dealloc async [%[[T6]]] %[[A]]
// CHECK-NEXT: %[[T8:.*]] = gpu.dealloc async [%[[T7]]] %[[B]]
// CHECK-NEXT: gpu.wait [%[[T8]]]
// CHECK-NEXT: return
// CHECK-NOT:  gpu.wait
func.func @chain(%n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = gpu.wait async
  %a, %ta = gpu.alloc async [%t] (%n) : memref<?xf32>
  %b, %tb = gpu.alloc async [%ta] (%n) : memref<?xf32>
  gpu.wait [%tb]
  %s = gpu.alloc host_shared () : memref<2xi64>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.memcpy %b, %a : memref<?xf32>, memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %i = arith.index_cast %n : index to i64
    memref.store %i, %s[%c0] : memref<2xi64>
    gpu.terminator
  }
  %count = memref.load %s[%c0] : memref<2xi64>
  gpu.dealloc %a : memref<?xf32>
  gpu.dealloc %b : memref<?xf32>
  return %count : i64
}

// -----

// A host loop: the host waits before it, and its body gets a chain of its
// own that the host waits for before the next iteration.

// CHECK-LABEL: func.func @loop
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[A:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]]
// CHECK-NEXT: gpu.wait [%[[T1]]]
// CHECK-NEXT: scf.for
// CHECK-NEXT:   %[[U0:.*]] = gpu.wait async
// CHECK-NEXT:   %[[U1:.*]] = gpu.launch async [%[[U0]]] blocks
// CHECK:        gpu.wait [%[[U1]]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[V0:.*]] = gpu.wait async
// CHECK-NEXT: %[[V1:.*]] = gpu.dealloc async [%[[V0]]] %[[A]]
// CHECK-NEXT: gpu.wait [%[[V1]]]
// CHECK-NEXT: return
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = gpu.alloc (%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %a[%i] : memref<?xf32>
      gpu.terminator
    }
  }
  gpu.dealloc %a : memref<?xf32>
  return
}

// -----

// Host code without GPU work is left alone.

// CHECK-LABEL: func.func @no_gpu
// CHECK-NOT:   gpu.wait
// CHECK:       return
func.func @no_gpu(%m: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// A host `scf.if` that only guards launches (a generator's "the grid is
// empty without rows") costs the stream no wait: its ops move out, and each
// launch's grid x size is the condition's select of it and 0. The function
// waits once, before it returns.

// CHECK-LABEL: func.func @guarded_launches
// CHECK-SAME:  (%[[A:.*]]: memref<?xf32>)
// CHECK-NOT:  scf.if
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[B:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]]
// CHECK-NEXT: %[[C:.*]] = arith.cmpi ult
// CHECK-NOT:  gpu.wait
// CHECK:      %[[GX:.*]] = arith.divui
// CHECK:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[G1:.*]] = arith.select %[[C]], %[[GX]], %[[ZERO]] : index
// CHECK-NEXT: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@copy blocks in (%[[G1]], %{{.*}}, %{{.*}})
// CHECK:      %[[ZERO32:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[G2:.*]] = arith.select %[[C]], %{{.*}}, %[[ZERO32]] : i32
// CHECK-NEXT: %[[T3:.*]] = gpu.launch_func async [%[[T2]]] @kernels::@scale blocks in (%[[G2]], %{{.*}}, %{{.*}})
// CHECK-NEXT: %[[T4:.*]] = gpu.dealloc async [%[[T3]]] %[[B]]
// CHECK-NEXT: gpu.wait [%[[T4]]]
// CHECK-NEXT: return
// CHECK-NOT:  gpu.wait
// CHECK-NOT:  memref.load
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) kernel {
      gpu.return
    }
    gpu.func @scale(%b: memref<?xf32>, %n: i32) kernel {
      gpu.return
    }
  }
  func.func @guarded_launches(%a: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c127 = arith.constant 127 : index
    %c128 = arith.constant 128 : index
    %one = arith.constant 1 : i32
    %rows = memref.dim %a, %c0 : memref<?xf32>
    %b = gpu.alloc (%rows) : memref<?xf32>
    %nonempty = arith.cmpi ult, %c0, %rows : index
    scf.if %nonempty {
      %sum = arith.addi %rows, %c127 : index
      %gx = arith.divui %sum, %c128 : index
      gpu.launch_func @kernels::@copy blocks in (%gx, %c1, %c1)
          threads in (%c128, %c1, %c1) args(%a : memref<?xf32>, %b : memref<?xf32>, %rows : index)
      %rows32 = arith.index_cast %rows : index to i32
      gpu.launch_func @kernels::@scale blocks in (%rows32, %one, %one)
          threads in (%one, %one, %one) : i32 args(%b : memref<?xf32>, %rows32 : i32)
    }
    gpu.dealloc %b : memref<?xf32>
    return
  }
}

// -----

// Guards that are more than that stay, and the host waits before them: one
// whose grid divides by a size that may be 0 (not speculatable), one that
// writes memory on the host, one with an else branch.

// CHECK-LABEL: func.func @real_branches
// CHECK:      gpu.launch_func async
// CHECK-NEXT: gpu.wait [%{{.*}}]
// CHECK-NEXT: scf.if
// CHECK-NEXT:   arith.divui
// CHECK:        gpu.launch_func async
// CHECK-NEXT:   gpu.wait [%{{.*}}]
// CHECK-NEXT: }
// CHECK-NEXT: scf.if
// CHECK-NEXT:   memref.store
// CHECK:      scf.if
// CHECK:      } else {
// CHECK:      }
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%b: memref<?xf32>, %n: index) kernel {
      gpu.return
    }
  }
  func.func @real_branches(%b: memref<?xf32>, %h: memref<1xf32>, %d: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %f = arith.constant 1.0 : f32
    %rows = memref.dim %b, %c0 : memref<?xf32>
    %nonempty = arith.cmpi ult, %c0, %rows : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>, %rows : index)
    scf.if %nonempty {
      %gx = arith.divui %rows, %d : index
      gpu.launch_func @kernels::@scale blocks in (%gx, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%b : memref<?xf32>, %rows : index)
    }
    scf.if %nonempty {
      memref.store %f, %h[%c0] : memref<1xf32>
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%b : memref<?xf32>, %rows : index)
    }
    scf.if %nonempty {
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%b : memref<?xf32>, %rows : index)
    } else {
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%b : memref<?xf32>, %rows : index)
    }
    return
  }
}

// -----

// Outlined kinds run on their caller's stream: @layer takes it as its last
// argument and returns its last token, so neither the caller nor @layer
// waits at the call; @layer's host read of a kernel's result waits with
// moert's call (the stream stays), and the caller, whose stream went
// through the calls, waits for it once (before the call of an ordinary
// function) and gives it back there. An outlined kind called in a loop
// gets the loop body's own stream, waited for and given back at the end of
// the body.

// CHECK-LABEL: func.func @two_layers
// CHECK-SAME:  (%[[X:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK:      %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @kernels::@scale
// CHECK-NEXT: %[[R1:.*]]:2 = call @layer(%[[X]], %[[N]], %[[T1]]) {moe.outlined_kind} : (memref<?xf32>, index, !gpu.async.token) -> (f32, !gpu.async.token)
// CHECK-NEXT: %[[R2:.*]]:2 = call @layer(%[[X]], %[[N]], %[[R1]]#1) {moe.outlined_kind}
// CHECK-NEXT: %[[T2:.*]] = gpu.launch_func async [%[[R2]]#1] @kernels::@scale
// CHECK-NEXT: call @moertMlirStreamWait(%[[T2]]) : (!gpu.async.token) -> ()
// CHECK-NEXT: call @moertMlirStreamRelease(%[[T2]]) : (!gpu.async.token) -> ()
// CHECK-NEXT: call @host_only(%[[X]])
// CHECK-NEXT: scf.for
// CHECK-NEXT:   %[[U0:.*]] = gpu.wait async
// CHECK-NEXT:   %[[U1:.*]]:2 = func.call @layer(%[[X]], %[[N]], %[[U0]])
// CHECK-NEXT:   func.call @moertMlirStreamWait(%[[U1]]#1)
// CHECK-NEXT:   func.call @moertMlirStreamRelease(%[[U1]]#1)
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[R1]]#0, %[[R2]]#0
// CHECK-NEXT: return %[[S]] : f32

// CHECK-LABEL: func.func private @layer
// CHECK-SAME:  (%[[A:.*]]: memref<?xf32>, %[[M:.*]]: index, %[[IN:.*]]: !gpu.async.token) -> (f32, !gpu.async.token)
// CHECK-SAME:  attributes {moe.outlined_kind}
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: %[[S:.*]] = gpu.alloc  host_shared () : memref<1xf32>
// CHECK-NEXT: %[[L1:.*]] = gpu.launch_func async [%[[IN]]] @kernels::@sum
// CHECK-NEXT: call @moertMlirStreamWait(%[[L1]])
// CHECK-NEXT: %[[V:.*]] = memref.load %[[S]][%[[C0]]]
// CHECK-NEXT: %[[L2:.*]] = gpu.launch_func async [%[[L1]]] @kernels::@scale
// CHECK-NEXT: return %[[V]], %[[L2]] : f32, !gpu.async.token
// CHECK-NOT:  gpu.wait

// CHECK-DAG: func.func private @moertMlirStreamWait(!gpu.async.token)
// CHECK-DAG: func.func private @moertMlirStreamRelease(!gpu.async.token)
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%b: memref<?xf32>, %n: index) kernel {
      gpu.return
    }
    gpu.func @sum(%b: memref<?xf32>, %s: memref<1xf32>) kernel {
      gpu.return
    }
  }
  func.func private @host_only(memref<?xf32>)
  func.func @two_layers(%x: memref<?xf32>, %n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : memref<?xf32>, %n : index)
    %a = call @layer(%x, %n) {moe.outlined_kind} : (memref<?xf32>, index) -> f32
    %b = call @layer(%x, %n) {moe.outlined_kind} : (memref<?xf32>, index) -> f32
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : memref<?xf32>, %n : index)
    call @host_only(%x) : (memref<?xf32>) -> ()
    scf.for %i = %c0 to %n step %c1 {
      %c = func.call @layer(%x, %n) {moe.outlined_kind} : (memref<?xf32>, index) -> f32
    }
    %s = arith.addf %a, %b : f32
    return %s : f32
  }
  func.func private @layer(%x: memref<?xf32>, %n: index) -> f32
      attributes {moe.outlined_kind} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = gpu.alloc host_shared () : memref<1xf32>
    gpu.launch_func @kernels::@sum blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : memref<?xf32>, %s : memref<1xf32>)
    %v = memref.load %s[%c0] : memref<1xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : memref<?xf32>, %n : index)
    return %v : f32
  }
}
