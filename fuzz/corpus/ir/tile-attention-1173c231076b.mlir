func.func @dynamic_heads(%q: tensor<1x?x?x8xf32>, %k: tensor<1x?x?x8xf32>, %v: tensor<1x?x?x8xf32>)
    -> tensor<1x?x?x8xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>, tensor<1x?x?x8xf32>)
      -> (tensor<1x?x?x8xf32>, tensor<1x?x?xf32>)
  return %o : tensor<1x?x?x8xf32>
}
