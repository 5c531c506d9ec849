func.func @dynamic_vocab(%x: tensor<?x8xf32>, %w: tensor<?x8xf32>, %l: tensor<?xi32>)
    -> tensor<f32> {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %l
      : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xi32>) -> (tensor<f32>, tensor<?xf32>)
  return %loss : tensor<f32>
}
