// The adjoints that moe.mla_attention, moe.linear_cross_entropy and
// moe.cross_entropy build (DifferentiableOpInterface, driven by
// -test-moe-adjoints with function arguments as result adjoints; the lse
// results get none), lowered by the CPU pipeline and run, against the fp64
// gradients of moe-reference: checks that each forward op passes its
// operands, attributes (gate, scale, ignore_index) and adjoint to its
// gradient op in the right places. The error is max|a - b| / max|b| per
// operand; observed <= 7e-7 (attention), <= 3e-7 (losses).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/q.npy --shape=2,21,2,24 --seed=201 --low=-2 --high=2
// RUN: moe-npy random %t/k.npy --shape=2,21,2,24 --seed=202 --low=-2 --high=2
// RUN: moe-npy random %t/v.npy --shape=2,21,2,16 --seed=203
// RUN: moe-npy random %t/g.npy --shape=2,21,2,16 --seed=204 --low=-3 --high=3
// RUN: moe-npy random %t/dy.npy --shape=2,21,2,16 --seed=205
// RUN: moe-npy random %t/x.npy --shape=2,9,12 --seed=206 --low=-2 --high=2
// RUN: moe-npy random %t/w.npy --shape=50,12 --seed=207 --low=-1 --high=1
// RUN: moe-npy random %t/labels.npy --shape=2,9 --seed=208 --dtype=i32 --low=-1 --high=49
// RUN: moe-npy random %t/dloss.npy --shape= --low=1.5 --high=1.5
// RUN: moe-npy random %t/z.npy --shape=2,9,50 --seed=209 --low=-8 --high=8
// RUN: moe-npy stats %t/labels.npy | FileCheck %s --check-prefix=LABELS

// RUN: moe-opt %s -test-moe-adjoints -o %t/adjoints.mlir
// RUN: moe-run %t/adjoints.mlir --entry=mla_gated -i %t/q.npy -i %t/k.npy -i %t/v.npy -i %t/g.npy -i %t/dy.npy -o %t/gated
// RUN: moe-reference mla_attention_grad %t/q.npy %t/k.npy %t/v.npy %t/g.npy %t/dy.npy -o %t/rq.npy --dk=%t/rk.npy --dv=%t/rv.npy --dgate=%t/rg.npy
// RUN: moe-npy compare %t/gated/result1.npy %t/rq.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/gated/result2.npy %t/rk.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/gated/result3.npy %t/rv.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/gated/result4.npy %t/rg.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-run %t/adjoints.mlir --entry=mla_scaled -i %t/q.npy -i %t/k.npy -i %t/v.npy -i %t/dy.npy -o %t/scaled
// RUN: moe-reference mla_attention_grad %t/q.npy %t/k.npy %t/v.npy %t/dy.npy --scale=0.3 -o %t/sq.npy --dk=%t/sk.npy --dv=%t/sv.npy
// RUN: moe-npy compare %t/scaled/result1.npy %t/sq.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/scaled/result2.npy %t/sk.npy --rtol=2e-6 | FileCheck %s
// RUN: moe-npy compare %t/scaled/result3.npy %t/sv.npy --rtol=2e-6 | FileCheck %s

// RUN: moe-run %t/adjoints.mlir --entry=lm_loss -i %t/x.npy -i %t/w.npy -i %t/labels.npy -i %t/dloss.npy -o %t/lce
// RUN: moe-reference linear_cross_entropy %t/x.npy %t/w.npy %t/labels.npy --ignore-index=-1 --d-loss=1.5 -o %t/rl.npy --dx=%t/rdx.npy --dw=%t/rdw.npy
// RUN: moe-npy compare %t/lce/result0.npy %t/rl.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/lce/result1.npy %t/rdx.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/lce/result2.npy %t/rdw.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %t/adjoints.mlir --entry=logits_loss -i %t/z.npy -i %t/labels.npy -i %t/dloss.npy -o %t/ce
// RUN: moe-reference cross_entropy_grad %t/z.npy %t/labels.npy --ignore-index=-1 --d-loss=1.5 -o %t/rdz.npy
// RUN: moe-npy compare %t/ce/result1.npy %t/rdz.npy --rtol=1e-6 | FileCheck %s

// The lse results have no adjoint: giving one is an error on the op.
// RUN: not moe-opt %S/Inputs/attention-grad-lse-adjoint.mlir -test-moe-adjoints --split-input-file -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=LSE

// LABELS: min: -1
// CHECK: max relative error
// LSE: error: 'moe.mla_attention' op has no adjoint for its lse result (it is kept for the backward pass only), but one was given
// LSE: error: 'moe.linear_cross_entropy' op has no adjoint for its lse result (it is kept for the backward pass only), but one was given

func.func @mla_gated(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
                     %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2x16xf32>,
                     %dy: tensor<?x?x2x16xf32>) -> tensor<?x?x2x16xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g) {test.adjoints = array<i64: 4, -1>}
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x16xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x16xf32>
}

func.func @mla_scaled(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
                      %v: tensor<?x?x2x16xf32>, %dy: tensor<?x?x2x16xf32>)
    -> tensor<?x?x2x16xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.3 : f64, test.adjoints = array<i64: 3, -1>}
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x16xf32>
}

func.func @lm_loss(%x: tensor<?x?x12xf32>, %w: tensor<50x12xf32>,
                   %labels: tensor<?x?xi32>, %dloss: tensor<f32>) -> tensor<f32> {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels
      {ignore_index = -1 : i64, test.adjoints = array<i64: 3, -1>}
      : (tensor<?x?x12xf32>, tensor<50x12xf32>, tensor<?x?xi32>)
      -> (tensor<f32>, tensor<?x?xf32>)
  return %loss : tensor<f32>
}

func.func @logits_loss(%z: tensor<?x?x50xf32>, %labels: tensor<?x?xi32>,
                       %dloss: tensor<f32>) -> tensor<f32> {
  %loss = moe.cross_entropy %z, %labels {ignore_index = -1 : i64, test.adjoints = array<i64: 2>}
      : (tensor<?x?x50xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
