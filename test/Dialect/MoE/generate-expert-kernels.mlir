// RUN: moe-opt %s --moe-generate-expert-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-expert-kernels="reduction-step=64 stages=3" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=STEP64
// RUN: moe-opt %s --moe-generate-expert-kernels="block-cols=256" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=COLS256
// RUN: not moe-opt %s --moe-generate-expert-kernels="reduction-step=48" 2>&1 | FileCheck %s --check-prefix=BAD-STEP
// RUN: not moe-opt %s --moe-generate-expert-kernels="block-cols=192" 2>&1 | FileCheck %s --check-prefix=BAD-COLS
// RUN: not moe-opt %s --moe-generate-expert-kernels="stages=2" 2>&1 | FileCheck %s --check-prefix=BAD-STAGES
// RUN: moe-opt %s --moe-generate-expert-kernels="matmul-precision=exact" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=EXACT
// RUN: moe-opt %s --moe-generate-expert-kernels="matmul-precision=exact" -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EXACT-REMARK
// RUN: moe-opt %s --moe-generate-expert-kernels="matmul-precision=bf16" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=BF16
// RUN: not moe-opt %s --moe-generate-expert-kernels="matmul-precision=tf32" 2>&1 | FileCheck %s --check-prefix=BAD-PRECISION

// BAD-STEP: error: expects reduction-step 32 or 64, got 48
// BAD-STAGES: error: expects 3 to 6 stages, got 2
// BAD-COLS: error: expects block-cols 128 or 256, got 192
// BAD-PRECISION: error: expects matmul-precision bf16 or exact, got 'tf32'

// Under matmul-precision=exact only bf16 ops are taken; the bf16 ones are
// the same as under the default policy.
// EXACT-REMARK: remark: expert_ffn left to -moe-fuse-routing: the input is not bf16 (matmul-precision=exact)
// EXACT-REMARK: remark: combine left to -moe-fuse-routing: an element type is not bf16 (matmul-precision=exact)
// EXACT-REMARK: remark: glu_ffn left to -convert-moe-to-linalg: the input is not bf16 (matmul-precision=exact)
// EXACT-LABEL: func.func @grouped(
// EXACT: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1
// EXACT-LABEL: func.func @grouped_f32(
// EXACT: moe.expert_ffn
// EXACT-NOT: gpu.launch_func
// EXACT-LABEL: func.func @combine_shared_f32(
// EXACT: moe.combine
// EXACT: moe.glu_ffn
// EXACT-NOT: gpu.launch_func
// EXACT: return

// Grouped experts: a schedule kernel builds the tile table from the offsets,
// then the gate/up GEMM (SwiGLU epilogue, h in a device buffer) and the down
// GEMM run over it. Per 32-element reduction step a warp of the gate/up GEMM
// loads 4 A fragments and 4 pairs of B fragments (ldmatrix.x4, the B ones
// transposed from the k-major weights) and issues 2 x 4 x 8 = 64 mma.sync;
// each thread copies 4 + 4 chunks of 16 bytes, bypassing L1.

// CHECK-LABEL: func.func @grouped(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x256xbf16>, %[[OFF:[^:]+]]: tensor<9xi64>
// CHECK-NOT: moe.expert_ffn
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x256xbf16>
// CHECK: gpu.alloc async
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_schedule_0 blocks in (%c1{{.*}}) threads in (%c32{{.*}}) dynamic_shared_memory_size %c36_i32
// CHECK: scf.if
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1 blocks in (%c2{{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c65536_i32
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_2 blocks in (%c2{{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c65536_i32
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.module @moe_expert_kernels
// CHECK: gpu.func @expert_schedule_0(
// CHECK: gpu.func @expert_gate_up_1({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK-COUNT-8: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: scf.for
// CHECK-COUNT-8: nvgpu.device_async_copy {{.*}} {bypassL1}
// CHECK: nvgpu.device_async_wait {{.*}} {numGroups = 2 : i32}
// CHECK: gpu.barrier
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-32: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-4: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: math.exp
// CHECK: gpu.func @expert_down_2(

// STEP64-LABEL: func.func @grouped(
// STEP64: dynamic_shared_memory_size %c98304_i32
// STEP64: gpu.func @expert_gate_up_1(
// STEP64-COUNT-16: nvgpu.device_async_copy
// STEP64: scf.for
// STEP64-COUNT-16: nvgpu.device_async_copy
// STEP64: nvgpu.device_async_wait {{.*}} {numGroups = 1 : i32}
// STEP64-COUNT-128: nvvm.mma.sync
// STEP64-NOT: nvvm.mma.sync
// STEP64: scf.yield

// Eight warps of 64 x 64 over 256 columns (128 of gate and up): half the
// column tiles, 256 threads, 2 A and 4 B chunks per thread and step.
// COLS256-LABEL: func.func @grouped(
// COLS256: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1 blocks in (%c1{{.*}}) threads in (%c256{{.*}}) dynamic_shared_memory_size %c98304_i32
// COLS256: gpu.launch_func @moe_expert_kernels::@expert_down_2 blocks in (%c1{{.*}}) threads in (%c256{{.*}}) dynamic_shared_memory_size %c98304_i32
// COLS256: gpu.func @expert_gate_up_1({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// COLS256-COUNT-12: nvgpu.device_async_copy
// COLS256: scf.for
// COLS256-COUNT-6: nvgpu.device_async_copy
// COLS256-COUNT-64: nvvm.mma.sync
// COLS256-NOT: nvvm.mma.sync
// COLS256: scf.yield
func.func @grouped(%x: tensor<?x256xbf16>, %off: tensor<9xi64>,
                   %wg: tensor<8x256x128xbf16>, %wu: tensor<8x256x128xbf16>,
                   %wd: tensor<8x128x256xbf16>) -> tensor<?x256xbf16> {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x256xbf16>, tensor<9xi64>, tensor<8x256x128xbf16>,
         tensor<8x256x128xbf16>, tensor<8x128x256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// The shared expert (glu_ffn) is one group of all rows: no schedule kernel
// and no tile table; the combine takes the element-wise sum with it as its
// starting value (one fp32 sum, one rounding), after the inverse of
// source_slot.

// CHECK-LABEL: func.func @combine_shared(
// CHECK-NOT: moe.
// CHECK-NOT: expert_schedule
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_0
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_1
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_slot_rows_2 blocks
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_combine_3 blocks in (%{{.*}}) threads in (%c256{{.*}}) args({{.*}} : memref<?xbf16>, {{.*}} : memref<?xi32>, {{.*}} : memref<?x4xf32>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>)
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK: gpu.func @expert_combine_3(
// CHECK-COUNT-4: vector.fma {{.*}} : vector<8xf32>
// CHECK-NOT: vector.fma
// CHECK: vector.store {{.*}} : memref<?xbf16>, vector<8xbf16>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @combine_shared(%out: tensor<?x128xbf16>, %slot: tensor<?xi64>,
                          %w: tensor<?x4xf32>, %x: tensor<?x128xbf16>,
                          %sg: tensor<128x128xbf16>, %su: tensor<128x128xbf16>,
                          %sd: tensor<128x128xbf16>) -> tensor<?x128xbf16> {
  %y = moe.combine %out, %slot, %w
      : (tensor<?x128xbf16>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x128xbf16>
  %s = moe.glu_ffn %x, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x128xbf16>
  %init = tensor.empty(%n) : tensor<?x128xbf16>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%y, %s : tensor<?x128xbf16>, tensor<?x128xbf16>)
      outs(%init : tensor<?x128xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %r = arith.addf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<?x128xbf16>
  return %sum : tensor<?x128xbf16>
}

// -----

// f32 experts under the default policy (matmul-precision=bf16): the f32
// weights (all experts, once) and, once there are rows, the input are
// rounded to bf16 by the conversion kernel into device buffers viewed in
// their shapes; the GEMMs are the bf16 ones (fp32 accumulators), the
// SiTU-GLU epilogue computes gate_beta tanh(a / gate_beta) sigmoid(a) and
// up_beta tanh(u / up_beta) in fp32 before h is rounded to bf16, and the
// down GEMM stores its fp32 accumulators into the f32 result.

// CHECK-LABEL: func.func @grouped_f32(
// CHECK-NOT: moe.expert_ffn
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x256xf32>
// CHECK: %[[WG:.+]] = bufferization.to_buffer %{{.*}} read_only : tensor<8x256x128xf32> to memref<8x256x128xf32>
// CHECK: %[[WGB:[^,]+]], %{{.*}} = gpu.alloc async [%{{.*}}] (%c262144) : memref<?xbf16>
// CHECK: %[[WGF:.+]] = memref.collapse_shape %[[WG]] {{\[\[}}0, 1, 2]] : memref<8x256x128xf32> into memref<262144xf32>
// CHECK: %[[WGD:.+]] = memref.cast %[[WGF]] : memref<262144xf32> to memref<?xf32>
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0 blocks in (%{{.*}}) threads in (%c256{{.*}}) args(%[[WGD]] : memref<?xf32>, %[[WGB]] : memref<?xbf16>, %{{.*}} : index)
// CHECK: %[[WGV:.+]] = memref.reinterpret_cast %[[WGB]] to offset: [0], sizes: [8, 256, 128], strides: [32768, 128, 1] : memref<?xbf16> to memref<8x256x128xbf16>
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0
// CHECK: memref.reinterpret_cast {{.*}} sizes: [8, 128, 256], strides: [32768, 256, 1] : memref<?xbf16> to memref<8x128x256xbf16>
// CHECK: %[[XB:[^,]+]], %{{.*}} = gpu.alloc async
// CHECK: %[[XV:.+]] = memref.reinterpret_cast %[[XB]] to offset: [0], sizes: [%{{.*}}, 256], strides: [256, 1] : memref<?xbf16> to memref<?x256xbf16>
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_schedule_1
// CHECK: scf.if
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0 {{.*}} args({{.*}} : memref<?xf32>, %[[XB]] : memref<?xbf16>
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_2 {{.*}} args(%[[XV]] : memref<?x256xbf16>, %[[WGV]] : memref<8x256x128xbf16>, %{{.*}} : memref<8x256x128xbf16>, %{{.*}} : memref<?xbf16>
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_3 {{.*}} args(%{{.*}} : memref<?x128xbf16>, %{{.*}} : memref<8x128x256xbf16>, %{{.*}} : memref<?xf32>
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: gpu.func @expert_to_bf16_0(
// CHECK: vector.load {{.*}} : memref<?xf32>, vector<8xf32>
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store {{.*}} : memref<?xbf16>, vector<8xbf16>
// CHECK: gpu.func @expert_gate_up_2(
// CHECK-COUNT-32: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// CHECK: scf.yield
// CHECK: arith.constant 4.000000e+00 : f32
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: arith.constant 2.500000e+01 : f32
// CHECK: math.tanh
// CHECK: vector.store {{.*}} : memref<?xbf16>, vector<2xbf16>
// CHECK: gpu.func @expert_down_3(
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: arith.truncf
// CHECK: vector.store {{.*}} {alignment = 8 : i64} : memref<?xf32>, vector<2xf32>
// CHECK-NOT: arith.truncf
// CHECK: gpu.return

// BF16-LABEL: func.func @grouped_f32(
// BF16-COUNT-4: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0
// BF16: gpu.launch_func @moe_expert_kernels::@expert_gate_up_2
func.func @grouped_f32(%x: tensor<?x256xf32>, %off: tensor<9xi64>,
                       %wg: tensor<8x256x128xf32>, %wu: tensor<8x256x128xf32>,
                       %wd: tensor<8x128x256xf32>) -> tensor<?x256xf32> {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x256xf32>, tensor<9xi64>, tensor<8x256x128xf32>,
         tensor<8x256x128xf32>, tensor<8x128x256xf32>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// An f32 combine reads and writes f32 rows (two 16-byte accesses per eight
// elements, no rounding): the k weighted slots are summed in fp32 from zero
// and then the f32 shared expert's row is added (ALGORITHMS.md section
// 7.1). The shared expert's f32 GEMMs use SwiGLU and the same conversion
// kernel; a bf16 weight (w_down here) is read in place.

// CHECK-LABEL: func.func @combine_shared_f32(
// CHECK-NOT: moe.
// CHECK-COUNT-2: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0
// CHECK-NOT: expert_to_bf16
// CHECK: scf.if
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_to_bf16_0
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1 {{.*}} args({{.*}} : memref<?x128xbf16>, {{.*}} : memref<128x128xbf16>, {{.*}} : memref<128x128xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : index)
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_2 {{.*}} args({{.*}} : memref<?x128xbf16>, {{.*}} : memref<128x128xbf16>, {{.*}} : memref<?xf32>, {{.*}} : index)
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_slot_rows_3
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_combine_4 blocks in (%{{.*}}) threads in (%c256{{.*}}) args({{.*}} : memref<?xf32>, {{.*}} : memref<?xi32>, {{.*}} : memref<?x4xf32>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK: gpu.func @expert_gate_up_1(
// CHECK-NOT: math.tanh
// CHECK: gpu.func @expert_combine_4(
// CHECK: arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NOT: arith.extf
// CHECK: vector.load {{.*}} : memref<?xf32>, vector<8xf32>
// CHECK-NEXT: vector.fma {{.*}} : vector<8xf32>
// CHECK-COUNT-3: vector.fma {{.*}} : vector<8xf32>
// CHECK-NOT: vector.fma
// CHECK: vector.load {{.*}} : memref<?xf32>, vector<8xf32>
// CHECK-NEXT: arith.addf {{.*}} : vector<8xf32>
// CHECK-NOT: arith.truncf
// CHECK-NEXT: vector.store {{.*}} : memref<?xf32>, vector<8xf32>
#idf = affine_map<(d0, d1) -> (d0, d1)>
func.func @combine_shared_f32(%out: tensor<?x128xf32>, %slot: tensor<?xi64>,
                              %w: tensor<?x4xf32>, %x: tensor<?x128xf32>,
                              %sg: tensor<128x128xf32>, %su: tensor<128x128xf32>,
                              %sd: tensor<128x128xbf16>) -> tensor<?x128xf32> {
  %y = moe.combine %out, %slot, %w
      : (tensor<?x128xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x128xf32>
  %s = moe.glu_ffn %x, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x128xf32>, tensor<128x128xf32>, tensor<128x128xf32>, tensor<128x128xbf16>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x128xf32>
  %init = tensor.empty(%n) : tensor<?x128xf32>
  %sum = linalg.generic {indexing_maps = [#idf, #idf, #idf],
                         iterator_types = ["parallel", "parallel"]}
      ins(%s, %y : tensor<?x128xf32>, tensor<?x128xf32>)
      outs(%init : tensor<?x128xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x128xf32>
  return %sum : tensor<?x128xf32>
}

// -----

// A dense FFN on [B, T, d] (a model's dense layers) runs on its B * T rows:
// the op becomes one on the collapsed input, whose result is expanded back.

// CHECK-LABEL: func.func @dense_rows(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x128xf32>
// CHECK: %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x?x128xf32> into tensor<?x128xf32>
// CHECK: bufferization.to_buffer %[[FLAT]] read_only
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1 blocks in (%c3
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_2 blocks in (%c1
// CHECK: %[[Y:.+]] = bufferization.to_tensor
// CHECK: %[[B:.+]] = tensor.dim %[[X]], %c0
// CHECK: %[[T:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[OUT:.+]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [%[[B]], %[[T]], 128] : tensor<?x128xf32> into tensor<?x?x128xf32>
// CHECK: return %[[OUT]]
func.func @dense_rows(%x: tensor<?x?x128xf32>, %wg: tensor<128x192xf32>,
                      %wu: tensor<128x192xf32>, %wd: tensor<192x128xf32>)
    -> tensor<?x?x128xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x?x128xf32>, tensor<128x192xf32>, tensor<128x192xf32>, tensor<192x128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// What the generator does not take stays, with a remark that says why.

// Under matmul-precision=exact, the f32 ops of @grouped_f32 and
// @combine_shared_f32 are declined too (EXACT lines at the top).

func.func @declined(%x: tensor<?x128xf16>, %off: tensor<17xi64>,
                    %wg: tensor<16x128x64xf16>, %wu: tensor<16x128x64xf16>,
                    %wd: tensor<16x64x128xf16>, %xb: tensor<?x96xbf16>,
                    %sg: tensor<96x128xbf16>, %su: tensor<96x128xbf16>,
                    %sd: tensor<128x96xbf16>, %xc: tensor<?x128xf32>,
                    %tg: tensor<128x128xf32>, %tu: tensor<128x128xf64>,
                    %td: tensor<128x128xf32>, %slot: tensor<?xi64>,
                    %w: tensor<?x4xf32>, %xd: tensor<?x60xf32>,
                    %x3: tensor<2x?x96xbf16>)
    -> (tensor<?x128xf16>, tensor<?x96xbf16>, tensor<?x128xf32>, tensor<?x128xf16>,
        tensor<?x60xf32>, tensor<2x?x96xbf16>) {
  // expected-remark @below {{expert_ffn left to -moe-fuse-routing: the input is neither f32 nor bf16}}
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x128xf16>, tensor<17xi64>, tensor<16x128x64xf16>,
         tensor<16x128x64xf16>, tensor<16x64x128xf16>) -> tensor<?x128xf16>
  // expected-remark @below {{glu_ffn left to -convert-moe-to-linalg: the hidden size is not a static multiple of 128}}
  %s = moe.glu_ffn %xb, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x96xbf16>, tensor<96x128xbf16>, tensor<96x128xbf16>, tensor<128x96xbf16>
  // expected-remark @below {{glu_ffn left to -convert-moe-to-linalg: the hidden size is not a static multiple of 128}}
  %s3 = moe.glu_ffn %x3, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<2x?x96xbf16>, tensor<96x128xbf16>, tensor<96x128xbf16>, tensor<128x96xbf16>
  // expected-remark @below {{glu_ffn left to -convert-moe-to-linalg: w_up is neither f32 nor bf16}}
  %t = moe.glu_ffn %xc, %tg, %tu, %td {activation = #moe.activation<situ_glu, gate_beta = 4.0>}
      : tensor<?x128xf32>, tensor<128x128xf32>, tensor<128x128xf64>, tensor<128x128xf32>
  // expected-remark @below {{combine left to -moe-fuse-routing: an element type is neither f32 nor bf16}}
  %c = moe.combine %x, %slot, %w
      : (tensor<?x128xf16>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x128xf16>
  // expected-remark @below {{combine left to -moe-fuse-routing: not [N, d] with d a static multiple of 8}}
  %e = moe.combine %xd, %slot, %w
      : (tensor<?x60xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x60xf32>
  return %y, %s, %t, %c, %e, %s3 : tensor<?x128xf16>, tensor<?x96xbf16>, tensor<?x128xf32>,
      tensor<?x128xf16>, tensor<?x60xf32>, tensor<2x?x96xbf16>
}

// -----

// More experts than the schedule kernel's one block has threads.

func.func @many_experts(%x: tensor<?x128xbf16>, %off: tensor<1041xi64>,
                        %wg: tensor<1040x128x64xbf16>, %wu: tensor<1040x128x64xbf16>,
                        %wd: tensor<1040x64x128xbf16>) -> tensor<?x128xbf16> {
  // expected-remark @below {{expert_ffn left to -moe-fuse-routing: more than 1024 experts}}
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x128xbf16>, tensor<1041xi64>, tensor<1040x128x64xbf16>,
         tensor<1040x128x64xbf16>, tensor<1040x64x128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Two layers of the same shapes launch the same kernels: each kernel is
// built once.

// CHECK-LABEL: func.func @two_layers(
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_schedule_0
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_2
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_schedule_0
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_gate_up_1
// CHECK: gpu.launch_func @moe_expert_kernels::@expert_down_2
// CHECK: gpu.module @moe_expert_kernels
// CHECK-COUNT-3: gpu.func @expert_
// CHECK-NOT: gpu.func
func.func @two_layers(%x: tensor<?x128xbf16>, %off: tensor<5xi64>,
                      %wg: tensor<4x128x64xbf16>, %wu: tensor<4x128x64xbf16>,
                      %wd: tensor<4x64x128xbf16>) -> tensor<?x128xbf16> {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x128xbf16>, tensor<5xi64>, tensor<4x128x64xbf16>,
         tensor<4x128x64xbf16>, tensor<4x64x128xbf16>) -> tensor<?x128xbf16>
  %z = moe.expert_ffn %y, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x128xbf16>, tensor<5xi64>, tensor<4x128x64xbf16>,
         tensor<4x128x64xbf16>, tensor<4x64x128xbf16>) -> tensor<?x128xbf16>
  return %z : tensor<?x128xbf16>
}
