func.func @rms_norm_bf16(%x: tensor<?x?x8xbf16>, %w: tensor<8xbf16>) -> tensor<?x?x8xbf16> {
  %y = moe.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<?x?x8xbf16>, tensor<8xbf16>
  return %y : tensor<?x?x8xbf16>
}
