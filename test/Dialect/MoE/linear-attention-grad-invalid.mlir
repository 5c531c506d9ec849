// RUN: moe-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of moe.kda_grad (MoELinearAttentionGradOps.cpp)
// and the ODS constraints that matter (fp32 log decay and states).

func.func @dynamic_key_dim(%q: tensor<?x?x4x?xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x?xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects a static head dimension K}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x?xf32>, tensor<?x?x4x?xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x?xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x?xf32>, tensor<?x?x4x?xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x?xf32>,
          tensor<?x?x4xf32>, tensor<?x4x?x32xf32>)
  return
}

// -----

func.func @query_rank(%q: tensor<?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects query to have shape [?, ?, ?, ?], got [?, 4, 64]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x4x64xf32>, tensor<?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @key_shape(%q: tensor<2x?x4x64xf32>, %k: tensor<2x?x4x32xf32>, %v: tensor<2x?x4x32xf32>,
    %g: tensor<2x?x4x64xf32>, %beta: tensor<2x?x4xf32>, %do: tensor<2x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects key to have shape [2, ?, 4, 64], got [2, ?, 4, 32]}}
  %0:6 = moe.kda_grad %q, %k, %v, %g, %beta output_adjoint(%do)
      : (tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
         tensor<2x?x4xf32>, tensor<2x?x4x32xf32>)
      -> (tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
          tensor<2x?x4xf32>, tensor<2x4x64x32xf32>)
  return
}

// -----

func.func @value_heads(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x2x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x2x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects value to have shape [?, ?, 4, ?], got [?, ?, 2, 32]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x2x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x2x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x2x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @log_decay_shape(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x32xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects log_decay to have shape [?, ?, 4, 64], got [?, ?, 4, 32]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @log_decay_type(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf16>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op operand #3 must be ranked tensor of 32-bit float values}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf16>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf16>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @beta_shape(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4x1xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects beta to have shape [?, ?, 4], got [?, ?, 4, 1]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4x1xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4x1xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @output_adjoint_shape(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x64xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects output_adjoint to have shape [?, ?, 4, 32], got [?, ?, 4, 64]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @output_adjoint_type(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xbf16>) {
  // expected-error @+1 {{'moe.kda_grad' op expects the output_adjoint element type 'bf16' to match the value's 'f32'}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xbf16>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @initial_state_layout(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x64x32xf32>,
    %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects initial_state to have shape [?, 4, 32, 64], got [?, 4, 64, 32]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta initial_state(%s0) output_adjoint(%do)
      {state_layout = #moe.state_layout<value_major>}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x4x64x32xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @final_state_adjoint_shape(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>,
    %ds: tensor<?x4x64x16xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects final_state_adjoint to have shape [?, 4, 64, 32], got [?, 4, 64, 16]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do) final_state_adjoint(%ds)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>, tensor<?x4x64x16xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @d_initial_state_shape(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects d_initial_state to have shape [?, 4, 64, 32], got [?, 4, 32, 64]}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x32x64xf32>)
  return
}

// -----

func.func @d_query_type(%q: tensor<?x?x4x64xbf16>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects d_query to have the type of query ('tensor<?x?x4x64xbf16>'), got 'tensor<?x?x4x64xf32>'}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @d_beta_type(%q: tensor<2x?x4x64xf32>, %v: tensor<2x?x4x32xf32>,
    %g: tensor<2x?x4x64xf32>, %beta: tensor<2x?x4xf32>, %do: tensor<2x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects d_beta to have the type of beta ('tensor<2x?x4xf32>'), got 'tensor<?x?x4xf32>'}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do)
      : (tensor<2x?x4x64xf32>, tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
         tensor<2x?x4xf32>, tensor<2x?x4x32xf32>)
      -> (tensor<2x?x4x64xf32>, tensor<2x?x4x64xf32>, tensor<2x?x4x32xf32>, tensor<2x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<2x4x64x32xf32>)
  return
}

// -----

func.func @d_initial_state_type(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<3x4x64x32xf32>,
    %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects d_initial_state to have the type of initial_state ('tensor<3x4x64x32xf32>'), got 'tensor<?x4x64x32xf32>'}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta initial_state(%s0) output_adjoint(%do)
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<3x4x64x32xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}

// -----

func.func @scale(%q: tensor<?x?x4x64xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4x64xf32>, %beta: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xf32>) {
  // expected-error @+1 {{'moe.kda_grad' op expects scale to be finite and positive}}
  %0:6 = moe.kda_grad %q, %q, %v, %g, %beta output_adjoint(%do) {scale = -1.0 : f64}
      : (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x64xf32>,
          tensor<?x?x4xf32>, tensor<?x4x64x32xf32>)
  return
}
