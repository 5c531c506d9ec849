// RUN: moe-opt %s --moe-generate-attention-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-attention-kernels="query-tile=128" -split-input-file 2>&1 | FileCheck %s --check-prefix=QT128
// RUN: moe-opt %s --moe-generate-attention-kernels="query-tile=64" -split-input-file 2>&1 | FileCheck %s --check-prefix=QT64
// RUN: moe-opt %s --moe-generate-attention-kernels="convert-once=false" -split-input-file 2>&1 | FileCheck %s --check-prefix=PERBLOCK
// RUN: not moe-opt %s --moe-generate-attention-kernels="query-tile=32" 2>&1 | FileCheck %s --check-prefix=BAD-TILE

// BAD-TILE: error: expects query-tile 64, 128 or 256, got 32

// A gated fp32 op with d_qk != d_v and an unused lse: a prep kernel writes
// K and V as bf16 (device buffers); the forward kernel is launched over
// (heads x batch, query tiles) with 256 threads (eight warps of 32 rows)
// and 98304 bytes of shared memory (two stages of K and V, 2 x (64 x 104
// + 64 x 72), and Q, 256 x 104, bf16); the output is allocated and
// returned through to_tensor, and no moe op stays. The kernel issues the
// cp.async copies of the first key tile (in whole and zero-filled forms),
// stages Q (fp32: converted by the block), waits, then walks the key tiles
// below the diagonal (no mask) and the diagonal ones (masked) in two
// loops. Each step waits for its tile (the only group in flight), passes
// one barrier, issues the next tile's copies as a group, and computes:
// per 16-key k-step two Q and four K ldmatrix.x4 (6 k-steps: 36), the
// softmax by ex2.approx.ftz, then four transposed V ldmatrix per 16 keys
// (16).

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
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward_convert blocks in ({{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size %{{.*}} args(%[[KB]] : memref<?x?x2x96xf32>, %[[KBF]] : memref<?xbf16>, %[[VB]] : memref<?x?x2x64xf32>, %[[VBF]] : memref<?xbf16>)
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x2x64xf32>
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward blocks in ({{.*}}, %c1{{.*}}) threads in (%c256{{.*}}) dynamic_shared_memory_size %c98304_i32 args(%[[QB]] : {{.*}}, %[[KBF]] : memref<?xbf16>, %[[VBF]] : memref<?xbf16>, %[[GB]] : {{.*}}, %[[OUT]] : memref<?x?x2x64xf32>)
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.module @moe_attention_kernels
// CHECK: gpu.func @mla0_forward_convert({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: vector.load {{.*}} : memref<?x?x2x96xf32>, vector<4xf32>
// CHECK: arith.truncf {{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: vector.store {{.*}} : memref<?xbf16>, vector<4xbf16>
// CHECK: gpu.return
// CHECK: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: arith.minui
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy {{.*}}, 8 {bypassL1} : memref<?xbf16> to memref<49152xbf16, #gpu.address_space<workgroup>>
// CHECK: } else {
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1} : memref<?xbf16> to memref<49152xbf16, #gpu.address_space<workgroup>>
// CHECK: vector.load {{.*}} : memref<?x?x2x96xf32>, vector<4xf32>
// CHECK: vector.store {{.*}} : memref<49152xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// CHECK: %[[FIRST:.+]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.for
// CHECK-NOT: nvgpu.
// CHECK: nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-36: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: gpu.shuffle xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-NOT: nvgpu.ldmatrix {{.*}}transpose = false
// CHECK-COUNT-16: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: arith.select {{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: scf.yield
// CHECK: math.exp
// CHECK: vector.store {{.*}} : memref<?x?x2x64xf32>, vector<2xf32>
// CHECK: gpu.return

// QT128: remark: mla_attention GPU kernel: query tile 128 (8 warps of 16 rows, Q fragments in registers), key tile 64, d_qk 96, d_v 64, mma.sync m16n8k16 bf16 on ldmatrix fragments, sigmoid gate fused, lse unused, f32 output, fp32 K and V converted to bf16 once, staged by cp.async one key tile ahead
// QT128: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}

// With 16-row warps, Q's six fragments are loaded once, before the loops,
// and each step loads only K's 24 and V's 16 (transposed) fragments.
// QT64: remark: mla_attention GPU kernel: query tile 64 (4 warps of 16 rows, Q fragments in registers)
// QT64: gpu.func @mla0_forward({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// QT64: nvgpu.device_async_wait
// QT64-NEXT: gpu.barrier
// QT64-COUNT-6: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// QT64-NOT: nvgpu.ldmatrix
// QT64: scf.for
// QT64-COUNT-24: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// QT64-NOT: nvgpu.ldmatrix {{.*}}transpose = false
// QT64-COUNT-16: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// QT64-NOT: nvgpu.ldmatrix
// QT64: scf.yield

// Without convert-once every block converts the fp32 K and V tiles it
// reads: no device buffer and no prep kernel.
// PERBLOCK: remark: {{.*}}lse unused, f32 output, K and V converted per block
// PERBLOCK-NOT: gpu.alloc
// PERBLOCK: gpu.launch_func @moe_attention_kernels::@mla0_forward blocks
// PERBLOCK-NOT: _convert

func.func @gated(%q: tensor<?x?x2x96xf32>, %k: tensor<?x?x2x96xf32>,
                 %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x64xf32>)
    -> tensor<?x?x2x64xf32> {
  // expected-remark @below {{mla_attention GPU kernel: query tile 256 (8 warps of 32 rows), key tile 64, d_qk 96, d_v 64, mma.sync m16n8k16 bf16 on ldmatrix fragments, sigmoid gate fused, lse unused, f32 output, fp32 K and V converted to bf16 once, staged by cp.async one key tile ahead}}
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
         tensor<?x?x2x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x64xf32>
}

// -----

// No gate, and the lse is used: the kernel also writes lse [B, H, T] (a
// second allocation and result), and reads no gate; lse = scale m + ln(l)
// with m the raw row max.

// CHECK-LABEL: func.func @lse(
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x4x32xf32>
// CHECK: %[[LSE:.+]] = memref.alloc({{.*}}) : memref<?x4x?xf32>
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward {{.*}} args({{.*}} : memref<?x?x4x64xf32>, {{.*}} : memref<?xbf16>, {{.*}} : memref<?xbf16>, %[[OUT]] : memref<?x?x4x32xf32>, %[[LSE]] : memref<?x4x?xf32>)
// CHECK-DAG: %[[O:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-DAG: %[[L:.+]] = bufferization.to_tensor %[[LSE]] restrict writable
// CHECK: return %[[O]], %[[L]]
// CHECK: gpu.func @mla0_forward(
// CHECK-NOT: math.exp {{.*}}: f32
// CHECK: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.*}}, %[[HALF]] : f32
// CHECK: %[[LOG:.+]] = math.log
// CHECK: arith.addf %[[SCALED]], %[[LOG]] : f32
// CHECK: memref.store {{.*}} : memref<?x4x?xf32>

func.func @lse(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
               %v: tensor<?x?x4x32xf32>)
    -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>) {
  // expected-remark @below {{mla_attention GPU kernel: query tile 256 (8 warps of 32 rows), key tile 64, d_qk 64, d_v 32, mma.sync m16n8k16 bf16 on ldmatrix fragments, no gate, lse written, f32 output, fp32 K and V converted to bf16 once, staged by cp.async one key tile ahead}}
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.5 : f64}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
}

// -----

// bf16 q, k, v and gate: read in place (no prep kernel, no device buffer;
// Q, K and V by cp.async straight from the operands); the output is bf16.

// CHECK-LABEL: func.func @bf16(
// CHECK-NOT: gpu.alloc
// CHECK-NOT: _convert
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x2x128xbf16>
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward {{.*}} args({{.*}} : memref<?x?x2x192xbf16>, {{.*}} : memref<?x?x2x192xbf16>, {{.*}} : memref<?x?x2x128xbf16>, {{.*}} : memref<?x?x2x128xbf16>, %[[OUT]] : memref<?x?x2x128xbf16>)
// CHECK: gpu.func @mla0_forward(
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x?x2x192xbf16> to memref
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xbf16> to memref
// CHECK-NOT: vector.load {{.*}}memref<?x?x2x192xbf16>
// CHECK: vector.load {{.*}} : memref<?x?x2x128xbf16>, vector<2xbf16>
// CHECK: arith.extf {{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: vector.store {{.*}} : memref<?x?x2x128xbf16>, vector<2xbf16>

func.func @bf16(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>,
                %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2x128xbf16>)
    -> tensor<?x?x2x128xbf16> {
  // expected-remark @below {{mla_attention GPU kernel: query tile 256 (8 warps of 32 rows), key tile 64, d_qk 192, d_v 128, mma.sync m16n8k16 bf16 on ldmatrix fragments, sigmoid gate fused, lse unused, bf16 output, bf16 K and V read in place, staged by cp.async one key tile ahead}}
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x128xbf16>,
         tensor<?x?x2x128xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// Widths of 256: 256 query rows would need 270336 bytes of shared memory
// (two stages of 64 x 264 x 2 and Q, 256 x 264, bf16), more than the 227
// KiB a block can have, so the tile is halved: 128 rows, whose Q (in
// registers) overlaps the second stage, 135168 bytes.

// CHECK-LABEL: func.func @wide(
// CHECK: gpu.launch_func @moe_attention_kernels::@mla0_forward {{.*}} threads in (%c256{{.*}}) dynamic_shared_memory_size %c135168_i32

func.func @wide(%q: tensor<?x?x1x256xbf16>, %v: tensor<?x?x1x256xbf16>)
    -> tensor<?x?x1x256xbf16> {
  // expected-remark @below {{mla_attention GPU kernel: query tile 128 (256 would exceed the shared memory) (8 warps of 16 rows, Q fragments in registers), key tile 64, d_qk 256, d_v 256}}
  %o, %lse = moe.mla_attention %q, %q, %v
      : (tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>)
      -> (tensor<?x?x1x256xbf16>, tensor<?x1x?xf32>)
  return %o : tensor<?x?x1x256xbf16>
}

// -----

// Ops the generator does not handle stay, with a remark, for
// -moe-tile-attention: a query/key width that is not a multiple of 16, and
// f16 operands. Nothing is generated.

// CHECK-LABEL: func.func @left(
// CHECK: moe.mla_attention
// CHECK: moe.mla_attention
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module

func.func @left(%q: tensor<1x8x1x40xf32>, %k: tensor<1x8x1x40xf32>,
                %v: tensor<1x8x1x16xf32>, %qh: tensor<1x8x1x64xf16>,
                %vh: tensor<1x8x1x64xf16>)
    -> (tensor<1x8x1x16xf32>, tensor<1x8x1x64xf16>) {
  // expected-remark @below {{mla_attention left to -moe-tile-attention: the query/key width 40 is not a static multiple of 16 up to 256}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<1x8x1x40xf32>, tensor<1x8x1x40xf32>, tensor<1x8x1x16xf32>)
      -> (tensor<1x8x1x16xf32>, tensor<1x1x8xf32>)
  // expected-remark @below {{mla_attention left to -moe-tile-attention: an operand is neither f32 nor bf16}}
  %oh, %lseh = moe.mla_attention %qh, %qh, %vh
      : (tensor<1x8x1x64xf16>, tensor<1x8x1x64xf16>, tensor<1x8x1x64xf16>)
      -> (tensor<1x8x1x64xf16>, tensor<1x1x8xf32>)
  return %o, %oh : tensor<1x8x1x16xf32>, tensor<1x8x1x64xf16>
}
