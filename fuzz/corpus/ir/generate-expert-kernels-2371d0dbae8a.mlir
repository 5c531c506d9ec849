func.func @declined(%x: tensor<?x64xf32>, %off: tensor<17xi64>,
                    %wg: tensor<16x64x32xf32>, %wu: tensor<16x64x32xf32>,
                    %wd: tensor<16x32x64xf32>, %xb: tensor<?x96xbf16>,
                    %sg: tensor<96x128xbf16>, %su: tensor<96x128xbf16>,
                    %sd: tensor<128x96xbf16>, %xc: tensor<?x128xbf16>,
                    %tg: tensor<128x128xbf16>, %tu: tensor<128x128xbf16>,
                    %td: tensor<128x128xbf16>, %slot: tensor<?xi64>,
                    %w: tensor<?x4xf32>)
    -> (tensor<?x64xf32>, tensor<?x96xbf16>, tensor<?x128xbf16>, tensor<?x64xf32>) {
  %y = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
         tensor<16x64x32xf32>, tensor<16x32x64xf32>) -> tensor<?x64xf32>
  %s = moe.glu_ffn %xb, %sg, %su, %sd {activation = #moe.activation<swiglu>}
      : tensor<?x96xbf16>, tensor<96x128xbf16>, tensor<96x128xbf16>, tensor<128x96xbf16>
  %t = moe.glu_ffn %xc, %tg, %tu, %td {activation = #moe.activation<situ_glu, gate_beta = 4.0>}
      : tensor<?x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>
  %c = moe.combine %x, %slot, %w
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x64xf32>
  return %y, %s, %t, %c : tensor<?x64xf32>, tensor<?x96xbf16>, tensor<?x128xbf16>, tensor<?x64xf32>
}
