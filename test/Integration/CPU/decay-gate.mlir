// moe.decay_gate through convert-moe-to-linalg and moe-run, against the
// fp64 gate of moe-reference (ALGORITHMS.md section 2.1), for the bounded
// gate with and without A_log and for the softplus gate. Bound 1e-6
// relative to max|g| (a few fp32 roundings of exp and sigmoid).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/z.npy --shape=2,9,4,16 --seed=31 --low=-6 --high=6
// RUN: moe-npy random %t/b.npy --shape=4,16 --seed=32
// RUN: moe-npy random %t/a.npy --shape=4 --seed=33 --low=0 --high=2.7

// Bounded, g = -5 sigmoid(exp(A_log[h]) (z + b)).
// RUN: moe-run %s --entry=bounded -i %t/z.npy -i %t/b.npy -i %t/a.npy -o %t/bounded
// RUN: moe-reference decay_gate %t/z.npy %t/b.npy %t/a.npy --gate=bounded --g-min=-5 -o %t/bounded_ref.npy
// RUN: moe-npy print %t/bounded/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/bounded/result0.npy %t/bounded_ref.npy --rtol=1e-6 | FileCheck %s

// Bounded without A_log, g = -3 sigmoid(z + b).
// RUN: moe-run %s --entry=bounded_no_a_log -i %t/z.npy -i %t/b.npy -o %t/plain
// RUN: moe-reference decay_gate %t/z.npy %t/b.npy --gate=bounded --g-min=-3 -o %t/plain_ref.npy
// RUN: moe-npy compare %t/plain/result0.npy %t/plain_ref.npy --rtol=1e-6 | FileCheck %s

// Softplus, g = -exp(A_log[h]) softplus(z + b).
// RUN: moe-run %s --entry=softplus -i %t/z.npy -i %t/b.npy -i %t/a.npy -o %t/softplus
// RUN: moe-reference decay_gate %t/z.npy %t/b.npy %t/a.npy --gate=softplus -o %t/softplus_ref.npy
// RUN: moe-npy compare %t/softplus/result0.npy %t/softplus_ref.npy --rtol=1e-6 | FileCheck %s

// |z + b| up to 120: exp(120) overflows fp32, so log(1 + exp(x)) written
// naively would give inf; the stable form must stay finite and exact
// (moe-npy compare also rejects any inf or NaN). The bounded gate saturates
// to exactly 0 and g_min.
// RUN: moe-npy random %t/zbig.npy --shape=1,5,4,16 --seed=34 --low=-120 --high=120
// RUN: moe-run %s --entry=softplus -i %t/zbig.npy -i %t/b.npy -i %t/a.npy -o %t/big
// RUN: moe-reference decay_gate %t/zbig.npy %t/b.npy %t/a.npy --gate=softplus -o %t/big_ref.npy
// RUN: moe-npy compare %t/big/result0.npy %t/big_ref.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %s --entry=bounded -i %t/zbig.npy -i %t/b.npy -i %t/a.npy -o %t/bigb
// RUN: moe-reference decay_gate %t/zbig.npy %t/b.npy %t/a.npy --gate=bounded --g-min=-5 -o %t/bigb_ref.npy
// RUN: moe-npy compare %t/bigb/result0.npy %t/bigb_ref.npy --rtol=1e-6 | FileCheck %s

// SHAPE: shape [2, 9, 4, 16] dtype f32
// CHECK: max relative error

func.func @bounded(%z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>) -> tensor<?x?x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}

func.func @bounded_no_a_log(%z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) -> tensor<?x?x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -3.0> %z, %b
      : (tensor<?x?x4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}

func.func @softplus(%z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>) -> tensor<?x?x4x16xf32> {
  %g = moe.decay_gate <softplus> %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}
