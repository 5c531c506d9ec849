// RUN: moe-opt %s --moe-generate-attention-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-attention-kernels="query-tile=128" -split-input-file 2>&1 | FileCheck %s --check-prefix=QT128
// RUN: moe-opt %s --moe-generate-attention-kernels="query-tile=256" -split-input-file 2>&1 | FileCheck %s --check-prefix=QT256
// RUN: moe-opt %s --moe-generate-attention-kernels="convert-once=false" -split-input-file 2>&1 | FileCheck %s --check-prefix=PERBLOCK
// RUN: not moe-opt %s --moe-generate-attention-kernels="query-tile=32" 2>&1 | FileCheck %s --check-prefix=BAD-TILE

// BAD-TILE: error: expects query-tile 64, 128 or 256, got 32

// A gated op with d_qk != d_v and an unused lse: one kernel, launched over
// (query tiles, heads, batch) with 128 threads; the output is allocated and
// returned through to_tensor, and no moe op stays. The kernel issues the
// cp.async copies of the first key tile (one group), stages Q once, then
// walks the key tiles below the diagonal (no mask) and the diagonal tile
// (masked) in two loops, clamped to the padded length; each step first
// issues the next tile's copies (one group), waits for its own (numGroups
// = 1) and computes S and O on tensor cores.

// CHECK-LABEL: func.func @gated(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x2x96xf32>, %[[K:[^:]+]]: tensor<?x?x2x96xf32>,
// CHECK-SAME: %[[V:[^:]+]]: tensor<?x?x2x64xf32>, %[[G:[^:]+]]: tensor<?x?x2x64xf32>
// CHECK-NOT: moe.
// CHECK-DAG: %[[QB:.+]] = bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: %[[KB:.+]] = bufferization.to_buffer %[[K]] read_only
// CHECK-DAG: %[[VB:.+]] = bufferization.to_buffer %[[V]] read_only
// CHECK-DAG: %[[GB:.+]] = bufferization.to_buffer %[[G]] read_only
// CHECK: gpu.wait async
// CHECK: %[[KBF:[^,]+]], %{{.*}} = gpu.alloc async
// CHECK: %[[VBF:[^,]+]], %{{.*}} = gpu.alloc async
// CHECK: gpu.wait [
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward_convert blocks in ({{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %{{.*}} args(%[[KB]] : {{.*}}, %[[VB]] : {{.*}}, %[[KBF]] : memref<?xbf16>, %[[VBF]] : memref<?xbf16>)
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x2x64xf32>
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward blocks in ({{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %{{.*}} args(%[[QB]] : {{.*}}, %[[KBF]] : memref<?xbf16>, %[[VBF]] : memref<?xbf16>, %[[GB]] : {{.*}}, %[[OUT]] : memref<?x?x2x64xf32>)
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.module @moe_attention_kernels
// CHECK: gpu.func @mla0_forward_convert({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: vector.load {{.*}} : memref<?x?x2x96xf32>, vector<4xf32>
// CHECK: vector.store {{.*}} : memref<?xbf16>, vector<4xbf16>
// CHECK: gpu.return
// CHECK: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<?xbf16> to memref<22528xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<?xbf16> to memref<22528xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: %[[GROUP:.+]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: gpu.shuffle xor
// CHECK: math.exp2
// CHECK: nvvm.mma.sync
// CHECK: scf.for
// CHECK: arith.select {{.*}} : f32
// CHECK: math.exp2
// CHECK: math.exp
// CHECK: gpu.return

// QT128: remark: mla_attention GPU kernel: query tile 128 (8 warps of 16 rows), key tile 64, d_qk 96, d_v 64, mma.sync m16n8k16 bf16, sigmoid gate fused, lse unused, bf16 K and V^T converted once, staged by cp.async one key tile ahead
// QT128: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// QT256: remark: mla_attention GPU kernel: query tile 256 (8 warps of 32 rows)
// QT256: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}

// Without convert-once every block converts the fp32 K and V tiles it
// reads: no device buffer and no prep kernel.
// PERBLOCK: remark: {{.*}}lse unused, K and V converted per block
// PERBLOCK-NOT: gpu.alloc
// PERBLOCK: gpu.launch_func @moe_attention_kernels::@mla0_forward blocks
// PERBLOCK-NOT: _convert

func.func @gated(%q: tensor<?x?x2x96xf32>, %k: tensor<?x?x2x96xf32>,
                 %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x64xf32>)
    -> tensor<?x?x2x64xf32> {
  // expected-remark @below {{mla_attention GPU kernel: query tile 64 (4 warps of 16 rows), key tile 64, d_qk 96, d_v 64, mma.sync m16n8k16 bf16, sigmoid gate fused, lse unused, bf16 K and V^T converted once, staged by cp.async one key tile ahead}}
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
         tensor<?x?x2x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x64xf32>
}

// -----

// No gate, and the lse is used: the kernel also writes lse [B, H, T] (a
// second allocation and result), and reads no gate.

// CHECK-LABEL: func.func @lse(
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x4x32xf32>
// CHECK: %[[LSE:.+]] = memref.alloc({{.*}}) : memref<?x4x?xf32>
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward {{.*}} args({{.*}} : memref<?x?x4x64xf32>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, %[[OUT]] : memref<?x?x4x32xf32>, %[[LSE]] : memref<?x4x?xf32>)
// CHECK-DAG: %[[O:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-DAG: %[[L:.+]] = bufferization.to_tensor %[[LSE]] restrict writable
// CHECK: return %[[O]], %[[L]]
// CHECK: gpu.func @mla0_forward(
// CHECK-NOT: math.exp {{.*}}: f32
// CHECK: math.log
// CHECK: memref.store {{.*}} : memref<?x4x?xf32>

func.func @lse(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
               %v: tensor<?x?x4x32xf32>)
    -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>) {
  // expected-remark @below {{mla_attention GPU kernel: query tile 64 (4 warps of 16 rows), key tile 64, d_qk 64, d_v 32, mma.sync m16n8k16 bf16, no gate, lse written, bf16 K and V^T converted once, staged by cp.async one key tile ahead}}
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.5 : f64}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
}

// -----

// Ops the generator does not handle stay, with a remark, for
// -moe-tile-attention: a query/key width that is not a multiple of 16, and
// bf16 operands. Nothing is generated.

// CHECK-LABEL: func.func @left(
// CHECK: moe.mla_attention
// CHECK: moe.mla_attention
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module

func.func @left(%q: tensor<1x8x1x40xf32>, %k: tensor<1x8x1x40xf32>,
                %v: tensor<1x8x1x16xf32>, %qb: tensor<1x8x1x64xbf16>,
                %vb: tensor<1x8x1x64xbf16>)
    -> (tensor<1x8x1x16xf32>, tensor<1x8x1x64xbf16>) {
  // expected-remark @below {{mla_attention left to -moe-tile-attention: the query/key width 40 is not a static multiple of 16 up to 256}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>, tensor<1x8x1x16xf32>)
      -> (tensor<1x8x1x16xf32>, tensor<1x1x8xf32>)
  // expected-remark @below {{mla_attention left to -moe-tile-attention: an operand or the output is not f32}}
  %ob, %lseb = moe.mla_attention %qb, %qb, %vb
      : (tensor<1x8x1x64xbf16>, tensor<1x8x1x64xbf16>, tensor<1x8x1x64xbf16>)
      -> (tensor<1x8x1x64xbf16>, tensor<1x1x8xf32>)
  return %o, %ob : tensor<1x8x1x16xf32>, tensor<1x8x1x64xbf16>
}
