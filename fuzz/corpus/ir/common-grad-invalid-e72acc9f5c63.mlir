func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x8xf32>) {
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x8xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x8xf32>)
  return
}
