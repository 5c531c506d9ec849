func.func @dynamic_value(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x?xf32>, %g: tensor<?x?x2x8xf32>,
                         %b: tensor<?x?x2xf32>) -> tensor<?x?x2x?xf32> {
  %0:6 = moe.kda_grad %q, %q, %v, %g, %b output_adjoint(%v)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2xf32>, tensor<?x?x2x?xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x8xf32>,
          tensor<?x?x2xf32>, tensor<?x2x8x?xf32>)
  return %0#2 : tensor<?x?x2x?xf32>
}
