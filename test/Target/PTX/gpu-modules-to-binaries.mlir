// RUN: moe-opt %s --moe-gpu-modules-to-binaries --split-input-file --verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-gpu-modules-to-binaries --mlir-disable-threading --split-input-file --verify-diagnostics | FileCheck %s

// Every module becomes a gpu.binary of the same name, in the modules'
// order, with PTX for its target, whether the modules compile on threads or
// one after the other.

// CHECK:      gpu.binary @first [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .entry first_kernel
// CHECK-NEXT: gpu.binary @second [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .entry second_kernel
// CHECK-SAME: mul.rn.f32
// CHECK-NEXT: gpu.binary @third
// CHECK-SAME: .entry third_kernel
// CHECK-NOT:  gpu.module
module attributes {gpu.container_module} {
  gpu.module @first [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @first_kernel() attributes {nvvm.kernel} {
      llvm.return
    }
  }
  gpu.module @second [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @second_kernel(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.fmul %v, %v : f32
      llvm.store %w, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @third [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @third_kernel() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @fine [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
    llvm.func @fine_kernel() attributes {nvvm.kernel} {
      llvm.return
    }
  }
  // expected-error @below {{gpu.module has no target to serialize it for}}
  gpu.module @untargeted {
    llvm.func @untargeted_kernel() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
