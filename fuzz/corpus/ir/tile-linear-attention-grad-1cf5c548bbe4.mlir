func.func @guarded(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x4xf32>,
                   %g: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %do: tensor<?x?x2x4xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
        tensor<?x?x2xf32>, tensor<?x2x8x4xf32>) {
  %dq, %dk, %dv, %dg, %dbeta, %ds0 = moe.kda_grad %q, %k, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x?x2x4xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?x2xf32>, tensor<?x2x8x4xf32>)
  return %dq, %dk, %dv, %dg, %dbeta, %ds0 : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>,
      tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x2x8x4xf32>
}
