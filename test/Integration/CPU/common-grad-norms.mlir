// moe.l2_norm_grad and moe.rms_norm_grad through convert-moe-to-linalg and
// moe-run, against the fp64 gradients of moe-reference (ALGORITHMS.md
// sections 1.2 and 7.2), which check themselves against central finite
// differences of the norms. Every differentiable operand: x for the L2
// norm; x and the weight for RMSNorm, whose weight gradient sums over
// every token. Rows of very different scales (the norms divide them out).
// The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x4.npy --shape=2,5,3,32 --seed=141 --low=-3 --high=3
// RUN: moe-npy random %t/dy4.npy --shape=2,5,3,32 --seed=142
// RUN: moe-npy random %t/x3.npy --shape=3,7,48 --seed=143 --low=-0.05 --high=0.05
// RUN: moe-npy random %t/dy3.npy --shape=3,7,48 --seed=144 --low=-2 --high=2
// RUN: moe-npy random %t/w.npy --shape=48 --seed=145 --low=0.5 --high=1.5
// RUN: moe-npy random %t/x1.npy --shape=48 --seed=146 --low=-4 --high=4
// RUN: moe-npy random %t/dy1.npy --shape=48 --seed=147

// L2 norm, rank 4 with dynamic leading dimensions.
// RUN: moe-run %s --entry=l2 -i %t/dy4.npy -i %t/x4.npy -o %t/l2
// RUN: moe-reference l2_norm_grad %t/x4.npy %t/dy4.npy -o %t/l2_dx.npy | FileCheck %s --check-prefix=FDX
// RUN: moe-npy compare %t/l2/result0.npy %t/l2_dx.npy --rtol=2e-6 | FileCheck %s

// L2 norm of small rows, where epsilon matters: the default 1e-6 and 1e-2.
// RUN: moe-run %s --entry=l2_small -i %t/dy3.npy -i %t/x3.npy -o %t/l2s
// RUN: moe-reference l2_norm_grad %t/x3.npy %t/dy3.npy -o %t/l2s_dx.npy | FileCheck %s --check-prefix=FDX
// RUN: moe-npy compare %t/l2s/result0.npy %t/l2s_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-reference l2_norm_grad %t/x3.npy %t/dy3.npy --eps=1e-2 -o %t/l2e_dx.npy | FileCheck %s --check-prefix=FDX
// RUN: moe-npy compare %t/l2s/result1.npy %t/l2e_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: not moe-npy compare %t/l2s/result1.npy %t/l2s_dx.npy --rtol=1e-3

// RMSNorm, rank 3, small rows and the default epsilon 1e-5, then 1e-2.
// RUN: moe-run %s --entry=rms -i %t/dy3.npy -i %t/x3.npy -i %t/w.npy -o %t/rms
// RUN: moe-reference rms_norm_grad %t/x3.npy %t/w.npy %t/dy3.npy -o %t/rms_dx.npy -o %t/rms_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FDXW
// RUN: moe-npy compare %t/rms/result0.npy %t/rms_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/rms/result1.npy %t/rms_dw.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-reference rms_norm_grad %t/x3.npy %t/w.npy %t/dy3.npy --eps=1e-2 -o %t/rmse_dx.npy -o %t/rmse_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FDXW
// RUN: moe-npy compare %t/rms/result2.npy %t/rmse_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/rms/result3.npy %t/rmse_dw.npy --rtol=2e-6 | FileCheck %s

// RMSNorm of a single row (rank 1: no token dimension to reduce).
// RUN: moe-run %s --entry=rms_row -i %t/dy1.npy -i %t/x1.npy -i %t/w.npy -o %t/row
// RUN: moe-reference rms_norm_grad %t/x1.npy %t/w.npy %t/dy1.npy -o %t/row_dx.npy -o %t/row_dw.npy \
// RUN:   | FileCheck %s --check-prefix=FDXW
// RUN: moe-npy compare %t/row/result0.npy %t/row_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/row/result1.npy %t/row_dw.npy --rtol=2e-6 | FileCheck %s

// CHECK: max relative error
// FDX: fd-check x: max relative error
// FDXW: fd-check x: max relative error
// FDXW: fd-check w: max relative error

func.func @l2(%dy: tensor<?x?x3x32xf32>, %x: tensor<?x?x3x32xf32>) -> tensor<?x?x3x32xf32> {
  %dx = moe.l2_norm_grad %dy, %x : tensor<?x?x3x32xf32>
  return %dx : tensor<?x?x3x32xf32>
}

func.func @l2_small(%dy: tensor<3x7x48xf32>, %x: tensor<3x7x48xf32>)
    -> (tensor<3x7x48xf32>, tensor<3x7x48xf32>) {
  %dx = moe.l2_norm_grad %dy, %x : tensor<3x7x48xf32>
  %dxe = moe.l2_norm_grad %dy, %x {epsilon = 1.0e-2 : f64} : tensor<3x7x48xf32>
  return %dx, %dxe : tensor<3x7x48xf32>, tensor<3x7x48xf32>
}

func.func @rms(%dy: tensor<?x?x48xf32>, %x: tensor<?x?x48xf32>, %w: tensor<48xf32>)
    -> (tensor<?x?x48xf32>, tensor<48xf32>, tensor<?x?x48xf32>, tensor<48xf32>) {
  %dx, %dw = moe.rms_norm_grad %dy, %x, %w : tensor<?x?x48xf32>, tensor<48xf32>
  %dxe, %dwe = moe.rms_norm_grad %dy, %x, %w {epsilon = 1.0e-2 : f64} : tensor<?x?x48xf32>, tensor<48xf32>
  return %dx, %dw, %dxe, %dwe : tensor<?x?x48xf32>, tensor<48xf32>, tensor<?x?x48xf32>, tensor<48xf32>
}

func.func @rms_row(%dy: tensor<48xf32>, %x: tensor<48xf32>, %w: tensor<48xf32>)
    -> (tensor<48xf32>, tensor<48xf32>) {
  %dx, %dw = moe.rms_norm_grad %dy, %x, %w : tensor<48xf32>, tensor<48xf32>
  return %dx, %dw : tensor<48xf32>, tensor<48xf32>
}
