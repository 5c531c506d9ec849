func.func @decay_gate_grad(%dg: tensor<?x?x4x16xf32>, %dg2: tensor<2x3x4x16xf32>,
                           %z: tensor<?x?x4x16xbf16>, %b: tensor<4x16xf32>,
                           %a: tensor<4xf32>) {
  %0:3 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
  %1:2 = moe.decay_gate_grad <bounded, g_min = -3.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xbf16>, tensor<4x16xf32>)
  %2:3 = moe.decay_gate_grad <softplus> %dg2, %z, %b, %a
      : (tensor<2x3x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xbf16>, tensor<4x16xf32>, tensor<4xf32>)
  return
}

func.func @l2_norm_grad(%dy: tensor<?x?x4x64xf32>, %x: tensor<?x?x4x64xf32>) {
  %0 = moe.l2_norm_grad %dy, %x : tensor<?x?x4x64xf32>
  %1 = moe.l2_norm_grad %dy, %x {epsilon = 1.0e-3 : f64} : tensor<?x?x4x64xf32>
  return
}

func.func @short_conv_grad(%dy: tensor<?x?x128xf32>, %x: tensor<?x?x128xf32>,
                           %w: tensor<128x4xf32>) {
  %0:2 = moe.short_conv_grad %dy, %x, %w {silu} : tensor<?x?x128xf32>, tensor<128x4xf32>
  %1:2 = moe.short_conv_grad %dy, %x, %w : tensor<?x?x128xf32>, tensor<128x4xf32>
  return
}

func.func @rms_norm_grad(%dy: tensor<?x?x64xf32>, %x: tensor<?x?x64xf32>,
                         %w: tensor<64xf32>) {
  %0:2 = moe.rms_norm_grad %dy, %x, %w : tensor<?x?x64xf32>, tensor<64xf32>
  %1:2 = moe.rms_norm_grad %dy, %x, %w {epsilon = 1.0e-4 : f64} : tensor<?x?x64xf32>, tensor<64xf32>
  return
}

func.func @embedding_grad(%dh: tensor<?x?x64xf32>, %tokens: tensor<?x?xi32>,
                          %table: tensor<256x64xf32>, %dh1: tensor<5x64xf32>,
                          %ids: tensor<5xi64>, %table1: tensor<?x64xf32>) {
  %0 = moe.embedding_grad %dh, %tokens, %table
      : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<256x64xf32>
  %1 = moe.embedding_grad %dh1, %ids, %table1
      : tensor<5x64xf32>, tensor<5xi64>, tensor<?x64xf32>
  return
}

func.func @attn_res_mix_grad(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>,
                             %b1: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  %0:3 = moe.attn_res_mix_grad %dh, %b0, %b1 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
  %1:2 = moe.attn_res_mix_grad %dh, %b0 query(%u) {epsilon = 1.0e-3 : f64}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<64xf32>)
  return
}
