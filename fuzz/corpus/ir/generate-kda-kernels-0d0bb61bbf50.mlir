func.func @unfused(%q: tensor<2x?x3x64xf32>, %k: tensor<2x?x3x64xf32>,
                   %v: tensor<2x?x3x64xf32>, %g: tensor<2x?x3x64xf32>,
                   %beta: tensor<2x?x3xf32>)
    -> (tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>) {
  %o, %s = moe.kda %q, %k, %v, %g, %beta {state_layout = #moe.state_layout<value_major>}
      : (tensor<2x?x3x64xf32>, tensor<2x?x3x64xf32>, tensor<2x?x3x64xf32>,
         tensor<2x?x3x64xf32>, tensor<2x?x3xf32>)
      -> (tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>)
  return %o, %s : tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>
}
