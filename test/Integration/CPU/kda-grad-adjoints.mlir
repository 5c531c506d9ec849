// The adjoints that moe.kda builds (DifferentiableOpInterface, driven by
// -test-moe-adjoints with function arguments as result adjoints), lowered by
// the CPU pipeline and run, against moe-reference kda-grad (section 1.3 BWD
// in fp64): checks that moe.kda passes its operands, attributes and result
// adjoints to moe.kda_grad in the right places, and that a null output
// adjoint is zero. Relative error max|a-b| / max|b| per gradient; the bound
// is that of kda-grad.mlir.
//
// RUN: rm -rf %t && mkdir -p %t/ref %t/ref_state
// RUN: moe-npy random %t/q.npy --shape=2,70,2,32 --seed=31
// RUN: moe-npy random %t/k.npy --shape=2,70,2,32 --seed=32
// RUN: moe-npy random %t/v.npy --shape=2,70,2,16 --seed=33
// RUN: moe-npy random %t/z.npy --shape=2,70,2,32 --seed=34 --low=-3 --high=3
// RUN: moe-npy random %t/beta.npy --shape=2,70,2 --seed=35 --low=0.05 --high=0.95
// RUN: moe-npy random %t/a_log.npy --shape=2 --seed=36 --low=0 --high=1
// RUN: moe-npy random %t/dt_bias.npy --shape=2,32 --seed=37
// RUN: moe-npy random %t/s0.npy --shape=2,2,16,32 --seed=38
// RUN: moe-npy random %t/do.npy --shape=2,70,2,16 --seed=39
// RUN: moe-npy random %t/ds.npy --shape=2,2,16,32 --seed=40
// RUN: moe-npy random %t/zero.npy --shape=2,70,2,16 --low=0 --high=0
// RUN: moe-opt %s -test-moe-adjoints | moe-run - --entry=adjoints --opt-level=0 -i %t/q.npy -i %t/k.npy -i %t/v.npy -i %t/z.npy -i %t/beta.npy -i %t/a_log.npy -i %t/dt_bias.npy -i %t/s0.npy -i %t/do.npy -i %t/ds.npy -o %t/out 2>/dev/null
//
// Both adjoints (results 3-8).
// RUN: moe-reference kda-grad %t/out/result0.npy %t/out/result1.npy %t/v.npy %t/out/result2.npy %t/beta.npy %t/do.npy --initial-state=%t/s0.npy --final-state-adjoint=%t/ds.npy --state-layout=value_major --scale=0.2 -o %t/ref
// RUN: moe-npy compare %t/out/result3.npy %t/ref/dq.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result4.npy %t/ref/dk.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result5.npy %t/ref/dv.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result6.npy %t/ref/dg.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result7.npy %t/ref/dbeta.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result8.npy %t/ref/ds0.npy --rtol=2e-5 | FileCheck %s
//
// The final-state adjoint only (results 9-14): the output adjoint is zero.
// RUN: moe-reference kda-grad %t/out/result0.npy %t/out/result1.npy %t/v.npy %t/out/result2.npy %t/beta.npy %t/zero.npy --initial-state=%t/s0.npy --final-state-adjoint=%t/ds.npy --state-layout=value_major --scale=0.2 -o %t/ref_state
// RUN: moe-npy compare %t/out/result9.npy %t/ref_state/dq.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result10.npy %t/ref_state/dk.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result11.npy %t/ref_state/dv.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result12.npy %t/ref_state/dg.npy --rtol=2e-5 | FileCheck %s
// RUN: moe-npy compare %t/out/result13.npy %t/ref_state/dbeta.npy --rtol=2e-5 | FileCheck %s
// dS0 alone is exp(sum of 70 log decays) ds, about 5e-25: its relative
// accuracy is that of the fp32 sums of g (|sum| = 56, one ulp 3.8e-6);
// observed 4.4e-5 (12 ulps, with the summation order of the CPU's vectors).
// RUN: moe-npy compare %t/out/result14.npy %t/ref_state/ds0.npy --rtol=1e-4 | FileCheck %s
//
// CHECK: max relative error

func.func @adjoints(%q: tensor<?x?x2x32xf32>, %k: tensor<?x?x2x32xf32>,
    %v: tensor<?x?x2x16xf32>, %z: tensor<?x?x2x32xf32>, %beta: tensor<?x?x2xf32>,
    %A_log: tensor<2xf32>, %dt_bias: tensor<2x32xf32>, %s0: tensor<?x2x16x32xf32>,
    %do: tensor<?x?x2x16xf32>, %ds: tensor<?x2x16x32xf32>)
    -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x2x32xf32>
  %kn = moe.l2_norm %k : tensor<?x?x2x32xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x2x32xf32>, tensor<2x32xf32>, tensor<2xf32>) -> tensor<?x?x2x32xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta initial_state(%s0)
      {scale = 0.2 : f64, state_layout = #moe.state_layout<value_major>,
       test.adjoints = array<i64: 8, 9>}
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>)
  %o2, %s2 = moe.kda %qn, %kn, %v, %g, %beta initial_state(%s0)
      {scale = 0.2 : f64, state_layout = #moe.state_layout<value_major>,
       test.adjoints = array<i64: -1, 9>}
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>)
  return %qn, %kn, %g : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>
}
