// bench/moe/experts.mlir - the routed experts of the issue's MoE layer
// alone, for bench/moe/experts_bench.py: a grouped SwiGLU FFN over
// expert-sorted rows (d = 2048, E = 64 experts of width F = 1024, bf16),
// which -moe-generate-expert-kernels turns into two grouped tensor-core
// GEMMs.
func.func @experts(%xp: tensor<?x2048xbf16>, %off: tensor<65xi64>,
                   %wg: tensor<64x2048x1024xbf16>, %wu: tensor<64x2048x1024xbf16>,
                   %wd: tensor<64x1024x2048xbf16>) -> tensor<?x2048xbf16> {
  %y = moe.expert_ffn %xp, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x2048xbf16>, tensor<65xi64>, tensor<64x2048x1024xbf16>,
         tensor<64x2048x1024xbf16>, tensor<64x1024x2048xbf16>) -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
