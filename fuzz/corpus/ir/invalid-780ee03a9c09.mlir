moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}
