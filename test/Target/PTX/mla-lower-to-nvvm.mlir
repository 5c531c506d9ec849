// moe-lower-to-nvvm on the gated MLA example (H = 4, d_qk = 96, d_v = 64):
// moe.mla_attention becomes the generated flash-attention kernel
// mla0_forward (-moe-generate-attention-kernels), after the prep kernel
// mla0_forward_convert that writes K and V^T as bf16, serialized to sm_90 PTX
// (ISA 8.0) with libdevice linked (no unresolved __nv_* externs).
//
// Tensor cores: per key tile a warp computes S (16 x 64) in
// (96 / 16) k-steps x 8 n-tiles = 48 mma.sync and O += P V (16 x 64) in
// (64 / 16) x 8 = 32, so 80 per key-tile step; the kernel has two steps
// (the unmasked loop below the diagonal and the masked diagonal), 160 in
// all. K and V^T reach shared memory by cp.async (16 bytes, .cg), issued
// for the first key tile before the loops and for the next tile in each
// step, which then waits for all but the newest group. With 128 query rows
// per block there are eight warps of 16 rows (still 160); with 256, eight
// warps of 32 rows, two row fragments each: 320.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="attention-query-tile=128" 2>/dev/null | FileCheck %s --check-prefix=QT128
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="attention-query-tile=256" 2>/dev/null | FileCheck %s --check-prefix=QT256
// REQUIRES: ptxas

// CHECK: llvm.func @mla_attention_forward(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func  @moe_attention_kernels::@mla0_forward_convert blocks in
// CHECK: gpu.launch_func  @moe_attention_kernels::@mla0_forward blocks in
// CHECK: gpu.binary @moe_attention_kernels
// CHECK-SAME: #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .version 8.0
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry mla0_forward_convert(
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry mla0_forward(
// CHECK-SAME: .shared .align 16 .b8 __dynamic_shmem__0
// CHECK-SAME: cp.async.cg.shared.global [{{[^]]*}}], [{{[^]]*}}], 16;
// CHECK-SAME: cp.async.commit_group;
// CHECK-SAME: cp.async.wait_group \091;
// CHECK-SAME: bar.sync \090;
// CHECK-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-NOT: __nv_

// QT128: .visible .entry mla0_forward(
// QT128-SAME: .maxntid 256, 1, 1
// QT128-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// QT128-NOT: mma.sync

// QT256: .visible .entry mla0_forward(
// QT256-COUNT-320: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// QT256-NOT: mma.sync
