moe.model @no_rule(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %a = moe.param "a" init <normal, std = 0.02> : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<6xf32> to tensor<8xf32>
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%padded : tensor<8xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %acc: f32):
    %r = arith.addf %acc, %av : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
