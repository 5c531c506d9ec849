// moe.attn_res_mix_grad through convert-moe-to-linalg and moe-run, against
// the fp64 gradient of moe-reference (ALGORITHMS.md section 5.3), which
// checks itself against central finite differences of MIX_REF. Every
// source's gradient and the query's (summed over the tokens), with 1, 2 and
// 3 sources of different scales, a random query and a zero query (uniform
// weights, yet a non-zero query gradient), and a larger epsilon.
// The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/v0.npy --shape=2,7,24 --seed=171 --low=-1 --high=1
// RUN: moe-npy random %t/v1.npy --shape=2,7,24 --seed=172 --low=-3 --high=3
// RUN: moe-npy random %t/v2.npy --shape=2,7,24 --seed=173 --low=0 --high=2
// RUN: moe-npy random %t/u.npy --shape=24 --seed=174 --low=-2 --high=2
// RUN: moe-npy random %t/zeros.npy --shape=24 --low=0 --high=0
// RUN: moe-npy random %t/dh.npy --shape=2,7,24 --seed=175

// Three sources, random query.
// RUN: moe-run %s --entry=mix3 -i %t/dh.npy -i %t/v0.npy -i %t/v1.npy -i %t/v2.npy -i %t/u.npy -o %t/out3
// RUN: moe-reference attn_res_mix_grad %t/v0.npy %t/v1.npy %t/v2.npy %t/u.npy %t/dh.npy \
// RUN:   -o %t/d0.npy -o %t/d1.npy -o %t/d2.npy -o %t/du.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/out3/result0.npy %t/d0.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out3/result1.npy %t/d1.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out3/result2.npy %t/d2.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out3/result3.npy %t/du.npy --rtol=2e-6 | FileCheck %s

// Three sources, zero query.
// RUN: moe-run %s --entry=mix3 -i %t/dh.npy -i %t/v0.npy -i %t/v1.npy -i %t/v2.npy -i %t/zeros.npy -o %t/zero
// RUN: moe-reference attn_res_mix_grad %t/v0.npy %t/v1.npy %t/v2.npy %t/zeros.npy %t/dh.npy \
// RUN:   -o %t/z0.npy -o %t/z1.npy -o %t/z2.npy -o %t/zu.npy | FileCheck %s --check-prefix=FD3
// RUN: moe-npy compare %t/zero/result0.npy %t/z0.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/zero/result1.npy %t/z1.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/zero/result2.npy %t/z2.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/zero/result3.npy %t/zu.npy --rtol=2e-6 | FileCheck %s

// Two sources, epsilon 0.5.
// RUN: moe-run %s --entry=mix2_eps -i %t/dh.npy -i %t/v1.npy -i %t/v2.npy -i %t/u.npy -o %t/out2
// RUN: moe-reference attn_res_mix_grad %t/v1.npy %t/v2.npy %t/u.npy %t/dh.npy --eps=0.5 \
// RUN:   -o %t/e1.npy -o %t/e2.npy -o %t/eu.npy | FileCheck %s --check-prefix=FD2
// RUN: moe-npy compare %t/out2/result0.npy %t/e1.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out2/result1.npy %t/e2.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out2/result2.npy %t/eu.npy --rtol=2e-6 | FileCheck %s

// One source: the mix is the source, so its gradient is dh and the query's
// is zero (softmax of one score is 1 whatever the query).
// RUN: moe-run %s --entry=mix1 -i %t/dh.npy -i %t/v1.npy -i %t/u.npy -o %t/out1
// RUN: moe-reference attn_res_mix_grad %t/v1.npy %t/u.npy %t/dh.npy -o %t/o1.npy -o %t/ou.npy \
// RUN:   | FileCheck %s --check-prefix=FD1
// RUN: moe-npy compare %t/out1/result0.npy %t/o1.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out1/result0.npy %t/dh.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out1/result1.npy %t/zeros.npy --atol=0 | FileCheck %s

// CHECK: max {{relative|absolute}} error
// FD1: fd-check source 0: max relative error
// FD1: fd-check query: max relative error
// FD2: fd-check source 0: max relative error
// FD2: fd-check source 1: max relative error
// FD2: fd-check query: max relative error
// FD3: fd-check source 0: max relative error
// FD3: fd-check source 1: max relative error
// FD3: fd-check source 2: max relative error
// FD3: fd-check query: max relative error

func.func @mix3(%dh: tensor<?x?x24xf32>, %v0: tensor<?x?x24xf32>, %v1: tensor<?x?x24xf32>,
                %v2: tensor<?x?x24xf32>, %u: tensor<24xf32>)
    -> (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>) {
  %d0, %d1, %d2, %du = moe.attn_res_mix_grad %dh, %v0, %v1, %v2 query(%u)
      : (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>)
      -> (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>)
  return %d0, %d1, %d2, %du : tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>
}

func.func @mix2_eps(%dh: tensor<2x7x24xf32>, %v1: tensor<2x7x24xf32>, %v2: tensor<2x7x24xf32>,
                    %u: tensor<24xf32>)
    -> (tensor<2x7x24xf32>, tensor<2x7x24xf32>, tensor<24xf32>) {
  %d1, %d2, %du = moe.attn_res_mix_grad %dh, %v1, %v2 query(%u) {epsilon = 0.5 : f64}
      : (tensor<2x7x24xf32>, tensor<2x7x24xf32>, tensor<2x7x24xf32>, tensor<24xf32>)
      -> (tensor<2x7x24xf32>, tensor<2x7x24xf32>, tensor<24xf32>)
  return %d1, %d2, %du : tensor<2x7x24xf32>, tensor<2x7x24xf32>, tensor<24xf32>
}

func.func @mix1(%dh: tensor<?x?x24xf32>, %v: tensor<?x?x24xf32>, %u: tensor<24xf32>)
    -> (tensor<?x?x24xf32>, tensor<24xf32>) {
  %d, %du = moe.attn_res_mix_grad %dh, %v query(%u)
      : (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>)
      -> (tensor<?x?x24xf32>, tensor<24xf32>)
  return %d, %du : tensor<?x?x24xf32>, tensor<24xf32>
}
