func.func @all_static(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = moe.rms_norm %x, %w : tensor<4x16xf32>, tensor<16xf32>
  return %0 : tensor<4x16xf32>
}
