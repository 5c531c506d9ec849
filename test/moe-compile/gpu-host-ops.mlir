// moe-lower-to-nvvm runs structured ops outside every scf.forall as GPU
// kernels (-moe-map-forall-to-gpu): a grid-stride loop over their parallel
// iterations shared by 256-thread blocks, or one warp per output for a
// reduction; no structured op stays on the host. (A dense contraction such as this matmul
// is a generated tensor-core GEMM by default, -moe-generate-gemm-kernels;
// with matmul-precision=exact, which keeps f32 operands exact, it is
// one of these kernels.)
// REQUIRES: ptxas

// RUN: moe-opt %s --moe-lower-to-nvvm="matmul-precision=exact" | FileCheck %s
// RUN: moe-opt %s --moe-lower-to-nvvm | FileCheck %s --check-prefix=GEMM

// GEMM: llvm.func @matmul(
// GEMM-NOT: matmul_matmul
// GEMM: gpu.launch_func {{.*}}@moe_gemm_kernels::@gemm_64x32_0 blocks in
// GEMM: gpu.binary @moe_gemm_kernels

// The kernel is queued on a stream (-moe-async-gpu-stream), which the host
// waits for once, before returning.
// CHECK: llvm.func @matmul(
// The matmul reads rows of A along its reduction and a small B, so each
// output is one warp's (lanes along k, shuffles). Its output's zero fill
// is no kernel of its own: the warps start their sums from zero.
// CHECK: %[[STREAM:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-NOT: matmul_fill
// CHECK-NEXT: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @matmul_matmul_warps_l{{[0-9]+}}_0::
// CHECK-NEXT: llvm.call @mgpuStreamSynchronize(%[[STREAM]])
// CHECK: llvm.func @_mlir_ciface_matmul(
// CHECK-NOT: matmul_fill
// CHECK: gpu.binary @matmul_matmul_warps_{{.*}}.target sm_90

func.func @matmul(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %init = tensor.empty(%m) : tensor<?x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x32xf32>) -> tensor<?x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>)
                     outs(%fill : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %c : tensor<?x32xf32>
}
