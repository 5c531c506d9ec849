// moe.kda_grad at kimi-tiny's head shape (H = 4, K = V = 64) for the GPU
// suite (scripts/gpu-test.sh): as test/Integration/CPU/kda-grad.mlir (which
// is H = 2, K = 32, V = 16), q and k are L2-normalised and the log decay
// comes from a decay gate, so that the decay-bound analysis of
// -moe-tile-linear-attention sees the gate, as it does in the model (the
// suite's fp64 reference makes the same operands with moe-reference l2_norm
// and decay_gate).
//
// Results: dq, dk, dv, dg, dbeta, ds0.

// The bounded gate (g_min = -5, kimi-tiny's): diagonal tiles proven safe,
// dense.
func.func @kda_grad_bounded(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
    %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>,
    %A_log: tensor<4xf32>, %dt_bias: tensor<4x64xf32>, %s0: tensor<?x4x64x64xf32>,
    %do: tensor<?x?x4x64xf32>, %ds: tensor<?x4x64x64xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %qn, %kn, %v, %g, %beta
      initial_state(%s0) output_adjoint(%do) final_state_adjoint(%ds)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0
      : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>
}

// The softplus gate: unbounded, so each diagonal tile is guarded at run time
// (mild decays take the dense path, strong ones the per-position path).
func.func @kda_grad_softplus(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
    %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>,
    %A_log: tensor<4xf32>, %dt_bias: tensor<4x64xf32>, %s0: tensor<?x4x64x64xf32>,
    %do: tensor<?x?x4x64xf32>, %ds: tensor<?x4x64x64xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %qn, %kn, %v, %g, %beta
      initial_state(%s0) output_adjoint(%do) final_state_adjoint(%ds)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0
      : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>
}

// Value-major states ([B, H, V, K]), an explicit scale, no initial state
// and no final-state adjoint; the bounded gate.
func.func @kda_grad_value_major(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
    %v: tensor<?x?x4x64xf32>, %z: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>,
    %A_log: tensor<4xf32>, %dt_bias: tensor<4x64xf32>, %do: tensor<?x?x4x64xf32>)
    -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x4x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x4x64xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x4x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<?x?x4x64xf32>
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %qn, %kn, %v, %g, %beta
      output_adjoint(%do)
      {scale = 0.3 : f64, state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0
      : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
        tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>
}
