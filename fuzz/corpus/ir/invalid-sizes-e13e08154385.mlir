func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x?xf32>,
    %wk: tensor<16x?xf32>, %wv: tensor<16x?xf32>, %cq: tensor<?x4xf32>,
    %ck: tensor<?x4xf32>, %cv: tensor<?x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x?xf32>, %alog: tensor<?xf32>, %dtb: tensor<?x4xf32>,
    %wb: tensor<16x?xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x?xf32>,
    %on: tensor<4xf32>, %wo: tensor<?x16xf32>) {
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 4611686018427387904 : i64, head_dim = 4 : i64,
       value_dim = 4 : i64, gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x?xf32>, tensor<16x?xf32>,
         tensor<16x?xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>,
         tensor<16x4xf32>, tensor<4x?xf32>, tensor<?xf32>, tensor<?x4xf32>,
         tensor<16x?xf32>, tensor<16x4xf32>, tensor<4x?xf32>, tensor<4xf32>,
         tensor<?x16xf32>)
      -> tensor<?x?x16xf32>
  return
}
