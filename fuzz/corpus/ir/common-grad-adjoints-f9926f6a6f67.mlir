func.func @norms(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>, %w: tensor<8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %y = moe.l2_norm %x {epsilon = 1.0e-3 : f64, test.adjoints = array<i64: 0>} : tensor<?x8xf32>
  %r = moe.rms_norm %x, %w {epsilon = 1.0e-4 : f64, test.adjoints = array<i64: 0>} : tensor<?x8xf32>, tensor<8xf32>
  return %y, %r : tensor<?x8xf32>, tensor<?x8xf32>
}
