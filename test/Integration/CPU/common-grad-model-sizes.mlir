// The common gradient ops at kimi-tiny's sizes (examples/models/kimi-tiny.mlir:
// width 256, 4 KDA heads of 64, convolutions of width 4, a byte vocabulary,
// three AttnRes sources) on 2 x 64 tokens, through the CPU pipeline, against
// the fp64 references: the weight gradients sum 128 tokens in fp32 and the
// bounds still hold. The error is max|a - b| / max|b| per operand.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/dg.npy --shape=2,64,4,64 --seed=201
// RUN: moe-npy random %t/z.npy --shape=2,64,4,64 --seed=202 --low=-8 --high=8
// RUN: moe-npy random %t/b.npy --shape=4,64 --seed=203 --low=-7 --high=-2
// RUN: moe-npy random %t/a.npy --shape=4 --seed=204 --low=-0.5 --high=0.5
// RUN: moe-npy random %t/dq.npy --shape=2,64,4,64 --seed=205
// RUN: moe-npy random %t/q.npy --shape=2,64,4,64 --seed=206
// RUN: moe-npy random %t/dy.npy --shape=2,64,256 --seed=207
// RUN: moe-npy random %t/x.npy --shape=2,64,256 --seed=208 --low=-3 --high=3
// RUN: moe-npy random %t/w.npy --shape=256 --seed=209 --low=0.5 --high=1.5
// RUN: moe-npy random %t/cw.npy --shape=256,4 --seed=210 --low=-0.5 --high=0.5
// RUN: moe-npy random %t/tokens.npy --shape=2,64 --seed=211 --dtype=i32 --low=0 --high=255
// RUN: moe-npy random %t/table.npy --shape=256,256 --seed=212
// RUN: moe-npy random %t/v1.npy --shape=2,64,256 --seed=213
// RUN: moe-npy random %t/v2.npy --shape=2,64,256 --seed=214 --low=-4 --high=4
// RUN: moe-npy random %t/u.npy --shape=256 --seed=215 --low=-0.2 --high=0.2

// RUN: moe-run %s --entry=all -i %t/dg.npy -i %t/z.npy -i %t/b.npy -i %t/a.npy \
// RUN:   -i %t/dq.npy -i %t/q.npy -i %t/dy.npy -i %t/x.npy -i %t/w.npy -i %t/cw.npy \
// RUN:   -i %t/tokens.npy -i %t/table.npy -i %t/v1.npy -i %t/v2.npy -i %t/u.npy -o %t/out

// RUN: moe-reference decay_gate_grad %t/z.npy %t/b.npy %t/a.npy %t/dg.npy --gate=bounded --g-min=-5 \
// RUN:   -o %t/dz.npy -o %t/db.npy -o %t/da.npy
// RUN: moe-npy compare %t/out/result0.npy %t/dz.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result1.npy %t/db.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result2.npy %t/da.npy --rtol=1e-6 | FileCheck %s

// RUN: moe-reference l2_norm_grad %t/q.npy %t/dq.npy -o %t/dq_ref.npy
// RUN: moe-npy compare %t/out/result3.npy %t/dq_ref.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference rms_norm_grad %t/x.npy %t/w.npy %t/dy.npy -o %t/rms_dx.npy -o %t/rms_dw.npy
// RUN: moe-npy compare %t/out/result4.npy %t/rms_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result5.npy %t/rms_dw.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference short_conv_grad %t/x.npy %t/cw.npy %t/dy.npy --silu -o %t/conv_dx.npy -o %t/conv_dw.npy
// RUN: moe-npy compare %t/out/result6.npy %t/conv_dx.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result7.npy %t/conv_dw.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-reference embedding_grad %t/tokens.npy %t/table.npy %t/dy.npy -o %t/dtable.npy
// RUN: moe-npy compare %t/out/result8.npy %t/dtable.npy --rtol=3e-7 | FileCheck %s

// RUN: moe-reference attn_res_mix_grad %t/x.npy %t/v1.npy %t/v2.npy %t/u.npy %t/dy.npy \
// RUN:   -o %t/m0.npy -o %t/m1.npy -o %t/m2.npy -o %t/mu.npy
// RUN: moe-npy compare %t/out/result9.npy %t/m0.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result10.npy %t/m1.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result11.npy %t/m2.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/out/result12.npy %t/mu.npy --rtol=2e-6 | FileCheck %s

// CHECK: max relative error

func.func @all(%dg: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>, %b: tensor<4x64xf32>,
               %a: tensor<4xf32>, %dq: tensor<?x?x4x64xf32>, %q: tensor<?x?x4x64xf32>,
               %dy: tensor<?x?x256xf32>, %x: tensor<?x?x256xf32>, %w: tensor<256xf32>,
               %cw: tensor<256x4xf32>, %tokens: tensor<?x?xi32>, %table: tensor<256x256xf32>,
               %v1: tensor<?x?x256xf32>, %v2: tensor<?x?x256xf32>, %u: tensor<256xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x256xf32>, tensor<256xf32>, tensor<?x?x256xf32>, tensor<256x4xf32>,
        tensor<256x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
        tensor<256xf32>) {
  %dz, %db, %da = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>)
  %dqx = moe.l2_norm_grad %dq, %q : tensor<?x?x4x64xf32>
  %rdx, %rdw = moe.rms_norm_grad %dy, %x, %w : tensor<?x?x256xf32>, tensor<256xf32>
  %cdx, %cdw = moe.short_conv_grad %dy, %x, %cw {silu} : tensor<?x?x256xf32>, tensor<256x4xf32>
  %dt = moe.embedding_grad %dy, %tokens, %table
      : tensor<?x?x256xf32>, tensor<?x?xi32>, tensor<256x256xf32>
  %m0, %m1, %m2, %mu = moe.attn_res_mix_grad %dy, %x, %v1, %v2 query(%u)
      : (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<256xf32>)
      -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<256xf32>)
  return %dz, %db, %da, %dqx, %rdx, %rdw, %cdx, %cdw, %dt, %m0, %m1, %m2, %mu
      : tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x256xf32>, tensor<256xf32>, tensor<?x?x256xf32>, tensor<256x4xf32>,
        tensor<256x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>,
        tensor<256xf32>
}
