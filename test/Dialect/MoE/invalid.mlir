// RUN: moe-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the moe ops: every message of the
// hand-written verifiers (MoE*Ops.cpp, VerifyUtils.cpp) at least once and
// each op's verifier at least once, plus the ODS constraints that matter
// (attribute ranges, element types, the rank-0 loss). Attribute verifiers
// are covered by invalid-attrs.mlir.

//===----------------------------------------------------------------------===//
// moe.model, moe.param, moe.return
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'moe.model' op expects the body to take (tokens, labels) as two rank-2 integer tensors}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// Labels must be integers.
// expected-error @+1 {{'moe.model' op expects the body to take (tokens, labels) as two rank-2 integer tensors}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xf32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// Token ids are [batch, sequence].
// expected-error @+1 {{'moe.model' op expects the body to take (tokens, labels) as two rank-2 integer tensors}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?xi32>, %labels: tensor<?xi32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{'moe.model' op expects the body to end in moe.return}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  llvm.unreachable
}

// -----

moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  // expected-error @+1 {{block with no terminator}}
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<256x64xf32>
}

// -----

// expected-error @+1 {{'moe.model' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
"moe.model"() <{hidden_size = 64 : i64, sym_name = "m", vocab_size = 256 : i64}> ({
}) : () -> ()

// -----

// expected-error @+1 {{'moe.model' op attribute 'vocab_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
moe.model @m(vocab_size = 0, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{'moe.model' op attribute 'hidden_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
moe.model @m(vocab_size = 256, hidden_size = -64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// expected-note @+1 {{model declared here}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<128x64xf32>
  // expected-error @+1 {{'moe.embedding' op the embedding table has shape [128, 64] but the model has vocab_size = 256 and hidden_size = 64}}
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<128x64xf32> -> tensor<?x?x64xf32>
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// A dynamic dimension of a table matches; the static one is still checked.
// expected-note @+1 {{model declared here}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<256x32xf32>
  %dyn = tensor.cast %table : tensor<256x32xf32> to tensor<?x32xf32>
  // expected-error @+1 {{'moe.embedding' op the embedding table has shape [?, 32] but the model has vocab_size = 256 and hidden_size = 64}}
  %h = moe.embedding %tokens, %dyn
      : tensor<?x?xi32>, tensor<?x32xf32> -> tensor<?x?x32xf32>
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// expected-note @+1 {{model declared here}}
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed" init <normal, std = 0.02> : tensor<256x64xf32>
  %head = moe.param "lm_head" init <normal, std = 0.02> : tensor<256x32xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  %zero = arith.constant dense<0.0> : tensor<1x1x32xf32>
  %x = tensor.cast %zero : tensor<1x1x32xf32> to tensor<?x?x32xf32>
  // expected-error @+1 {{'moe.lm_head' op the lm_head weight has shape [256, 32] but the model has vocab_size = 256 and hidden_size = 64}}
  %loss = moe.lm_head %x, %head, %labels
      : (tensor<?x?x32xf32>, tensor<256x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  // expected-note @+1 {{first declared here}}
  %a = moe.param "layers.0.norm" init <ones> : tensor<64xf32>
  // expected-error @+1 {{'moe.param' op parameter name 'layers.0.norm' is declared twice}}
  %b = moe.param "layers.0.norm" init <zeros> : tensor<64xf32>
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// Parameters in nested regions share the model's namespace.
moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  // expected-note @+1 {{first declared here}}
  %a = moe.param "w" init <ones> : tensor<64xf32>
  %b = scf.execute_region -> tensor<64xf32> {
    // expected-error @+1 {{'moe.param' op parameter name 'w' is declared twice}}
    %c = moe.param "w" init <ones> : tensor<64xf32>
    scf.yield %c : tensor<64xf32>
  }
  %loss = arith.constant dense<0.0> : tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

func.func @f() {
  // expected-error @+1 {{'moe.param' op expects a non-empty parameter name}}
  %w = moe.param "" init <zeros> : tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'moe.param' op expects a statically shaped parameter, got 'tensor<?x64xf32>'}}
  %w = moe.param "w" init <zeros> : tensor<?x64xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'moe.param' op result #0 must be ranked tensor of floating-point values, but got 'tensor<4xi32>'}}
  %w = moe.param "w" init <zeros> : tensor<4xi32>
  return
}

// -----

func.func @f() {
  %loss = arith.constant dense<0.0> : tensor<f32>
  // expected-error @+1 {{'moe.return' op expects parent op 'moe.model'}}
  moe.return %loss : tensor<f32>
}

// -----

moe.model @m(vocab_size = 256, hidden_size = 64) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %loss = arith.constant dense<0.0> : tensor<1xf32>
  // expected-error @+1 {{'moe.return' op operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  moe.return %loss : tensor<1xf32>
}

// -----

//===----------------------------------------------------------------------===//
// moe.embedding, moe.rms_norm
//===----------------------------------------------------------------------===//

func.func @f(%ids: tensor<?x?xi32>, %table: tensor<256xf32>) {
  // expected-error @+1 {{'moe.embedding' op expects table to have shape [?, ?], got [256]}}
  %0 = moe.embedding %ids, %table : tensor<?x?xi32>, tensor<256xf32> -> tensor<?x?x256xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{'moe.embedding' op expects result to have shape [?, ?, 64], got [?, ?, 32]}}
  %0 = moe.embedding %ids, %table : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{'moe.embedding' op expects result to have shape [?, ?, 64], got [?, 64]}}
  %0 = moe.embedding %ids, %table : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{'moe.embedding' op expects the result element type 'bf16' to match the table's 'f32'}}
  %0 = moe.embedding %ids, %table : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xbf16>
  return
}

// -----

func.func @f(%ids: tensor<?x?xf32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{'moe.embedding' op operand #0 must be ranked tensor of signless integer values, but got 'tensor<?x?xf32>'}}
  %0 = moe.embedding %ids, %table : tensor<?x?xf32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'moe.rms_norm' op expects input to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.rms_norm %x, %w : tensor<f32>, tensor<64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{'moe.rms_norm' op expects weight to have shape [64], got [32]}}
  %0 = moe.rms_norm %x, %w : tensor<?x?x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'moe.rms_norm' op expects epsilon to be finite and positive, got 0.000000e+00}}
  %0 = moe.rms_norm %x, %w {epsilon = 0.0 : f64} : tensor<?x?x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{'moe.rms_norm' op expects epsilon to be finite and positive, got INF}}
  %0 = moe.rms_norm %x, %w {epsilon = 0x7FF0000000000000 : f64} : tensor<?x?x64xf32>, tensor<64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.kda_layer (d = 16, H = 2, K = 8, V = 4)
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects input to have shape [?, ?, ?], got [?, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x16xf32>
  return
}

// -----

// W_q must be [d, H*K].
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_q to have shape [16, 16], got [16, 12]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<8x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_k to have shape [16, 16], got [8, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_v to have shape [16, 8], got [16, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x16xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<8x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects conv_q to have shape [16, ?], got [8, 4]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<8x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x2xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects conv_k to have shape [16, 4], got [16, 2]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x2xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// All three convolutions share the window of conv_q.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x3xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects conv_v to have shape [8, 4], got [8, 3]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x3xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<4x16xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_gate_down to have shape [16, ?], got [4, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<4x16xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// W_gate_up takes the rank of W_gate_down.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<8x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_gate_up to have shape [4, 16], got [8, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<8x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<16xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects a_log to have shape [2], got [16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<16xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects dt_bias to have shape [2, 8], got [16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<16xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x1xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_beta to have shape [16, 2], got [16, 1]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x1xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<8xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_out_gate_down to have shape [16, ?], got [8]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x16xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_out_gate_up to have shape [4, 8], got [4, 16]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x16xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects out_norm to have shape [4], got [8]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<8xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<16x8xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_out to have shape [8, 16], got [16, 8]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<16x8xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects result to have shape [?, ?, 16], got [?, ?, 8]}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects norm_eps to be finite and positive, got -1.000000e-05}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>, norm_eps = -1.0e-05 : f64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// ODS checks attributes while parsing, at the attribute dictionary.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+4 {{'moe.kda_layer' op attribute 'chunk_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive and whose value is a power of two > 0}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>, chunk_size = 48 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+4 {{'moe.kda_layer' op attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 0 : i64, head_dim = 8 : i64, value_dim = 4 : i64,
       gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>,
    %wk: tensor<16x16xf32>, %wv: tensor<16x8xf32>, %cq: tensor<16x4xf32>,
    %ck: tensor<16x4xf32>, %cv: tensor<8x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x16xf32>, %alog: tensor<2xf32>, %dtb: tensor<2x8xf32>,
    %wb: tensor<16x2xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x8xf32>,
    %on: tensor<4xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op requires attribute 'gate'}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 2 : i64, head_dim = 8 : i64, value_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
         tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<8x4xf32>,
         tensor<16x4xf32>, tensor<4x16xf32>, tensor<2xf32>, tensor<2x8xf32>,
         tensor<16x2xf32>, tensor<16x4xf32>, tensor<4x8xf32>, tensor<4xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.mla_layer (d = 16, H = 2, nope = 4, rope = 2, v = 4)
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wqd: tensor<16x6xf32>, %qn: tensor<6xf32>, %wqu: tensor<6x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects exactly one of q(...) and q_lora(...)}}
  %0 = moe.mla_layer %x q(%wq) q_lora(%wqd, %qn, %wqu)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x6xf32>, tensor<6xf32>,
         tensor<6x12xf32>, tensor<16x10xf32>, tensor<8xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wkvd: tensor<16x10xf32>,
    %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>, %wg: tensor<16x8xf32>,
    %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects exactly one of q(...) and q_lora(...)}}
  %0 = moe.mla_layer %x
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x10xf32>, tensor<8xf32>, tensor<8x16xf32>,
         tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// The custom form cannot spell a partial q_lora; the generic form can.
func.func @f(%x: tensor<?x?x16xf32>, %wqd: tensor<16x6xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects q_lora to give w_q_down, q_norm and w_q_up together}}
  %0 = "moe.mla_layer"(%x, %wqd, %wkvd, %kvn, %wkvu, %wo)
      <{num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
        v_head_dim = 4 : i64,
        operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 1, 1, 1, 0, 1>}>
      : (tensor<?x?x16xf32>, tensor<16x6xf32>, tensor<16x10xf32>, tensor<8xf32>,
         tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects input to have shape [?, ?, ?], got [?, 16]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>, tensor<8xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x16xf32>
  return
}

// -----

// W_q must be [d, H*(nope + rope)].
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x8xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_q to have shape [16, 12], got [16, 8]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x8xf32>, tensor<16x10xf32>, tensor<8xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wqd: tensor<8x6xf32>, %qn: tensor<6xf32>,
    %wqu: tensor<6x12xf32>, %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>,
    %wkvu: tensor<8x16xf32>, %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_q_down to have shape [16, ?], got [8, 6]}}
  %0 = moe.mla_layer %x q_lora(%wqd, %qn, %wqu)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<8x6xf32>, tensor<6xf32>, tensor<6x12xf32>,
         tensor<16x10xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wqd: tensor<16x6xf32>, %qn: tensor<4xf32>,
    %wqu: tensor<6x12xf32>, %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>,
    %wkvu: tensor<8x16xf32>, %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects q_norm to have shape [6], got [4]}}
  %0 = moe.mla_layer %x q_lora(%wqd, %qn, %wqu)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x6xf32>, tensor<4xf32>, tensor<6x12xf32>,
         tensor<16x10xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wqd: tensor<16x6xf32>, %qn: tensor<6xf32>,
    %wqu: tensor<6x8xf32>, %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>,
    %wkvu: tensor<8x16xf32>, %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_q_up to have shape [6, 12], got [6, 8]}}
  %0 = moe.mla_layer %x q_lora(%wqd, %qn, %wqu)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x6xf32>, tensor<6xf32>, tensor<6x8xf32>,
         tensor<16x10xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>,
         tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_kv_down to have shape [16, ?], got [10]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<10xf32>, tensor<8xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// W_kv_down holds the latent and the shared rope key.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x2xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_kv_down's width (2) to exceed rope_head_dim (2): it holds the latent and the shared rope key}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x2xf32>, tensor<8xf32>,
         tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// The latent rank is W_kv_down's width minus rope_head_dim.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<10xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects kv_norm to have shape [8], got [10]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<10xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x12xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_kv_up to have shape [8, 16], got [8, 12]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x12xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x12xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_gate to have shape [16, 8], got [16, 12]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<16x12xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wo: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_out to have shape [8, 16], got [12, 16]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<12x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects result to have shape [?, ?, 16], got [?, ?, 8]}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects norm_eps to be finite and positive, got 0.000000e+00}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 4 : i64, norm_eps = 0.0 : f64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+3 {{'moe.mla_layer' op attribute 'rope_head_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = -2 : i64,
       v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x12xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x16xf32>,
    %wg: tensor<16x8xf32>, %wo: tensor<8x16xf32>) {
  // expected-error @+3 {{'moe.mla_layer' op attribute 'v_head_dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = moe.mla_layer %x q(%wq)
      kv(%wkvd, %kvn, %wkvu) gate(%wg) out(%wo)
      {num_heads = 2 : i64, nope_head_dim = 4 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 0 : i64}
      : (tensor<?x?x16xf32>, tensor<16x12xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.moe_ffn (d = 16, E = 4, F = 8), moe.glu_ffn
//===----------------------------------------------------------------------===//

// The input is a token batch [..., d] of rank >= 2.
func.func @f(%x: tensor<16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects input to have rank >= 2, got 'tensor<16xf32>'}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<16x4xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_router to have shape [4, 16], got [16, 4]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<8xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects router_bias to have shape [4], got [8]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<8xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xbf16>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<4xbf16>'}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xbf16>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x8x16xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_gate to have shape [4, 16, ?], got [4, 8, 16]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x8x16xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

// W_up and W_down take the width of W_gate.
func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x12xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_up to have shape [4, 16, 8], got [4, 16, 12]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x12xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x16x8xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_down to have shape [4, 8, 16], got [4, 16, 8]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects load to have shape [4], got [2]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<2xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op result #1 must be ranked tensor of 64-bit signless integer values, but got 'tensor<4xi32>'}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects next_bias to have shape [4], got [4, 1]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4x1xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x8xf32>, %sd: tensor<12x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_shared_up to have shape [16, 12], got [16, 8]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x8xf32>, tensor<12x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>, %sd: tensor<8x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects w_shared_down to have shape [12, 16], got [8, 16]}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>, tensor<8x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

// The custom form cannot spell a partial shared expert; the generic form can.
func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>,
    %sg: tensor<16x12xf32>, %su: tensor<16x12xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op expects the shared expert's three weights together}}
  %y, %load, %nb = "moe.moe_ffn"(%x, %wr, %b, %wg, %wu, %wd, %sg, %su)
      <{routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
        activation = #moe.activation<swiglu>,
        operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0>}>
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<16x12xf32>,
         tensor<16x12xf32>) -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>) {
  // expected-error @+1 {{'moe.moe_ffn' op requires attribute 'activation'}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %wr: tensor<4x16xf32>, %b: tensor<4xf32>,
    %wg: tensor<4x16x8xf32>, %wu: tensor<4x16x8xf32>, %wd: tensor<4x8x16xf32>) {
  // expected-error @+2 {{'moe.moe_ffn' op attribute 'routing' failed to satisfy constraint: Sigmoid top-k router configuration}}
  %y, %load, %nb = moe.moe_ffn %x router(%wr, %b) experts(%wg, %wu, %wd)
      {routing = #moe.activation<swiglu>, activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<4x16xf32>, tensor<4xf32>, tensor<4x16x8xf32>,
         tensor<4x16x8xf32>, tensor<4x8x16xf32>)
      -> (tensor<?x16xf32>, tensor<4xi64>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<f32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>,
    %wd: tensor<32x16xf32>) {
  // expected-error @+1 {{'moe.glu_ffn' op expects input to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<f32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wg: tensor<32x16xf32>,
    %wu: tensor<16x32xf32>, %wd: tensor<32x16xf32>) {
  // expected-error @+1 {{'moe.glu_ffn' op expects w_gate to have shape [16, ?], got [32, 16]}}
  %0 = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wg: tensor<16x32xf32>,
    %wu: tensor<16x32xf32>, %wd: tensor<16x32xf32>) {
  // expected-error @+1 {{'moe.glu_ffn' op expects w_down to have shape [32, 16], got [16, 32]}}
  %0 = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x16xf32>, %wg: tensor<16x32xf32>,
    %wu: tensor<16x32xf32>, %wd: tensor<32x16xf32>) {
  // expected-error @+1 {{'moe.glu_ffn' op requires attribute 'activation'}}
  %0 = moe.glu_ffn %x, %wg, %wu, %wd
      : tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.attn_res, moe.attn_res_mix
//===----------------------------------------------------------------------===//

// The custom form cannot spell zero sources; the generic form can.
func.func @f(%w: tensor<16xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects at least one source}}
  %0 = "moe.attn_res"(%w, %rho) <{block_size = 4 : i64, sublayer = 0 : i64}>
      : (tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %b1: tensor<?x?x16xbf16>,
    %w: tensor<16xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects source #1 to have the result type 'tensor<?x?x16xf32>', got 'tensor<?x?x16xbf16>'}}
  %0 = moe.attn_res %b0, %b1 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 1 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x16xbf16>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

// Sources must match the result type exactly, static dimensions included.
func.func @f(%b0: tensor<2x8x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects source #0 to have the result type 'tensor<?x?x16xf32>', got 'tensor<2x8x16xf32>'}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<f32>, %w: tensor<16xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects result to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<f32>, tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<8xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects query to have shape [16], got [8]}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<?x?x16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<1x16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects key_norm to have shape [16], got [1, 16]}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 0 : i64}
      : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<1x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

// Sub-layer 5 with block_size 4 reads b_0, b_1 and the partial sum.
func.func @f(%b0: tensor<?x?x16xf32>, %b1: tensor<?x?x16xf32>,
    %w: tensor<16xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects 3 sources for sub-layer 5 with block_size 4, got 2}}
  %0 = moe.attn_res %b0, %b1 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 5 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

// Sub-layer 4 starts a block: b_0 and b_1, no partial sum.
func.func @f(%b0: tensor<?x?x16xf32>, %b1: tensor<?x?x16xf32>,
    %p: tensor<?x?x16xf32>, %w: tensor<16xf32>, %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects 2 sources for sub-layer 4 with block_size 4, got 3}}
  %0 = moe.attn_res %b0, %b1, %p query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects epsilon to be finite and positive, got -1.000000e+00}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = 0 : i64, epsilon = -1.0 : f64}
      : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op attribute 'block_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 0 : i64, sublayer = 0 : i64}
      : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op attribute 'sublayer' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho) {block_size = 4 : i64, sublayer = -1 : i64}
      : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%u: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res_mix' op expects at least one source}}
  %0 = "moe.attn_res_mix"(%u) : (tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %b1: tensor<?x?x8xf32>,
    %u: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res_mix' op expects source #1 to have the result type 'tensor<?x?x16xf32>', got 'tensor<?x?x8xf32>'}}
  %0 = moe.attn_res_mix %b0, %b1 query(%u)
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %u: tensor<8xf32>) {
  // expected-error @+1 {{'moe.attn_res_mix' op expects query to have shape [16], got [8]}}
  %0 = moe.attn_res_mix %b0 query(%u) : (tensor<?x?x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %u: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res_mix' op expects epsilon to be finite and positive, got 0.000000e+00}}
  %0 = moe.attn_res_mix %b0 query(%u) {epsilon = 0.0 : f64}
      : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.lm_head, moe.cross_entropy
//===----------------------------------------------------------------------===//

func.func @f(%h: tensor<f32>, %w: tensor<256x16xf32>,
    %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.lm_head' op expects input to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.lm_head %h, %w, %labels : (tensor<f32>, tensor<256x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%h: tensor<?x?x16xf32>, %w: tensor<16x256xf32>,
    %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.lm_head' op expects weight to have shape [?, 16], got [16, 256]}}
  %0 = moe.lm_head %h, %w, %labels : (tensor<?x?x16xf32>, tensor<16x256xf32>, tensor<?x?xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%h: tensor<2x8x16xf32>, %w: tensor<256x16xf32>,
    %labels: tensor<2x4xi32>) {
  // expected-error @+1 {{'moe.lm_head' op expects labels to have shape [2, 8], got [2, 4]}}
  %0 = moe.lm_head %h, %w, %labels : (tensor<2x8x16xf32>, tensor<256x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return
}

// -----

// The loss is a rank-0 fp32 tensor.
func.func @f(%h: tensor<?x?x16xf32>, %w: tensor<256x16xf32>,
    %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.lm_head' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0 = moe.lm_head %h, %w, %labels : (tensor<?x?x16xf32>, tensor<256x16xf32>, tensor<?x?xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @f(%h: tensor<?x?x16xf32>, %w: tensor<256x16xf32>,
    %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.lm_head' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %0 = moe.lm_head %h, %w, %labels : (tensor<?x?x16xf32>, tensor<256x16xf32>, tensor<?x?xi32>) -> tensor<bf16>
  return
}

// -----

func.func @f(%logits: tensor<f32>, %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.cross_entropy' op expects logits to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.cross_entropy %logits, %labels : (tensor<f32>, tensor<?x?xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%logits: tensor<?x?x256xf32>, %labels: tensor<?xi32>) {
  // expected-error @+1 {{'moe.cross_entropy' op expects labels to have shape [?, ?], got [?]}}
  %0 = moe.cross_entropy %logits, %labels : (tensor<?x?x256xf32>, tensor<?xi32>) -> tensor<f32>
  return
}

// -----

func.func @f(%logits: tensor<?x?x256xf32>, %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<?xf32>'}}
  %0 = moe.cross_entropy %logits, %labels : (tensor<?x?x256xf32>, tensor<?x?xi32>) -> tensor<?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.decay_gate (H = 4, K = 16)
//===----------------------------------------------------------------------===//

func.func @f(%z: tensor<?x?x4x16xf32>, %dtb: tensor<4x16xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op the softplus gate requires A_log}}
  %0 = moe.decay_gate <softplus> %z, %dtb : (tensor<?x?x4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
  return
}

// -----

func.func @f(%z: tensor<?x4x16xf32>, %dtb: tensor<4x16xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op expects raw to have shape [?, ?, ?, ?], got [?, 4, 16]}}
  %0 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb : (tensor<?x4x16xf32>, tensor<4x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%z: tensor<?x?x4x16xf32>, %dtb: tensor<16x4xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op expects dt_bias to have shape [4, 16], got [16, 4]}}
  %0 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb : (tensor<?x?x4x16xf32>, tensor<16x4xf32>) -> tensor<?x?x4x16xf32>
  return
}

// -----

func.func @f(%z: tensor<?x?x4x16xf32>, %dtb: tensor<4x16xf32>,
    %alog: tensor<16xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op expects a_log to have shape [4], got [16]}}
  %0 = moe.decay_gate <softplus> %z, %dtb, %alog : (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<?x?x4x16xf32>
  return
}

// -----

func.func @f(%z: tensor<2x?x4x16xf32>, %dtb: tensor<4x16xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op expects result to have shape [2, ?, 4, 16], got [3, ?, 4, 16]}}
  %0 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb : (tensor<2x?x4x16xf32>, tensor<4x16xf32>) -> tensor<3x?x4x16xf32>
  return
}

// -----

// The decay is fp32 whatever the input type.
func.func @f(%z: tensor<?x?x4x16xbf16>, %dtb: tensor<4x16xf32>) {
  // expected-error @+1 {{'moe.decay_gate' op result #0 must be ranked tensor of 32-bit float values, but got 'tensor<?x?x4x16xbf16>'}}
  %0 = moe.decay_gate <bounded, g_min = -5.0> %z, %dtb : (tensor<?x?x4x16xbf16>, tensor<4x16xf32>) -> tensor<?x?x4x16xbf16>
  return
}

// -----

func.func @f(%z: tensor<?x?x4x16xf32>, %dtb: tensor<4x16xf32>) {
  // expected-error @+1 {{expects g_min to be finite and negative, got 1.000000e+00}}
  %0 = moe.decay_gate <bounded, g_min = 1.0> %z, %dtb : (tensor<?x?x4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.kda (H = 4, K = 16, V = 8)
//===----------------------------------------------------------------------===//

func.func @f(%q: tensor<?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects query to have shape [?, ?, ?, ?], got [?, 4, 16]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x?xf32>, %k: tensor<?x?x4x?xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x?xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects a static head dimension K}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x?xf32>, tensor<?x?x4x?xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x?xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x?x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects key to have shape [?, ?, 4, 16], got [?, ?, 2, 16]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x8x4xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects value to have shape [?, ?, 4, ?], got [?, ?, 8, 4]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x8x4xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x8xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects log_decay to have shape [?, ?, 4, 16], got [?, ?, 4, 8]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x8xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xbf16>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<?x?x4x16xbf16>'}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xbf16>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4x1xf32>) {
  // expected-error @+1 {{'moe.kda' op expects beta to have shape [?, ?, 4], got [?, ?, 4, 1]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4x1xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

// Static dimensions of the query must agree with every operand.
func.func @f(%q: tensor<2x64x4x16xf32>, %k: tensor<2x64x4x16xf32>,
    %v: tensor<2x64x4x8xf32>, %g: tensor<2x64x4x16xf32>,
    %beta: tensor<2x32x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects beta to have shape [2, 64, 4], got [2, 32, 4]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>, tensor<2x64x4x8xf32>,
         tensor<2x64x4x16xf32>, tensor<2x32x4xf32>)
      -> (tensor<2x64x4x8xf32>, tensor<2x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects output to have shape [?, ?, 4, 8], got [?, ?, 4, 16]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects the output element type 'bf16' to match the value's 'f32'}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>)
  return
}

// -----

// key_major states are [B, H, K, V].
func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>, %beta: tensor<?x?x4xf32>,
    %s0: tensor<?x4x8x16xf32>) {
  // expected-error @+1 {{'moe.kda' op expects initial_state to have shape [?, 4, 16, 8], got [?, 4, 8, 16]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>, tensor<?x4x8x16xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

// value_major states are [B, H, V, K].
func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects final_state to have shape [?, 4, 8, 16], got [?, 4, 16, 8]}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta {state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>, %beta: tensor<?x?x4xf32>,
    %s0: tensor<?x4x16x8xbf16>) {
  // expected-error @+1 {{'moe.kda' op operand #5 must be ranked tensor of 32-bit float values, but got 'tensor<?x4x16x8xbf16>'}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>, tensor<?x4x16x8xbf16>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op result #1 must be ranked tensor of 32-bit float values, but got 'tensor<?x4x16x8xbf16>'}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xbf16>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x4x16xf32>,
    %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x16xf32>,
    %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{'moe.kda' op expects scale to be finite and positive, got 0.000000e+00}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta {scale = 0.0 : f64}
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x8xf32>,
         tensor<?x?x4x16xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.l2_norm, moe.short_conv
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{'moe.l2_norm' op expects input to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.l2_norm %x : tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<?x?x4x16xf32>) {
  // expected-error @+1 {{'moe.l2_norm' op expects epsilon to be finite and positive, got -1.000000e-06}}
  %0 = moe.l2_norm %x {epsilon = -1.0e-06 : f64} : tensor<?x?x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64x4xf32>) {
  // expected-error @+1 {{'moe.short_conv' op expects input to have shape [?, ?, ?], got [?, 64]}}
  %0 = moe.short_conv %x, %w : tensor<?x64xf32>, tensor<64x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x64xf32>, %w: tensor<4x64xf32>) {
  // expected-error @+1 {{'moe.short_conv' op expects weight to have shape [64, ?], got [4, 64]}}
  %0 = moe.short_conv %x, %w {silu} : tensor<?x?x64xf32>, tensor<4x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.mla_attention (H = 2, D_qk = 24, D_v = 16)
//===----------------------------------------------------------------------===//

func.func @f(%q: tensor<?x?x48xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects query to have shape [?, ?, ?, ?], got [?, ?, 48]}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x48xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x?xf32>, %k: tensor<?x?x2x?xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects a static query/key head dimension}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects key to have shape [?, ?, 2, 24], got [?, ?, 2, 16]}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x1x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects value to have shape [?, ?, 2, ?], got [?, ?, 1, 16]}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x1x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2x24xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects gate to have shape [?, ?, 2, 16], got [?, ?, 2, 24]}}
  %o, %lse = moe.mla_attention %q, %k, %v gate(%g)
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x24xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects output to have shape [?, ?, 2, 16], got [?, ?, 2, 24]}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x24xf32>, tensor<?x2x?xf32>)
  return
}

// -----

// lse is [B, H, T].
func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects lse to have shape [?, 2, ?], got [?, 4, ?]}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x4x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op result #1 must be ranked tensor of 32-bit float values, but got 'tensor<?x2x?xbf16>'}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xbf16>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects the output element type 'f16' to match the value's 'f32'}}
  %o, %lse = moe.mla_attention %q, %k, %v
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf16>, tensor<?x2x?xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x2x24xf32>, %k: tensor<?x?x2x24xf32>,
    %v: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{'moe.mla_attention' op expects scale to be finite and positive, got -1.250000e-01}}
  %o, %lse = moe.mla_attention %q, %k, %v {scale = -0.125 : f64}
      : (tensor<?x?x2x24xf32>, tensor<?x?x2x24xf32>, tensor<?x?x2x16xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x2x?xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// moe.route, moe.dispatch, moe.expert_ffn, moe.combine (E = 8, k = 2, d = 64)
//===----------------------------------------------------------------------===//

func.func @f(%x: tensor<?x?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects input to have shape [?, ?], got [?, ?, 64]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<4x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects w_router to have shape [8, 64], got [4, 64]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<4x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'moe.route' op expects bias to have shape [8], got [4]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<4xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'moe.route' op operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<8xf16>'}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf16>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects weights to have shape [?, 2], got [?, 8]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x8xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

// The token count of the input carries over to the routing tensors.
func.func @f(%x: tensor<32x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects indices to have shape [32, 2], got [16, 2]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<32x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<32x2xf32>, tensor<16x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects load to have shape [8], got [2]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<2xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects next_bias to have shape [8], got [9]}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<9xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op result #2 must be ranked tensor of 64-bit signless integer values, but got 'tensor<8xi32>'}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi32>, tensor<8xf32>)
  return
}

// -----

// An invalid routing attribute is reported where it is written.
func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{expects 1 <= top_k (9) <= experts (8)}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 9, scaling = 2.5, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<64xf32>, %idx: tensor<?x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects input to have shape [?, ?], got [64]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<64xf32>, tensor<?x2xi64>) -> (tensor<?x64xf32>, tensor<9xi64>, tensor<?xi64>)
  return
}

// -----

func.func @f(%x: tensor<6x64xf32>, %idx: tensor<3x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects indices to have shape [6, ?], got [3, 2]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<6x64xf32>, tensor<3x2xi64>) -> (tensor<12x64xf32>, tensor<9xi64>, tensor<12xi64>)
  return
}

// -----

// N = 6 tokens with k = 2 make 12 token-slots.
func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects permuted to have shape [12, 64], got [6, 64]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<6x64xf32>, tensor<9xi64>, tensor<12xi64>)
  return
}

// -----

// E + 1 offsets.
func.func @f(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects expert_offsets to have shape [9], got [8]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x64xf32>, tensor<?x2xi64>) -> (tensor<?x64xf32>, tensor<8xi64>, tensor<?xi64>)
  return
}

// -----

func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects source_slot to have shape [12], got [6]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<12x64xf32>, tensor<9xi64>, tensor<6xi64>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %idx: tensor<?x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op attribute 'num_experts' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 0 : i64}
      : (tensor<?x64xf32>, tensor<?x2xi64>) -> (tensor<?x64xf32>, tensor<9xi64>, tensor<?xi64>)
  return
}

// -----

func.func @f(%x: tensor<?x?x64xf32>, %off: tensor<9xi64>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn' op expects input to have shape [?, ?], got [?, ?, 64]}}
  %0 = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %off: tensor<9xi64>,
    %wg: tensor<8x32x64xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn' op expects w_gate to have shape [?, 64, ?], got [8, 32, 64]}}
  %0 = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x32x64xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %off: tensor<9xi64>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<4x64x32xf32>,
    %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn' op expects w_up to have shape [8, 64, 32], got [4, 64, 32]}}
  %0 = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>,
         tensor<4x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %off: tensor<9xi64>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x64x32xf32>) {
  // expected-error @+1 {{'moe.expert_ffn' op expects w_down to have shape [8, 32, 64], got [8, 64, 32]}}
  %0 = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x64x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %off: tensor<8xi64>,
    %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>,
    %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn' op expects expert_offsets to have shape [9], got [8]}}
  %0 = moe.expert_ffn %x, %off, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<8xi64>, tensor<8x64x32xf32>,
         tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%yp: tensor<?xf32>, %slot: tensor<?xi64>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{'moe.combine' op expects expert_output to have shape [?, ?], got [?]}}
  %0 = moe.combine %yp, %slot, %w : (tensor<?xf32>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%yp: tensor<?x64xf32>, %slot: tensor<?xi64>, %w: tensor<?xf32>) {
  // expected-error @+1 {{'moe.combine' op expects weights to have shape [?, ?], got [?]}}
  %0 = moe.combine %yp, %slot, %w : (tensor<?x64xf32>, tensor<?xi64>, tensor<?xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%yp: tensor<?x64xf32>, %slot: tensor<?xi64>,
    %w: tensor<?x2xbf16>) {
  // expected-error @+1 {{'moe.combine' op operand #2 must be ranked tensor of 32-bit float values, but got 'tensor<?x2xbf16>'}}
  %0 = moe.combine %yp, %slot, %w : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x2xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// N = 6 tokens with k = 2 make 12 token-slots.
func.func @f(%yp: tensor<6x64xf32>, %slot: tensor<?xi64>, %w: tensor<6x2xf32>) {
  // expected-error @+1 {{'moe.combine' op expects expert_output to have shape [12, 64], got [6, 64]}}
  %0 = moe.combine %yp, %slot, %w : (tensor<6x64xf32>, tensor<?xi64>, tensor<6x2xf32>) -> tensor<6x64xf32>
  return
}

// -----

func.func @f(%yp: tensor<12x64xf32>, %slot: tensor<6xi64>,
    %w: tensor<6x2xf32>) {
  // expected-error @+1 {{'moe.combine' op expects source_slot to have shape [12], got [6]}}
  %0 = moe.combine %yp, %slot, %w : (tensor<12x64xf32>, tensor<6xi64>, tensor<6x2xf32>) -> tensor<6x64xf32>
  return
}

// -----

func.func @f(%yp: tensor<12x64xf32>, %slot: tensor<12xi64>,
    %w: tensor<6x2xf32>) {
  // expected-error @+1 {{'moe.combine' op expects result to have shape [6, 64], got [12, 64]}}
  %0 = moe.combine %yp, %slot, %w : (tensor<12x64xf32>, tensor<12xi64>, tensor<6x2xf32>) -> tensor<12x64xf32>
  return
}
