// bench/mla/mla_train.mlir - the gated MLA attention forward and backward
// that bench/mla/bench_grad.py times (issue #14's "MLA forward + backward"
// floor): the real model's shapes (H = 32, d_qk = 192, d_v = 128; batch and
// length dynamic), the default scale 192^-1/2, fp32 operands.
// bench/mla/compile_grad.sh compiles it as it is and with bf16 q, k, v,
// gate, output, output adjoint and gradients (the log-sum-exp stays fp32).
//
//   o = softmax(q k^T / sqrt(192) + causal mask) v, y = o * sigmoid(gate)
//
// Two entry points, so that the forward and the backward are timed apart:
// @mla_train_forward returns y and the log-sum-exp [B, H, T] that the
// backward needs; @mla_train_backward takes them with the output adjoint dy
// and returns dq, dk, dv and dgate (moe.mla_attention_grad: the gated
// output, never divided by the sigmoid).

func.func @mla_train_forward(%q: tensor<?x?x32x192xf32>, %k: tensor<?x?x32x192xf32>,
                             %v: tensor<?x?x32x128xf32>, %gate: tensor<?x?x32x128xf32>)
    -> (tensor<?x?x32x128xf32>, tensor<?x32x?xf32>) {
  %y, %lse = moe.mla_attention %q, %k, %v gate(%gate)
      : (tensor<?x?x32x192xf32>, tensor<?x?x32x192xf32>, tensor<?x?x32x128xf32>,
         tensor<?x?x32x128xf32>) -> (tensor<?x?x32x128xf32>, tensor<?x32x?xf32>)
  return %y, %lse : tensor<?x?x32x128xf32>, tensor<?x32x?xf32>
}

func.func @mla_train_backward(%q: tensor<?x?x32x192xf32>, %k: tensor<?x?x32x192xf32>,
                              %v: tensor<?x?x32x128xf32>, %gate: tensor<?x?x32x128xf32>,
                              %y: tensor<?x?x32x128xf32>, %lse: tensor<?x32x?xf32>,
                              %dy: tensor<?x?x32x128xf32>)
    -> (tensor<?x?x32x192xf32>, tensor<?x?x32x192xf32>, tensor<?x?x32x128xf32>,
        tensor<?x?x32x128xf32>) {
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%gate), %y, %lse, %dy
      : (tensor<?x?x32x192xf32>, tensor<?x?x32x192xf32>, tensor<?x?x32x128xf32>,
         tensor<?x?x32x128xf32>, tensor<?x?x32x128xf32>, tensor<?x32x?xf32>,
         tensor<?x?x32x128xf32>)
      -> (tensor<?x?x32x192xf32>, tensor<?x?x32x192xf32>, tensor<?x?x32x128xf32>,
          tensor<?x?x32x128xf32>)
  return %dq, %dk, %dv, %dg : tensor<?x?x32x192xf32>, tensor<?x?x32x192xf32>,
                              tensor<?x?x32x128xf32>, tensor<?x?x32x128xf32>
}
