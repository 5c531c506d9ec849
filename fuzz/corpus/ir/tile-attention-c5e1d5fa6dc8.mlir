func.func @no_gate_bf16(%q: tensor<3x6x2x8xbf16>, %k: tensor<3x6x2x8xbf16>, %v: tensor<3x6x2x4xbf16>)
    -> (tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.5 : f64}
      : (tensor<3x6x2x8xbf16>, tensor<3x6x2x8xbf16>, tensor<3x6x2x4xbf16>)
      -> (tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>)
  return %o, %lse : tensor<3x6x2x4xbf16>, tensor<3x2x6xf32>
}
