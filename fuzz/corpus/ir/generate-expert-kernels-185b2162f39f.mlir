func.func @grouped(%x: tensor<?x256xbf16>, %off: tensor<9xi64>,
                   %wg: tensor<8x256x128xbf16>, %wu: tensor<8x256x128xbf16>,
                   %wd: tensor<8x128x256xbf16>) -> tensor<?x256xbf16> {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x256xbf16>, tensor<9xi64>, tensor<8x256x128xbf16>,
         tensor<8x256x128xbf16>, tensor<8x128x256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
