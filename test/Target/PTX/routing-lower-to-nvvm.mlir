// moe-lower-to-nvvm on moe.route + moe.dispatch: -moe-generate-routing-kernels
// turns them into the kernels routeN_route, _scan, _quantile, _bias and
// _scatterM, serialized to sm_90 PTX (ISA 8.0) that ptxas assembles; host
// code calls the mgpu* ABI.
//
// Tensor cores: the router GEMM of 64 experts over d = 512 stages four
// chunks of 128 columns by cp.async (bypassing L1); per chunk each warp issues
// 8 k-steps x 8 n-tiles = 64 mma.sync m16n8k16 with bf16 operands and fp32
// accumulators, fed by ldmatrix (the chunk loop is not unrolled). The
// scatter copies rows as 16-byte vectors.
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm 2>/dev/null | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %s --moe-lower-to-nvvm="format=bin" 2>/dev/null | FileCheck %s --check-prefix=BIN
// REQUIRES: ptxas

// CHECK: llvm.func @routing(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_route blocks in
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_scan blocks in
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_quantile blocks in
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_bias blocks in
// CHECK: gpu.launch_func {{.*}}@moe_routing_kernels::@route0_scatter0 blocks in
// CHECK: gpu.binary @moe_routing_kernels
// CHECK-SAME: #nvvm.target<chip = "sm_90", features = "+ptx81">
// CHECK-SAME: .target sm_90
// CHECK-SAME: .visible .entry route0_route(
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-COUNT-64: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// CHECK-SAME: cp.async.wait_group \091;
// CHECK-NOT: mma.sync
// CHECK-SAME: .visible .entry route0_scan(
// CHECK-SAME: .visible .entry route0_quantile(
// CHECK-SAME: atom.shared.add.u32
// CHECK-SAME: .visible .entry route0_bias(
// CHECK-SAME: .visible .entry route0_scatter0(
// CHECK-SAME: ld.global.v4.b32
// CHECK-SAME: st.global.v4.b32

// BIN: gpu.binary @moe_routing_kernels {{.*}} bin = "\7FELF

func.func @routing(%x: tensor<?x512xbf16>, %w_router: tensor<64x512xbf16>,
                   %bias: tensor<64xf32>)
    -> (tensor<?x8xf32>, tensor<64xi64>, tensor<64xf32>, tensor<?x512xbf16>,
        tensor<65xi64>, tensor<?xi64>) {
  %w, %idx, %load, %nb = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x512xbf16>, tensor<64x512xbf16>, tensor<64xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 64 : i64}
      : (tensor<?x512xbf16>, tensor<?x8xi64>)
      -> (tensor<?x512xbf16>, tensor<65xi64>, tensor<?xi64>)
  return %w, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<64xi64>, tensor<64xf32>, tensor<?x512xbf16>,
        tensor<65xi64>, tensor<?xi64>
}
