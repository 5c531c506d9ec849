func.func @kda_layer(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>,
    %wv: tensor<64x32xf32>, %cq: tensor<64x4xf32>, %ck: tensor<64x4xf32>, %cv: tensor<32x4xf32>,
    %wfd: tensor<64x8xf32>, %wfu: tensor<8x64xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x32xf32>,
    %wb: tensor<64x2xf32>, %wgd: tensor<64x8xf32>, %wgu: tensor<8x32xf32>, %on: tensor<16xf32>,
    %wo: tensor<32x64xf32>) -> tensor<?x?x64xf32> {
  %y = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu) out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 32 : i64, value_dim = 16 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>,
       state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>,
         tensor<64x4xf32>, tensor<64x4xf32>, tensor<32x4xf32>, tensor<64x8xf32>, tensor<8x64xf32>,
         tensor<2xf32>, tensor<2x32xf32>, tensor<64x2xf32>, tensor<64x8xf32>, tensor<8x32xf32>,
         tensor<16xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
