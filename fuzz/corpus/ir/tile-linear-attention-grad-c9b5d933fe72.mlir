func.func @value_major_bf16(%q: tensor<3x?x2x8xbf16>, %k: tensor<3x?x2x8xbf16>,
    %v: tensor<3x?x2x4xbf16>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xf32>,
    %s0: tensor<3x2x4x8xf32>, %do: tensor<3x?x2x4xbf16>, %ds: tensor<3x2x4x8xf32>)
    -> (tensor<3x?x2x8xbf16>, tensor<3x?x2xf32>, tensor<3x2x4x8xf32>) {
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta initial_state(%s0)
      output_adjoint(%do) final_state_adjoint(%ds)
      {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xf32>, tensor<3x2x4x8xf32>, tensor<3x?x2x4xbf16>, tensor<3x2x4x8xf32>)
      -> (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
          tensor<3x?x2xf32>, tensor<3x2x4x8xf32>)
  return %dq, %dbeta, %ds0 : tensor<3x?x2x8xbf16>, tensor<3x?x2xf32>, tensor<3x2x4x8xf32>
}
