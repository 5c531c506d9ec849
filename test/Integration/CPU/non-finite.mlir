// Non-finite results reach the .npy file unchanged: log of a negative number
// is NaN and x / 0 is +inf. moe-npy stats counts them, and moe-npy compare
// refuses any file that holds one, even when compared with itself.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,5 --seed=41 --low=1 --high=2
// RUN: moe-run %s --entry=bad -i %t/x.npy -o %t/out
// RUN: moe-npy stats %t/out/result0.npy | FileCheck %s --check-prefix=NAN
// RUN: moe-npy stats %t/out/result1.npy | FileCheck %s --check-prefix=INF
// RUN: not moe-npy compare %t/out/result0.npy %t/out/result0.npy 2>&1 | FileCheck %s --check-prefix=CMP
// NAN: count: 10
// NAN-NEXT: min: none
// NAN-NEXT: max: none
// NAN-NEXT: non-finite: 10 (nan 10, +inf 0, -inf 0)
// INF: non-finite: 10 (nan 0, +inf 10, -inf 0)
// CMP: moe-npy: {{.*}}result0.npy has 10 non-finite values (nan 10, +inf 0, -inf 0)

#id = affine_map<(i, j) -> (i, j)>

func.func @bad(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x5xf32>) outs(%e, %e : tensor<2x5xf32>, tensor<2x5xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %neg = arith.negf %in : f32
    %l = math.log %neg : f32
    %d = arith.divf %in, %zero : f32
    linalg.yield %l, %d : f32, f32
  } -> (tensor<2x5xf32>, tensor<2x5xf32>)
  return %r#0, %r#1 : tensor<2x5xf32>, tensor<2x5xf32>
}
