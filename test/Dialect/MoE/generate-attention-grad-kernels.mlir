// RUN: moe-opt %s --moe-generate-attention-grad-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-attention-grad-kernels -split-input-file 2>/dev/null | FileCheck %s --check-prefix=COUNT

// A gated fp32 op with d_qk = 96 != d_v = 64 (D_qk + D_v > 128: the
// resident fragments are re-read from shared memory every step). Six
// device buffers (bf16 q, k, v, dO; fp32 lse log2(e), D), four results
// allocated like the op's result types, then three launches: the prep
// kernel over (tiles, heads, batch), dK dV and dQ over (heads x batch,
// tiles), 128 threads each. Shared memory: dQ three tile pairs (the
// resident one and two stages) of 64 x 104 + 64 x 72 bf16 = 67584 bytes;
// dK dV the same plus two stages of 64 lse and 64 D (1024 bytes).

// CHECK-LABEL: func.func @gated(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x2x96xf32>, %[[K:[^:]+]]: tensor<?x?x2x96xf32>,
// CHECK-SAME: %[[V:[^:]+]]: tensor<?x?x2x64xf32>, %[[G:[^:]+]]: tensor<?x?x2x64xf32>,
// CHECK-SAME: %[[O:[^:]+]]: tensor<?x?x2x64xf32>, %[[L:[^:]+]]: tensor<?x2x?xf32>, %[[DY:[^:]+]]: tensor<?x?x2x64xf32>
// CHECK-NOT: moe.
// CHECK-DAG: %[[QB:.+]] = bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: %[[GB:.+]] = bufferization.to_buffer %[[G]] read_only
// CHECK-DAG: %[[LB:.+]] = bufferization.to_buffer %[[L]] read_only
// CHECK-DAG: %[[DYB:.+]] = bufferization.to_buffer %[[DY]] read_only
// CHECK: %[[Q16:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xbf16>
// CHECK: %[[K16:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xbf16>
// CHECK: %[[V16:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xbf16>
// CHECK: %[[DO16:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xbf16>
// CHECK: %[[L2:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xf32>
// CHECK: %[[D:[^,]+]], %{{.*}} = gpu.alloc async {{.*}} : memref<?xf32>
// CHECK: gpu.wait [
// CHECK: %[[DQ:.+]] = memref.alloc({{.*}}) : memref<?x?x2x96xf32>
// CHECK: %[[DK:.+]] = memref.alloc({{.*}}) : memref<?x?x2x96xf32>
// CHECK: %[[DV:.+]] = memref.alloc({{.*}}) : memref<?x?x2x64xf32>
// CHECK: %[[DG:.+]] = memref.alloc({{.*}}) : memref<?x?x2x64xf32>
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_prep blocks in (%[[TILES:[^,]+]], %{{[^,]+}}, %{{[^)]+}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c0_i32 args(%[[QB]] : memref<?x?x2x96xf32>, {{.*}}, %[[GB]] : memref<?x?x2x64xf32>, {{.*}}, %[[LB]] : memref<?x2x?xf32>, %[[DYB]] : memref<?x?x2x64xf32>, %[[Q16]] : memref<?xbf16>, %[[K16]] : memref<?xbf16>, %[[V16]] : memref<?xbf16>, %[[DO16]] : memref<?xbf16>, %[[L2]] : memref<?xf32>, %[[D]] : memref<?xf32>, %[[DG]] : memref<?x?x2x64xf32>)
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_dkdv blocks in (%{{[^,]+}}, %[[TILES]], %c1{{[^)]*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c68608_i32 args(%[[Q16]] : memref<?xbf16>, %[[K16]] : memref<?xbf16>, %[[V16]] : memref<?xbf16>, %[[DO16]] : memref<?xbf16>, %[[L2]] : memref<?xf32>, %[[D]] : memref<?xf32>, %[[DK]] : memref<?x?x2x96xf32>, %[[DV]] : memref<?x?x2x64xf32>)
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_dq blocks in (%{{[^,]+}}, %[[TILES]], %c1{{[^)]*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %c67584_i32 args(%[[Q16]] : memref<?xbf16>, %[[K16]] : memref<?xbf16>, %[[V16]] : memref<?xbf16>, %[[DO16]] : memref<?xbf16>, %[[L2]] : memref<?xf32>, %[[D]] : memref<?xf32>, %[[DQ]] : memref<?x?x2x96xf32>)
// CHECK-DAG: %[[RQ:.+]] = bufferization.to_tensor %[[DQ]] restrict writable
// CHECK-DAG: %[[RK:.+]] = bufferization.to_tensor %[[DK]] restrict writable
// CHECK-DAG: %[[RV:.+]] = bufferization.to_tensor %[[DV]] restrict writable
// CHECK-DAG: %[[RG:.+]] = bufferization.to_tensor %[[DG]] restrict writable
// CHECK: return %[[RQ]], %[[RK]], %[[RV]], %[[RG]]

// The prep kernel: per row, the sigmoid of the gate, d_gate stored in the
// gate's type, dO and the copies as bf16, D by a warp sum (five xor
// shuffles), lse and D stored by lane 0.
// CHECK: gpu.module @moe_attention_grad_kernels
// CHECK: gpu.func @mla0_backward_prep({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: scf.for
// CHECK: memref.load {{.*}} : memref<?x?x2x96xf32>
// CHECK: memref.store {{.*}} : memref<?xbf16>
// CHECK: math.exp
// CHECK: memref.store {{.*}} : memref<?x?x2x64xf32>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store {{.*}} : memref<?xf32>
// CHECK: memref.store {{.*}} : memref<?xf32>
// CHECK: gpu.return

// dK dV: the resident K and V tiles and the first query tile's Q, dO, lse
// and D in one cp.async group (the streamed ones .cg), waited for before
// one barrier; no fragment is loaded before the loops. The diagonal query
// tile (masked) in a one-step loop, then the later ones: each step waits
// for its group, passes one barrier, issues the next tile's copies as a
// group and computes: S^T = K Q^T (6 k-steps: a K and four Q ldmatrix.x4
// each) and dP^T = V dO^T (4 k-steps), P by ex2.approx.ftz, then dK += dS^T
// Q and dV += P^T dO from transposed Q and dO fragments (4 x 6 + 4 x 4).
// CHECK: gpu.func @mla0_backward_dkdv({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvgpu.device_async_copy {{.*}}, 8 : memref<?xbf16> to memref<33792xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<?xbf16> to memref<33792xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 4 {bypassL1} : memref<?xf32> to memref<256xf32, #gpu.address_space<workgroup>>
// CHECK: %[[FIRST:.+]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.for
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-50: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: arith.select {{.*}} : f32
// CHECK-NOT: nvgpu.ldmatrix {{.*}}transpose = false
// CHECK-COUNT-40: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-NOT: arith.select {{.*}} : f32
// CHECK: nvgpu.ldmatrix {{.*}}transpose = true
// CHECK: scf.yield
// dK times the default scale 96^-1/2, dV as it is, as f32 pairs.
// CHECK: arith.constant 0.102062076 : f32
// CHECK: vector.store {{.*}} : memref<?x?x2x96xf32>, vector<2xf32>
// CHECK: vector.store {{.*}} : memref<?x?x2x64xf32>, vector<2xf32>
// CHECK: gpu.return

// dQ: the key tiles below the diagonal (no mask), then the diagonal one;
// per step S and dP as above (50 plain ldmatrix) and dQ += dS K (4 x 6
// transposed K fragments).
// CHECK: gpu.func @mla0_backward_dq({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: nvgpu.device_async_create_group
// CHECK: memref.load {{.*}} : memref<?xf32>
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-NOT: arith.select {{.*}} : f32
// CHECK: nvgpu.ldmatrix {{.*}}transpose = true
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK-COUNT-50: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: arith.select {{.*}} : f32
// CHECK-COUNT-24: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield
// CHECK: vector.store {{.*}} : memref<?x?x2x96xf32>, vector<2xf32>
// CHECK: gpu.return

// Tensor-core products per step: dK dV 6 x 8 + 4 x 8 + 4 x 12 + 4 x 8 =
// 160 (two steps: 320), dQ 6 x 8 + 4 x 8 + 4 x 12 = 128 (256).
// COUNT-LABEL: gpu.func @mla0_backward_dkdv(
// COUNT-COUNT-320: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// COUNT-NOT: nvvm.mma.sync
// COUNT: gpu.return
// COUNT-LABEL: gpu.func @mla0_backward_dq(
// COUNT-COUNT-256: nvvm.mma.sync
// COUNT-NOT: nvvm.mma.sync
// COUNT: gpu.return

func.func @gated(%q: tensor<?x?x2x96xf32>, %k: tensor<?x?x2x96xf32>,
                 %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x64xf32>,
                 %o: tensor<?x?x2x64xf32>, %lse: tensor<?x2x?xf32>,
                 %dy: tensor<?x?x2x64xf32>)
    -> (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
        tensor<?x?x2x64xf32>) {
  // expected-remark @below {{mla_attention_grad GPU kernels: tile 64, d_qk 96, d_v 64, prep (bf16 copies, D, lse) then dK dV per key tile (68608 bytes of shared memory) and dQ per query tile (67584), 4 warps of 16 rows, resident fragments re-read from shared memory, mma.sync m16n8k16 bf16 on ldmatrix fragments, sigmoid gate gradient}}
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %dy
      : (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
         tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x2x?xf32>,
         tensor<?x?x2x64xf32>)
      -> (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
          tensor<?x?x2x64xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>,
                              tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
}

// -----

// kimi-tiny's head widths (d_qk = 48, d_v = 32: D_qk + D_v <= 128): each
// warp loads its three K and two V fragments once, before the loops, and
// each step reads only the streamed tiles: 3 x 4 + 2 x 4 plain and
// 4 x 3 + 4 x 2 transposed ldmatrix.

// CHECK-LABEL: func.func @tiny(
// CHECK: gpu.func @mla0_backward_dkdv(
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-5: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.for
// CHECK-COUNT-20: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix {{.*}}transpose = false
// CHECK-COUNT-20: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield

func.func @tiny(%q: tensor<?x?x4x48xf32>, %k: tensor<?x?x4x48xf32>,
                %v: tensor<?x?x4x32xf32>, %g: tensor<?x?x4x32xf32>,
                %o: tensor<?x?x4x32xf32>, %lse: tensor<?x4x?xf32>,
                %dy: tensor<?x?x4x32xf32>)
    -> (tensor<?x?x4x48xf32>, tensor<?x?x4x48xf32>, tensor<?x?x4x32xf32>,
        tensor<?x?x4x32xf32>) {
  // expected-remark @below {{mla_attention_grad GPU kernels: tile 64, d_qk 48, d_v 32, prep (bf16 copies, D, lse) then dK dV per key tile (37888 bytes of shared memory) and dQ per query tile (36864), 4 warps of 16 rows, resident fragments in registers, mma.sync m16n8k16 bf16 on ldmatrix fragments, sigmoid gate gradient}}
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %dy
      : (tensor<?x?x4x48xf32>, tensor<?x?x4x48xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x?xf32>,
         tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x48xf32>, tensor<?x?x4x48xf32>, tensor<?x?x4x32xf32>,
          tensor<?x?x4x32xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x4x48xf32>, tensor<?x?x4x48xf32>,
                              tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>
}

// -----

// bf16 operands without a gate at a given scale (0.5), d_qk = 192, d_v =
// 128: the prep kernel reads bf16 (extended to fp32) and has no gate or
// d_gate; the results are bf16 pairs, dQ and dK times 0.5; the exponent
// factor is 0.5 log2(e).

// CHECK-LABEL: func.func @bf16_plain(
// CHECK: %[[DQ:.+]] = memref.alloc({{.*}}) : memref<?x?x2x192xbf16>
// CHECK: %[[DK:.+]] = memref.alloc({{.*}}) : memref<?x?x2x192xbf16>
// CHECK: %[[DV:.+]] = memref.alloc({{.*}}) : memref<?x?x2x128xbf16>
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_prep {{.*}} args({{.*}} : memref<?x?x2x192xbf16>, {{.*}} : memref<?x?x2x192xbf16>, {{.*}} : memref<?x?x2x128xbf16>, {{.*}} : memref<?x?x2x128xbf16>, {{.*}} : memref<?x2x?xf32>, {{.*}} : memref<?x?x2x128xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xf32>, {{.*}} : memref<?xf32>)
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_dkdv {{.*}} dynamic_shared_memory_size %c130048_i32 args({{.*}}, %[[DK]] : memref<?x?x2x192xbf16>, %[[DV]] : memref<?x?x2x128xbf16>)
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_dq {{.*}} dynamic_shared_memory_size %c129024_i32 args({{.*}}, %[[DQ]] : memref<?x?x2x192xbf16>)
// CHECK: gpu.func @mla0_backward_prep(
// CHECK-NOT: math.exp
// CHECK: memref.load {{.*}} : memref<?x?x2x192xbf16>
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK-NOT: math.exp
// CHECK: gpu.return
// CHECK: gpu.func @mla0_backward_dkdv(
// CHECK: arith.constant 0.72134751 : f32
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: vector.store {{.*}} : memref<?x?x2x192xbf16>, vector<2xbf16>
// CHECK: vector.store {{.*}} : memref<?x?x2x128xbf16>, vector<2xbf16>

func.func @bf16_plain(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>,
                      %v: tensor<?x?x2x128xbf16>, %o: tensor<?x?x2x128xbf16>,
                      %lse: tensor<?x2x?xf32>, %dy: tensor<?x?x2x128xbf16>)
    -> (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>) {
  // expected-remark @below {{mla_attention_grad GPU kernels: tile 64, d_qk 192, d_v 128, prep (bf16 copies, D, lse) then dK dV per key tile (130048 bytes of shared memory) and dQ per query tile (129024), 4 warps of 16 rows, resident fragments re-read from shared memory, mma.sync m16n8k16 bf16 on ldmatrix fragments, no gate}}
  %dq, %dk, %dv = moe.mla_attention_grad %q, %k, %v, %o, %lse, %dy {scale = 0.5 : f64}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>,
         tensor<?x?x2x128xbf16>, tensor<?x2x?xf32>, tensor<?x?x2x128xbf16>)
      -> (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>)
  return %dq, %dk, %dv : tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>,
                         tensor<?x?x2x128xbf16>
}

// -----

// Declined: a query/key width that is not a multiple of 16 (40). The op
// stays for -moe-tile-attention and no kernel module is made.

// CHECK-LABEL: func.func @odd_width(
// CHECK: moe.mla_attention_grad
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module

func.func @odd_width(%q: tensor<?x?x2x40xf32>, %v: tensor<?x?x2x32xf32>,
                     %o: tensor<?x?x2x32xf32>, %lse: tensor<?x2x?xf32>,
                     %dy: tensor<?x?x2x32xf32>)
    -> (tensor<?x?x2x40xf32>, tensor<?x?x2x40xf32>, tensor<?x?x2x32xf32>) {
  // expected-remark @below {{mla_attention_grad left to -moe-tile-attention: the query/key width 40 is not a static multiple of 16 up to 256}}
  %dq, %dk, %dv = moe.mla_attention_grad %q, %q, %v, %o, %lse, %dy
      : (tensor<?x?x2x40xf32>, tensor<?x?x2x40xf32>, tensor<?x?x2x32xf32>,
         tensor<?x?x2x32xf32>, tensor<?x2x?xf32>, tensor<?x?x2x32xf32>)
      -> (tensor<?x?x2x40xf32>, tensor<?x?x2x40xf32>, tensor<?x?x2x32xf32>)
  return %dq, %dk, %dv : tensor<?x?x2x40xf32>, tensor<?x?x2x40xf32>,
                         tensor<?x?x2x32xf32>
}

// -----

// Declined: a value width past 256 (272).

// CHECK-LABEL: func.func @wide_value(
// CHECK: moe.mla_attention_grad
// CHECK-NOT: gpu.module

func.func @wide_value(%q: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x272xbf16>,
                      %o: tensor<?x?x1x272xbf16>, %lse: tensor<?x1x?xf32>,
                      %dy: tensor<?x?x1x272xbf16>)
    -> (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x272xbf16>) {
  // expected-remark @below {{mla_attention_grad left to -moe-tile-attention: the value width 272 is not a static multiple of 16 up to 256}}
  %dq, %dk, %dv = moe.mla_attention_grad %q, %q, %v, %o, %lse, %dy
      : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x272xbf16>,
         tensor<?x?x1x272xbf16>, tensor<?x1x?xf32>, tensor<?x?x1x272xbf16>)
      -> (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x272xbf16>)
  return %dq, %dk, %dv : tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>,
                         tensor<?x?x1x272xbf16>
}

// -----

// Declined: f16 operands (the kernels read f32 or bf16 only). One op of
// the function is taken, the other left: only the taken one's launches.

// CHECK-LABEL: func.func @f16_and_f32(
// CHECK: moe.mla_attention_grad {{.*}} : (tensor<?x?x2x64xf16>
// CHECK: gpu.launch_func @moe_attention_grad_kernels::@mla0_backward_prep
// CHECK-NOT: moe.mla_attention_grad
// CHECK: gpu.module @moe_attention_grad_kernels
// CHECK-NOT: @mla1_

func.func @f16_and_f32(%q: tensor<?x?x2x64xf16>, %v: tensor<?x?x2x32xf16>,
                       %o: tensor<?x?x2x32xf16>, %lse: tensor<?x2x?xf32>,
                       %dy: tensor<?x?x2x32xf16>, %q32: tensor<?x?x2x64xf32>,
                       %v32: tensor<?x?x2x32xf32>, %o32: tensor<?x?x2x32xf32>,
                       %dy32: tensor<?x?x2x32xf32>)
    -> (tensor<?x?x2x64xf16>, tensor<?x?x2x64xf32>) {
  // expected-remark @below {{mla_attention_grad left to -moe-tile-attention: an operand is neither f32 nor bf16}}
  %dq, %dk, %dv = moe.mla_attention_grad %q, %q, %v, %o, %lse, %dy
      : (tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>, tensor<?x?x2x32xf16>,
         tensor<?x?x2x32xf16>, tensor<?x2x?xf32>, tensor<?x?x2x32xf16>)
      -> (tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>, tensor<?x?x2x32xf16>)
  // expected-remark @below {{mla_attention_grad GPU kernels: tile 64, d_qk 64, d_v 32}}
  %dq32, %dk32, %dv32 = moe.mla_attention_grad %q32, %q32, %v32, %o32, %lse, %dy32
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>,
         tensor<?x?x2x32xf32>, tensor<?x2x?xf32>, tensor<?x?x2x32xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>)
  return %dq, %dq32 : tensor<?x?x2x64xf16>, tensor<?x?x2x64xf32>
}
