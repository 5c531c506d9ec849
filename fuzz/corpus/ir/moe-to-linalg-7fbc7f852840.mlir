func.func @decay_gate_bounded(%z: tensor<?x?x4x8xbf16>, %b: tensor<4x8xf32>, %a: tensor<4xf32>) -> tensor<?x?x4x8xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %b, %a
      : (tensor<?x?x4x8xbf16>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4x8xf32>
  return %g : tensor<?x?x4x8xf32>
}
