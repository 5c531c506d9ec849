func.func @dense(%x: tensor<?x?x16xbf16>, %wg: tensor<16x8xbf16>,
    %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>, %dy: tensor<?x?x16xbf16>)
    -> (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
        tensor<8x16xbf16>) {
  %a, %b, %c, %d = moe.glu_ffn_grad %x, %wg, %wu, %wd, %dy
      {activation = #moe.activation<situ_glu, gate_beta = 4.0>}
      : (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
         tensor<8x16xbf16>, tensor<?x?x16xbf16>)
      -> (tensor<?x?x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>,
          tensor<8x16xbf16>)
  return %a, %b, %c, %d : tensor<?x?x16xbf16>, tensor<16x8xbf16>,
      tensor<16x8xbf16>, tensor<8x16xbf16>
}
