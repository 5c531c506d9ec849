func.func @f(%h: tensor<2x3x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<2x4xi32>) {
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<2x3x64xf32>, tensor<256x64xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x3xf32>)
  return
}
