// math ops through both routes of moe-lower-to-cpu: exp/log/tanh become LLVM
// intrinsics (libm calls after code generation) and erf becomes an explicit
// libm call (math-to-libm). Each is checked against an identity that uses
// other ops: tanh(x) = (e^2x - 1) / (e^2x + 1), log(exp(x)) = x and
// erf(x) = -erf(-x), to 1e-5 relative.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=64 --seed=31 --low=-3 --high=3
// RUN: moe-run %s --entry=direct -i %t/x.npy -o %t/direct
// RUN: moe-run %s --entry=identities -i %t/x.npy -o %t/identities
// RUN: moe-npy compare %t/direct/result0.npy %t/identities/result0.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/direct/result1.npy %t/x.npy --rtol=1e-5 | FileCheck %s
// RUN: moe-npy compare %t/direct/result2.npy %t/identities/result1.npy --rtol=0 | FileCheck %s
// RUN: moe-npy stats %t/direct/result2.npy | FileCheck %s --check-prefix=ERF
// CHECK: max relative error
// ERF: min: -0.99
// ERF: max: 0.99
// ERF: non-finite: 0

#id = affine_map<(i) -> (i)>

func.func @direct(%x: tensor<?xf32>)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r:3 = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                         iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e, %e, %e : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32, %o2: f32):
    %t = math.tanh %in : f32
    %ex = math.exp %in : f32
    %l = math.log %ex : f32
    %erf = math.erf %in : f32
    linalg.yield %t, %l, %erf : f32, f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return %r#0, %r#1, %r#2 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

func.func @identities(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e, %e : tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    %two = arith.addf %in, %in : f32
    %e2 = math.exp %two : f32
    %num = arith.subf %e2, %one : f32
    %den = arith.addf %e2, %one : f32
    %t = arith.divf %num, %den : f32
    %neg = arith.negf %in : f32
    %erfneg = math.erf %neg : f32
    %erf = arith.negf %erfneg : f32
    linalg.yield %t, %erf : f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  return %r#0, %r#1 : tensor<?xf32>, tensor<?xf32>
}
