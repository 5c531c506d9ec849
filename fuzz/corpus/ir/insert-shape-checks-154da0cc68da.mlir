func.func @static_reference(%q: tensor<2x8x2x16xf32>, %k: tensor<?x8x2x16xf32>,
    %v: tensor<2x8x2x8xf32>, %g: tensor<2x8x2x16xf32>,
    %beta: tensor<2x8x2xf32>) -> tensor<2x8x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<2x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<2x8x2x8xf32>,
         tensor<2x8x2x16xf32>, tensor<2x8x2xf32>)
      -> (tensor<2x8x2x8xf32>, tensor<2x2x16x8xf32>)
  return %o : tensor<2x8x2x8xf32>
}
