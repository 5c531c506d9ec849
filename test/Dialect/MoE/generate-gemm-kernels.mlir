// RUN: moe-opt %s --moe-generate-gemm-kernels=remarks=true -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-gemm-kernels="operand-type=f32-exact" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=EXACT
// RUN: moe-opt %s --moe-generate-gemm-kernels="stages=3" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=STAGES3
// RUN: not moe-opt %s --moe-generate-gemm-kernels="operand-type=f16" 2>&1 | FileCheck %s --check-prefix=BAD-TYPE
// RUN: not moe-opt %s --moe-generate-gemm-kernels="stages=2" 2>&1 | FileCheck %s --check-prefix=BAD-STAGES
// RUN: moe-opt %s --moe-generate-gemm-kernels -split-input-file 2>&1 | FileCheck %s --check-prefix=QUIET

// BAD-TYPE: error: expects operand-type bf16 or f32-exact, got 'f16'
// BAD-STAGES: error: expects 3 to 6 stages, got 2
// Without `remarks`, declined contractions are left alone silently.
// QUIET-NOT: remark: contraction

#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#w = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// A projection as TensorBuilder::project builds it: f32 [B, T, 256] x
// [256, 128] -> [B, T, 128]. The rows (B * T) are dynamic; the kernel takes
// [?, 256] and [?, 128] views, the grid has one 128-column tile and
// ceil(rows / 128) row tiles, and there is no launch without rows. Both
// operands are f32: each thread loads 4 + 4 chunks of 8 floats into
// registers (two 16-byte loads each), rounds them to bf16 and stores them
// to shared memory; a step is 2 x 4 x 8 = 64 mma.sync per warp.

// CHECK-LABEL: func.func @project_f32(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x256xf32>, %[[W:[^:]+]]: tensor<256x128xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x128xf32>
// CHECK: %[[XB:.+]] = bufferization.to_buffer %[[X]] read_only : tensor<?x?x256xf32> to memref<?x?x256xf32>
// CHECK: %[[A:.+]] = memref.collapse_shape %[[XB]] {{\[\[}}0, 1], [2]] : memref<?x?x256xf32> into memref<?x256xf32>
// CHECK: %[[WB:.+]] = bufferization.to_buffer %[[W]] read_only : tensor<256x128xf32> to memref<256x128xf32>
// CHECK: %[[C:.+]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1], [2]] : memref<?x?x128xf32> into memref<?x128xf32>
// CHECK: %[[M:.+]] = memref.dim %[[A]], %{{.*}} : memref<?x256xf32>
// CHECK: scf.if
// CHECK: %[[TILES:.+]] = arith.divui
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_256x128_0 blocks in (%c1{{.*}}, %[[TILES]], %c1{{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c65536_i32 args(%[[A]] : memref<?x256xf32>, %[[WB]] : memref<256x128xf32>, %[[C]] : memref<?x128xf32>, %[[M]] : index)
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.module @moe_gemm_kernels
// CHECK: gpu.func @gemm_256x128_0({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-COUNT-8: vector.load {{.*}} : memref<{{.*}}xf32>, vector<8xf32>
// CHECK-COUNT-8: vector.store {{.*}} : memref<32768xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: scf.for
// CHECK-COUNT-8: vector.load {{.*}} : memref<{{.*}}xf32>, vector<8xf32>
// CHECK: gpu.barrier
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-32: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK-COUNT-8: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: scf.yield
// CHECK-NOT: nvgpu.device_async_wait
// CHECK-COUNT-32: vector.store {{.*}} : memref<?x128xf32>, vector<2xf32>
// CHECK: gpu.return

// EXACT-LABEL: func.func @project_f32(
// EXACT: linalg.generic
// EXACT-NOT: gpu.launch_func

// STAGES3-LABEL: func.func @project_f32(
// STAGES3: dynamic_shared_memory_size %c49152_i32

func.func @project_f32(%x: tensor<?x?x256xf32>, %w: tensor<256x128xf32>) -> tensor<?x?x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x256xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b, %t) : tensor<?x?x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x256xf32>, tensor<256x128xf32>) outs(%f : tensor<?x?x128xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// bf16 operands with a transposed weight ([N, K], map (n, k)), both
// extended in the body, as TensorBuilder::contract builds it; N = 80 is no
// multiple of 128: 64-column tiles (two, the second clamped and guarded).
// bf16 operands reach shared memory by cp.async (4 chunks of A and 2 of B
// per thread and step), two steps ahead of use; B fragments are read
// untransposed from its n-major tile. The product's operands may come in
// either order and the accumulator on either side.

// CHECK-LABEL: func.func @project_bf16_transposed(
// CHECK: %[[A:.+]] = memref.cast {{.*}} : memref<300x64xbf16> to memref<?x64xbf16>
// CHECK: %[[C:.+]] = memref.cast {{.*}} : memref<300x80xf32> to memref<?x80xf32>
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_64x80t_0 blocks in (%c2{{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c49152_i32 args(%[[A]] : memref<?x64xbf16>, %{{.*}} : memref<80x64xbf16>, %[[C]] : memref<?x80xf32>
// CHECK: gpu.func @gemm_64x80t_0(
// CHECK-NOT: vector.load
// CHECK-COUNT-6: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-6: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK-COUNT-6: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_wait {{.*}} {numGroups = 2 : i32}
// CHECK: gpu.barrier
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-COUNT-6: nvgpu.ldmatrix
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: nvgpu.device_async_wait {{.*}} {numGroups = 0 : i32}
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: vector.store {{.*}} : memref<?x80xf32>, vector<2xf32>

// EXACT-LABEL: func.func @project_bf16_transposed(
// EXACT: gpu.launch_func @moe_gemm_kernels::@gemm_64x80t_0

func.func @project_bf16_transposed(%x: tensor<300x64xbf16>, %w: tensor<80x64xbf16>) -> tensor<300x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<300x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<300x80xf32>) -> tensor<300x80xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<300x64xbf16>, tensor<80x64xbf16>) outs(%f : tensor<300x80xf32>) {
  ^bb0(%a: bf16, %bw: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %bw : bf16 to f32
    %m = arith.mulf %b32, %a32 : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<300x80xf32>
  return %y : tensor<300x80xf32>
}

// -----

// A reduction of 80, no multiple of the 32 a pipeline step takes (MLA's
// kv-down input gradient): three steps, the last one's chunks past 80 read
// nothing (cp.async with 0 source bytes: zeros) from a clamped, valid
// address; the f32 weight's rows past 80 are selected to zeros.

// CHECK-LABEL: func.func @project_k80(
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_80x256_0
// CHECK: gpu.func @gemm_80x256_0(
// CHECK: %[[K:.+]] = arith.constant 80 : index
// CHECK: %[[KLAST:.+]] = arith.constant 72 : index
// CHECK: arith.minui %{{.+}}, %[[KLAST]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %[[K]]
// CHECK: %[[BYTES:.+]] = arith.select %[[IN]], %c8{{.*}}, %c0
// CHECK: nvgpu.device_async_copy {{.*}}, %[[BYTES]] {bypassL1}
// CHECK: %[[KROW:.+]] = arith.constant 79 : index
// CHECK: arith.minui %{{.+}}, %[[KROW]]
// CHECK: vector.load {{.*}} : memref<80x256xf32>, vector<8xf32>
// CHECK: arith.select %{{.+}}, %{{.+}}, %cst{{.*}} : vector<8xf32>
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %c3{{.*}} step

func.func @project_k80(%x: tensor<?x80xbf16>, %w: tensor<80x256xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x80xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x80xbf16>, tensor<80x256xf32>) outs(%f : tensor<?x256xf32>) {
  ^bb0(%a: bf16, %bw: f32, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %m = arith.mulf %a32, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Mixed operands (f32 input, bf16 weight: cp.async for B, registers for A),
// a chain of two projections (the second reads the first's result) of the
// same and of another shape, and a linalg.matmul of the first's shape, which
// shares its kernel. A fill of another constant starts the accumulators
// there.

// CHECK-LABEL: func.func @chain(
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_128x64_0
// CHECK: %[[H:.+]] = bufferization.to_tensor
// CHECK: bufferization.to_buffer %[[H]] read_only
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_64x128_1
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_128x64_0
// CHECK-NOT: linalg.matmul
// CHECK: gpu.func @gemm_128x64_0(
// CHECK-COUNT-4: vector.load {{.*}} : memref<?x128xf32>, vector<8xf32>
// CHECK-COUNT-2: nvgpu.device_async_copy {{.*}} : memref<128x64xbf16>
// CHECK: nvgpu.device_async_create_group
// CHECK: gpu.func @gemm_64x128_1(
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ONE]],

func.func @chain(%x: tensor<?x128xf32>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xf32>) -> (tensor<?x128xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x128xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e1 = tensor.empty(%rows) : tensor<?x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w1 : tensor<?x128xf32>, tensor<128x64xbf16>) outs(%f1 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %bw: bf16, %acc: f32):
    %b32 = arith.extf %bw : bf16 to f32
    %m = arith.mulf %a, %b32 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %e2 = tensor.empty(%rows) : tensor<?x128xf32>
  %f2 = linalg.fill ins(%one : f32) outs(%e2 : tensor<?x128xf32>) -> tensor<?x128xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %w2 : tensor<?x64xf32>, tensor<64x128xf32>) outs(%f2 : tensor<?x128xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x128xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %z = linalg.matmul ins(%x, %w1 : tensor<?x128xf32>, tensor<128x64xbf16>) outs(%f3 : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y, %z : tensor<?x128xf32>, tensor<?x64xf32>
}

// -----

// Declined (with remarks): a width that is no multiple of 8, a dynamic
// reduction, a reduction that is no multiple of 8, an output that does not
// start as a filled constant, a bf16 result, a depthwise convolution (its
// maps are no projection's), a matrix-vector product. Left alone silently:
// an element-wise generic, a max-reduction, and a projection inside an
// scf.forall (another generator's tile). Nothing is taken: no gpu.module.

// CHECK-LABEL: func.func @declined(
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module

func.func @declined(%x: tensor<?x256xf32>, %w4: tensor<256x4xf32>, %xd: tensor<?x?xf32>, %wd: tensor<?x64xf32>,
                    %x44: tensor<?x44xf32>, %w44: tensor<44x64xf32>, %w64: tensor<256x64xf32>, %init: tensor<?x64xf32>,
                    %xb: tensor<?x256xbf16>, %wb: tensor<256x64xbf16>, %conv: tensor<4x256xf32>, %v: tensor<256xf32>)
    -> (tensor<?x4xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xbf16>, tensor<?x256xf32>, tensor<64xf32>,
        tensor<?x256xf32>, tensor<?xf32>, tensor<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x256xf32>
  %zero = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %e4 = tensor.empty(%rows) : tensor<?x4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the output width is not a multiple of 8}}
  %r0 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w4 : tensor<?x256xf32>, tensor<256x4xf32>) outs(%f4 : tensor<?x4xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  %e64 = tensor.empty(%rows) : tensor<?x64xf32>
  %f64 = linalg.fill ins(%zero : f32) outs(%e64 : tensor<?x64xf32>) -> tensor<?x64xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the reduction size is not a static multiple of 8}}
  %r1 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xd, %wd : tensor<?x?xf32>, tensor<?x64xf32>) outs(%f64 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the reduction size is not a static multiple of 8}}
  %r2 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x44, %w44 : tensor<?x44xf32>, tensor<44x64xf32>) outs(%f64 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the output is not a linalg.fill of a constant}}
  %r3 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w64 : tensor<?x256xf32>, tensor<256x64xf32>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %eb = tensor.empty(%rows) : tensor<?x64xbf16>
  %fb = linalg.fill ins(%zb : bf16) outs(%eb : tensor<?x64xbf16>) -> tensor<?x64xbf16>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the result is not f32}}
  %r4 = linalg.matmul ins(%xb, %wb : tensor<?x256xbf16>, tensor<256x64xbf16>) outs(%fb : tensor<?x64xbf16>) -> tensor<?x64xbf16>
  %ec = tensor.empty(%rows) : tensor<?x256xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ec : tensor<?x256xf32>) -> tensor<?x256xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the indexing maps are not a projection's (m..., k) x (k, n) or (n, k) -> (m..., n)}}
  %r5 = linalg.generic {indexing_maps = [affine_map<(t, c, j) -> (t + j, c)>, affine_map<(t, c, j) -> (j, c)>, affine_map<(t, c, j) -> (t, c)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %conv : tensor<?x256xf32>, tensor<4x256xf32>) outs(%fc : tensor<?x256xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x256xf32>
  %ev = tensor.empty() : tensor<64xf32>
  %fv = linalg.fill ins(%zero : f32) outs(%ev : tensor<64xf32>) -> tensor<64xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: no row dimension (a vector-matrix product)}}
  %r6 = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%v, %w64 : tensor<256xf32>, tensor<256x64xf32>) outs(%fv : tensor<64xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  // Element-wise: no reduction.
  %r7 = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x, %x : tensor<?x256xf32>, tensor<?x256xf32>) outs(%ec : tensor<?x256xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    linalg.yield %m : f32
  } -> tensor<?x256xf32>
  // A max-reduction of products: no mul-add body.
  %er = tensor.empty(%rows) : tensor<?xf32>
  %fr = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %r8 = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x, %x : tensor<?x256xf32>, tensor<?x256xf32>) outs(%fr : tensor<?xf32>) {
  ^bb0(%a: f32, %bw: f32, %acc: f32):
    %m = arith.mulf %a, %bw : f32
    %s = arith.maximumf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  // A projection inside an scf.forall: another pass's tile.
  %et = tensor.empty() : tensor<4x64xf32>
  %r9 = scf.forall (%i) in (1) shared_outs(%o = %et) -> (tensor<4x64xf32>) {
    %tile = tensor.extract_slice %x[0, 0] [4, 256] [1, 1] : tensor<?x256xf32> to tensor<4x256xf32>
    %ft = linalg.fill ins(%zero : f32) outs(%o : tensor<4x64xf32>) -> tensor<4x64xf32>
    %p = linalg.matmul ins(%tile, %w64 : tensor<4x256xf32>, tensor<256x64xf32>) outs(%ft : tensor<4x64xf32>) -> tensor<4x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[0, 0] [4, 64] [1, 1] : tensor<4x64xf32> into tensor<4x64xf32>
    }
  }
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9
      : tensor<?x4xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xbf16>, tensor<?x256xf32>, tensor<64xf32>,
        tensor<?x256xf32>, tensor<?xf32>, tensor<4x64xf32>
}

// -----

// A weight gradient as the reverse mode of a projection builds it: the
// projection's operands and result come along (x, w, its output y), the
// body keeps their dead products and multiplies by 1, and the result sums
// dy * x over the rows (both reduction loops, first) into [256, 80]. It
// becomes the row-split GEMM: the rows split so that 2 x 2 tiles times the
// splits reach 264 blocks (at least 256 rows, a multiple of 32, per split),
// the partials in a device buffer, then the combining kernel adds them up in
// split order. A is staged k-major like B and read by ldmatrix.trans.

// CHECK-LABEL: func.func @weight_grad(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x256xf32>, %{{[^:]+}}: tensor<256x80xf32>, %{{[^:]+}}: tensor<?x?x80xf32>, %[[DY:[^:]+]]: tensor<?x?x80xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<256x80xf32>
// CHECK: %[[XB:.+]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[A:.+]] = memref.collapse_shape %[[XB]] {{\[\[}}0, 1], [2]] : memref<?x?x256xf32> into memref<?x256xf32>
// CHECK: %[[DYB:.+]] = bufferization.to_buffer %[[DY]] read_only
// CHECK: %[[B:.+]] = memref.collapse_shape %[[DYB]] {{\[\[}}0, 1], [2]] : memref<?x?x80xf32> into memref<?x80xf32>
// CHECK: %[[R:.+]] = memref.dim %[[A]], %{{.*}} : memref<?x256xf32>
// CHECK: arith.constant 66 : index
// CHECK: %[[PER:.+]] = arith.maxui %{{.*}}, %c256 : index
// CHECK: %[[SPLITS:.+]] = arith.maxui
// CHECK: %[[SIZE:.+]] = arith.muli %[[SPLITS]], %c20480 : index
// CHECK: %[[P:.+]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[SIZE]]) : memref<?xf32>
// Without rows, no partial kernel, and the combining kernel adds no split.
// CHECK: %[[HAS:.+]] = arith.cmpi ult, %{{.*}}, %[[R]] : index
// CHECK: scf.if %[[HAS]] {
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_rowsum_256x80_0 blocks in (%c2{{.*}}, %c2{{.*}}, %[[SPLITS]]) threads in (%c128{{.*}}) dynamic_shared_memory_size %c49152_i32 args(%[[A]] : memref<?x256xf32>, %[[B]] : memref<?x80xf32>, %[[P]] : memref<?xf32>, %[[R]] : index, %[[PER]] : index)
// CHECK: }
// CHECK: %[[ADDED:.+]] = arith.select %[[HAS]], %[[SPLITS]], %{{.*}} : index
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_rowsum_combine_256x80_1 blocks in (%c80{{.*}}) threads in (%c256{{.*}}) dynamic_shared_memory_size %c0_i32 args(%[[P]] : memref<?xf32>, %[[OUT]] : memref<256x80xf32>, %[[ADDED]] : index)
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.func @gemm_rowsum_256x80_0(
// CHECK: gpu.block_id z
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: scf.for
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-2: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: gpu.func @gemm_rowsum_combine_256x80_1(
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: memref.store {{.*}} : memref<256x80xf32>

#wx = affine_map<(b, t, m, n) -> (b, t, m)>
#ww = affine_map<(b, t, m, n) -> (m, n)>
#wy = affine_map<(b, t, m, n) -> (b, t, n)>

func.func @weight_grad(%x: tensor<?x?x256xf32>, %w: tensor<256x80xf32>, %y: tensor<?x?x80xf32>, %dy: tensor<?x?x80xf32>) -> tensor<256x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x80xf32>) -> tensor<256x80xf32>
  %g = linalg.generic {indexing_maps = [#wx, #ww, #wy, #wy, #ww], iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%x, %w, %y, %dy : tensor<?x?x256xf32>, tensor<256x80xf32>, tensor<?x?x80xf32>, tensor<?x?x80xf32>) outs(%f : tensor<256x80xf32>) {
  ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32):
    %one = arith.constant 1.000000e+00 : f32
    %5 = arith.mulf %in, %in_1 : f32
    %6 = arith.mulf %one, %in : f32
    %7 = arith.addf %in_2, %5 : f32
    %8 = arith.mulf %in_3, %6 : f32
    %9 = arith.addf %out, %8 : f32
    linalg.yield %9 : f32
  } -> tensor<256x80xf32>
  return %g : tensor<256x80xf32>
}

// -----

// A projection's input gradient as the reverse mode builds it: dx [B, T,
// 128] = dy [B, T, 256] times the weight [128, 256] read transposed, the
// reduction loop before the output's column loop, with the projection's
// operands and dead products along. It is the GEMM of a projection of dy by
// the transposed weight.

// CHECK-LABEL: func.func @input_grad(
// CHECK-SAME: %{{[^:]+}}: tensor<?x?x128xf32>, %[[W:[^:]+]]: tensor<128x256xf32>, %{{[^:]+}}: tensor<?x?x256xf32>, %[[DY:[^:]+]]: tensor<?x?x256xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[DYB:.+]] = bufferization.to_buffer %[[DY]] read_only
// CHECK: %[[A:.+]] = memref.collapse_shape %[[DYB]] {{\[\[}}0, 1], [2]] : memref<?x?x256xf32> into memref<?x256xf32>
// CHECK: %[[WB:.+]] = bufferization.to_buffer %[[W]] read_only : tensor<128x256xf32> to memref<128x256xf32>
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_256x128t_0 {{.*}} args(%[[A]] : memref<?x256xf32>, %[[WB]] : memref<128x256xf32>,

#gx = affine_map<(b, t, n, k) -> (b, t, k)>
#gw = affine_map<(b, t, n, k) -> (k, n)>
#gy = affine_map<(b, t, n, k) -> (b, t, n)>

func.func @input_grad(%x: tensor<?x?x128xf32>, %w: tensor<128x256xf32>, %y: tensor<?x?x256xf32>, %dy: tensor<?x?x256xf32>) -> tensor<?x?x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x128xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x128xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b, %t) : tensor<?x?x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  %g = linalg.generic {indexing_maps = [#gx, #gw, #gy, #gy, #gx], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w, %y, %dy : tensor<?x?x128xf32>, tensor<128x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>) outs(%f : tensor<?x?x128xf32>) {
  ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32):
    %one = arith.constant 1.000000e+00 : f32
    %5 = arith.mulf %in, %in_1 : f32
    %6 = arith.mulf %one, %in_1 : f32
    %7 = arith.addf %in_2, %5 : f32
    %8 = arith.mulf %in_3, %6 : f32
    %9 = arith.addf %out, %8 : f32
    linalg.yield %9 : f32
  } -> tensor<?x?x128xf32>
  return %g : tensor<?x?x128xf32>
}

// -----

// Sums over rows that the pass leaves: a width that is no multiple of 8
// (with a remark), a product of three factors and a sum of one factor (no
// product; silently). The last one is taken: its reduction loop sits
// between the output's, as TensorBuilder::matmul builds G^T x, and the rows
// are the reduction loops wherever they are.

// CHECK-LABEL: func.func @weight_grad_declined(
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_rowsum_64x64_0
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_rowsum_combine_64x64_1

func.func @weight_grad_declined(%x: tensor<?x4xf32>, %dy: tensor<?x64xf32>, %s: tensor<?x64xf32>)
    -> (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4x64xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4x64xf32>) -> tensor<4x64xf32>
  // expected-remark @below {{contraction left to -moe-map-forall-to-gpu: the weight gradient's sizes are not multiples of 8}}
  %g0 = linalg.generic {indexing_maps = [affine_map<(r, m, n) -> (r, m)>, affine_map<(r, m, n) -> (r, n)>, affine_map<(r, m, n) -> (m, n)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %dy : tensor<?x4xf32>, tensor<?x64xf32>) outs(%f4 : tensor<4x64xf32>) {
  ^bb0(%a: f32, %d: f32, %acc: f32):
    %m = arith.mulf %a, %d : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x64xf32>
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %g1 = linalg.generic {indexing_maps = [affine_map<(r, m, n) -> (r, m)>, affine_map<(r, m, n) -> (r, n)>, affine_map<(r, m, n) -> (r, n)>, affine_map<(r, m, n) -> (m, n)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%s, %dy, %dy : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%f : tensor<64x64xf32>) {
  ^bb0(%a: f32, %d: f32, %d2: f32, %acc: f32):
    %m = arith.mulf %a, %d : f32
    %m2 = arith.mulf %m, %d2 : f32
    %r = arith.addf %acc, %m2 : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  %g2 = linalg.generic {indexing_maps = [affine_map<(r, m, n) -> (r, m)>, affine_map<(r, m, n) -> (m, n)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%s : tensor<?x64xf32>) outs(%f : tensor<64x64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  %g3 = linalg.generic {indexing_maps = [affine_map<(m, r, n) -> (r, m)>, affine_map<(m, r, n) -> (r, n)>, affine_map<(m, r, n) -> (m, n)>],
                        iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%s, %dy : tensor<?x64xf32>, tensor<?x64xf32>) outs(%f : tensor<64x64xf32>) {
  ^bb0(%a: f32, %d: f32, %acc: f32):
    %m = arith.mulf %a, %d : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %g0, %g1, %g2, %g3 : tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// f32-exact keeps contractions with an f32 operand; with remarks, each says
// why.

// CHECK-LABEL: func.func @mixed_exact(
// CHECK: gpu.launch_func @moe_gemm_kernels::@gemm_128x64_0

// EXACT-LABEL: func.func @mixed_exact(
// EXACT: linalg.matmul
// EXACT-NOT: gpu.launch_func

func.func @mixed_exact(%x: tensor<?x128xf32>, %w: tensor<128x64xbf16>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x128xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %z = linalg.matmul ins(%x, %w : tensor<?x128xf32>, tensor<128x64xbf16>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
