// RUN: moe-opt %s --moe-generate-expert-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-expert-kernels="reduction-step=64 stages=3" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=STEP64
// RUN: moe-opt %s --moe-generate-expert-kernels="block-cols=256" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=COLS256
// RUN: not moe-opt %s --moe-generate-expert-kernels="reduction-step=48" 2>&1 | FileCheck %s --check-prefix=BAD-STEP
// RUN: not moe-opt %s --moe-generate-expert-kernels="block-cols=192" 2>&1 | FileCheck %s --check-prefix=BAD-COLS
// RUN: not moe-opt %s --moe-generate-expert-kernels="stages=2" 2>&1 | FileCheck %s --check-prefix=BAD-STAGES

// BAD-STEP: error: expects reduction-step 32 or 64, got 48
// BAD-STAGES: error: expects 3 to 6 stages, got 2
// BAD-COLS: error: expects block-cols 128 or 256, got 192

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

// What the generator does not take stays, with a remark that says why.

func.func @declined(%x: tensor<?x64xf32>, %off: tensor<17xi64>,
                    %wg: tensor<16x64x32xf32>, %wu: tensor<16x64x32xf32>,
                    %wd: tensor<16x32x64xf32>, %xb: tensor<?x96xbf16>,
                    %sg: tensor<96x128xbf16>, %su: tensor<96x128xbf16>,
                    %sd: tensor<128x96xbf16>, %xc: tensor<?x128xbf16>,
                    %tg: tensor<128x128xbf16>, %tu: tensor<128x128xbf16>,
                    %td: tensor<128x128xbf16>, %slot: tensor<?xi64>,
                    %w: tensor<?x4xf32>)
    -> (tensor<?x64xf32>, tensor<?x96xbf16>, tensor<?x128xbf16>, tensor<?x64xf32>) {
  // expected-remark @below {{expert_ffn left to -moe-fuse-routing: the input and weights are not bf16}}
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
         tensor<16x64x32xf32>, tensor<16x32x64xf32>) -> tensor<?x64xf32>
  // expected-remark @below {{glu_ffn left to -convert-moe-to-linalg: the hidden size is not a static multiple of 128}}
  %s = moe.glu_ffn %xb, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x96xbf16>, tensor<96x128xbf16>, tensor<96x128xbf16>, tensor<128x96xbf16>
  // expected-remark @below {{glu_ffn left to -convert-moe-to-linalg: the activation is not swiglu}}
  %t = moe.glu_ffn %xc, %tg, %tu, %td {activation = #moe.activation<situ_glu, gate_beta = 4.0>}
      : tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>
  // expected-remark @below {{combine left to -moe-fuse-routing: not bf16 [N, d] with d a static multiple of 8}}
  %c = moe.combine %x, %slot, %w
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x64xf32>
  return %y, %s, %t, %c : tensor<?x64xf32>, tensor<?x96xbf16>, tensor<?x128xbf16>, tensor<?x64xf32>
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
