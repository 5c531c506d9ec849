func.func @rms_norm_dynamic_width(%x: tensor<?x?xf32>, %w: tensor<?xf32>) -> tensor<?x?xf32> {
  %y = moe.rms_norm %x, %w : tensor<?x?xf32>, tensor<?xf32>
  return %y : tensor<?x?xf32>
}
