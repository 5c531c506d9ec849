func.func @dynamic_key_dim(%q: tensor<?x?x4x?xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x?xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x?xf32>, tensor<?x?x4x?xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x?xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x?xf32>, tensor<?x?x4x?xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x?xf32>,
          tensor<?x?x4xf32>, tensor<?x4x?x32xf32>)
  return
}
