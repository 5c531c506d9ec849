// -moe-gpu-modules-to-binaries links libdevice only into the modules that
// call it (the NVVM target loads it for every module): @uses_expf's call of
// __nv_expf is resolved and inlined (no extern left), and the PTX of every
// module is the same as upstream's -gpu-module-to-binary makes it, with and
// without libdevice, but for the recorded compile times.
// REQUIRES: ptxas

// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-gpu-modules-to-binaries | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-gpu-modules-to-binaries | sed -e 's/LLVMIRToISATimeInMs = [0-9]*/T/' > %t.ours
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --gpu-module-to-binary="format=isa" | sed -e 's/LLVMIRToISATimeInMs = [0-9]*/T/' > %t.upstream
// RUN: diff %t.ours %t.upstream

// CHECK:      gpu.binary @uses_expf
// CHECK-SAME: .entry uses_expf_kernel
// CHECK-NOT:  __nv_expf
// CHECK-SAME: ex2.approx
// CHECK-NEXT: gpu.binary @plain
// CHECK-SAME: .entry plain_kernel
module attributes {gpu.container_module} {
  gpu.module @uses_expf [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @uses_expf_kernel(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %e = llvm.call @__nv_expf(%v) : (f32) -> f32
      llvm.store %e, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @plain [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @plain_kernel(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.fmul %v, %v : f32
      llvm.store %w, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
