// Functions of mla-grad*.test: the forward moe.mla_attention and its adjoint
// moe.mla_attention_grad (from the forward's output and log-sum-exp) for an
// output adjoint DY; D_qk = 96, D_v = 64, 4 heads. grad_gated has a gate and
// the default scale 96^-1/2, grad_plain no gate and scale = 0.2.

func.func @grad_gated(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
                      %v: tensor<?x?x4x64xf32>, %g: tensor<?x?x4x64xf32>,
                      %dy: tensor<?x?x4x64xf32>)
    -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %dy
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>,
         tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x64xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>,
                              tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>
}

func.func @grad_plain(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
                      %v: tensor<?x?x4x64xf32>, %dy: tensor<?x?x4x64xf32>)
    -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.2 : f64}
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
  %dq, %dk, %dv = moe.mla_attention_grad %q, %k, %v, %o, %lse, %dy {scale = 0.2 : f64}
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x4x?xf32>, tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>)
  return %dq, %dk, %dv : tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>,
                         tensor<?x?x4x64xf32>
}
