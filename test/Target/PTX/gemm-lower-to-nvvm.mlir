// moe-lower-to-nvvm on the GPU suite's dense contractions
// (test/Integration/GPU/Inputs/gemm-projections.mlir): after the moe
// lowering, -moe-generate-gemm-kernels takes every projection and the
// matmul; only the element-wise x / 3 of the chain is left to
// -moe-map-forall-to-gpu. The PTX is sm_90 and ptxas assembles it.
//
// Per 32-element reduction step each warp of a 128-column kernel issues
// 2 x 4 x 8 = 64 mma.sync m16n8k16 (bf16 operands, fp32 accumulators) after
// 4 + 4 ldmatrix.x4 (B read transposed from k-major weights, untransposed
// from transposed ones); a 64-column kernel issues 32. f32 operands are
// loaded as pairs of 16-byte vectors and rounded by cvt.rn.bf16x2.f32, bf16
// ones copied by cp.async.cg. The results are stored as fp32 pairs.
// outline-kinds=false: the checks read each function's launches in order,
// which -moe-outline-kinds would move into the functions of its kinds.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/test/Integration/GPU/Inputs/gemm-projections.mlir --moe-lower-to-nvvm="outline-kinds=false" 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/test/Integration/GPU/Inputs/gemm-projections.mlir --moe-lower-to-nvvm="format=bin outline-kinds=false" 2>/dev/null | FileCheck %s --check-prefix=BIN
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/test/Integration/GPU/Inputs/gemm-projections.mlir --moe-lower-to-nvvm="matmul-precision=exact outline-kinds=false" 2>/dev/null | FileCheck %s --check-prefix=EXACT
// REQUIRES: ptxas

// CHECK: llvm.func @project_f32(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_256x192_0 blocks in
// CHECK: llvm.func @project_bf16_t(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_512x128t_1 blocks in
// CHECK: llvm.func @project_mixed(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_128x80_2 blocks in
// CHECK: llvm.func @project_mixed_t(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_64x256t_3 blocks in
// CHECK: llvm.func @matmul_k32(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_32x512_4 blocks in
// CHECK: llvm.func @project_k80(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_80x256_5 blocks in
// CHECK: llvm.func @project_k40_t(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_40x96t_6 blocks in
// CHECK: llvm.func @rounded_chain(
// CHECK: gpu.launch_func {{.*}}@rounded_chain_generic_{{.*}} blocks in
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_256x64_7 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_64x256_8 blocks in
// CHECK: llvm.func @wgrad_f32(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_256x80_9 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_combine_256x80_10 blocks in
// CHECK: llvm.func @wgrad_bf16(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_64x128_11 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_combine_64x128_12 blocks in
// CHECK: llvm.func @wgrad_mixed_t(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_192x128_13 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_combine_192x128_14 blocks in
// CHECK: llvm.func @input_grad(
// CHECK: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_256x128t_15 blocks in
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @moe_gemm_kernels
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx81">
// CHECK-SAME: .visible .entry gemm_256x192_0(
// CHECK-NOT: cp.async
// CHECK-SAME: ld.global.v4
// CHECK-SAME: cvt.rn.bf16x2.f32
// CHECK-SAME: st.shared.v4
// CHECK-SAME: bar.sync
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-COUNT-32: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: st.global.v2
// CHECK-SAME: .visible .entry gemm_512x128t_1(
// CHECK-NOT: ld.global.v4
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: .trans
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-SAME: .visible .entry gemm_128x80_2(
// CHECK-SAME: .visible .entry gemm_64x256t_3(
// CHECK-SAME: .visible .entry gemm_32x512_4(
// The reduction of 80 takes three steps, the last one's chunks past 80
// read with a source size of 0 (zeros).
// CHECK-SAME: .visible .entry gemm_80x256_5(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: .visible .entry gemm_40x96t_6(
// CHECK-SAME: .visible .entry gemm_256x64_7(
// CHECK-SAME: .visible .entry gemm_64x256_8(
// The weight gradients read A transposed; bf16 rows past a split are
// zero-filled by cp.async's source size (16 bytes or none).
// CHECK-SAME: .visible .entry gemm_rowsum_256x80_9(
// CHECK-NOT: cp.async
// CHECK-SAME: ld.global.v4
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-COUNT-32: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry gemm_rowsum_combine_256x80_10(
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry gemm_rowsum_64x128_11(
// CHECK-NOT: ld.global.v4
// CHECK-SAME: selp.b32 {{.}}09[[SIZE:%r[0-9]+]], 16, 0,
// CHECK-SAME: cp.async.cg.shared.global [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 16, [[SIZE]];
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-SAME: .visible .entry gemm_rowsum_combine_64x128_12(
// CHECK-SAME: .visible .entry gemm_rowsum_192x128_13(
// CHECK-SAME: .visible .entry gemm_rowsum_combine_192x128_14(
// CHECK-SAME: .visible .entry gemm_256x128t_15(

// BIN: gpu.binary @moe_gemm_kernels {{.*}} bin = "\7FELF

// The exact fp32 path keeps every contraction here (each has an f32
// operand) but bf16 x bf16 one.
// EXACT: llvm.func @project_f32(
// EXACT-NOT: @moe_gemm_kernels
// EXACT: llvm.func @project_bf16_t(
// EXACT: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_512x128t_0 blocks in
// EXACT-NOT: @moe_gemm_kernels::
// EXACT: llvm.func @wgrad_bf16(
// EXACT: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_64x128_1 blocks in
// EXACT: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_rowsum_combine_64x128_2 blocks in
// EXACT-NOT: @moe_gemm_kernels::
// EXACT: gpu.binary @moe_gemm_kernels
