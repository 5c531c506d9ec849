// RUN: moe-opt %s -split-input-file -verify-diagnostics

// One case per message of the verifiers of MoECommonGradOps.td.

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{the softplus gate requires A_log}}
  %0:2 = moe.decay_gate_grad <softplus> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x4x16xf32>, %z: tensor<?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{expects raw to have shape [?, ?, ?, ?], got [?, 4, 16]}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{expects dt_bias to have shape [4, 16], got [4, 8]}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x8xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{expects a_log to have shape [4], got [2]}}
  %0:3 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<2xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<2xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x8xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{expects grad to have shape [?, ?, 4, 16], got [?, ?, 4, 8]}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x8xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf16>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf16>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xbf16>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{expects raw_grad to have the type of raw, 'tensor<?x?x4x16xbf16>', got 'tensor<?x?x4x16xf32>'}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{expects dt_bias_grad to have the type of dt_bias, 'tensor<4x16xf32>', got 'tensor<?x16xf32>'}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<?x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{expects an a_log_grad result exactly when a_log is given}}
  %0:2 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{expects an a_log_grad result exactly when a_log is given}}
  %0:3 = moe.decay_gate_grad <bounded, g_min = -5.0> %dg, %z, %b
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%dg: tensor<?x?x4x16xf32>, %z: tensor<?x?x4x16xf32>, %b: tensor<4x16xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{expects a_log_grad to have the type of a_log, 'tensor<4xf32>', got 'tensor<4xbf16>'}}
  %0:3 = moe.decay_gate_grad <softplus> %dg, %z, %b, %a
      : (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>)
      -> (tensor<?x?x4x16xf32>, tensor<4x16xf32>, tensor<4xbf16>)
  return
}

// -----

func.func @f(%dy: tensor<f32>, %x: tensor<f32>) {
  // expected-error @+1 {{expects input to have rank >= 1, got 'tensor<f32>'}}
  %0 = moe.l2_norm_grad %dy, %x : tensor<f32>
  return
}

// -----

func.func @f(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>) {
  // expected-error @+1 {{expects epsilon to be finite and positive, got 0.000000e+00}}
  %0 = moe.l2_norm_grad %dy, %x {epsilon = 0.0 : f64} : tensor<?x8xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>) {
  // expected-error @+1 {{failed to verify that all of {grad, input, input_grad} have same type}}
  %0 = "moe.l2_norm_grad"(%dy, %x) {epsilon = 1.0e-6 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x128xf32>, %x: tensor<?x128xf32>, %w: tensor<128x4xf32>) {
  // expected-error @+1 {{expects input to have shape [?, ?, ?], got [?, 128]}}
  %0:2 = moe.short_conv_grad %dy, %x, %w : tensor<?x128xf32>, tensor<128x4xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x?x128xf32>, %x: tensor<?x?x128xf32>, %w: tensor<64x4xf32>) {
  // expected-error @+1 {{expects weight to have shape [128, ?], got [64, 4]}}
  %0:2 = moe.short_conv_grad %dy, %x, %w : tensor<?x?x128xf32>, tensor<64x4xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x?x8xf32>, %x: tensor<?x?x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{failed to verify that all of {weight, weight_grad} have same type}}
  %0:2 = "moe.short_conv_grad"(%dy, %x, %w) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x4xf32>) -> (tensor<?x?x8xf32>, tensor<8x?xf32>)
  return
}

// -----

func.func @f(%dy: tensor<f32>, %x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{expects input to have rank >= 1, got 'tensor<f32>'}}
  %0:2 = moe.rms_norm_grad %dy, %x, %w : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x64xf32>, %x: tensor<?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{expects weight to have shape [64], got [32]}}
  %0:2 = moe.rms_norm_grad %dy, %x, %w : tensor<?x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @f(%dy: tensor<?x64xf32>, %x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects epsilon to be finite and positive, got -1.000000e+00}}
  %0:2 = moe.rms_norm_grad %dy, %x, %w {epsilon = -1.0 : f64} : tensor<?x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %t: tensor<?x?xi32>, %table: tensor<16384xf32>) {
  // expected-error @+1 {{expects table to have shape [?, ?], got [16384]}}
  %0 = moe.embedding_grad %dh, %t, %table : tensor<?x?x64xf32>, tensor<?x?xi32>, tensor<16384xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x32xf32>, %t: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{expects grad to have shape [?, ?, 64], got [?, ?, 32]}}
  %0 = moe.embedding_grad %dh, %t, %table : tensor<?x?x32xf32>, tensor<?x?xi32>, tensor<256x64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x64xf32>, %t: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{expects grad to have shape [?, ?, 64], got [?, 64]}}
  %0 = moe.embedding_grad %dh, %t, %table : tensor<?x64xf32>, tensor<?x?xi32>, tensor<256x64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xbf16>, %t: tensor<?x?xi32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{expects the grad element type 'bf16' to match the table's 'f32'}}
  %0 = moe.embedding_grad %dh, %t, %table : tensor<?x?x64xbf16>, tensor<?x?xi32>, tensor<256x64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %t: tensor<?x?xf32>, %table: tensor<256x64xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of signless integer values}}
  %0 = moe.embedding_grad %dh, %t, %table : tensor<?x?x64xf32>, tensor<?x?xf32>, tensor<256x64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects at least one source}}
  %0 = moe.attn_res_mix_grad %dh, query(%u)
      : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %b1: tensor<?x7x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects source #1 to have the grad type 'tensor<?x?x64xf32>', got 'tensor<?x7x64xf32>'}}
  %0:3 = moe.attn_res_mix_grad %dh, %b0, %b1 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x7x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @f(%dh: tensor<f32>, %b0: tensor<f32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects grad to have rank >= 1, got 'tensor<f32>'}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0 query(%u)
      : (tensor<f32>, tensor<f32>, tensor<64xf32>) -> (tensor<f32>, tensor<64xf32>)
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %u: tensor<32xf32>) {
  // expected-error @+1 {{expects query to have shape [64], got [32]}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<32xf32>)
      -> (tensor<?x?x64xf32>, tensor<32xf32>)
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %b1: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects one source gradient per source (2), got 1}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0, %b1 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects source gradient #0 to have the sources' type 'tensor<?x?x64xf32>', got 'tensor<2x?x64xf32>'}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<2x?x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects query_grad to have the type of query, 'tensor<64xf32>', got 'tensor<64xbf16>'}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0 query(%u)
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<64xbf16>)
  return
}

// -----

func.func @f(%dh: tensor<?x?x64xf32>, %b0: tensor<?x?x64xf32>, %u: tensor<64xf32>) {
  // expected-error @+1 {{expects epsilon to be finite and positive, got 0.000000e+00}}
  %0:2 = moe.attn_res_mix_grad %dh, %b0 query(%u) {epsilon = 0.0 : f64}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>)
      -> (tensor<?x?x64xf32>, tensor<64xf32>)
  return
}
