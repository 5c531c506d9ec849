moe.model @m(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %e = moe.param "embed" init <normal, std = 0.02> : tensor<8x4xf32>
  %h = moe.embedding %tokens, %e : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %w = moe.param "head" init <normal, std = 0.02> : tensor<8x4xf32>
  %loss = moe.lm_head %h, %w, %labels
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
