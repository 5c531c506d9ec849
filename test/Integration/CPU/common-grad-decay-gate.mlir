// moe.decay_gate_grad through convert-moe-to-linalg and moe-run, against
// the fp64 gradient of moe-reference (ALGORITHMS.md section 2.1), which
// checks itself against central finite differences of the gate. Every
// differentiable operand: raw, dt_bias and A_log (non-zero), for the
// bounded gate with and without A_log and for the softplus gate, on
// moderate raw values and on extreme ones (|raw + dt_bias| up to ~120,
// where both gates saturate and exp(raw) overflows fp32).
// The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/z.npy --shape=2,9,4,16 --seed=131 --low=-6 --high=6
// RUN: moe-npy random %t/zbig.npy --shape=2,5,4,16 --seed=132 --low=-120 --high=120
// RUN: moe-npy random %t/b.npy --shape=4,16 --seed=133
// RUN: moe-npy random %t/a.npy --shape=4 --seed=134 --low=-1 --high=2.7
// RUN: moe-npy random %t/dg.npy --shape=2,9,4,16 --seed=135
// RUN: moe-npy random %t/dgbig.npy --shape=2,5,4,16 --seed=136

// Bounded, g = -5 sigmoid(exp(A_log[h]) (z + b)).
// RUN: moe-run %s --entry=bounded -i %t/dg.npy -i %t/z.npy -i %t/b.npy -i %t/a.npy -o %t/bounded
// RUN: moe-reference decay_gate_grad %t/z.npy %t/b.npy %t/a.npy %t/dg.npy --gate=bounded --g-min=-5 \
// RUN:   -o %t/bounded_dz.npy -o %t/bounded_db.npy -o %t/bounded_da.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/bounded/result0.npy %t/bounded_dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bounded/result1.npy %t/bounded_db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bounded/result2.npy %t/bounded_da.npy --rtol=1e-6 | FileCheck %s

// Bounded without A_log, g = -3 sigmoid(z + b).
// RUN: moe-run %s --entry=bounded_no_a_log -i %t/dg.npy -i %t/z.npy -i %t/b.npy -o %t/plain
// RUN: moe-reference decay_gate_grad %t/z.npy %t/b.npy %t/dg.npy --gate=bounded --g-min=-3 \
// RUN:   -o %t/plain_dz.npy -o %t/plain_db.npy | FileCheck %s --check-prefix=FD2
// RUN: moe-npy compare %t/plain/result0.npy %t/plain_dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/plain/result1.npy %t/plain_db.npy --rtol=1e-6 | FileCheck %s

// Softplus, g = -exp(A_log[h]) softplus(z + b).
// RUN: moe-run %s --entry=softplus -i %t/dg.npy -i %t/z.npy -i %t/b.npy -i %t/a.npy -o %t/softplus
// RUN: moe-reference decay_gate_grad %t/z.npy %t/b.npy %t/a.npy %t/dg.npy --gate=softplus \
// RUN:   -o %t/softplus_dz.npy -o %t/softplus_db.npy -o %t/softplus_da.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/softplus/result0.npy %t/softplus_dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/softplus/result1.npy %t/softplus_db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/softplus/result2.npy %t/softplus_da.npy --rtol=1e-6 | FileCheck %s

// Extreme raw values, both gates.
// RUN: moe-run %s --entry=bounded -i %t/dgbig.npy -i %t/zbig.npy -i %t/b.npy -i %t/a.npy -o %t/bigb
// RUN: moe-reference decay_gate_grad %t/zbig.npy %t/b.npy %t/a.npy %t/dgbig.npy --gate=bounded --g-min=-5 \
// RUN:   -o %t/bigb_dz.npy -o %t/bigb_db.npy -o %t/bigb_da.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/bigb/result0.npy %t/bigb_dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bigb/result1.npy %t/bigb_db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bigb/result2.npy %t/bigb_da.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %s --entry=softplus -i %t/dgbig.npy -i %t/zbig.npy -i %t/b.npy -i %t/a.npy -o %t/bigs
// RUN: moe-reference decay_gate_grad %t/zbig.npy %t/b.npy %t/a.npy %t/dgbig.npy --gate=softplus \
// RUN:   -o %t/bigs_dz.npy -o %t/bigs_db.npy -o %t/bigs_da.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/bigs/result0.npy %t/bigs_dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bigs/result1.npy %t/bigs_db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/bigs/result2.npy %t/bigs_da.npy --rtol=1e-6 | FileCheck %s

// The gradients differ between the gates (the comparison can fail).
// RUN: not moe-npy compare %t/softplus/result0.npy %t/bounded_dz.npy --rtol=1e-2

// CHECK: max relative error
// FD2: fd-check raw: max relative error
// FD2: fd-check dt_bias: max relative error
// FD3: fd-check raw: max relative error
// FD3: fd-check dt_bias: max relative error
// FD3: fd-check a_log: max relative error

func.func @bounded(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) {
  %dz, %db, %da = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
  return %dz, %db, %da : tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>
}

func.func @bounded_no_a_log(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>) {
  %dz, %db = moe.decay_gate_grad <bounded, g_min = -3.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return %dz, %db : tensor<?x?x4x16xf32>, tensor<4x16xf32>
}

func.func @softplus(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) {
  %dz, %db, %da = moe.decay_gate_grad <softplus> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
  return %dz, %db, %da : tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>
}
