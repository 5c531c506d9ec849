// moe.cross_entropy_grad (the adjoint of moe.cross_entropy's logits,
// ALGORITHMS.md section 7.2) through -moe-tile-loss and moe-run, against
// the fp64 `cross_entropy_grad` of moe-reference, itself checked against
// central differences. Logits up to +-30 (exp overflows fp32 without the
// max subtraction), labels in [-1, 299] with ignore_index = -1 and a loss
// adjoint of 0.7. Observed relative error ~2e-7; bound 1e-6.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/z.npy --shape=4,9,300 --seed=71 --low=-30 --high=30
// RUN: moe-npy random %t/labels.npy --shape=4,9 --seed=72 --dtype=i32 --low=-1 --high=299
// RUN: moe-run %s --entry=grad -i %t/z.npy -i %t/labels.npy -o %t/out
// RUN: moe-reference cross_entropy_grad %t/z.npy %t/labels.npy --ignore-index=-1 --d-loss=0.7 -o %t/ref.npy
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=1e-6 | FileCheck %s

// The reference against fp64 central differences, ignored labels included.
// RUN: moe-npy random %t/sz.npy --shape=3,5,11 --seed=73 --low=-5 --high=5
// RUN: moe-npy random %t/sl.npy --shape=3,5 --seed=75 --dtype=i32 --low=-1 --high=10
// RUN: moe-npy stats %t/sl.npy | FileCheck %s --check-prefix=LABELS
// RUN: moe-reference cross_entropy_grad %t/sz.npy %t/sl.npy --ignore-index=-1 --d-loss=0.7 -o %t/s.npy --check-fd --fd-tolerance=1e-8 | FileCheck %s --check-prefix=FD

// CHECK: max relative error
// LABELS: min: -1
// FD: fd check dlogits: 165 entries
// FD: fd check passed

func.func @grad(%z: tensor<?x?x300xf32>, %labels: tensor<?x?xi32>) -> tensor<?x?x300xf32> {
  %d = arith.constant dense<0.7> : tensor<f32>
  %dz = moe.cross_entropy_grad %z, %labels, %d {ignore_index = -1 : i64}
      : (tensor<?x?x300xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x300xf32>
  return %dz : tensor<?x?x300xf32>
}
