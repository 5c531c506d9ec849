func.func @decay_gate(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xbf16>, %b: tensor<4x16xf32>, %a: tensor<4xf32>)
    -> tensor<?x?x4x16xf32> {
  %g = moe.decay_gate <softplus> %z, %b, %a {test.adjoints = array<i64: 0>}
      : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}
