// moe-lower-to-nvvm on the gated MLA example (H = 4, d_qk = 96, d_v = 64):
// moe.mla_attention becomes the generated flash-attention kernel
// mla0_forward (-moe-generate-attention-kernels), after the prep kernel
// mla0_forward_convert that writes the fp32 K and V as bf16, serialized to
// sm_90 PTX (ISA 8.0) with libdevice linked (no unresolved __nv_* externs).
//
// Tensor cores: with the default 256 query rows per block (eight warps of
// 32 rows, two row fragments each), per key tile a warp computes S
// (32 x 64) in 2 x (96 / 16) k-steps x 8 n-tiles = 96 mma.sync and
// O += P V (32 x 64) in 2 x (64 / 16) x 8 = 64, so 160 per key-tile step;
// the kernel has two steps (the unmasked loop below the diagonal and the
// masked diagonal), 320 in all. Fragments come from ldmatrix.x4: per step
// Q's 2 x 6, K's 6 x 4 (two 8-key B fragments each) and V's 4 x 4
// (transposed), so 2 x 36 plain and 2 x 16 transposed loads. K and V reach
// shared memory by cp.async (16 bytes, .cg; zero-filled past the
// sequence): the first key tile with Q before the loops, the next tile in
// each step after its wait for the only group in flight and its one
// barrier. With 128 or 64 rows (16-row warps) Q's six fragments are loaded
// once before the loops: 160 mma.sync, 6 + 2 x 24 plain and 2 x 16
// transposed ldmatrix. The softmax's exp2 is ex2.approx.ftz: per step and
// 16-row fragment 2 x (1 + 16), plus the epilogue's sigmoid (libdevice).
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm 2>/dev/null | grep -o 'ldmatrix[.a-z0-9]*\|ex2[.a-z0-9]*' | sort | uniq -c | FileCheck %s --check-prefix=LDM
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="attention-query-tile=128" 2>/dev/null | FileCheck %s --check-prefix=QT128
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="attention-query-tile=64" 2>/dev/null | FileCheck %s --check-prefix=QT64
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="attention-query-tile=64" 2>/dev/null | grep -o 'ldmatrix[.a-z0-9]*\|ex2[.a-z0-9]*' | sort | uniq -c | FileCheck %s --check-prefix=LDM16
// REQUIRES: ptxas

// CHECK: llvm.func @mla_attention_forward(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func {{.*}}@moe_attention_kernels::@mla0_forward_convert blocks in
// CHECK: gpu.launch_func {{.*}}@moe_attention_kernels::@mla0_forward blocks in
// CHECK: gpu.binary @moe_attention_kernels
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx81">
// CHECK-SAME: .version 8.1
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry mla0_forward_convert(
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry mla0_forward(
// CHECK-SAME: .maxntid 256, 1, 1
// CHECK-SAME: .shared .align 16 .b8 __dynamic_shmem__0
// CHECK-SAME: cp.async.cg.shared.global [{{[^]]*}}], [{{[^]]*}}], 16;
// CHECK-SAME: cp.async.cg.shared.global [{{[^]]*}}], [{{[^]]*}}], 16, %r{{[0-9]+}};
// CHECK-SAME: cp.async.commit_group;
// CHECK-SAME: cp.async.wait_group \090;
// CHECK-SAME: bar.sync \090;
// CHECK-COUNT-320: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-NOT: __nv_

// LDM: {{^ *}}200 ex2.approx.ftz.f32
// LDM-NEXT: {{^ *}}72 ldmatrix.sync.aligned.m8n8.x4.shared.b16
// LDM-NEXT: {{^ *}}32 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// LDM-NOT: {{ldmatrix|ex2}}

// QT128: .visible .entry mla0_forward(
// QT128-SAME: .maxntid 256, 1, 1
// QT128-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// QT128-NOT: mma.sync

// QT64: .visible .entry mla0_forward(
// QT64-SAME: .maxntid 128, 1, 1
// QT64-COUNT-160: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// QT64-NOT: mma.sync

// LDM16: {{^ *}}100 ex2.approx.ftz.f32
// LDM16-NEXT: {{^ *}}54 ldmatrix.sync.aligned.m8n8.x4.shared.b16
// LDM16-NEXT: {{^ *}}32 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// LDM16-NOT: {{ldmatrix|ex2}}
