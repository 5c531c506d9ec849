func.func @bounded(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>,
                   %v: tensor<?x?x2x32xf32>, %z: tensor<?x?x2x64xf32>,
                   %beta: tensor<?x?x2xf32>, %A_log: tensor<2xf32>,
                   %dt_bias: tensor<2x64xf32>) -> tensor<?x?x2x32xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x2x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x2x64xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x2x64xf32>, tensor<2x64xf32>, tensor<2xf32>) -> tensor<?x?x2x64xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>,
         tensor<?x?x2x64xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x32xf32>, tensor<?x2x64x32xf32>)
  return %o : tensor<?x?x2x32xf32>
}
