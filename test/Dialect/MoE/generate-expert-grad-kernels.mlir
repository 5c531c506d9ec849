// RUN: moe-opt %s --moe-generate-expert-grad-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-expert-grad-kernels="matmul-precision=exact" -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EXACT
// RUN: moe-opt %s --moe-generate-expert-grad-kernels="split-blocks=1" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=SPLIT1
// RUN: not moe-opt %s --moe-generate-expert-grad-kernels="stages=7" 2>&1 | FileCheck %s --check-prefix=BAD-STAGES
// RUN: not moe-opt %s --moe-generate-expert-grad-kernels="split-blocks=0" 2>&1 | FileCheck %s --check-prefix=BAD-SPLIT
// RUN: not moe-opt %s --moe-generate-expert-grad-kernels="matmul-precision=tf32" 2>&1 | FileCheck %s --check-prefix=BAD-PRECISION

// BAD-STAGES: error: expects 3 to 6 stages, got 7
// BAD-SPLIT: error: expects split-blocks of at least 1, got 0
// BAD-PRECISION: error: expects matmul-precision bf16 or exact, got 'tf32'
// EXACT: remark: expert_ffn_grad left to -moe-lower-routing-grad: input is not bf16 (matmul-precision=exact)

// f32 operands at kimi-tiny's expert shapes: x, dy and the three weights
// rounded to bf16, then dh = dy Wd^T, the gate/up GEMM with the
// activation's adjoint, dx, and the two weight gradients, each split over
// the experts' rows (4 experts x 2 tiles x 33 splits >= 264 blocks for
// w_down, 4 x 4 x 17 for [w_gate | w_up]) and summed by a kernel.

// CHECK-LABEL: func.func @expert_grad(
// CHECK-COUNT-3: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_to_bf16_0
// CHECK: scf.if
// CHECK-COUNT-2: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_to_bf16_0
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_dh_1 blocks in (%c1{{.*}}, %{{.*}}, %c1{{.*}}) threads in (%c128
// CHECK-SAME: dynamic_shared_memory_size %c65536_i32
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_act_2 blocks in (%c2
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_dx_3 blocks in (%c2
// CHECK: }
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_dw_down_4 blocks in (%c2{{.*}}, %c1{{.*}}, %c132{{.*}})
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_sum_5
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_dw_gate_up_6 blocks in (%c2{{.*}}, %c2{{.*}}, %c68{{.*}})
// CHECK: gpu.launch_func @moe_expert_grad_kernels::@expert_grad_sum_7
// CHECK-COUNT-4: bufferization.to_tensor {{.*}} restrict writable
// CHECK-NOT: moe.expert_ffn_grad
// CHECK: return
// The row GEMMs read rows of A directly (ldmatrix without transpose) and
// copy whole chunks; the weight-gradient GEMMs read both operands
// reduction-major (A transposed) and zero-fill past a run's end.
// CHECK-LABEL: gpu.func @expert_grad_dh_1(
// CHECK: nvgpu.device_async_copy %{{.*}}, 8 {bypassL1}
// CHECK: nvgpu.ldmatrix {{.*}}transpose = false
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-LABEL: gpu.func @expert_grad_act_2(
// CHECK: math.exp
// CHECK-LABEL: gpu.func @expert_grad_dw_down_4(
// CHECK: nvgpu.device_async_copy %{{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.ldmatrix {{.*}}transpose = true
// CHECK-LABEL: gpu.func @expert_grad_sum_7(
// CHECK: scf.if

// SPLIT1-LABEL: func.func @expert_grad(
// SPLIT1: @expert_grad_dw_down_4 blocks in (%c2{{.*}}, %c1{{.*}}, %c4{{.*}})
// SPLIT1: @expert_grad_dw_gate_up_6 blocks in (%c2{{.*}}, %c2{{.*}}, %c4{{.*}})
func.func @expert_grad(%xp: tensor<?x256xf32>, %off: tensor<5xi64>,
                       %wg: tensor<4x256x128xf32>, %wu: tensor<4x256x128xf32>,
                       %wd: tensor<4x128x256xf32>, %dyp: tensor<?x256xf32>)
    -> (tensor<?x256xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>,
        tensor<4x128x256xf32>) {
  %dx, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x256xf32>, tensor<5xi64>, tensor<4x256x128xf32>,
         tensor<4x256x128xf32>, tensor<4x128x256xf32>, tensor<?x256xf32>)
      -> (tensor<?x256xf32>, tensor<4x256x128xf32>, tensor<4x256x128xf32>,
          tensor<4x128x256xf32>)
  return %dx, %dwg, %dwu, %dwd : tensor<?x256xf32>, tensor<4x256x128xf32>,
      tensor<4x256x128xf32>, tensor<4x128x256xf32>
}

// -----

// bf16 operands are read in place (no conversion) under either policy.
// CHECK-LABEL: func.func @expert_grad_bf16(
// CHECK-NOT: expert_grad_to_bf16
// CHECK: @expert_grad_dh_
func.func @expert_grad_bf16(%xp: tensor<?x128xbf16>, %off: tensor<3xi64>,
                            %wg: tensor<2x128x64xbf16>, %wu: tensor<2x128x64xbf16>,
                            %wd: tensor<2x64x128xbf16>, %dyp: tensor<?x128xbf16>)
    -> (tensor<?x128xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>,
        tensor<2x64x128xbf16>) {
  %dx, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x128xbf16>, tensor<3xi64>, tensor<2x128x64xbf16>,
         tensor<2x128x64xbf16>, tensor<2x64x128xbf16>, tensor<?x128xbf16>)
      -> (tensor<?x128xbf16>, tensor<2x128x64xbf16>, tensor<2x128x64xbf16>,
          tensor<2x64x128xbf16>)
  return %dx, %dwg, %dwu, %dwd : tensor<?x128xbf16>, tensor<2x128x64xbf16>,
      tensor<2x128x64xbf16>, tensor<2x64x128xbf16>
}

// -----

// Shapes the tiles do not cover stay for -moe-lower-routing-grad.
func.func @small(%xp: tensor<?x32xf32>, %off: tensor<5xi64>,
                 %wg: tensor<4x32x16xf32>, %wu: tensor<4x32x16xf32>,
                 %wd: tensor<4x16x32xf32>, %dyp: tensor<?x32xf32>)
    -> tensor<?x32xf32> {
  // expected-remark @below {{expert_ffn_grad left to -moe-lower-routing-grad: the hidden size is not a static multiple of 128}}
  %dx, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x32xf32>, tensor<5xi64>, tensor<4x32x16xf32>,
         tensor<4x32x16xf32>, tensor<4x16x32xf32>, tensor<?x32xf32>)
      -> (tensor<?x32xf32>, tensor<4x32x16xf32>, tensor<4x32x16xf32>,
          tensor<4x16x32xf32>)
  return %dx : tensor<?x32xf32>
}

// -----

func.func @narrow(%xp: tensor<?x128xf32>, %off: tensor<3xi64>,
                  %wg: tensor<2x128x96xf32>, %wu: tensor<2x128x96xf32>,
                  %wd: tensor<2x96x128xf32>, %dyp: tensor<?x128xf32>)
    -> tensor<?x128xf32> {
  // expected-remark @below {{expert_ffn_grad left to -moe-lower-routing-grad: the expert width is not a multiple of 64}}
  %dx, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x128xf32>, tensor<3xi64>, tensor<2x128x96xf32>,
         tensor<2x128x96xf32>, tensor<2x96x128xf32>, tensor<?x128xf32>)
      -> (tensor<?x128xf32>, tensor<2x128x96xf32>, tensor<2x128x96xf32>,
          tensor<2x96x128xf32>)
  return %dx : tensor<?x128xf32>
}
