// RUN: moe-opt %s --pass-pipeline='builtin.module(func.func(moe-chunk-loss{vocab-chunk=8}),convert-elementwise-to-linalg,func.func(moe-fuse-elementwise))' | FileCheck %s

// -moe-fuse-elementwise on the chunked lm_head loss of a large vocabulary
// (here V = 96 in 12 chunks; kimi-linear-48b has 20): the running sum's
// rescaling by exp(m - m') in each chunk is a chain whose every link fuses
// one sweep of the rewrite driver after the one before. With the driver's
// default limit of ten sweeps the pass failed (silently: no diagnostic) on
// 10 chunks or more; the whole chain is one generic, ending in the log.

// CHECK-LABEL: func.func @loss
// CHECK:          linalg.generic
// CHECK-COUNT-12:   math.exp
// CHECK:            math.log
// CHECK-NEXT:       arith.addf
// CHECK-NEXT:       linalg.yield
// CHECK:        return
func.func @loss(%x: tensor<?x?x16xf32>, %w: tensor<96x16xf32>, %labels: tensor<?x?xi32>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels
      : (tensor<?x?x16xf32>, tensor<96x16xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return %loss, %lse : tensor<f32>, tensor<?x?xf32>
}
