func.func @mix(%b0: tensor<?x?x?xf32>, %b1: tensor<?x?x?xf32>,
    %w: tensor<?xf32>) -> tensor<?x?x?xf32> {
  %0 = moe.attn_res_mix %b0, %b1 query(%w)
      : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
