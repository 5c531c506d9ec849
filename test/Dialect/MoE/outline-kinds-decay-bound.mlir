// RUN: moe-opt %s --moe-insert-shape-checks --moe-outline-kinds | FileCheck %s
// RUN: moe-opt %s --moe-insert-shape-checks --moe-outline-kinds --moe-tile-linear-attention -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// The run-time shape checks read the sizes of the gates' results before
// moe.kda, so each gate is a group of its own and moe.kda gets its log
// decay as an argument. The two moe.kda ops print the same but their log
// decays have different proven bounds (-5, none): they are two kinds, so
// that the decay-bound analysis, which joins the calls of a function, still
// proves the bounded one's diagonal tiles safe, as it does inline.
// CHECK-LABEL: func.func @bounded
// CHECK:         call @__moe_kind_kda(
// CHECK-LABEL: func.func @softplus
// CHECK:         call @__moe_kind_kda_{{[0-9]+}}(
// REMARK-DAG: remark: kda tiled with chunk 64, sub-chunk 16: dense diagonal tiles, proven safe (bound -5.00
// REMARK-DAG: remark: kda tiled with chunk 64, sub-chunk 16: runtime-guarded diagonal tiles, not proven (bound none

func.func @bounded(%q: tensor<?x?x2x32xf32>, %k: tensor<?x?x2x32xf32>,
                   %v: tensor<?x?x2x16xf32>, %z: tensor<?x?x2x32xf32>,
                   %beta: tensor<?x?x2xf32>, %A_log: tensor<2xf32>,
                   %dt_bias: tensor<2x32xf32>) -> tensor<?x?x2x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x2x32xf32>, tensor<2x32xf32>, tensor<2xf32>) -> tensor<?x?x2x32xf32>
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x32xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x32x16xf32>)
  return %o : tensor<?x?x2x16xf32>
}

func.func @softplus(%q: tensor<?x?x2x32xf32>, %k: tensor<?x?x2x32xf32>,
                    %v: tensor<?x?x2x16xf32>, %z: tensor<?x?x2x32xf32>,
                    %beta: tensor<?x?x2xf32>, %A_log: tensor<2xf32>,
                    %dt_bias: tensor<2x32xf32>) -> tensor<?x?x2x16xf32> {
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x2x32xf32>, tensor<2x32xf32>, tensor<2xf32>) -> tensor<?x?x2x32xf32>
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x32xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x32x16xf32>)
  return %o : tensor<?x?x2x16xf32>
}
