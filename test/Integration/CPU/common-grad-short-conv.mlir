// moe.short_conv_grad through convert-moe-to-linalg and moe-run, against
// the fp64 gradients of moe-reference (ALGORITHMS.md section 1.2), which
// check themselves against central finite differences of the convolution.
// Both operands (the input, by the transposed convolution, and the weight,
// summed over the tokens), with and without SiLU, with a window known only
// at run time, and with sequences shorter than the window.
// The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,11,24 --seed=151 --low=-2 --high=2
// RUN: moe-npy random %t/dy.npy --shape=2,11,24 --seed=152
// RUN: moe-npy random %t/w.npy --shape=24,4 --seed=153
// RUN: moe-npy random %t/xs.npy --shape=3,2,24 --seed=154 --low=-2 --high=2
// RUN: moe-npy random %t/dys.npy --shape=3,2,24 --seed=155

// With SiLU.
// RUN: moe-run %s --entry=conv_silu -i %t/dy.npy -i %t/x.npy -i %t/w.npy -o %t/silu
// RUN: moe-reference short_conv_grad %t/x.npy %t/w.npy %t/dy.npy --silu -o %t/silu_dx.npy -o %t/silu_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/silu/result0.npy %t/silu_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/silu/result1.npy %t/silu_dw.npy --rtol=2e-6 | FileCheck %s

// Without SiLU, window dynamic.
// RUN: moe-run %s --entry=conv_dynamic -i %t/dy.npy -i %t/x.npy -i %t/w.npy -o %t/plain
// RUN: moe-reference short_conv_grad %t/x.npy %t/w.npy %t/dy.npy -o %t/plain_dx.npy -o %t/plain_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/plain/result0.npy %t/plain_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/plain/result1.npy %t/plain_dw.npy --rtol=2e-6 | FileCheck %s
// RUN: not moe-npy compare %t/plain/result0.npy %t/silu_dx.npy --rtol=1e-2

// Without SiLU, window static (the fused window sums), and with T = 2 < W.
// RUN: moe-run %s --entry=conv_static -i %t/dy.npy -i %t/x.npy -i %t/w.npy -o %t/static
// RUN: moe-npy compare %t/static/result0.npy %t/plain_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/static/result1.npy %t/plain_dw.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-run %s --entry=conv_static -i %t/dys.npy -i %t/xs.npy -i %t/w.npy -o %t/static_short
// RUN: moe-reference short_conv_grad %t/xs.npy %t/w.npy %t/dys.npy -o %t/static_short_dx.npy -o %t/static_short_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/static_short/result0.npy %t/static_short_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/static_short/result1.npy %t/static_short_dw.npy --rtol=2e-6 | FileCheck %s

// T = 2 < W = 4, with SiLU.
// RUN: moe-run %s --entry=conv_silu -i %t/dys.npy -i %t/xs.npy -i %t/w.npy -o %t/short
// RUN: moe-reference short_conv_grad %t/xs.npy %t/w.npy %t/dys.npy --silu -o %t/short_dx.npy -o %t/short_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/short/result0.npy %t/short_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/short/result1.npy %t/short_dw.npy --rtol=2e-6 | FileCheck %s

// CHECK: max relative error
// FD: fd-check x: max relative error
// FD: fd-check w: max relative error

func.func @conv_silu(%dy: tensor<?x?x24xf32>, %x: tensor<?x?x24xf32>, %w: tensor<24x4xf32>)
    -> (tensor<?x?x24xf32>, tensor<24x4xf32>) {
  %dx, %dw = moe.short_conv_grad %dy, %x, %w {silu} : tensor<?x?x24xf32>, tensor<24x4xf32>
  return %dx, %dw : tensor<?x?x24xf32>, tensor<24x4xf32>
}

func.func @conv_dynamic(%dy: tensor<?x?x24xf32>, %x: tensor<?x?x24xf32>, %w: tensor<24x?xf32>)
    -> (tensor<?x?x24xf32>, tensor<24x?xf32>) {
  %dx, %dw = moe.short_conv_grad %dy, %x, %w : tensor<?x?x24xf32>, tensor<24x?xf32>
  return %dx, %dw : tensor<?x?x24xf32>, tensor<24x?xf32>
}

func.func @conv_static(%dy: tensor<?x?x24xf32>, %x: tensor<?x?x24xf32>, %w: tensor<24x4xf32>)
    -> (tensor<?x?x24xf32>, tensor<24x4xf32>) {
  %dx, %dw = moe.short_conv_grad %dy, %x, %w : tensor<?x?x24xf32>, tensor<24x4xf32>
  return %dx, %dw : tensor<?x?x24xf32>, tensor<24x4xf32>
}
