func.func @query_rank(%q: tensor<?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}
