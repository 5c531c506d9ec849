func.func @f(%h: tensor<?x?x64xf32>, %w: tensor<256x32xf32>, %labels: tensor<?x?xi32>) {
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<?x?x64xf32>, tensor<256x32xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return
}
