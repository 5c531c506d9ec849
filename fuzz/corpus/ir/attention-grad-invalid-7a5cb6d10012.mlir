func.func @f(%h: tensor<64xf32>, %w: tensor<256x64xf32>, %labels: tensor<i32>) {
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<64xf32>, tensor<256x64xf32>, tensor<i32>) -> (tensor<f32>, tensor<f32>)
  return
}
