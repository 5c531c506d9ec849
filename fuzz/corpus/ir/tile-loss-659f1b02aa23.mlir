func.func @fused_grad(%x: tensor<?x8xbf16>, %w: tensor<20x8xf32>, %l: tensor<?xi64>,
    %lse: tensor<?xf32>, %d: tensor<f32>) -> (tensor<?x8xbf16>, tensor<20x8xf32>) {
  %dx, %dw = moe.linear_cross_entropy_grad %x, %w, %l, %lse, %d {ignore_index = -1 : i64}
      : (tensor<?x8xbf16>, tensor<20x8xf32>, tensor<?xi64>, tensor<?xf32>, tensor<f32>)
      -> (tensor<?x8xbf16>, tensor<20x8xf32>)
  return %dx, %dw : tensor<?x8xbf16>, tensor<20x8xf32>
}
