// The routed experts alone at a size the CPU back end runs quickly, for the
// GPU suite (scripts/gpu-test.sh): a grouped SwiGLU FFN over expert-sorted
// rows (d = 256, E = 8 experts of width F = 128, bf16), which
// -moe-generate-expert-kernels turns into two grouped tensor-core GEMMs, the
// shape of bench/moe/experts.mlir. The offsets are data: groups may be empty
// or of any length.
func.func @experts(%xp: tensor<?x256xbf16>, %off: tensor<9xi64>,
                   %wg: tensor<8x256x128xbf16>, %wu: tensor<8x256x128xbf16>,
                   %wd: tensor<8x128x256xbf16>) -> tensor<?x256xbf16> {
  %y = moe.expert_ffn %xp, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x256xbf16>, tensor<9xi64>, tensor<8x256x128xbf16>,
         tensor<8x256x128xbf16>, tensor<8x128x256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
