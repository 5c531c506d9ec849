// @kda_forward of examples/kernels/kda.mlir with g_min = -8: with the pre
// reference and 16-row tiles the dense diagonal path would need
// e^(16 * 8) = e^128, beyond fp32's e^88.7.

func.func @kda_forward(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
                       %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>,
                       %beta: tensor<?x?x4xf32>, %A_log: tensor<4xf32>,
                       %dt_bias: tensor<4x64xf32>) -> tensor<?x?x4x64xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <bounded, g_min = -8.0> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return %o : tensor<?x?x4x64xf32>
}
