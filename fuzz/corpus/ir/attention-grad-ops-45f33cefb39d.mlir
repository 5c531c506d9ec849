func.func @linear_cross_entropy(%h: tensor<?x?x64xf32>, %w: tensor<256x64xf32>,
    %labels: tensor<?x?xi32>, %h2: tensor<8x64xbf16>, %w2: tensor<300x64xbf16>,
    %labels2: tensor<8xi64>) {
  %loss, %lse = moe.linear_cross_entropy %h, %w, %labels {ignore_index = -100 : i64}
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>)
      -> (tensor<f32>, tensor<?x?xf32>)
  %loss2, %lse2 = moe.linear_cross_entropy %h2, %w2, %labels2 {ignore_index = -1 : i64}
      : (tensor<8x64xbf16>, tensor<300x64xbf16>, tensor<8xi64>)
      -> (tensor<f32>, tensor<8xf32>)
  return
}

func.func @linear_cross_entropy_grad(%h: tensor<?x?x64xf32>, %w: tensor<256x64xf32>,
    %labels: tensor<?x?xi32>, %lse: tensor<?x?xf32>, %d: tensor<f32>) {
  %dh, %dw = moe.linear_cross_entropy_grad %h, %w, %labels, %lse, %d {ignore_index = -1 : i64}
      : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<f32>)
      -> (tensor<?x?x64xf32>, tensor<256x64xf32>)
  return
}

func.func @cross_entropy_grad(%z: tensor<?x?x50xf16>, %labels: tensor<?x?xi32>,
    %d: tensor<f32>) {
  %dz = moe.cross_entropy_grad %z, %labels, %d
      : (tensor<?x?x50xf16>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x50xf16>
  return
}

func.func @mla_attention_grad(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x4x96xf32>,
    %v: tensor<?x?x4x64xf32>, %g: tensor<?x?x4x64xf32>, %o: tensor<?x?x4x64xf32>,
    %lse: tensor<?x4x?xf32>, %do: tensor<?x?x4x64xf32>,
    %q2: tensor<2x5x4x96xbf16>, %v2: tensor<2x5x4x64xbf16>, %lse2: tensor<2x4x5xf32>) {
  %dq, %dk, %dv, %dg = moe.mla_attention_grad %q, %k, %v gate(%g), %o, %lse, %do
      : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>,
         tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x64xf32>)
  %dq2, %dk2, %dv2 = moe.mla_attention_grad %q2, %q2, %v2, %v2, %lse2, %v2 {scale = 0.125 : f64}
      : (tensor<2x5x4x96xbf16>, tensor<2x5x4x96xbf16>, tensor<2x5x4x64xbf16>,
         tensor<2x5x4x64xbf16>, tensor<2x4x5xf32>, tensor<2x5x4x64xbf16>)
      -> (tensor<2x5x4x96xbf16>, tensor<2x5x4x96xbf16>, tensor<2x5x4x64xbf16>)
  return
}
