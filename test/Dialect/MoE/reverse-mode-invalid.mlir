// RUN: moe-opt -test-moe-reverse-mode -split-input-file -verify-diagnostics %s

// A body op without a derivative rule.
#id = affine_map<(i) -> (i)>
func.func @no_rule(%x: tensor<4xf32>) -> tensor<4xf32> attributes {test.reverse_mode} {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{cannot differentiate 'math.atan' in its body}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.atan %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A max-reduction is not an additive accumulation.
#id = affine_map<(i) -> (i)>
#sum = affine_map<(i) -> ()>
func.func @max_reduction(%x: tensor<4xf32>) -> tensor<f32> attributes {test.reverse_mode} {
  %e = tensor.empty() : tensor<f32>
  // expected-error @+1 {{cannot differentiate a reduction whose result #0 is not an additive accumulation}}
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A gradient through a scalar read out of a tensor.
func.func @scalar(%x: tensor<4xf32>) -> tensor<4xf32> attributes {test.reverse_mode} {
  %c0 = arith.constant 0 : index
  %s = tensor.extract %x[%c0] : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{cannot differentiate through the scalar 'f32' that it reads}}
  %r = linalg.fill ins(%s : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// An upstream op without a rule.
func.func @no_op_rule(%x: tensor<4xf32>) -> tensor<6xf32> attributes {test.reverse_mode} {
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{cannot differentiate 'tensor.pad': no adjoint rule}}
  %r = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %r : tensor<6xf32>
}

// -----

// An operand read through an indexing map that is not a projected
// permutation (a convolution window).
#win = affine_map<(i, j) -> (i + j)>
#out = affine_map<(i, j) -> (i)>
#w = affine_map<(i, j) -> (j)>
func.func @window(%x: tensor<6xf32>, %k: tensor<3xf32>, %init: tensor<4xf32>) -> tensor<4xf32> attributes {test.reverse_mode} {
  // expected-error @+1 {{cannot differentiate operand #0: its indexing map is not a projected permutation}}
  %r = linalg.generic {indexing_maps = [#win, #w, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x, %k : tensor<6xf32>, tensor<3xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
