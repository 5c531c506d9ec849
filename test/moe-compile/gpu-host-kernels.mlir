// moe-lower-to-nvvm{host-linalg-kernels=true} (moe-compile
// --gpu-host-kernels) runs structured ops outside every scf.forall as GPU
// kernels, one thread per element of their parallel dimensions with the
// reduction as a loop inside; by default they are host loops.
// REQUIRES: ptxas

// RUN: moe-opt %s --moe-lower-to-nvvm="host-linalg-kernels=true" | FileCheck %s --check-prefix=ON
// RUN: moe-opt %s --moe-lower-to-nvvm | FileCheck %s --check-prefix=OFF

// The fill and the matmul: M x 32 blocks (the innermost dimension on x).
// ON: llvm.func @matmul(
// ON: gpu.launch_func @[[FILL:[a-z_0-9]+]]::
// ON: gpu.launch_func @[[MATMUL:[a-z_0-9]+]]::
// ON: llvm.func @_mlir_ciface_matmul(
// ON: gpu.binary @[[FILL]] {{.*}}.target sm_90
// ON: gpu.binary @[[MATMUL]] {{.*}}.target sm_90
// OFF-NOT: gpu.launch_func
// OFF-NOT: gpu.binary
// OFF: llvm.func @matmul(

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
