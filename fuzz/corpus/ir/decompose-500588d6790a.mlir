func.func @kda_layer_bf16_softplus(%x: tensor<?x?x64xbf16>, %w: tensor<64x64xbf16>,
    %c: tensor<64x4xbf16>, %wfd: tensor<64x8xbf16>, %wfu: tensor<8x64xbf16>, %alog: tensor<2xf32>,
    %dtb: tensor<2x32xf32>, %wb: tensor<64x2xbf16>, %on: tensor<32xbf16>) -> tensor<?x?x64xbf16> {
  %y = moe.kda_layer %x q(%w) k(%w) v(%w) conv(%c, %c, %c)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wfd, %wfu) out_norm(%on) out(%w)
      {num_heads = 2 : i64, head_dim = 32 : i64, value_dim = 32 : i64,
       gate = #moe.decay_gate<softplus>}
      : (tensor<?x?x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>,
         tensor<64x4xbf16>, tensor<64x4xbf16>, tensor<64x4xbf16>, tensor<64x8xbf16>, tensor<8x64xbf16>,
         tensor<2xf32>, tensor<2x32xf32>, tensor<64x2xbf16>, tensor<64x8xbf16>, tensor<8x64xbf16>,
         tensor<32xbf16>, tensor<64x64xbf16>) -> tensor<?x?x64xbf16>
  return %y : tensor<?x?x64xbf16>
}
