func.func @l2_norm(%x: tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32> {
  %y = moe.l2_norm %x : tensor<?x?x4x8xf32>
  return %y : tensor<?x?x4x8xf32>
}
