func.func @dynamic_value_dim(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %lse: tensor<?x2x?xf32>)
    -> tensor<?x?x2x8xf32> {
  %dq, %dk, %dv = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
         tensor<?x2x?xf32>, tensor<?x?x2x?xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>)
  return %dq : tensor<?x?x2x8xf32>
}
