func.func @scalar(%x: tensor<4xf32>) -> tensor<4xf32> attributes {test.reverse_mode} {
  %c0 = arith.constant 0 : index
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.fill ins(%s : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
