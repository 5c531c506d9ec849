func.func @value_major_state(%q: tensor<3x?x2x8xf32>, %k: tensor<3x?x2x8xf32>,
    %v: tensor<3x?x2x4xf32>, %g: tensor<3x?x2x8xf32>, %beta: tensor<3x?x2xf32>,
    %s0: tensor<3x2x4x8xf32>) -> (tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>) {
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      {scale = 0.25 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<3x?x2x8xf32>, tensor<3x?x2x8xf32>, tensor<3x?x2x4xf32>, tensor<3x?x2x8xf32>,
         tensor<3x?x2xf32>, tensor<3x2x4x8xf32>) -> (tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>)
  return %o, %s : tensor<3x?x2x4xf32>, tensor<3x2x4x8xf32>
}
