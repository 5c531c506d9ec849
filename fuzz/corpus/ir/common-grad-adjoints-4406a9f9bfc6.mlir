func.func @decay_gate_no_a_log(%dg: tensor<2x3x4x16xf32>, %z: tensor<2x3x4x16xf32>, %b: tensor<4x16xf32>)
    -> tensor<2x3x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b {test.adjoints = array<i64: 0>}
      : (tensor<2x3x4x16xf32>, tensor<4x16xf32>) -> tensor<2x3x4x16xf32>
  return %g : tensor<2x3x4x16xf32>
}
