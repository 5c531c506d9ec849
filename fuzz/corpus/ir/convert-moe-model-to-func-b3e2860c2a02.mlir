moe.model @tiny(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %w = moe.param "embed" init <normal, std = 0.02> : tensor<8x4xf32>
  %h = moe.embedding %tokens, %w : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %n = moe.param "norm" init <ones> : tensor<4xf32>
  %x = moe.rms_norm %h, %n : tensor<?x?x4xf32>, tensor<4xf32>
  %s = moe.param "scalar" init <zeros> : tensor<f32>
  %b = moe.param "bf16" init <zeros> : tensor<4xbf16>
  %loss = moe.lm_head %x, %w, %labels
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
