func.func @bounded(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                   %z: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %b: tensor<2x8xf32>)
    -> tensor<?x?x2x4xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b
      : (tensor<?x?x2x8xf32>, tensor<2x8xf32>) -> tensor<?x?x2x8xf32>
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x8x4xf32>)
  return %o : tensor<?x?x2x4xf32>
}
