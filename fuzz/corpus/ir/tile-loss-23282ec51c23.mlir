func.func @fused(%x: tensor<?x?x8xf32>, %w: tensor<20x8xf32>, %l: tensor<?x?xi32>)
    -> (tensor<f32>, tensor<?x?xf32>) {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %l
      : (tensor<?x?x8xf32>, tensor<20x8xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return %loss, %lse : tensor<f32>, tensor<?x?xf32>
}
