// Gated MLA attention forward of the CPU and GPU back ends (H = 4,
// d_qk = 96, d_v = 64; batch and length dynamic). ALGORITHMS.md sections
// 3.1 and 3.2.
//
//   o = softmax(q k^T / sqrt(96) + causal mask) v      per batch and head
//   y = o * sigmoid(gate)
//
// moe-tile-attention lowers the moe.mla_attention op into the flash-style
// causal online softmax on query and key tiles; the log-sum-exp it also
// computes (kept for the backward pass) is not returned here.

func.func @mla_attention_forward(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
                                 %v: tensor<?x?x4x64xf32>, %gate: tensor<?x?x4x64xf32>)
    -> tensor<?x?x4x64xf32> {
  %o, %lse = moe.mla_attention %q, %k, %v gate(%gate)
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x4x?xf32>)
  return %o : tensor<?x?x4x64xf32>
}
