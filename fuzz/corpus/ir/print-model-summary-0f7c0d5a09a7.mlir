moe.model @tied(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
  %loss = moe.lm_head %h, %table, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

moe.model @untied(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
  %head = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %loss = moe.lm_head %h, %head, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
