// RUN: moe-opt %s --split-input-file --verify-diagnostics

// Verifier errors of moe.linear_cross_entropy and of the gradient ops of
// MoEAttentionGradOps.td.

func.func @f(%h: tensor<64xf32>, %w: tensor<256x64xf32>, %labels: tensor<i32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy' op expects input to have rank >= 2, got 'tensor<64xf32>'}}
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<64xf32>, tensor<256x64xf32>, tensor<i32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @f(%h: tensor<?x?x64xf32>, %w: tensor<256x32xf32>, %labels: tensor<?x?xi32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy' op expects weight to have shape [?, 64], got [256, 32]}}
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<?x?x64xf32>, tensor<256x32xf32>, tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?xf32>)
  return
}

// -----

func.func @f(%h: tensor<2x3x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<2x4xi32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy' op expects labels to have shape [2, 3], got [2, 4]}}
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<2x3x64xf32>, tensor<256x64xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x3xf32>)
  return
}

// -----

func.func @f(%h: tensor<2x3x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<2x3xi32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy' op expects lse to have shape [2, 3], got [6]}}
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<2x3x64xf32>, tensor<256x64xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<6xf32>)
  return
}

// -----

func.func @f(%h: tensor<2x3x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<2x3xf32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy' op operand #2 must be ranked tensor of signless integer values}}
  %0, %1 = moe.linear_cross_entropy %h, %w, %labels : (tensor<2x3x64xf32>, tensor<256x64xf32>, tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>)
  return
}

// -----

func.func @f(%h: tensor<?x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<?xi32>, %lse: tensor<?xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy_grad' op expects d_weight to have the type of weight ('tensor<256x64xf32>'), got 'tensor<256x64xbf16>'}}
  %0, %1 = moe.linear_cross_entropy_grad %h, %w, %labels, %lse, %d : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<?xi32>, tensor<?xf32>, tensor<f32>) -> (tensor<?x64xf32>, tensor<256x64xbf16>)
  return
}

// -----

func.func @f(%h: tensor<?x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<?xi32>, %lse: tensor<?x1xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy_grad' op expects lse to have shape [?], got [?, 1]}}
  %0, %1 = moe.linear_cross_entropy_grad %h, %w, %labels, %lse, %d : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<?xi32>, tensor<?x1xf32>, tensor<f32>) -> (tensor<?x64xf32>, tensor<256x64xf32>)
  return
}

// -----

func.func @f(%h: tensor<?x64xf32>, %w: tensor<256x64xf32>, %labels: tensor<?xi32>, %lse: tensor<?xf32>, %d: tensor<1xf32>) {
  // expected-error @+1 {{'moe.linear_cross_entropy_grad' op operand #4 must be 0D tensor of 32-bit float values}}
  %0, %1 = moe.linear_cross_entropy_grad %h, %w, %labels, %lse, %d : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<?xi32>, tensor<?xf32>, tensor<1xf32>) -> (tensor<?x64xf32>, tensor<256x64xf32>)
  return
}

// -----

func.func @f(%z: tensor<?x50xf32>, %labels: tensor<?x2xi32>, %d: tensor<f32>) {
  // expected-error @+1 {{'moe.cross_entropy_grad' op expects labels to have shape [?], got [?, 2]}}
  %0 = moe.cross_entropy_grad %z, %labels, %d : (tensor<?x50xf32>, tensor<?x2xi32>, tensor<f32>) -> tensor<?x50xf32>
  return
}

// -----

func.func @f(%z: tensor<?x50xf32>, %labels: tensor<?xi32>, %d: tensor<f32>) {
  // expected-error @+1 {{'moe.cross_entropy_grad' op expects d_logits to have the type of logits ('tensor<?x50xf32>'), got 'tensor<?x51xf32>'}}
  %0 = moe.cross_entropy_grad %z, %labels, %d : (tensor<?x50xf32>, tensor<?xi32>, tensor<f32>) -> tensor<?x51xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x4x96xf32>, %v: tensor<?x?x4x64xf32>, %lse: tensor<?x4x?xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects a d_gate result exactly when there is a gate operand}}
  %0:4 = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>, tensor<?x?x4x64xf32>) -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x96xf32>, %v: tensor<?x?x4x64xf32>, %lse: tensor<?x4x?xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects a d_gate result exactly when there is a gate operand}}
  %0:3 = moe.mla_attention_grad %q, %q, %v gate(%v), %v, %lse, %v : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>, tensor<?x?x4x64xf32>) -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>)
  return
}

// -----

func.func @f(%q: tensor<?x?x4x96xf32>, %v: tensor<?x?x4x64xf32>, %lse: tensor<?x4x?xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects d_key to have the type of key ('tensor<?x?x4x96xf32>'), got 'tensor<?x?x4x64xf32>'}}
  %0:3 = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v : (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x4x?xf32>, tensor<?x?x4x64xf32>) -> (tensor<?x?x4x96xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x5x4x96xf32>, %v: tensor<2x5x4x64xf32>, %lse: tensor<2x4x6xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects lse to have shape [2, 4, 5], got [2, 4, 6]}}
  %0:3 = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v : (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>, tensor<2x5x4x64xf32>, tensor<2x4x6xf32>, tensor<2x5x4x64xf32>) -> (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x5x4x96xf32>, %v: tensor<2x5x4x64xf32>, %do: tensor<2x5x4x32xf32>, %lse: tensor<2x4x5xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects d_output to have shape [2, 5, 4, 64], got [2, 5, 4, 32]}}
  %0:3 = moe.mla_attention_grad %q, %q, %v, %v, %lse, %do : (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>, tensor<2x5x4x64xf32>, tensor<2x4x5xf32>, tensor<2x5x4x32xf32>) -> (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>)
  return
}

// -----

func.func @f(%q: tensor<2x5x4x96xf32>, %v: tensor<2x5x4x64xf32>, %lse: tensor<2x4x5xf32>) {
  // expected-error @+1 {{'moe.mla_attention_grad' op expects scale to be finite and positive, got -1}}
  %0:3 = moe.mla_attention_grad %q, %q, %v, %v, %lse, %v {scale = -1.0 : f64} : (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>, tensor<2x5x4x64xf32>, tensor<2x4x5xf32>, tensor<2x5x4x64xf32>) -> (tensor<2x5x4x96xf32>, tensor<2x5x4x96xf32>, tensor<2x5x4x64xf32>)
  return
}
