func.func @experts(%xp: tensor<?x16xf32>, %off: tensor<5xi64>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>,
    %wd: tensor<4x8x16xf32>, %dyp: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>,
        tensor<4x8x16xf32>) {
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %dyp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<5xi64>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<?x16xf32>)
      -> (tensor<?x16xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>,
          tensor<4x8x16xf32>)
  return %a, %b, %c, %d : tensor<?x16xf32>, tensor<4x16x8xf32>,
      tensor<4x16x8xf32>, tensor<4x8x16xf32>
}
