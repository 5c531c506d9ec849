func.func @narrow_keys(%q: tensor<1x?x2x32xf32>, %k: tensor<1x?x2x32xf32>,
                       %v: tensor<1x?x2x32xf32>, %g: tensor<1x?x2x32xf32>,
                       %beta: tensor<1x?x2xf32>) -> tensor<1x?x2x32xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x?x2x32xf32>, tensor<1x?x2x32xf32>, tensor<1x?x2x32xf32>,
         tensor<1x?x2x32xf32>, tensor<1x?x2xf32>)
      -> (tensor<1x?x2x32xf32>, tensor<1x2x32x32xf32>)
  return %o : tensor<1x?x2x32xf32>
}
