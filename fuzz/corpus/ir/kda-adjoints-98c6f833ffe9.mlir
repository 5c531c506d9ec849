func.func @output_adjoint_only(%q: tensor<3x?x2x8xbf16>, %k: tensor<3x?x2x8xbf16>,
    %v: tensor<3x?x2x4xbf16>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xbf16>,
    %do: tensor<3x?x2x4xbf16>) -> tensor<3x?x2x4xbf16> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      {state_layout = #moe.state_layout<value_major>, test.adjoints = array<i64: 5, -1>}
      : (tensor<3x?x2x8xbf16>, tensor<3x?x2x8xbf16>, tensor<3x?x2x4xbf16>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xbf16>) -> (tensor<3x?x2x4xbf16>, tensor<3x2x4x8xf32>)
  return %o : tensor<3x?x2x4xbf16>
}
