func.func @no_op_rule(%x: tensor<4xf32>) -> tensor<6xf32> attributes {test.reverse_mode} {
  %zero = arith.constant 0.0 : f32
  %r = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %r : tensor<6xf32>
}
