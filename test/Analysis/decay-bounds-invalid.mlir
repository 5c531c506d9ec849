// RUN: moe-opt %s -split-input-file -test-moe-decay-bounds -verify-diagnostics -o /dev/null

// Malformed `test.decay_probe` attributes are errors of the test pass.

func.func @not_a_dictionary(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' to be a unit or dictionary attribute, found 1 : i64}}
  %p = tensor.cast %g {test.decay_probe = 1} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @unknown_key(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' keys tile_lengths, references or operand_type, found 'tile_length'}}
  %p = tensor.cast %g {test.decay_probe = {tile_length = array<i64: 16>}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @tile_lengths_not_i64_array(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' tile_lengths to be an array<i64>, found [16]}}
  %p = tensor.cast %g {test.decay_probe = {tile_lengths = [16]}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @tile_length_zero(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects tile lengths >= 1, found 0}}
  %p = tensor.cast %g {test.decay_probe = {tile_lengths = array<i64: 16, 0>}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @references_not_strings(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' references to be an array of strings, found [1]}}
  %p = tensor.cast %g {test.decay_probe = {references = [1]}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @unknown_reference(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects references pre, start or mid, found 'end'}}
  %p = tensor.cast %g {test.decay_probe = {references = ["mid", "end"]}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @operand_type_not_a_type(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' operand_type to be a type, found "f32"}}
  %p = tensor.cast %g {test.decay_probe = {operand_type = "f32"}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @operand_type_not_float(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects a float operand type, found 'i32'}}
  %p = tensor.cast %g {test.decay_probe = {operand_type = i32}} : tensor<4xf32> to tensor<4xf32>
  return
}

// -----

func.func @no_results(%g: tensor<4xf32>) {
  // expected-error@+1 {{expects 'test.decay_probe' on an op with results}}
  return {test.decay_probe}
}
