// The adjoints that the forward ops of the common family build
// (DifferentiableOpInterface, driven by -test-moe-adjoints with function
// arguments as result adjoints), lowered by the CPU pipeline and run,
// against the fp64 gradients of moe-reference: checks that each forward op
// passes its operands, attributes and adjoint to its gradient op in the
// right places. The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/dg.npy --shape=2,5,2,8 --seed=181
// RUN: moe-npy random %t/z.npy --shape=2,5,2,8 --seed=182 --low=-4 --high=4
// RUN: moe-npy random %t/b.npy --shape=2,8 --seed=183
// RUN: moe-npy random %t/a.npy --shape=2 --seed=184 --low=0 --high=2
// RUN: moe-npy random %t/dy.npy --shape=2,5,16 --seed=185
// RUN: moe-npy random %t/x.npy --shape=2,5,16 --seed=186 --low=-2 --high=2
// RUN: moe-npy random %t/w.npy --shape=16 --seed=187 --low=0.5 --high=1.5
// RUN: moe-npy random %t/cw.npy --shape=16,3 --seed=188
// RUN: moe-npy random %t/tokens.npy --shape=2,5 --seed=189 --dtype=i32 --low=0 --high=5
// RUN: moe-npy random %t/table.npy --shape=6,16 --seed=190
// RUN: moe-npy random %t/u.npy --shape=16 --seed=191 --low=-2 --high=2
// RUN: moe-npy random %t/v.npy --shape=2,5,16 --seed=192 --low=-3 --high=3

// RUN: moe-opt %s -test-moe-adjoints | moe-run - --entry=all -i %t/dg.npy -i %t/z.npy \
// RUN:   -i %t/b.npy -i %t/a.npy -i %t/dy.npy -i %t/x.npy -i %t/w.npy -i %t/cw.npy \
// RUN:   -i %t/tokens.npy -i %t/table.npy -i %t/u.npy -i %t/v.npy -o %t/out

// RUN: moe-reference decay_gate_grad %t/z.npy %t/b.npy %t/a.npy %t/dg.npy --gate=softplus \
// RUN:   -o %t/dz.npy -o %t/db.npy -o %t/da.npy
// RUN: moe-npy compare %t/out/result6.npy %t/dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result7.npy %t/db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result8.npy %t/da.npy --rtol=1e-6 | FileCheck %s

// RUN: moe-reference l2_norm_grad %t/x.npy %t/dy.npy --eps=1e-3 -o %t/l2_dx.npy
// RUN: moe-npy compare %t/out/result9.npy %t/l2_dx.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference rms_norm_grad %t/x.npy %t/w.npy %t/dy.npy --eps=1e-4 -o %t/rms_dx.npy -o %t/rms_dw.npy
// RUN: moe-npy compare %t/out/result10.npy %t/rms_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result11.npy %t/rms_dw.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference short_conv_grad %t/x.npy %t/cw.npy %t/dy.npy --silu -o %t/conv_dx.npy -o %t/conv_dw.npy
// RUN: moe-npy compare %t/out/result12.npy %t/conv_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result13.npy %t/conv_dw.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference embedding_grad %t/tokens.npy %t/table.npy %t/dy.npy -o %t/dtable.npy
// RUN: moe-npy compare %t/out/result14.npy %t/dtable.npy --rtol=3e-7 | FileCheck %s

// RUN: moe-reference attn_res_mix_grad %t/x.npy %t/v.npy %t/u.npy %t/dy.npy --eps=1e-3 \
// RUN:   -o %t/mix_dx.npy -o %t/mix_dv.npy -o %t/mix_du.npy
// RUN: moe-npy compare %t/out/result15.npy %t/mix_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result16.npy %t/mix_dv.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result17.npy %t/mix_du.npy --rtol=2e-6 | FileCheck %s

// CHECK: max relative error

func.func @all(%dg: tensor<?x?x2x8xf32>, %z: tensor<?x?x2x8xf32>, %b: tensor<2x8xf32>,
               %a: tensor<2xf32>, %dy: tensor<?x?x16xf32>, %x: tensor<?x?x16xf32>,
               %w: tensor<16xf32>, %cw: tensor<16x3xf32>, %tokens: tensor<?x?xi32>,
               %table: tensor<6x16xf32>, %u: tensor<16xf32>, %v: tensor<?x?x16xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>,
        tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %g = moe.decay_gate <softplus> %z, %b, %a {test.adjoints = array<i64: 0>}
      : (tensor<?x?x2x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<?x?x2x8xf32>
  %l2 = moe.l2_norm %x {epsilon = 1.0e-3 : f64, test.adjoints = array<i64: 4>} : tensor<?x?x16xf32>
  %rms = moe.rms_norm %x, %w {epsilon = 1.0e-4 : f64, test.adjoints = array<i64: 4>}
      : tensor<?x?x16xf32>, tensor<16xf32>
  %conv = moe.short_conv %x, %cw {silu, test.adjoints = array<i64: 4>}
      : tensor<?x?x16xf32>, tensor<16x3xf32>
  %h = moe.embedding %tokens, %table {test.adjoints = array<i64: 4>}
      : tensor<?x?xi32>, tensor<6x16xf32> -> tensor<?x?x16xf32>
  %mix = moe.attn_res_mix %x, %v query(%u) {epsilon = 1.0e-3 : f64, test.adjoints = array<i64: 4>}
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %g, %l2, %rms, %conv, %h, %mix
      : tensor<?x?x2x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>,
        tensor<?x?x16xf32>, tensor<?x?x16xf32>
}
