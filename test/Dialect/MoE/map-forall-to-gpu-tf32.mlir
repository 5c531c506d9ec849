// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-contractions=tf32 -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu | FileCheck %s --check-prefix=FP32
// RUN: not moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-contractions=fp16 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: -moe-map-forall-to-gpu: tile-contractions must be fp32 or tf32, got 'fp16'

// A tile program's contraction C[64, 32] += A[64, 16] * B[32, 16]^T with
// tile-contractions=tf32: the block's 8 warps take the 4 x 4 tiles of
// 16 x 8 in turn (from warp = tid / 32, step 8), each loading its four
// accumulators, then two unrolled k-steps of 8, each four A and two B
// elements rounded to tf32 (cvt.rna) and one mma.sync m16n8k8, then
// storing the accumulators; a barrier follows. B's (n, k) order is read as
// it is stored.

// CHECK-LABEL: func.func @contraction(
// CHECK:         gpu.launch
// CHECK:           %[[WARP:.+]] = arith.divui %{{.+}}, %c32
// CHECK:           scf.for %{{.+}} = %[[WARP]] to %c16{{.*}} step %c8
// CHECK-COUNT-4:     memref.load %{{.+}} : memref<64x32xf32>
// CHECK-COUNT-4:     nvvm.convert.float.to.tf32 %{{.+}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK-COUNT-2:     nvvm.convert.float.to.tf32
// CHECK:             nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:             nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK-COUNT-4:     memref.store %{{.+}} : memref<64x32xf32>
// CHECK:           }
// CHECK-NEXT:      gpu.barrier

// With the default (fp32), the same op is spread over threads.
// FP32-LABEL: func.func @contraction(
// FP32-NOT:     nvvm.mma.sync
// FP32:         gpu.terminator
func.func @contraction(%a: memref<?x64x16xf32>, %b: memref<32x16xf32>,
                       %out: memref<?x64x32xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %x = memref.subview %a[%i, 0, 0] [1, 64, 16] [1, 1, 1] : memref<?x64x16xf32> to memref<64x16xf32, strided<[16, 1], offset: ?>>
    %c = memref.subview %out[%i, 0, 0] [1, 64, 32] [1, 1, 1] : memref<?x64x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    %tile = memref.alloc() : memref<64x32xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<64x32xf32>)
    linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %b : memref<64x16xf32, strided<[16, 1], offset: ?>>, memref<32x16xf32>) outs(%tile : memref<64x32xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %prod = arith.mulf %q, %p : f32
      %sum = arith.addf %prod, %acc : f32
      linalg.yield %sum : f32
    }
    linalg.copy ins(%tile : memref<64x32xf32>) outs(%c : memref<64x32xf32, strided<[32, 1], offset: ?>>)
    memref.dealloc %tile : memref<64x32xf32>
  }
  return
}

// -----

// A transposed output (C stored as [n, m]) with the reduction first and a
// long reduction (K = 136: 17 k-steps, more than are unrolled) becomes an
// scf.for over k-steps carrying the four accumulators. A's 8 columns do not
// fill 16 rows of a tile, so the inputs swap roles: B's 16 columns are the
// rows of the one 16 x 8 tile, which C reads transposed.

// CHECK-LABEL: func.func @transposed_long(
// CHECK:         scf.for %{{.+}} = %{{.+}} to %c1{{.*}} step %c8
// CHECK:           memref.load %{{.+}} : memref<16x8xf32>
// CHECK:           scf.for %{{.+}} = %c0{{.*}} to %c136{{.*}} step %c8{{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (f32, f32, f32, f32)
// CHECK:             nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:             scf.yield
func.func @transposed_long(%a: memref<136x8xf32>, %b: memref<136x16xf32>,
                           %out: memref<?x16x8xf32>, %n: index) {
  scf.forall (%i) in (%n) {
    %c = memref.subview %out[%i, 0, 0] [1, 16, 8] [1, 1, 1] : memref<?x16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
    %tile = memref.alloc() : memref<16x8xf32>
    linalg.copy ins(%c : memref<16x8xf32, strided<[8, 1], offset: ?>>) outs(%tile : memref<16x8xf32>)
    linalg.generic {indexing_maps = [affine_map<(k, m, n) -> (k, m)>, affine_map<(k, m, n) -> (k, n)>, affine_map<(k, m, n) -> (n, m)>], iterator_types = ["reduction", "parallel", "parallel"]}
        ins(%a, %b : memref<136x8xf32>, memref<136x16xf32>) outs(%tile : memref<16x8xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %prod = arith.mulf %p, %q : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
    linalg.copy ins(%tile : memref<16x8xf32>) outs(%c : memref<16x8xf32, strided<[8, 1], offset: ?>>)
    memref.dealloc %tile : memref<16x8xf32>
  }
  return
}

// -----

// Not tensor-core contractions, spread over threads as with fp32: rows and
// columns that give no whole 16 x 8 tile (12 x 12), a body that is not
// out + a * b (a scaled product), a bf16 operand.

// CHECK-LABEL: func.func @declined(
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         gpu.terminator
func.func @declined(%a: memref<12x16xf32>, %s: memref<16x16xf32>,
                    %h: memref<16x16xbf16>, %n: index) {
  %two = arith.constant 2.0 : f32
  scf.forall (%i) in (%n) {
    %small = memref.alloc() : memref<12x12xf32>
    linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %a : memref<12x16xf32>, memref<12x16xf32>) outs(%small : memref<12x12xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %prod = arith.mulf %p, %q : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
    %scaled = memref.alloc() : memref<16x16xf32>
    linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %s : memref<16x16xf32>, memref<16x16xf32>) outs(%scaled : memref<16x16xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %prod = arith.mulf %p, %q : f32
      %twice = arith.mulf %prod, %two : f32
      %sum = arith.addf %acc, %twice : f32
      linalg.yield %sum : f32
    }
    %mixed = memref.alloc() : memref<16x16xf32>
    linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%s, %h : memref<16x16xf32>, memref<16x16xbf16>) outs(%mixed : memref<16x16xf32>) {
    ^bb0(%p: f32, %q: bf16, %acc: f32):
      %w = arith.extf %q : bf16 to f32
      %prod = arith.mulf %p, %w : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    }
    memref.dealloc %small : memref<12x12xf32>
    memref.dealloc %scaled : memref<16x16xf32>
    memref.dealloc %mixed : memref<16x16xf32>
  }
  return
}
