func.func @explicit(%z: tensor<?x?x50xf16>, %l: tensor<?x?xi32>, %d: tensor<f32>)
    -> tensor<?x?x50xf16> {
  %dz = moe.cross_entropy_grad %z, %l, %d
      : (tensor<?x?x50xf16>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x50xf16>
  return %dz : tensor<?x?x50xf16>
}
