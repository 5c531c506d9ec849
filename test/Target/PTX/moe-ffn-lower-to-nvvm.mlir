// moe-lower-to-nvvm on a whole bf16 MoE layer (moe.moe_ffn: d = 256, E = 8
// experts of width 128, top-2, a shared expert of width 128, exact QB):
// after -moe-decompose, -moe-generate-routing-kernels takes moe.route and
// its moe.dispatch, and -moe-generate-expert-kernels the grouped experts,
// the shared expert (one group) and the combine with the shared expert's
// sum fused in; nothing is left to the one-thread-per-block foralls. The
// PTX is sm_90 and ptxas assembles it.
//
// Expert GEMMs: per 32-element reduction step each warp reads 4 A fragments
// (ldmatrix.x4) and 4 pairs of B fragments (ldmatrix.x4.trans from the
// k-major weights) and issues 64 mma.sync m16n8k16 with bf16 operands and
// fp32 accumulators (the step loop is not unrolled); every thread copies
// its 16-byte chunks with cp.async.cg (2 prologue steps and 1 per
// iteration, 8 chunks each). The combine reads the shared expert's row
// and the token's two expert rows as 16-byte vectors and writes one.
// outline-kinds=false: the checks read each function's launches in order,
// which -moe-outline-kinds would move into the functions of its kinds.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm="outline-kinds=false" 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm="format=bin outline-kinds=false" 2>/dev/null | FileCheck %s --check-prefix=BIN
// REQUIRES: ptxas

// CHECK: llvm.func @moe_layer(
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_route blocks in
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_scatter0 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_schedule_0 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_gate_up_1 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_down_2 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_gate_up_3 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_down_4 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_slot_rows_5 blocks in
// CHECK: gpu.launch_func {{.*}}@moe_expert_kernels::@expert_combine_6 blocks in
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.binary @moe_routing_kernels
// CHECK: gpu.binary @moe_expert_kernels
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx81">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry expert_schedule_0(
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry expert_gate_up_1(
// CHECK-COUNT-16: cp.async.cg.shared.global
// CHECK-SAME: bar.sync
// CHECK-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: ex2.approx
// CHECK-SAME: .visible .entry expert_down_2(
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry expert_gate_up_3(
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry expert_down_4(
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry expert_slot_rows_5(
// CHECK-SAME: .visible .entry expert_combine_6(
// CHECK-COUNT-3: ld.global.v4
// CHECK-NOT: ld.global.v4
// CHECK-SAME: st.global.v4
// CHECK-NOT: st.global.v4

// BIN: gpu.binary @moe_routing_kernels {{.*}} bin = "\7FELF
// BIN: gpu.binary @moe_expert_kernels {{.*}} bin = "\7FELF

func.func @moe_layer(%x: tensor<?x256xbf16>, %w_router: tensor<8x256xbf16>,
                     %bias: tensor<8xf32>,
                     %w_gate: tensor<8x256x128xbf16>, %w_up: tensor<8x256x128xbf16>,
                     %w_down: tensor<8x128x256xbf16>,
                     %ws_gate: tensor<256x128xbf16>, %ws_up: tensor<256x128xbf16>,
                     %ws_down: tensor<128x256xbf16>)
    -> (tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>) {
  %y, %load, %next_bias = moe.moe_ffn %x router(%w_router, %bias)
      experts(%w_gate, %w_up, %w_down) shared(%ws_gate, %ws_up, %ws_down)
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x256xbf16>, tensor<8x256xbf16>, tensor<8xf32>,
         tensor<8x256x128xbf16>, tensor<8x256x128xbf16>, tensor<8x128x256xbf16>,
         tensor<256x128xbf16>, tensor<256x128xbf16>, tensor<128x256xbf16>)
      -> (tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>)
  return %y, %load, %next_bias : tensor<?x256xbf16>, tensor<8xi64>, tensor<8xf32>
}
