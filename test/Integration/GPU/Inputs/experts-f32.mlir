// f32 experts for the GPU suite (scripts/gpu-test.sh): the routed and shared
// expert FFNs and the combine of an f32 model, which
// -moe-generate-expert-kernels takes under its default precision policy
// (matmul-precision=bf16): f32 inputs and weights rounded to bf16 by a
// conversion kernel, tensor-core GEMMs with fp32 accumulation, the
// activation in fp32, f32 results; the combine sums in fp32. d = 256,
// E = 8 experts of width F = 128 (the shape of experts-small.mlir), SwiGLU
// and SiTU-GLU (Kimi K3's gate_beta = 4, up_beta = 25, ALGORITHMS.md
// section 6).

// Grouped experts over expert-sorted rows; the offsets are data (groups may
// be empty or of any length).
func.func @experts_f32(%xp: tensor<?x256xf32>, %off: tensor<9xi64>,
                       %wg: tensor<8x256x128xf32>, %wu: tensor<8x256x128xf32>,
                       %wd: tensor<8x128x256xf32>) -> tensor<?x256xf32> {
  %y = moe.expert_ffn %xp, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x256xf32>, tensor<9xi64>, tensor<8x256x128xf32>,
         tensor<8x256x128xf32>, tensor<8x128x256xf32>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

func.func @experts_f32_situ(%xp: tensor<?x256xf32>, %off: tensor<9xi64>,
                            %wg: tensor<8x256x128xf32>, %wu: tensor<8x256x128xf32>,
                            %wd: tensor<8x128x256xf32>) -> tensor<?x256xf32> {
  %y = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x256xf32>, tensor<9xi64>, tensor<8x256x128xf32>,
         tensor<8x256x128xf32>, tensor<8x128x256xf32>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// The shared expert: one group of all rows.
func.func @shared_f32_situ(%x: tensor<?x256xf32>, %wg: tensor<256x128xf32>,
                           %wu: tensor<256x128xf32>, %wd: tensor<128x256xf32>)
    -> tensor<?x256xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x256xf32>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>
  return %y : tensor<?x256xf32>
}

// Routing given as data: dispatch, the grouped experts, the combine and the
// shared expert's sum, as -moe-decompose builds a layer (the combine adds
// the shared expert's rows to its fp32 sum).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @experts_combine_f32(%x: tensor<?x256xf32>, %indices: tensor<?x4xi64>,
                               %weights: tensor<?x4xf32>,
                               %wg: tensor<8x256x128xf32>, %wu: tensor<8x256x128xf32>,
                               %wd: tensor<8x128x256xf32>, %sg: tensor<256x128xf32>,
                               %su: tensor<256x128xf32>, %sd: tensor<128x256xf32>)
    -> tensor<?x256xf32> {
  %xp, %offsets, %slot = moe.dispatch %x, %indices {num_experts = 8 : i64}
      : (tensor<?x256xf32>, tensor<?x4xi64>)
      -> (tensor<?x256xf32>, tensor<9xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %offsets, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : (tensor<?x256xf32>, tensor<9xi64>, tensor<8x256x128xf32>,
         tensor<8x256x128xf32>, tensor<8x128x256xf32>) -> tensor<?x256xf32>
  %y = moe.combine %yp, %slot, %weights
      : (tensor<?x256xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x256xf32>
  %s = moe.glu_ffn %x, %sg, %su, %sd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x256xf32>, tensor<256x128xf32>, tensor<256x128xf32>, tensor<128x256xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x256xf32>
  %init = tensor.empty(%n) : tensor<?x256xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%y, %s : tensor<?x256xf32>, tensor<?x256xf32>)
      outs(%init : tensor<?x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x256xf32>
  return %sum : tensor<?x256xf32>
}

// The combine alone (f32 expert rows): no matmul, fp32 throughout.
func.func @combine_f32(%yp: tensor<?x256xf32>, %slot: tensor<?xi64>,
                       %weights: tensor<?x4xf32>) -> tensor<?x256xf32> {
  %y = moe.combine %yp, %slot, %weights
      : (tensor<?x256xf32>, tensor<?xi64>, tensor<?x4xf32>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// A dense FFN on [B, T, d] (a model's dense layers, kimi-small's layer 0):
// the generator runs it on the B * T rows.
func.func @dense_f32_situ(%x: tensor<?x?x256xf32>, %wg: tensor<256x192xf32>,
                          %wu: tensor<256x192xf32>, %wd: tensor<192x256xf32>)
    -> tensor<?x?x256xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x?x256xf32>, tensor<256x192xf32>, tensor<256x192xf32>, tensor<192x256xf32>
  return %y : tensor<?x?x256xf32>
}
