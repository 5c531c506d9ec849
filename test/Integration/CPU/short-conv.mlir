// moe.short_conv through convert-moe-to-linalg and moe-run, against the
// fp64 loops of moe-reference (c_t = sum_i w[ch, i] x[t - W + 1 + i], zero
// before the sequence, ALGORITHMS.md section 1.2). Bound 1e-6 relative to
// max|y|.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,9,16 --seed=41 --low=-2 --high=2
// RUN: moe-npy random %t/w4.npy --shape=16,4 --seed=42
// RUN: moe-npy random %t/w3.npy --shape=16,3 --seed=43

// Window 4 with SiLU, as in the KDA layer.
// RUN: moe-run %s --entry=conv_silu -i %t/x.npy -i %t/w4.npy -o %t/silu
// RUN: moe-reference short_conv %t/x.npy %t/w4.npy --silu -o %t/silu_ref.npy
// RUN: moe-npy print %t/silu/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/silu/result0.npy %t/silu_ref.npy --rtol=1e-6 | FileCheck %s

// A window known only at run time (3 here), without SiLU.
// RUN: moe-run %s --entry=conv_dynamic_window -i %t/x.npy -i %t/w3.npy -o %t/dyn
// RUN: moe-reference short_conv %t/x.npy %t/w3.npy -o %t/dyn_ref.npy
// RUN: moe-npy compare %t/dyn/result0.npy %t/dyn_ref.npy --rtol=1e-6 | FileCheck %s

// Sequences shorter than the window: every output reads padding.
// RUN: moe-npy random %t/short.npy --shape=3,2,16 --seed=44
// RUN: moe-run %s --entry=conv_silu -i %t/short.npy -i %t/w4.npy -o %t/short
// RUN: moe-reference short_conv %t/short.npy %t/w4.npy --silu -o %t/short_ref.npy
// RUN: moe-npy compare %t/short/result0.npy %t/short_ref.npy --rtol=1e-6 | FileCheck %s

// SHAPE: shape [2, 9, 16] dtype f32
// CHECK: max relative error

func.func @conv_silu(%x: tensor<?x?x16xf32>, %w: tensor<16x4xf32>) -> tensor<?x?x16xf32> {
  %y = moe.short_conv %x, %w {silu} : tensor<?x?x16xf32>, tensor<16x4xf32>
  return %y : tensor<?x?x16xf32>
}

func.func @conv_dynamic_window(%x: tensor<?x?x16xf32>, %w: tensor<16x?xf32>) -> tensor<?x?x16xf32> {
  %y = moe.short_conv %x, %w : tensor<?x?x16xf32>, tensor<16x?xf32>
  return %y : tensor<?x?x16xf32>
}
