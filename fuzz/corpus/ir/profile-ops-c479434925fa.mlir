func.func @two_kinds(%h: tensor<?x?x64xf32>, %w: tensor<64xf32>,
                     %head: tensor<256x64xf32>, %labels: tensor<?x?xi32>)
    -> tensor<f32> {
  %n = moe.rms_norm %h, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %s = arith.addf %n, %h : tensor<?x?x64xf32>
  %m = moe.rms_norm %s, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %loss = moe.lm_head %m, %head, %labels
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
