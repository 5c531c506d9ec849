func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  %0:2 = moe.decay_gate_grad <softplus> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}
