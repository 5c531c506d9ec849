func.func @gated(%q: tensor<?x?x2x96xf32>, %k: tensor<?x?x2x96xf32>,
                 %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x64xf32>)
    -> tensor<?x?x2x64xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>,
         tensor<?x?x2x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x64xf32>
}
