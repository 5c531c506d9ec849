// moe-lower-to-nvvm gives a tile program up to 226 KiB of shared memory per
// block (shared-memory-bytes=231424: the 227 KiB that one block of an H100
// or H200 may have, less 1 KiB for the kernel's static shared memory): six
// live 64 x 128 f32 matmul results and their product take
// 229376 bytes, all in shared memory and no global scratch. With the pass's
// own default (200704) the same program keeps 196608 bytes in shared memory
// and allocates a scratch slice per block for the rest.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm="outline-kinds=false" 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm="outline-kinds=false shared-memory-bytes=200704" 2>/dev/null | FileCheck %s --check-prefix=SPILL
// REQUIRES: ptxas

// Three device allocations either way (the operands and the result), and
// the scratch slices when the tiles spill.
// CHECK-LABEL: llvm.func @six_products(
// CHECK: %[[SMEM:.*]] = llvm.mlir.constant(229376 : i32) : i32
// CHECK-COUNT-3: llvm.call @mgpuMemAlloc
// CHECK-NOT: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func {{.*}}@six_products_tiles_{{.*}} dynamic_shared_memory_size %[[SMEM]] args(

// SPILL-LABEL: llvm.func @six_products(
// SPILL: %[[SMEM:.*]] = llvm.mlir.constant(196608 : i32) : i32
// SPILL-COUNT-4: llvm.call @mgpuMemAlloc
// SPILL-NEXT: gpu.launch_func {{.*}}@six_products_tiles_{{.*}} dynamic_shared_memory_size %[[SMEM]] args(
func.func @six_products(%x: tensor<?x64x128xf32>, %w: tensor<6x128x128xf32>) -> tensor<?x64x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x64x128xf32>
  %init = tensor.empty(%n) : tensor<?x64x128xf32>
  %r = scf.forall (%i) in (%n) shared_outs(%o = %init) -> (tensor<?x64x128xf32>) {
    %xi = tensor.extract_slice %x[%i, 0, 0] [1, 64, 128] [1, 1, 1] : tensor<?x64x128xf32> to tensor<64x128xf32>
    %w0 = tensor.extract_slice %w[0, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e0 = tensor.empty() : tensor<64x128xf32>
    %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t0 = linalg.matmul ins(%xi, %w0 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f0 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %w1 = tensor.extract_slice %w[1, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e1 = tensor.empty() : tensor<64x128xf32>
    %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t1 = linalg.matmul ins(%xi, %w1 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f1 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %w2 = tensor.extract_slice %w[2, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e2 = tensor.empty() : tensor<64x128xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t2 = linalg.matmul ins(%xi, %w2 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f2 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %w3 = tensor.extract_slice %w[3, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e3 = tensor.empty() : tensor<64x128xf32>
    %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t3 = linalg.matmul ins(%xi, %w3 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f3 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %w4 = tensor.extract_slice %w[4, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e4 = tensor.empty() : tensor<64x128xf32>
    %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t4 = linalg.matmul ins(%xi, %w4 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f4 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %w5 = tensor.extract_slice %w[5, 0, 0] [1, 128, 128] [1, 1, 1] : tensor<6x128x128xf32> to tensor<128x128xf32>
    %e5 = tensor.empty() : tensor<64x128xf32>
    %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %t5 = linalg.matmul ins(%xi, %w5 : tensor<64x128xf32>, tensor<128x128xf32>) outs(%f5 : tensor<64x128xf32>) -> tensor<64x128xf32>
    %es = tensor.empty() : tensor<64x128xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a, b)>], iterator_types = ["parallel", "parallel"]} ins(%t0, %t1, %t2, %t3, %t4, %t5 : tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<64x128xf32>) outs(%es : tensor<64x128xf32>) {
    ^bb0(%a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %out: f32):
      %p1 = arith.mulf %a0, %a1 : f32
      %p2 = arith.mulf %p1, %a2 : f32
      %p3 = arith.mulf %p2, %a3 : f32
      %p4 = arith.mulf %p3, %a4 : f32
      %p5 = arith.mulf %p4, %a5 : f32
      linalg.yield %p5 : f32
    } -> tensor<64x128xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i, 0, 0] [1, 64, 128] [1, 1, 1] : tensor<64x128xf32> into tensor<?x64x128xf32>
    }
  }
  return %r : tensor<?x64x128xf32>
}
