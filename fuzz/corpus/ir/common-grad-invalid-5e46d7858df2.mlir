func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<2xf32>) {
  %0:3 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<2xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<2xf32>)
  return
}
