func.func @short_conv(%dy: tensor<?x?x32xf32>, %x: tensor<?x?x32xf32>, %w: tensor<32x4xf32>)
    -> tensor<?x?x32xf32> {
  %y = moe.short_conv %x, %w {silu, test.adjoints = array<i64: 0>} : tensor<?x?x32xf32>, tensor<32x4xf32>
  return %y : tensor<?x?x32xf32>
}
