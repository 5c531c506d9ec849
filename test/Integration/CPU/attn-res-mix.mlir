// moe.attn_res_mix through convert-moe-to-linalg and moe-run against MIX_REF
// of moe-reference (ALGORITHMS.md section 5.5): per token
// p = softmax_i(rstd_i (v_i . u)), y = sum_i p_i v_i. The query is the one
// the op takes (key norm folded in), so the reference gets a key norm of
// ones. Three sources of different scales, so the weights are far from
// uniform; one source alone, whose mix is that source; a zero query, whose
// mix is the exact mean. f32: relative bound 1e-5.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/v0.npy --shape=2,7,24 --seed=31 --low=-1 --high=1
// RUN: moe-npy random %t/v1.npy --shape=2,7,24 --seed=32 --low=-3 --high=3
// RUN: moe-npy random %t/v2.npy --shape=2,7,24 --seed=33 --low=0 --high=2
// RUN: moe-npy random %t/u.npy --shape=24 --seed=34 --low=-2 --high=2
// RUN: moe-npy random %t/ones.npy --shape=24 --low=1 --high=1
// RUN: moe-npy random %t/zeros.npy --shape=24 --low=0 --high=0

// RUN: moe-run %s --entry=mix3 -i %t/v0.npy -i %t/v1.npy -i %t/v2.npy \
// RUN:   -i %t/u.npy -o %t/out3
// RUN: moe-reference attn_res %t/v0.npy %t/v1.npy %t/v2.npy %t/u.npy \
// RUN:   %t/ones.npy -o %t/ref3.npy
// RUN: moe-npy compare %t/out3/result0.npy %t/ref3.npy --rtol=1e-5 | FileCheck %s

// RUN: moe-run %s --entry=mix1 -i %t/v1.npy -i %t/u.npy -o %t/out1
// RUN: moe-npy compare %t/out1/result0.npy %t/v1.npy --rtol=1e-6 | FileCheck %s

// A zero query: the mean of the sources, also by the reference.
// RUN: moe-run %s --entry=mix3 -i %t/v0.npy -i %t/v1.npy -i %t/v2.npy \
// RUN:   -i %t/zeros.npy -o %t/mean
// RUN: moe-reference attn_res %t/v0.npy %t/v1.npy %t/v2.npy %t/zeros.npy \
// RUN:   %t/ones.npy -o %t/refmean.npy
// RUN: moe-npy compare %t/mean/result0.npy %t/refmean.npy --rtol=1e-6 | FileCheck %s

// A larger epsilon than the default changes the result; the reference
// agrees only with the matching --eps.
// RUN: moe-run %s --entry=mix3_eps -i %t/v0.npy -i %t/v1.npy -i %t/v2.npy \
// RUN:   -i %t/u.npy -o %t/eps
// RUN: moe-reference attn_res %t/v0.npy %t/v1.npy %t/v2.npy %t/u.npy \
// RUN:   %t/ones.npy --eps=0.5 -o %t/refeps.npy
// RUN: moe-npy compare %t/eps/result0.npy %t/refeps.npy --rtol=1e-5 | FileCheck %s
// RUN: not moe-npy compare %t/eps/result0.npy %t/ref3.npy --rtol=1e-5

// CHECK: max relative error

func.func @mix3(%v0: tensor<?x?x24xf32>, %v1: tensor<?x?x24xf32>,
                %v2: tensor<?x?x24xf32>, %u: tensor<24xf32>) -> tensor<?x?x24xf32> {
  %y = moe.attn_res_mix %v0, %v1, %v2 query(%u)
      : (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>)
      -> tensor<?x?x24xf32>
  return %y : tensor<?x?x24xf32>
}

func.func @mix1(%v: tensor<2x7x24xf32>, %u: tensor<24xf32>) -> tensor<2x7x24xf32> {
  %y = moe.attn_res_mix %v query(%u)
      : (tensor<2x7x24xf32>, tensor<24xf32>) -> tensor<2x7x24xf32>
  return %y : tensor<2x7x24xf32>
}

func.func @mix3_eps(%v0: tensor<?x?x24xf32>, %v1: tensor<?x?x24xf32>,
                    %v2: tensor<?x?x24xf32>, %u: tensor<24xf32>) -> tensor<?x?x24xf32> {
  %y = moe.attn_res_mix %v0, %v1, %v2 query(%u) {epsilon = 0.5 : f64}
      : (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24xf32>)
      -> tensor<?x?x24xf32>
  return %y : tensor<?x?x24xf32>
}
