func.func @kda_grad_full(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
    %v: tensor<?x?x4x32xf32>, %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>,
    %s0: tensor<?x4x64x32xf32>, %do: tensor<?x?x4x32xf32>, %ds: tensor<?x4x64x32xf32>)
    -> tensor<?x4x64x32xf32> {
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta
      initial_state(%s0) output_adjoint(%do) final_state_adjoint(%ds)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x32xf32>,
         tensor<?x?x4x32xf32>, tensor<?x4x64x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>,
          tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return %ds0 : tensor<?x4x64x32xf32>
}

func.func @kda_grad_minimal(%q: tensor<2x7x1x8xbf16>, %v: tensor<2x7x1x4xbf16>,
    %g: tensor<2x7x1x8xf32>, %beta: tensor<2x7x1xbf16>, %do: tensor<2x7x1x4xbf16>)
    -> tensor<2x7x1x8xf32> {
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %q, %v, %g, %beta
      output_adjoint(%do) {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<2x7x1x8xbf16>, tensor<2x7x1x8xbf16>, tensor<2x7x1x4xbf16>,
         tensor<2x7x1x8xf32>, tensor<2x7x1xbf16>, tensor<2x7x1x4xbf16>)
      -> (tensor<2x7x1x8xbf16>, tensor<2x7x1x8xbf16>, tensor<2x7x1x4xbf16>,
          tensor<2x7x1x8xf32>, tensor<2x7x1xbf16>, tensor<2x1x4x8xf32>)
  return %dg : tensor<2x7x1x8xf32>
}
