// moe.rms_norm through convert-moe-to-linalg and moe-run, against the fp64
// loops of moe-reference (x * (mean x^2 + eps)^-1/2 * w, ALGORITHMS.md
// section 7.2). f32: bound 1e-6 relative to max|y|. bf16 in and out, fp32
// math inside: bound 1e-2, the precision of bf16 (2^-8) with some margin;
// the bf16 result is not as close as f32, which the `not` line shows.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=3,5,32 --seed=21 --low=-4 --high=4
// RUN: moe-npy random %t/w.npy --shape=32 --seed=22 --low=0.5 --high=1.5
// RUN: moe-run %s --entry=rms_norm -i %t/x.npy -i %t/w.npy -o %t/out
// RUN: moe-reference rms_norm %t/x.npy %t/w.npy -o %t/ref.npy
// RUN: moe-npy print %t/out/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=1e-6 | FileCheck %s

// bf16 operands.
// RUN: moe-run %s --entry=rms_norm_bf16 -i %t/x.npy -i %t/w.npy -o %t/bf16
// RUN: moe-npy compare %t/bf16/result0.npy %t/ref.npy --rtol=1e-2 | FileCheck %s
// RUN: not moe-npy compare %t/bf16/result0.npy %t/ref.npy --rtol=1e-5

// A dynamic width and epsilon 1e-2 (large enough to matter for x of
// about 0.1): the mean divides by the run-time width.
// RUN: moe-npy random %t/xs.npy --shape=4,24 --seed=23 --low=-0.2 --high=0.2
// RUN: moe-npy random %t/ws.npy --shape=24 --seed=24
// RUN: moe-run %s --entry=rms_norm_dynamic -i %t/xs.npy -i %t/ws.npy -o %t/dyn
// RUN: moe-reference rms_norm %t/xs.npy %t/ws.npy --eps=1e-2 -o %t/dyn_ref.npy
// RUN: moe-npy compare %t/dyn/result0.npy %t/dyn_ref.npy --rtol=1e-6 | FileCheck %s

// SHAPE: shape [3, 5, 32] dtype f32
// CHECK: max relative error

func.func @rms_norm(%x: tensor<?x?x32xf32>, %w: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %y = moe.rms_norm %x, %w : tensor<?x?x32xf32>, tensor<32xf32>
  return %y : tensor<?x?x32xf32>
}

func.func @rms_norm_bf16(%x: tensor<?x?x32xbf16>, %w: tensor<32xbf16>) -> tensor<?x?x32xbf16> {
  %y = moe.rms_norm %x, %w : tensor<?x?x32xbf16>, tensor<32xbf16>
  return %y : tensor<?x?x32xbf16>
}

func.func @rms_norm_dynamic(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32> {
  %y = moe.rms_norm %x, %w {epsilon = 1.0e-02 : f64} : tensor<?x?xf32>, tensor<?xf32>
  return %y : tensor<?x?xf32>
}
