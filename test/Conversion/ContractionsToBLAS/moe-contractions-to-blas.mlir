// RUN: moe-opt %s -split-input-file -moe-contractions-to-blas | FileCheck %s
// RUN: moe-opt %s -split-input-file -moe-contractions-to-blas="min-macs=1" | FileCheck %s --check-prefix=SMALL

#mA = affine_map<(m, n, k) -> (m, k)>
#mB = affine_map<(m, n, k) -> (k, n)>
#mC = affine_map<(m, n, k) -> (m, n)>

// A plain matmul: sizes M, N, K, outer 1, 1; strides of A (m, k, -, -),
// B (k, n, -, -), C (m, n, -, -) from each buffer's metadata.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %{{.*}}, %[[AOFF:.*]], %[[ASZ:.*]]:2, %[[AST:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[APTR:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %{{.*}}, %[[BOFF:.*]], %[[BSZ:.*]]:2, %[[BST:.*]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[BPTR:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %{{.*}}, %[[COFF:.*]], %[[CSZ:.*]]:2, %[[CST:.*]]:2 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[CPTR:.*]] = memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: call @moe_cpu_contract_f32(%[[APTR]], %[[AOFF]], %[[BPTR]], %[[BOFF]], %[[CPTR]], %[[COFF]],
// CHECK-SAME: %[[ASZ]]#0, %[[BSZ]]#1, %[[ASZ]]#1, %[[C1]], %[[C1]],
// CHECK-SAME: %[[AST]]#0, %[[AST]]#1, %[[C0]], %[[C0]],
// CHECK-SAME: %[[BST]]#0, %[[BST]]#1, %[[C0]], %[[C0]],
// CHECK-SAME: %[[CST]]#0, %[[CST]]#1, %[[C0]], %[[C0]])
// CHECK-NOT: linalg.generic
// CHECK: func.func private @moe_cpu_contract_f32(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A projection of [B, T, 256] tokens by a [256, 64] slice of a parameter
// buffer: M is t (written innermost of the two), b an outer loop with
// stride 0 in the weight; the operands in swapped order in the body.
// CHECK-LABEL: func.func @projection
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %{{.*}}, %[[AOFF:.*]], %[[ASZ:.*]]:3, %[[AST:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK: %{{.*}}, %[[BOFF:.*]], %[[BSZ:.*]]:2, %[[BST:.*]]:2 = memref.extract_strided_metadata %arg1
// CHECK: %{{.*}}, %[[COFF:.*]], %[[CSZ:.*]]:3, %[[CST:.*]]:3 = memref.extract_strided_metadata %arg2
// CHECK: call @moe_cpu_contract_f32(%{{.*}}, %[[AOFF]], %{{.*}}, %[[BOFF]], %{{.*}}, %[[COFF]],
// CHECK-SAME: %[[ASZ]]#1, %[[BSZ]]#1, %[[ASZ]]#2, %[[C1]], %[[ASZ]]#0,
// CHECK-SAME: %[[AST]]#1, %[[AST]]#2, %[[C0]], %[[AST]]#0,
// CHECK-SAME: %[[BST]]#0, %[[BST]]#1, %[[C0]], %[[C0]],
// CHECK-SAME: %[[CST]]#1, %[[CST]]#2, %[[C0]], %[[CST]]#0)
func.func @projection(%x: memref<?x?x256xf32>,
                      %w: memref<256x64xf32, strided<[64, 1], offset: 1024>>,
                      %y: memref<?x?x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                                   affine_map<(b, t, n, k) -> (k, n)>,
                                   affine_map<(b, t, n, k) -> (b, t, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x256xf32>, memref<256x64xf32, strided<[64, 1], offset: 1024>>)
      outs(%y : memref<?x?x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %v, %u : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Batched Q K^T of attention tiles: h is a batch loop (in all three), K is
// read transposed (its n stride is its row stride).
// CHECK-LABEL: func.func @batched_transposed
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %{{.*}}, %{{.*}}, %[[ASZ:.*]]:3, %[[AST:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK: %{{.*}}, %{{.*}}, %[[BSZ:.*]]:3, %[[BST:.*]]:3 = memref.extract_strided_metadata %arg1
// CHECK: %{{.*}}, %{{.*}}, %[[CSZ:.*]]:3, %[[CST:.*]]:3 = memref.extract_strided_metadata %arg2
// CHECK: call @moe_cpu_contract_f32(
// CHECK-SAME: %[[ASZ]]#1, %[[BSZ]]#1, %[[ASZ]]#2, %[[C1]], %[[ASZ]]#0,
// CHECK-SAME: %[[AST]]#1, %[[AST]]#2, %[[C0]], %[[AST]]#0,
// CHECK-SAME: %[[BST]]#2, %[[BST]]#1, %[[C0]], %[[BST]]#0,
// CHECK-SAME: %[[CST]]#1, %[[CST]]#2, %[[C0]], %[[CST]]#0)
func.func @batched_transposed(%q: memref<4x64x32xf32>, %k: memref<4x64x32xf32>,
                              %s: memref<4x64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(h, i, j, d) -> (h, i, d)>,
                                   affine_map<(h, i, j, d) -> (h, j, d)>,
                                   affine_map<(h, i, j, d) -> (h, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<4x64x32xf32>, memref<4x64x32xf32>)
      outs(%s : memref<4x64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Named contractions are linalg ops with the same body.
// CHECK-LABEL: func.func @named_matmul
// CHECK: call @moe_cpu_contract_f32
// CHECK-NOT: linalg.matmul
func.func @named_matmul(%a: memref<64x32xf32>, %b: memref<32x16xf32>, %c: memref<64x16xf32>) {
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x16xf32>)
                outs(%c : memref<64x16xf32>)
  return
}

// -----

// A matrix-vector product (no N): N is a size-1 loop with zero strides.
// CHECK-LABEL: func.func @matvec
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %{{.*}}, %{{.*}}, %[[ASZ:.*]]:2, %[[AST:.*]]:2 = memref.extract_strided_metadata %arg0
// CHECK: call @moe_cpu_contract_f32(
// CHECK-SAME: %[[ASZ]]#0, %[[C1]], %[[ASZ]]#1, %[[C1]], %[[C1]],
func.func @matvec(%a: memref<256x128xf32>, %x: memref<128xf32>, %y: memref<256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>,
                                   affine_map<(m, k) -> (k)>,
                                   affine_map<(m, k) -> (m)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %x : memref<256x128xf32>, memref<128xf32>) outs(%y : memref<256xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left alone: below min-macs (16 x 16 x 8 = 2048 < 4096 by default).
// CHECK-LABEL: func.func @small
// CHECK: linalg.generic
// CHECK-NOT: call
// SMALL-LABEL: func.func @small
// SMALL: call @moe_cpu_contract_f32
func.func @small(%a: memref<16x8xf32>, %b: memref<8x16xf32>, %c: memref<16x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x8xf32>, memref<8x16xf32>) outs(%c : memref<16x16xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left alone: f64, a body that is not C += A * B, two reductions, three
// outer loops, and tensors.
// CHECK-LABEL: func.func @not_contractions
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: call
// CHECK-NOT: func.func private @moe_cpu_contract_f32
func.func @not_contractions(%a64: memref<?x?xf64>, %b64: memref<?x?xf64>, %c64: memref<?x?xf64>,
                            %a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>,
                            %s: memref<f32>, %a5: memref<?x?x?x?x?xf32>,
                            %b5: memref<?x?x?x?x?xf32>, %c5: memref<?x?x?x?x?xf32>,
                            %ta: tensor<?x?xf32>, %tb: tensor<?x?xf32>, %tc: tensor<?x?xf32>)
    -> tensor<?x?xf32> {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a64, %b64 : memref<?x?xf64>, memref<?x?xf64>) outs(%c64 : memref<?x?xf64>) {
  ^bb0(%u: f64, %v: f64, %acc: f64):
    %p = arith.mulf %u, %v : f64
    %r = arith.addf %acc, %p : f64
    linalg.yield %r : f64
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.subf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>,
                                   affine_map<(m, k) -> (m, k)>,
                                   affine_map<(m, k) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%s : memref<f32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(o0, o1, o2, m, n, k) -> (o0, o1, o2, m, k)>,
                                   affine_map<(o0, o1, o2, m, n, k) -> (o0, o1, o2, k, n)>,
                                   affine_map<(o0, o1, o2, m, n, k) -> (o0, o1, o2, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "reduction"]}
      ins(%a5, %b5 : memref<?x?x?x?x?xf32>, memref<?x?x?x?x?xf32>)
      outs(%c5 : memref<?x?x?x?x?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  %t = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                        affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ta, %tb : tensor<?x?xf32>, tensor<?x?xf32>) outs(%tc : tensor<?x?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}
