func.func @gated(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                 %g: tensor<?x?x2x4xf32>, %o: tensor<?x?x2x4xf32>, %lse: tensor<?x2x?xf32>,
                 %dy: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>) {
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %dy
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>,
         tensor<?x?x2x4xf32>, tensor<?x2x?xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
}
