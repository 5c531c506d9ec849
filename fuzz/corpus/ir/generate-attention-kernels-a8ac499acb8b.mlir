func.func @lse(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>,
               %v: tensor<?x?x4x32xf32>)
    -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>) {
  %o, %lse = moe.mla_attention %q, %k, %v {scale = 0.5 : f64}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
}
