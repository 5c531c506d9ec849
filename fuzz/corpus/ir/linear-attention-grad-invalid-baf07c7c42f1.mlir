func.func @key_shape(%q: tensor<2x?x4x64xf32>, %k: tensor<2x?x4x32xf32>, %v: tensor<2x?x4x32xf32>,
    %g: tensor<2x?x4x64xf32>, %beta: tensor<2x?x4xf32>, %do: tensor<2x?x4x32xf32>) {
  %0:6 = moe.kda_grad %q, %k, %v, %g, %beta output_adjoint(%do)
      : (tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
         tensor<2x?x4xf32>, tensor<2x?x4x32xf32>)
      -> (tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
          tensor<2x?x4xf32>, tensor<2x4x64x32xf32>)
  return
}
