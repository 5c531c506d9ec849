// KDA forward + backward at bench/kda's shape (H = 16, K = V = 128; batch
// and length dynamic), for bench/kda/bench_grad.py: the layer's forward as
// the model runs it (ALGORITHMS.md 1.1, 2.1) and its backward (1.7, 2.1,
// 1.2) given the output's adjoint, in one function:
//
//   q, k <- L2Norm(q), L2Norm(k);  g <- gate(z, A_log, dt_bias)
//   o    =  KDA(q, k, v, g, beta)                   (zero initial state)
//   dq, dk, dv, dz, dbeta, dA_log, ddt_bias  from  do
//
// kda_grad recomputes the chunk states from its inputs; nothing but the
// normalised q, k and the gate passes from the forward to the backward.
// @kda_train_bounded: g = -5 sigmoid(exp(A_log) (z + dt_bias)), proven safe
// for dense diagonal tiles; @kda_train_softplus: g = -exp(A_log)
// softplus(z + dt_bias), unbounded, so its diagonal tiles are guarded at run
// time (the per-position path where a tile's decay is strong).

func.func @kda_train_bounded(%q: tensor<?x?x16x128xf32>, %k: tensor<?x?x16x128xf32>,
    %v: tensor<?x?x16x128xf32>, %z: tensor<?x?x16x128xf32>, %beta: tensor<?x?x16xf32>,
    %A_log: tensor<16xf32>, %dt_bias: tensor<16x128xf32>, %do: tensor<?x?x16x128xf32>)
    -> (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
        tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16xf32>,
        tensor<16xf32>, tensor<16x128xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x16x128xf32>
  %kn = moe.l2_norm %k : tensor<?x?x16x128xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>) -> tensor<?x?x16x128xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
         tensor<?x?x16x128xf32>, tensor<?x?x16xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<?x16x128x128xf32>)
  %dqn, %dkn, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %qn, %kn, %v, %g, %beta
      output_adjoint(%do)
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
         tensor<?x?x16x128xf32>, tensor<?x?x16xf32>, tensor<?x?x16x128xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
          tensor<?x?x16x128xf32>, tensor<?x?x16xf32>, tensor<?x16x128x128xf32>)
  %dz, %ddt, %da = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %dt_bias, %A_log
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>)
  %dq = moe.l2_norm_grad %dqn, %q : tensor<?x?x16x128xf32>
  %dk = moe.l2_norm_grad %dkn, %k : tensor<?x?x16x128xf32>
  return %o, %dq, %dk, %dv, %dz, %dbeta, %da, %ddt
      : tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
        tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16xf32>,
        tensor<16xf32>, tensor<16x128xf32>
}

func.func @kda_train_softplus(%q: tensor<?x?x16x128xf32>, %k: tensor<?x?x16x128xf32>,
    %v: tensor<?x?x16x128xf32>, %z: tensor<?x?x16x128xf32>, %beta: tensor<?x?x16xf32>,
    %A_log: tensor<16xf32>, %dt_bias: tensor<16x128xf32>, %do: tensor<?x?x16x128xf32>)
    -> (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
        tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16xf32>,
        tensor<16xf32>, tensor<16x128xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x16x128xf32>
  %kn = moe.l2_norm %k : tensor<?x?x16x128xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>) -> tensor<?x?x16x128xf32>
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
         tensor<?x?x16x128xf32>, tensor<?x?x16xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<?x16x128x128xf32>)
  %dqn, %dkn, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %qn, %kn, %v, %g, %beta
      output_adjoint(%do)
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
         tensor<?x?x16x128xf32>, tensor<?x?x16xf32>, tensor<?x?x16x128xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
          tensor<?x?x16x128xf32>, tensor<?x?x16xf32>, tensor<?x16x128x128xf32>)
  %dz, %ddt, %da = moe.decay_gate_grad <softplus> %dg, %z, %dt_bias, %A_log
      : (tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>)
      -> (tensor<?x?x16x128xf32>, tensor<16x128xf32>, tensor<16xf32>)
  %dq = moe.l2_norm_grad %dqn, %q : tensor<?x?x16x128xf32>
  %dk = moe.l2_norm_grad %dkn, %k : tensor<?x?x16x128xf32>
  return %o, %dq, %dk, %dv, %dz, %dbeta, %da, %ddt
      : tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>,
        tensor<?x?x16x128xf32>, tensor<?x?x16x128xf32>, tensor<?x?x16xf32>,
        tensor<16xf32>, tensor<16x128xf32>
}
