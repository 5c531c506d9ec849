// Known math: A·I = A exactly, with I built inside the function from
// linalg.index, and for a non-square A (rows != cols) so that a transposed
// index would change the shape or the values. The bound is 0: every output
// element is one product by 1.0 plus zeros.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/a.npy --shape=6,4 --seed=11 --low=-100 --high=100
// RUN: moe-run %s --entry=times_identity -i %t/a.npy -o %t/out
// RUN: moe-npy compare %t/out/result0.npy %t/a.npy --rtol=0 | FileCheck %s
// CHECK: max relative error 0 (max |a-b| 0, max |b| {{.*}}, 24 elements)

func.func @times_identity(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %eye = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %diag = arith.cmpi eq, %i, %j : index
    %v = arith.select %diag, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %init = tensor.empty(%m, %n) : tensor<?x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %eye : tensor<?x?xf32>, tensor<?x?xf32>)
                     outs(%acc : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
