// moe-lower-to-nvvm on the KDA example: the tiled forall becomes one kernel
// per kda op, serialized to sm_90 PTX (ISA 8.0) with libdevice linked (no
// unresolved __nv_* externs); host code calls the mgpu* ABI.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/kda.mlir --moe-lower-to-nvvm 2>/dev/null | FileCheck %s
// REQUIRES: ptxas

// CHECK: llvm.func @kda_forward(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func @kda_forward_kernel::@kda_forward_kernel blocks in
// CHECK: gpu.binary @kda_forward_kernel
// CHECK-SAME: #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .version 8.0
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry kda_forward_kernel(
// CHECK-NOT: __nv_expf
// CHECK: llvm.func @kda_forward_softplus(
// CHECK: gpu.binary @kda_forward_softplus_kernel
