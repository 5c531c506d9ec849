// moe-lower-to-nvvm on the KDA example: each kda op becomes the generated
// kernels kdaN_prep (chunk-parallel) and kdaN_state (sequential over chunks),
// serialized to sm_90 PTX (ISA 8.0) with libdevice linked (no unresolved
// __nv_* externs); host code calls the mgpu* ABI.
//
// Tensor cores: every tile product is an m16n8k16 mma.sync with bf16
// operands and fp32 accumulators. With K = V = 64 the prep kernel has
//   96 (off-diagonal Aqk and L tiles) + 32 (W) + 32 (U) = 160
// of them, plus 64 for the dense diagonal tiles (4 tiles x 2 matrices x
// 4 k-steps x 2 n-tiles). The proven @kda_forward (kda0) has all 224; the
// per-position diagonal path of @kda_forward_softplus (kda1), and of
// @kda_forward forced per position, has exactly the 160 others: its
// diagonal tiles use no tensor core.
// outline-kinds=false: the checks read each function's launches in order,
// which -moe-outline-kinds would move into the functions of its kinds.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/kda.mlir --moe-lower-to-nvvm="outline-kinds=false" 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/kda.mlir --moe-lower-to-nvvm="kda-diagonal=per-position outline-kinds=false" 2>/dev/null | FileCheck %s --check-prefix=FORCED
// REQUIRES: ptxas

// CHECK: llvm.func @kda_forward(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func {{.*}}@moe_kda_kernels::@kda0_prep blocks in
// CHECK: gpu.launch_func {{.*}}@moe_kda_kernels::@kda0_state blocks in
// CHECK: llvm.func @kda_forward_softplus(
// CHECK: gpu.launch_func {{.*}}@moe_kda_kernels::@kda1_prep blocks in
// CHECK: gpu.launch_func {{.*}}@moe_kda_kernels::@kda1_state blocks in
// CHECK: gpu.binary @moe_kda_kernels
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx81">
// CHECK-SAME: .version 8.1
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry kda0_prep(
// CHECK-COUNT-224: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry kda0_state(
// CHECK-COUNT-32: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry kda1_prep(
// CHECK-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry kda1_state(
// CHECK-NOT: __nv_expf

// FORCED: .visible .entry kda0_prep(
// FORCED-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// FORCED-NOT: mma.sync
// FORCED-SAME: .visible .entry kda0_state(
