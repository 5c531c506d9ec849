// RUN: moe-opt %s --moe-generate-routing-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-routing-kernels -split-input-file -mlir-print-op-on-diagnostic=false 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// bf16 input and router weights: the router GEMM runs on tensor cores. With
// d = 128 (one staged chunk of 128 columns) and E = 64, each warp issues
// 8 k-steps x 8 n-tiles = 64 mma.sync m16n8k16 (bf16 operands, fp32
// accumulators) from ldmatrix fragments of cp.async-staged tiles. Route and
// dispatch are gone: their results are the to_tensor of buffers that the
// launches write, and the dispatch's scatter is launched where the
// dispatch was.

// REMARK: remark: route GPU kernels: tiles of 64 tokens, router GEMM on tensor cores (bf16 mma.sync, fp32 accumulators), exact QB, 1 fused dispatch

// CHECK-LABEL: func.func @route_dispatch_bf16(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x128xbf16>, %[[WR:[^:]+]]: tensor<64x128xbf16>, %[[BIAS:[^:]+]]: tensor<64xf32>
// CHECK-NOT: moe.
// CHECK-DAG: %[[XB:.+]] = bufferization.to_buffer %[[X]] read_only
// CHECK-DAG: bufferization.to_buffer %[[WR]] read_only
// CHECK-DAG: bufferization.to_buffer %[[BIAS]] read_only
// CHECK: %[[N:.+]] = memref.dim %[[XB]], %c0
// CHECK: gpu.alloc async
// CHECK: %[[W:.+]] = memref.alloc(%[[N]]) : memref<?x8xf32>
// CHECK: %[[IDX:.+]] = memref.alloc(%[[N]]) : memref<?x8xi64>
// CHECK: %[[LOAD:.+]] = memref.alloc() : memref<64xi64>
// CHECK: %[[NB:.+]] = memref.alloc() : memref<64xf32>
// CHECK: %[[OFF:.+]] = memref.alloc() : memref<65xi64>
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_route blocks in ({{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c104704_i32 args(%[[XB]] : memref<?x128xbf16>, {{.*}}, %[[W]] : memref<?x8xf32>, %[[IDX]] : memref<?x8xi64>,
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scan blocks in (%c1{{.*}}) threads in (%c1024{{.*}}) {{.*}}, %[[LOAD]] : memref<64xi64>, {{.*}}, %[[OFF]] : memref<65xi64>)
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_quantile blocks in (%c64{{.*}}) threads in (%c256
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_bias blocks in (%c1{{.*}}) threads in (%c64{{.*}}) {{.*}}, %[[NB]] : memref<64xf32>)
// CHECK-DAG: %[[WT:.+]] = bufferization.to_tensor %[[W]] restrict writable
// CHECK-DAG: %[[IT:.+]] = bufferization.to_tensor %[[IDX]] restrict writable
// CHECK-DAG: %[[LT:.+]] = bufferization.to_tensor %[[LOAD]] restrict writable
// CHECK-DAG: %[[NT:.+]] = bufferization.to_tensor %[[NB]] restrict writable
// CHECK: %[[XP:.+]] = memref.alloc({{.*}}) : memref<?x128xbf16>
// CHECK: %[[SLOT:.+]] = memref.alloc({{.*}}) : memref<?xi64>
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scatter0 blocks in ({{.*}}) threads in (%c256{{.*}}) {{.*}}args({{.*}}, %[[IDX]] : memref<?x8xi64>, {{.*}}, %[[XP]] : memref<?x128xbf16>, %[[SLOT]] : memref<?xi64>)
// CHECK-DAG: %[[XPT:.+]] = bufferization.to_tensor %[[XP]] restrict writable
// CHECK-DAG: %[[OFFT:.+]] = bufferization.to_tensor %[[OFF]] restrict writable
// CHECK-DAG: %[[SLOTT:.+]] = bufferization.to_tensor %[[SLOT]] restrict writable
// CHECK: return %[[WT]], %[[IT]], %[[LT]], %[[NT]], %[[XPT]], %[[OFFT]], %[[SLOTT]]
// CHECK: gpu.module @moe_routing_kernels
// CHECK: gpu.func @route0_route({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK: nvgpu.ldmatrix
// CHECK-COUNT-64: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: nvvm.mma.sync
// CHECK: math.exp
// CHECK: gpu.func @route0_scan({{.*}}) kernel attributes {known_block_size = array<i32: 1024, 1, 1>}
// CHECK: gpu.func @route0_quantile({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.func @route0_bias({{.*}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK: gpu.func @route0_scatter0({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: vector.load {{.*}} : memref<?x128xbf16>, vector<8xbf16>
// CHECK: vector.store {{.*}} : memref<?x128xbf16>, vector<8xbf16>

func.func @route_dispatch_bf16(%x: tensor<?x128xbf16>, %wr: tensor<64x128xbf16>,
                               %bias: tensor<64xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>) {
  // expected-remark @below {{route GPU kernels: tiles of 64 tokens, router GEMM on tensor cores (bf16 mma.sync, fp32 accumulators), exact QB, 1 fused dispatch}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 64 : i64}
      : (tensor<?x128xbf16>, tensor<?x8xi64>)
      -> (tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>)
  return %w, %idx, %load, %nb, %xp, %off, %slot
      : tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x128xbf16>, tensor<65xi64>, tensor<?xi64>
}

// -----

// f32 operands: the router GEMM runs on fp32 CUDA cores (no tensor core).
// Histogram QB zeroes its histogram first and counts r with atomics; i32
// indices; two dispatches of the same indices, each with its scatter and
// its own expert_offsets, written by the one scan.

// REMARK: remark: route GPU kernels: tiles of 64 tokens, router GEMM on fp32 CUDA cores, histogram QB, 2 fused dispatches

// CHECK-LABEL: func.func @histogram_two_dispatches(
// CHECK-NOT: moe.
// CHECK: %[[OFF0:.+]] = memref.alloc() : memref<17xi64>
// CHECK: %[[OFF1:.+]] = memref.alloc() : memref<17xi64>
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_zero
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_route
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scan {{.*}}, %[[OFF0]] : memref<17xi64>, %[[OFF1]] : memref<17xi64>)
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_quantile
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_bias
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scatter0 {{.*}} memref<?x64xf32>
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scatter1 {{.*}} memref<?x32xbf16>
// CHECK: gpu.func @route0_zero
// CHECK: gpu.func @route0_route
// CHECK-NOT: nvvm.mma.sync
// CHECK: memref.atomic_rmw addi
// CHECK: gpu.func @route0_scan
// CHECK: gpu.func @route0_scatter1
// CHECK: vector.load {{.*}} : memref<?x32xbf16>, vector<8xbf16>

func.func @histogram_two_dispatches(%x: tensor<?x64xf32>, %y: tensor<?x32xbf16>,
                                    %wr: tensor<16x64xf32>, %bias: tensor<16xf32>)
    -> (tensor<?x64xf32>, tensor<?x32xbf16>, tensor<17xi64>, tensor<16xf32>) {
  // expected-remark @below {{route GPU kernels: tiles of 64 tokens, router GEMM on fp32 CUDA cores, histogram QB, 2 fused dispatches}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 1.0,
                              balance = #moe.quantile_balance<histogram, bins = 512>>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<16xf32>)
      -> (tensor<?x4xf32>, tensor<?x4xi32>, tensor<16xi64>, tensor<16xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x4xi32>) -> (tensor<?x64xf32>, tensor<17xi64>, tensor<?xi64>)
  %yp, %off2, %slot2 = moe.dispatch %y, %idx {num_experts = 16 : i64}
      : (tensor<?x32xbf16>, tensor<?x4xi32>) -> (tensor<?x32xbf16>, tensor<17xi64>, tensor<?xi64>)
  return %xp, %yp, %off2, %nb : tensor<?x64xf32>, tensor<?x32xbf16>, tensor<17xi64>, tensor<16xf32>
}

// -----

// The sign bias needs no quantile kernel: the bias kernel reads the load.
// A static N works as well.

// CHECK-LABEL: func.func @sign_static(
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_route
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_scan
// CHECK-NOT: @route0_quantile
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_bias {{.*}}memref<8xi64>, %{{.*}} : memref<8xf32>)

func.func @sign_static(%x: tensor<100x32xbf16>, %wr: tensor<8x32xbf16>, %bias: tensor<8xf32>)
    -> (tensor<100x2xi64>, tensor<8xf32>) {
  // expected-remark @below {{route GPU kernels: tiles of 64 tokens, router GEMM on tensor cores (bf16 mma.sync, fp32 accumulators), sign bias, 0 fused dispatches}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<100x32xbf16>, tensor<8x32xbf16>, tensor<8xf32>)
      -> (tensor<100x2xf32>, tensor<100x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return %idx, %nb : tensor<100x2xi64>, tensor<8xf32>
}

// -----

// Declined routes stay for -moe-fuse-routing, each with its reason.

// REMARK: remark: route left to -moe-fuse-routing: top_k 8 is not below the expert count 8 and at most 32
// REMARK: remark: route left to -moe-fuse-routing: the input (f16) or router weights (f16) are not f32 or bf16
// REMARK: remark: route left to -moe-fuse-routing: the hidden size is dynamic
// REMARK: remark: route left to -moe-fuse-routing: 1024 experts, more than 512

// CHECK-LABEL: func.func @declined(
// CHECK-COUNT-4: moe.route
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module

func.func @declined(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %bias: tensor<8xf32>,
                    %h: tensor<?x64xf16>, %wh: tensor<8x64xf16>,
                    %xd: tensor<?x?xf32>, %wd: tensor<8x?xf32>,
                    %wbig: tensor<1024x64xf32>, %bbig: tensor<1024xf32>)
    -> (tensor<?x8xi64>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x2xi64>) {
  // expected-remark @below {{route left to -moe-fuse-routing: top_k 8 is not below the expert count 8 and at most 32}}
  %w0, %i0, %l0, %b0 = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<8xi64>, tensor<8xf32>)
  // expected-remark @below {{route left to -moe-fuse-routing: the input (f16) or router weights (f16) are not f32 or bf16}}
  %w1, %i1, %l1, %b1 = moe.route %h, %wh, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf16>, tensor<8x64xf16>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  // expected-remark @below {{route left to -moe-fuse-routing: the hidden size is dynamic}}
  %w2, %i2, %l2, %b2 = moe.route %xd, %wd, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x?xf32>, tensor<8x?xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  // expected-remark @below {{route left to -moe-fuse-routing: 1024 experts, more than 512}}
  %w3, %i3, %l3, %b3 = moe.route %x, %wbig, %bbig
      {routing = #moe.routing<experts = 1024, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf32>, tensor<1024x64xf32>, tensor<1024xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<1024xi64>, tensor<1024xf32>)
  return %i0, %i1, %i2, %i3 : tensor<?x8xi64>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x2xi64>
}

// -----

// A dispatch of generated indices whose row width is dynamic keeps its
// moe.dispatch (for -moe-fuse-routing), reading the generated indices.

// REMARK: remark: dispatch left to -moe-fuse-routing: its row width is dynamic

// CHECK-LABEL: func.func @dynamic_dispatch(
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_route
// CHECK: %[[IT:.+]] = bufferization.to_tensor {{.*}} : memref<?x2xi32> to tensor<?x2xi32>
// CHECK: moe.dispatch %{{.*}}, %[[IT]]
// CHECK-NOT: @route0_scatter

func.func @dynamic_dispatch(%x: tensor<?x64xf32>, %x2: tensor<?x?xf32>,
                            %wr: tensor<8x64xf32>, %bias: tensor<8xf32>) -> tensor<?x?xf32> {
  // expected-remark @below {{route GPU kernels: tiles of 64 tokens, router GEMM on fp32 CUDA cores, exact QB, 0 fused dispatches}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi32>, tensor<8xi64>, tensor<8xf32>)
  // expected-remark @below {{dispatch left to -moe-fuse-routing: its row width is dynamic}}
  %xp, %off, %slot = moe.dispatch %x2, %idx {num_experts = 8 : i64}
      : (tensor<?x?xf32>, tensor<?x2xi32>) -> (tensor<?x?xf32>, tensor<9xi64>, tensor<?xi64>)
  return %xp : tensor<?x?xf32>
}

// -----

// Nothing to do: no gpu.module is created.

// CHECK-LABEL: func.func @no_route(
// CHECK-NOT: gpu.module
func.func @no_route(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Kimi-Linear's 256 experts: more than one router tile takes, so even bf16
// operands go to the fp32 router, in passes of 128 experts whose staging
// sits beside the score tables, with an i16 position table:
// 64 x 257 x 4 + 64 x 256 x 2 bytes of tables, the bias (1 KiB) and
// (64 + 128) x 33 x 4 bytes of staging = 124928 bytes.

// REMARK: remark: route GPU kernels: tiles of 64 tokens, router GEMM on fp32 CUDA cores in passes of 128 experts, exact QB, 1 fused dispatch

// CHECK-LABEL: func.func @experts_256(
// CHECK-DAG: %[[SMEM:.+]] = arith.constant 124928 : i32
// CHECK: gpu.launch_func @moe_routing_kernels::@route0_route {{.*}} dynamic_shared_memory_size %[[SMEM]]
// CHECK: gpu.func @route0_route
// CHECK: memref.view {{.*}} to memref<16384xi16, #gpu.address_space<workgroup>>
// CHECK: %[[STAGE:.+]] = arith.constant 99584 : index
// CHECK: memref.view %{{.*}}[%[[STAGE]]][] {{.*}} to memref<2112xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: math.fma

func.func @experts_256(%x: tensor<?x128xbf16>, %wr: tensor<256x128xbf16>,
                       %bias: tensor<256xf32>)
    -> (tensor<?x8xi64>, tensor<?x128xbf16>) {
  // expected-remark @below {{route GPU kernels: tiles of 64 tokens, router GEMM on fp32 CUDA cores in passes of 128 experts, exact QB, 1 fused dispatch}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %bias
      {routing = #moe.routing<experts = 256, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x128xbf16>, tensor<256x128xbf16>, tensor<256xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<256xi64>, tensor<256xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 256 : i64}
      : (tensor<?x128xbf16>, tensor<?x8xi64>)
      -> (tensor<?x128xbf16>, tensor<257xi64>, tensor<?xi64>)
  return %idx, %xp : tensor<?x8xi64>, tensor<?x128xbf16>
}
