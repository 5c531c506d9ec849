// RUN: moe-opt %s --split-input-file --verify-diagnostics

// Verifiers of the routing gradient ops (MoERoutingGradOps.td).

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %idx: tensor<?x2xi64>, %dw: tensor<?x2xf32>) {
  // expected-error @+1 {{'moe.route_grad' op expects w_router to have shape [16, 64], got [8, 64]}}
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 16, top_k = 2, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<8x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %idx: tensor<?x4xi64>, %dw: tensor<?x2xf32>) {
  // expected-error @+1 {{'moe.route_grad' op expects indices to have shape [?, 2], got [?, 4]}}
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<?x4xi64>, tensor<?x2xf32>) -> (tensor<?x64xf32>, tensor<8x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<5x64xf32>, %wr: tensor<8x64xf32>, %idx: tensor<5x2xi64>, %dw: tensor<4x2xf32>) {
  // expected-error @+1 {{'moe.route_grad' op expects weights_grad to have shape [5, 2], got [4, 2]}}
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<5x64xf32>, tensor<8x64xf32>, tensor<5x2xi64>, tensor<4x2xf32>) -> (tensor<5x64xf32>, tensor<8x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wr: tensor<8x64xf32>, %idx: tensor<?x2xi64>, %dw: tensor<?x2xf32>) {
  // expected-error @+1 {{'moe.route_grad' op failed to verify that all of {input, input_grad} have same type}}
  %dx, %dwr = moe.route_grad %x, %wr, %idx, %dw
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0, balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> (tensor<?x64xf16>, tensor<8x64xf32>)
  return
}

// -----

func.func @f(%dxp: tensor<12x64xf32>, %slot: tensor<12xi64>, %idx: tensor<4x2xi64>) {
  // expected-error @+1 {{'moe.dispatch_grad' op expects permuted_grad to have shape [8, 64], got [12, 64]}}
  %dx = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<12x64xf32>, tensor<12xi64>, tensor<4x2xi64>) -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%dxp: tensor<?x64xf32>, %slot: tensor<?xi64>, %idx: tensor<?x2xi64>) {
  // expected-error @+1 {{'moe.dispatch_grad' op expects input_grad to have shape [?, 64], got [?, 32]}}
  %dx = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x2xi64>) -> tensor<?x32xf32>
  return
}

// -----

func.func @f(%dxp: tensor<?x64xf32>, %slot: tensor<?xi64>, %idx: tensor<?x2xi64>) {
  // expected-error @+1 {{'moe.dispatch_grad' op expects input_grad to have the element type of permuted_grad, got 'bf16' and 'f32'}}
  %dx = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x2xi64>) -> tensor<?x64xbf16>
  return
}

// -----

func.func @f(%xp: tensor<?x64xf32>, %off: tensor<9xi64>, %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>, %wd: tensor<8x64x32xf32>) {
  // expected-error @+1 {{'moe.expert_ffn_grad' op expects w_down to have shape [8, 32, 64], got [8, 64, 32]}}
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %xp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>)
  return
}

// -----

func.func @f(%xp: tensor<?x64xf32>, %off: tensor<8xi64>, %wg: tensor<8x64x32xf32>, %wu: tensor<8x64x32xf32>, %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn_grad' op expects expert_offsets to have shape [9], got [8]}}
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %xp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<8xi64>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>)
  return
}

// -----

func.func @f(%xp: tensor<?x64xf32>, %off: tensor<9xi64>, %wg: tensor<8x32x32xf32>, %wu: tensor<8x64x32xf32>, %wd: tensor<8x32x64xf32>) {
  // expected-error @+1 {{'moe.expert_ffn_grad' op expects w_gate to have shape [?, 64, ?], got [8, 32, 32]}}
  %a, %b, %c, %d = moe.expert_ffn_grad %xp, %off, %wg, %wu, %wd, %xp
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<9xi64>, tensor<8x32x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<8x32x32xf32>, tensor<8x64x32xf32>, tensor<8x32x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %wg: tensor<64x128xf32>, %wu: tensor<64x64xf32>, %wd: tensor<128x64xf32>) {
  // expected-error @+1 {{'moe.glu_ffn_grad' op expects w_up to have shape [64, 128], got [64, 64]}}
  %a, %b, %c, %d = moe.glu_ffn_grad %x, %wg, %wu, %wd, %x
      {activation = #moe.activation<swiglu>}
      : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x64xf32>, tensor<128x64xf32>, tensor<?x64xf32>)
      -> (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x64xf32>, tensor<128x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<f32>, %wg: tensor<64x128xf32>, %wu: tensor<64x128xf32>, %wd: tensor<128x64xf32>) {
  // expected-error @+1 {{'moe.glu_ffn_grad' op expects input to have rank >= 1, got 'tensor<f32>'}}
  %a, %b, %c, %d = moe.glu_ffn_grad %x, %wg, %wu, %wd, %x
      {activation = #moe.activation<swiglu>}
      : (tensor<f32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>, tensor<f32>)
      -> (tensor<f32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>)
  return
}

// -----

func.func @f(%yp: tensor<?x64xf32>, %slot: tensor<?xi64>, %w: tensor<?x4xf32>, %dy: tensor<?x32xf32>) {
  // expected-error @+1 {{'moe.combine_grad' op expects result_grad to have shape [?, 64], got [?, 32]}}
  %a, %b = moe.combine_grad %yp, %slot, %w, %dy
      : (tensor<?x64xf32>, tensor<?xi64>, tensor<?x4xf32>, tensor<?x32xf32>) -> (tensor<?x64xf32>, tensor<?x4xf32>)
  return
}

// -----

func.func @f(%yp: tensor<12x64xf32>, %slot: tensor<12xi64>, %w: tensor<4x2xf32>, %dy: tensor<4x64xf32>) {
  // expected-error @+1 {{'moe.combine_grad' op expects expert_output to have shape [8, 64], got [12, 64]}}
  %a, %b = moe.combine_grad %yp, %slot, %w, %dy
      : (tensor<12x64xf32>, tensor<12xi64>, tensor<4x2xf32>, tensor<4x64xf32>) -> (tensor<12x64xf32>, tensor<4x2xf32>)
  return
}
