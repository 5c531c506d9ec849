func.func @softplus(%q: tensor<?x?x1x128xf32>, %k: tensor<?x?x1x128xf32>,
                    %v: tensor<?x?x1x128xf32>, %z: tensor<?x?x1x128xf32>,
                    %beta: tensor<?x?x1xf32>, %A_log: tensor<1xf32>,
                    %dt_bias: tensor<1x128xf32>)
    -> (tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x1x128xf32>
  %kn = moe.l2_norm %k : tensor<?x?x1x128xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x1x128xf32>, tensor<1x128xf32>, tensor<1xf32>) -> tensor<?x?x1x128xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>,
         tensor<?x?x1x128xf32>, tensor<?x?x1xf32>)
      -> (tensor<?x?x1x128xf32>, tensor<?x1x128x128xf32>)
  return %o, %qn : tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>
}
