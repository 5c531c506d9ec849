func.func @routed_backward(%x: tensor<?x64xf32>, %wr: tensor<16x64xf32>,
    %idx: tensor<?x4xi64>, %dw: tensor<?x4xf32>, %dxp: tensor<?x64xf32>,
    %slot: tensor<?xi64>, %off: tensor<17xi64>, %wg: tensor<16x64x32xf32>,
    %wu: tensor<16x64x32xf32>, %wd: tensor<16x32x64xf32>,
    %w: tensor<?x4xf32>, %dy: tensor<?x64xf32>) {
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 16, top_k = 4, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x64xf32>, tensor<16x64xf32>, tensor<?x4xi64>, tensor<?x4xf32>)
      -> (tensor<?x64xf32>, tensor<16x64xf32>)
  %dx2 = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xi64>) -> tensor<?x64xf32>
  %a, %b, %c, %d = moe.expert_ffn_grad %dxp, %off, %wg, %wu, %wd, %dxp
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x64xf32>, tensor<17xi64>, tensor<16x64x32xf32>,
         tensor<16x64x32xf32>, tensor<16x32x64xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<16x64x32xf32>, tensor<16x64x32xf32>,
          tensor<16x32x64xf32>)
  %e, %f = moe.combine_grad %dxp, %slot, %w, %dy
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<?x4xf32>)
  return
}

func.func @dense_backward(%x: tensor<?x?x64xbf16>, %wg: tensor<64x128xbf16>,
    %wu: tensor<64x128xbf16>, %wd: tensor<128x64xbf16>,
    %dy: tensor<?x?x64xbf16>) {
  %dx, %dwg, %dwu, %dwd = moe.glu_ffn_grad %x, %wg, %wu, %wd, %dy
      {activation = #moe.activation<swiglu>}
      : (tensor<?x?x64xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>,
         tensor<128x64xbf16>, tensor<?x?x64xbf16>)
      -> (tensor<?x?x64xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>,
          tensor<128x64xbf16>)
  return
}
