// Variants of examples/kernels/mla.mlir (H = 4, d_qk = 96, d_v = 64) for
// mla-attention.test: the same gated attention returning the log-sum-exp as
// well, and the attention without a gate.

func.func @mla_attention_lse(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
                             %v: tensor<?x?x4x64xf32>, %gate: tensor<?x?x4x64xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%gate)
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x?x4x64xf32>, tensor<?x4x?xf32>
}

func.func @mla_attention_no_gate(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
                                 %v: tensor<?x?x4x64xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x?x4x64xf32>, tensor<?x4x?xf32>
}
