// KDA forward with the head count dynamic (H = ?, K = 32, V = 16), the bounded
// and the softplus gate; the same math as examples/kernels/kda.mlir.

func.func @kda_forward(%q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>,
                       %v: tensor<?x?x?x16xf32>, %z: tensor<?x?x?x32xf32>,
                       %beta: tensor<?x?x?xf32>, %A_log: tensor<?xf32>,
                       %dt_bias: tensor<?x32xf32>) -> tensor<?x?x?x16xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x?x32xf32>
  %kn = moe.l2_norm %k : tensor<?x?x?x32xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x?x32xf32>, tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x?x?x32xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x16xf32>,
         tensor<?x?x?x32xf32>, tensor<?x?x?xf32>)
      -> (tensor<?x?x?x16xf32>, tensor<?x?x32x16xf32>)
  return %o : tensor<?x?x?x16xf32>
}

func.func @kda_forward_softplus(%q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>,
                                %v: tensor<?x?x?x16xf32>, %z: tensor<?x?x?x32xf32>,
                                %beta: tensor<?x?x?xf32>, %A_log: tensor<?xf32>,
                                %dt_bias: tensor<?x32xf32>) -> tensor<?x?x?x16xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x?x32xf32>
  %kn = moe.l2_norm %k : tensor<?x?x?x32xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x?x32xf32>, tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x?x?x32xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x16xf32>,
         tensor<?x?x?x32xf32>, tensor<?x?x?xf32>)
      -> (tensor<?x?x?x16xf32>, tensor<?x?x32x16xf32>)
  return %o : tensor<?x?x?x16xf32>
}
