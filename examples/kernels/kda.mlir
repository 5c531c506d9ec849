// KDA forward kernels of the CPU and GPU back ends (H = 4, K = V = 64;
// batch and length dynamic). ALGORITHMS.md sections 1.1 and 2.1.
//
//   q, k <- L2Norm(q), L2Norm(k)            (eps 1e-6)
//   g    <- gate(z, A_log, dt_bias)         (per head and channel, <= 0)
//   o_t  =  S_t^T (s q_t),  s = 64^-1/2,  zero initial state,
//           with the updated state S_t of the gated delta rule.
//
// @kda_forward uses the bounded gate g = -5 sigmoid(exp(A_log[h]) (z + b)):
// the decay-bound analysis proves its diagonal tiles safe.
// @kda_forward_softplus uses g = -exp(A_log[h]) softplus(z + b): unbounded,
// so its diagonal tiles are guarded at run time.

func.func @kda_forward(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
                       %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>,
                       %beta: tensor<?x?x4xf32>, %A_log: tensor<4xf32>,
                       %dt_bias: tensor<4x64xf32>) -> tensor<?x?x4x64xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return %o : tensor<?x?x4x64xf32>
}

func.func @kda_forward_softplus(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
                                %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>,
                                %beta: tensor<?x?x4xf32>, %A_log: tensor<4xf32>,
                                %dt_bias: tensor<4x64xf32>) -> tensor<?x?x4x64xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return %o : tensor<?x?x4x64xf32>
}
