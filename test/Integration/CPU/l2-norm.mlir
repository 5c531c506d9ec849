// moe.l2_norm through convert-moe-to-linalg and moe-run, against the fp64
// loops of moe-reference (x / sqrt(sum x^2 + 1e-6), ALGORITHMS.md section
// 1.2). The bound 1e-6 is relative to max|y| (moe-npy compare): a few fp32
// roundings. Batch and sequence are dynamic.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,7,4,16 --seed=11
// RUN: moe-run %s --entry=l2_norm -i %t/x.npy -o %t/out
// RUN: moe-reference l2_norm %t/x.npy -o %t/ref.npy
// RUN: moe-npy print %t/out/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=1e-6 | FileCheck %s

// Rows whose sum of squares (about 5e-8) is far below epsilon: the epsilon
// must be added exactly as the reference does. One token only.
// RUN: moe-npy random %t/tiny.npy --shape=1,1,4,16 --seed=12 --low=-1e-4 --high=1e-4
// RUN: moe-run %s --entry=l2_norm -i %t/tiny.npy -o %t/tiny
// RUN: moe-reference l2_norm %t/tiny.npy -o %t/tiny_ref.npy
// RUN: moe-npy compare %t/tiny/result0.npy %t/tiny_ref.npy --rtol=1e-6 | FileCheck %s

// A different epsilon attribute reaches the lowering.
// RUN: moe-run %s --entry=l2_norm_eps -i %t/tiny.npy -o %t/eps
// RUN: moe-reference l2_norm %t/tiny.npy --eps=1e-9 -o %t/eps_ref.npy
// RUN: moe-npy compare %t/eps/result0.npy %t/eps_ref.npy --rtol=1e-6 | FileCheck %s
// RUN: not moe-npy compare %t/eps/result0.npy %t/tiny_ref.npy --rtol=1e-2

// SHAPE: shape [2, 7, 4, 16] dtype f32
// CHECK: max relative error

func.func @l2_norm(%x: tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32> {
  %y = moe.l2_norm %x : tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

func.func @l2_norm_eps(%x: tensor<?x?x4x16xf32>) -> tensor<?x?x4x16xf32> {
  %y = moe.l2_norm %x {epsilon = 1.0e-09 : f64} : tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}
