// fp32 contractions that -moe-contractions-to-blas (in moe-lower-to-cpu)
// turns into calls of the CPU runtime, in the layouts the runtime tells
// apart: a projection of [B, T, K] tokens (the batch loop folded into M),
// batched Q K^T (B transposed), an output written transposed (column-major
// C slices), a strided slice with no unit stride (the runtime's loop nest),
// a matrix-vector product, and the Gram matrix of the first 20 positions
// of X over batch and positions (two reductions, which do not fold into one
// since the slice skips positions). The reference, @reference, computes each
// with generics that widen to f64 and accumulate there, which stay loops;
// the bound is 1e-5 relative to the largest magnitude (moe-npy compare).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=3,37,64 --seed=11
// RUN: moe-npy random %t/w.npy --shape=64,48 --seed=12
// RUN: moe-npy random %t/q.npy --shape=4,29,32 --seed=13
// RUN: moe-npy random %t/k.npy --shape=4,29,32 --seed=14
// RUN: moe-run %s --entry=contractions -i %t/x.npy -i %t/w.npy -i %t/q.npy -i %t/k.npy -o %t/out
// RUN: moe-run %s --entry=reference -i %t/x.npy -i %t/w.npy -i %t/q.npy -i %t/k.npy -o %t/ref
// RUN: moe-npy compare %t/out/result0.npy %t/ref/result0.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result1.npy %t/ref/result1.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result2.npy %t/ref/result2.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result3.npy %t/ref/result3.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result4.npy %t/ref/result4.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result5.npy %t/ref/result5.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy print %t/out/result1.npy | FileCheck %s --check-prefix=SHAPE

// The calls are there (and no contraction generic is left); the functions
// are kept whole (outline-kinds=false; the default would move each contraction
// into a function of its kind, whose body calls BLAS the same way).
// RUN: moe-opt %s --moe-lower-to-cpu="emit-c-interface=false outline-kinds=false" -mlir-print-ir-before=expand-strided-metadata -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CALLS

// CHECK: max relative error
// SHAPE: shape [4, 29, 29] dtype f32
// CALLS-LABEL: func.func @contractions
// CALLS-COUNT-6: call @moe_cpu_contract_f32
// CALLS-NOT: call @moe_cpu_contract_f32
// CALLS-LABEL: func.func @reference
// CALLS-NOT: call @moe_cpu_contract_f32

#bt_k = affine_map<(b, t, n, k) -> (b, t, k)>
#kn = affine_map<(b, t, n, k) -> (k, n)>
#bt_n = affine_map<(b, t, n, k) -> (b, t, n)>
#bn_t = affine_map<(b, t, n, k) -> (b, n, t)>
#hi_d = affine_map<(h, i, j, d) -> (h, i, d)>
#hj_d = affine_map<(h, i, j, d) -> (h, j, d)>
#hi_j = affine_map<(h, i, j, d) -> (h, i, j)>
#mk = affine_map<(m, n, k) -> (m, k)>
#kn2 = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#vmk = affine_map<(m, k) -> (m, k)>
#vk = affine_map<(m, k) -> (k)>
#vm = affine_map<(m, k) -> (m)>
#id2 = affine_map<(i, j) -> (i, j)>
#g_a = affine_map<(i, j, b, t) -> (b, t, i)>
#g_b = affine_map<(i, j, b, t) -> (b, t, j)>
#g_c = affine_map<(i, j, b, t) -> (i, j)>
#id3 = affine_map<(i, j, k) -> (i, j, k)>
#id1 = affine_map<(i) -> (i)>

func.func @contractions(%x: tensor<?x?x64xf32>, %w: tensor<64x48xf32>,
                        %q: tensor<4x?x32xf32>, %k: tensor<4x?x32xf32>)
    -> (tensor<?x?x48xf32>, tensor<4x?x?xf32>, tensor<?x48x?xf32>,
        tensor<32x24xf32>, tensor<?xf32>, tensor<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %s = tensor.dim %q, %c1 : tensor<4x?x32xf32>

  // Projection.
  %e0 = tensor.empty(%b, %t) : tensor<?x?x48xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<?x?x48xf32>) -> tensor<?x?x48xf32>
  %r0 = linalg.generic {indexing_maps = [#bt_k, #kn, #bt_n],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x64xf32>, tensor<64x48xf32>) outs(%z0 : tensor<?x?x48xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<?x?x48xf32>

  // Batched Q K^T.
  %e1 = tensor.empty(%s, %s) : tensor<4x?x?xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
  %r1 = linalg.generic {indexing_maps = [#hi_d, #hj_d, #hi_j],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x?x32xf32>, tensor<4x?x32xf32>) outs(%z1 : tensor<4x?x?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4x?x?xf32>

  // The projection written transposed, [B, N, T].
  %e2 = tensor.empty(%b, %t) : tensor<?x48x?xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x48x?xf32>) -> tensor<?x48x?xf32>
  %r2 = linalg.generic {indexing_maps = [#bt_k, #kn, #bn_t],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x64xf32>, tensor<64x48xf32>) outs(%z2 : tensor<?x48x?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %v, %u : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<?x48x?xf32>

  // W[0:64:2, :] . W[0:48, 0:48:2]: the second operand's strides are
  // [48, 2], neither a unit one (the runtime's loop nest).
  %a3 = tensor.extract_slice %w[0, 0] [32, 48] [2, 1] : tensor<64x48xf32> to tensor<32x48xf32>
  %b3 = tensor.extract_slice %w[0, 0] [48, 24] [1, 2] : tensor<64x48xf32> to tensor<48x24xf32>
  %e3 = tensor.empty() : tensor<32x24xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<32x24xf32>) -> tensor<32x24xf32>
  %r3 = linalg.generic {indexing_maps = [#mk, #kn2, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a3, %b3 : tensor<32x48xf32>, tensor<48x24xf32>) outs(%z3 : tensor<32x24xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<32x24xf32>

  // A matrix-vector product, X[0] . X[1, 0, :].
  %x4 = tensor.extract_slice %x[0, 0, 0] [1, %t, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x64xf32>
  %v4 = tensor.extract_slice %x[1, 0, 0] [1, 1, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<64xf32>
  %e4 = tensor.empty(%t) : tensor<?xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<?xf32>) -> tensor<?xf32>
  %r4 = linalg.generic {indexing_maps = [#vmk, #vk, #vm],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x4, %v4 : tensor<?x64xf32>, tensor<64xf32>) outs(%z4 : tensor<?xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  // Gram matrix of X[:, 0:20, :] over (b, t).
  %x5 = tensor.extract_slice %x[0, 0, 0] [%b, 20, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x20x64xf32>
  %e5 = tensor.empty() : tensor<64x64xf32>
  %z5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r5 = linalg.generic {indexing_maps = [#g_a, #g_b, #g_c],
                        iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x5, %x5 : tensor<?x20x64xf32>, tensor<?x20x64xf32>) outs(%z5 : tensor<64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<64x64xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5
      : tensor<?x?x48xf32>, tensor<4x?x?xf32>, tensor<?x48x?xf32>,
        tensor<32x24xf32>, tensor<?xf32>, tensor<64x64xf32>
}

// Each product accumulated in f64 by generics that are not `C += A * B` in
// f32, then rounded once.
func.func @reference(%x: tensor<?x?x64xf32>, %w: tensor<64x48xf32>,
                     %q: tensor<4x?x32xf32>, %k: tensor<4x?x32xf32>)
    -> (tensor<?x?x48xf32>, tensor<4x?x?xf32>, tensor<?x48x?xf32>,
        tensor<32x24xf32>, tensor<?xf32>, tensor<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %s = tensor.dim %q, %c1 : tensor<4x?x32xf32>
  %d0 = tensor.empty(%b, %t) : tensor<?x?x48xf64>
  %y0 = linalg.fill ins(%zero : f64) outs(%d0 : tensor<?x?x48xf64>) -> tensor<?x?x48xf64>
  %g0 = linalg.generic {indexing_maps = [#bt_k, #kn, #bt_n],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x64xf32>, tensor<64x48xf32>) outs(%y0 : tensor<?x?x48xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<?x?x48xf64>
  %o0 = tensor.empty(%b, %t) : tensor<?x?x48xf32>
  %f0 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g0 : tensor<?x?x48xf64>) outs(%o0 : tensor<?x?x48xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<?x?x48xf32>

  %d1 = tensor.empty(%s, %s) : tensor<4x?x?xf64>
  %y1 = linalg.fill ins(%zero : f64) outs(%d1 : tensor<4x?x?xf64>) -> tensor<4x?x?xf64>
  %g1 = linalg.generic {indexing_maps = [#hi_d, #hj_d, #hi_j],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x?x32xf32>, tensor<4x?x32xf32>) outs(%y1 : tensor<4x?x?xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<4x?x?xf64>
  %o1 = tensor.empty(%s, %s) : tensor<4x?x?xf32>
  %f1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g1 : tensor<4x?x?xf64>) outs(%o1 : tensor<4x?x?xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<4x?x?xf32>

  %d2 = tensor.empty(%b, %t) : tensor<?x48x?xf64>
  %y2 = linalg.fill ins(%zero : f64) outs(%d2 : tensor<?x48x?xf64>) -> tensor<?x48x?xf64>
  %g2 = linalg.generic {indexing_maps = [#bt_k, #kn, #bn_t],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x64xf32>, tensor<64x48xf32>) outs(%y2 : tensor<?x48x?xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<?x48x?xf64>
  %o2 = tensor.empty(%b, %t) : tensor<?x48x?xf32>
  %f2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g2 : tensor<?x48x?xf64>) outs(%o2 : tensor<?x48x?xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<?x48x?xf32>

  %a3 = tensor.extract_slice %w[0, 0] [32, 48] [2, 1] : tensor<64x48xf32> to tensor<32x48xf32>
  %b3 = tensor.extract_slice %w[0, 0] [48, 24] [1, 2] : tensor<64x48xf32> to tensor<48x24xf32>
  %d3 = tensor.empty() : tensor<32x24xf64>
  %y3 = linalg.fill ins(%zero : f64) outs(%d3 : tensor<32x24xf64>) -> tensor<32x24xf64>
  %g3 = linalg.generic {indexing_maps = [#mk, #kn2, #mn],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a3, %b3 : tensor<32x48xf32>, tensor<48x24xf32>) outs(%y3 : tensor<32x24xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<32x24xf64>
  %o3 = tensor.empty() : tensor<32x24xf32>
  %f3 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%g3 : tensor<32x24xf64>) outs(%o3 : tensor<32x24xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<32x24xf32>

  %x4 = tensor.extract_slice %x[0, 0, 0] [1, %t, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x64xf32>
  %v4 = tensor.extract_slice %x[1, 0, 0] [1, 1, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<64xf32>
  %d4 = tensor.empty(%t) : tensor<?xf64>
  %y4 = linalg.fill ins(%zero : f64) outs(%d4 : tensor<?xf64>) -> tensor<?xf64>
  %g4 = linalg.generic {indexing_maps = [#vmk, #vk, #vm],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x4, %v4 : tensor<?x64xf32>, tensor<64xf32>) outs(%y4 : tensor<?xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<?xf64>
  %o4 = tensor.empty(%t) : tensor<?xf32>
  %f4 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%g4 : tensor<?xf64>) outs(%o4 : tensor<?xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %x5 = tensor.extract_slice %x[0, 0, 0] [%b, 20, 64] [1, 1, 1] : tensor<?x?x64xf32> to tensor<?x20x64xf32>
  %d5 = tensor.empty() : tensor<64x64xf64>
  %y5 = linalg.fill ins(%zero : f64) outs(%d5 : tensor<64x64xf64>) -> tensor<64x64xf64>
  %g5 = linalg.generic {indexing_maps = [#g_a, #g_b, #g_c],
                        iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x5, %x5 : tensor<?x20x64xf32>, tensor<?x20x64xf32>) outs(%y5 : tensor<64x64xf64>) {
  ^bb0(%u: f32, %v: f32, %acc: f64):
    %uw = arith.extf %u : f32 to f64
    %vw = arith.extf %v : f32 to f64
    %p = arith.mulf %uw, %vw : f64
    %a = arith.addf %acc, %p : f64
    linalg.yield %a : f64
  } -> tensor<64x64xf64>
  %o5 = tensor.empty() : tensor<64x64xf32>
  %f5 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%g5 : tensor<64x64xf64>) outs(%o5 : tensor<64x64xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = arith.truncf %in : f64 to f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %f0, %f1, %f2, %f3, %f4, %f5
      : tensor<?x?x48xf32>, tensor<4x?x?xf32>, tensor<?x48x?xf32>,
        tensor<32x24xf32>, tensor<?xf32>, tensor<64x64xf32>
}
