// moe.lm_head (decomposed into the fp32 projection x W^T and cross_entropy,
// ALGORITHMS.md section 7.2) through moe-run, against moe-reference's fp64
// `linear --transpose-weight` composed with `cross_entropy`. f32: relative
// bound 1e-5.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,9,40 --seed=41 --low=-2 --high=2
// RUN: moe-npy random %t/w.npy --shape=50,40 --seed=42 --low=-0.5 --high=0.5
// RUN: moe-npy random %t/labels.npy --shape=2,9 --seed=43 --low=0 --high=49 --dtype=i32
// RUN: moe-run %s --entry=head -i %t/x.npy -i %t/w.npy -i %t/labels.npy -o %t/out
// RUN: moe-reference linear %t/x.npy %t/w.npy --transpose-weight -o %t/logits.npy
// RUN: moe-reference cross_entropy %t/logits.npy %t/labels.npy -o %t/ref.npy
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=1e-5 | FileCheck %s

// CHECK: max relative error

func.func @head(%x: tensor<?x?x40xf32>, %w: tensor<50x40xf32>,
                %labels: tensor<?x?xi32>) -> tensor<f32> {
  %loss = moe.lm_head %x, %w, %labels
      : (tensor<?x?x40xf32>, tensor<50x40xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
