func.func @many_experts(%x: tensor<?x128xbf16>, %off: tensor<1041xi64>,
                        %wg: tensor<1040x128x64xbf16>, %wu: tensor<1040x128x64xbf16>,
                        %wd: tensor<1040x64x128xbf16>) -> tensor<?x128xbf16> {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x128xbf16>, tensor<1041xi64>, tensor<1040x128x64xbf16>,
         tensor<1040x128x64xbf16>, tensor<1040x64x128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
