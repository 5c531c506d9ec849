// RUN: moe-opt %s --moe-gpu-modules-to-binaries=format=ptx --verify-diagnostics

// expected-error @below {{-moe-gpu-modules-to-binaries: unknown format 'ptx' (isa, bin, fatbin or llvm)}}
module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90", features = "+ptx80">] {
  }
}
