// Used by attention-grad-adjoints.mlir: an adjoint for the lse results,
// which have none.

func.func @mla(%q: tensor<?x?x2x24xf32>, %v: tensor<?x?x2x16xf32>,
               %dlse: tensor<?x2x?xf32>) -> tensor<?x?x2x16xf32> {
  %o, %lse = moe.mla_attention %q, %q, %v {test.adjoints = array<i64: 1, 2>}
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x?x2x16xf32>
}

// -----

func.func @lm_loss(%x: tensor<?x?x12xf32>, %w: tensor<50x12xf32>,
                   %labels: tensor<?x?xi32>, %dlse: tensor<?x?xf32>) -> tensor<f32> {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels {test.adjoints = array<i64: -1, 3>}
      : (tensor<?x?x12xf32>, tensor<50x12xf32>, tensor<?x?xi32>)
      -> (tensor<f32>, tensor<?x?xf32>)
  return %loss : tensor<f32>
}
