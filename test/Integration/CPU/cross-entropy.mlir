// moe.cross_entropy through convert-moe-to-linalg and moe-run, against the
// fp64 loss of moe-reference: sum over valid labels of LSE(z) - z[label],
// divided by their count (ALGORITHMS.md section 7.2). Labels are drawn from
// [-1, 49] with ignore_index = -1; the LABELS line shows that this seed
// draws at least one ignored label. Logits reach +-100, where exp overflows
// fp32 without the max subtraction. The bound 1e-5 is relative to the loss
// (a sum of 128 fp32 terms).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/logits.npy --shape=8,16,50 --seed=51 --low=-100 --high=100
// RUN: moe-npy random %t/labels.npy --shape=8,16 --seed=52 --dtype=i32 --low=-1 --high=49
// RUN: moe-npy stats %t/labels.npy | FileCheck %s --check-prefix=LABELS
// RUN: moe-run %s --entry=loss -i %t/logits.npy -i %t/labels.npy -o %t/out
// RUN: moe-reference cross_entropy %t/logits.npy %t/labels.npy --ignore-index=-1 -o %t/ref.npy
// RUN: moe-npy print %t/out/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=1e-5 | FileCheck %s

// Moderate logits over a wider vocabulary, i64 labels and the default
// ignore index (-100, never drawn here: every position counts).
// RUN: moe-npy random %t/logits2.npy --shape=4,7,300 --seed=53 --low=-5 --high=5
// RUN: moe-npy random %t/labels2.npy --shape=4,7 --seed=54 --dtype=i64 --low=0 --high=299
// RUN: moe-run %s --entry=loss_default -i %t/logits2.npy -i %t/labels2.npy -o %t/out2
// RUN: moe-reference cross_entropy %t/logits2.npy %t/labels2.npy -o %t/ref2.npy
// RUN: moe-npy compare %t/out2/result0.npy %t/ref2.npy --rtol=1e-5 | FileCheck %s

// With every label ignored the mean is 0 / 0: NaN, as in PyTorch.
// RUN: moe-npy random %t/none.npy --shape=8,16 --seed=55 --dtype=i32 --low=-1 --high=-1
// RUN: moe-run %s --entry=loss -i %t/logits.npy -i %t/none.npy -o %t/none
// RUN: moe-npy stats %t/none/result0.npy | FileCheck %s --check-prefix=NAN

// LABELS: min: -1
// SHAPE: shape [] dtype f32
// CHECK: max relative error
// NAN: non-finite: 1 (nan 1, +inf 0, -inf 0)

func.func @loss(%logits: tensor<?x?x50xf32>, %labels: tensor<?x?xi32>) -> tensor<f32> {
  %l = moe.cross_entropy %logits, %labels {ignore_index = -1 : i64}
      : (tensor<?x?x50xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func @loss_default(%logits: tensor<?x?x?xf32>, %labels: tensor<?x?xi64>) -> tensor<f32> {
  %l = moe.cross_entropy %logits, %labels
      : (tensor<?x?x?xf32>, tensor<?x?xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
