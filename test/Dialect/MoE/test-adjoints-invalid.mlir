// RUN: moe-opt %s -test-moe-adjoints -split-input-file -verify-diagnostics

// The errors of -test-moe-adjoints (the test pass that drives
// DifferentiableOpInterface::buildAdjoints).

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'test.adjoints' is on an op without DifferentiableOpInterface}}
  %y = arith.addf %x, %x {test.adjoints = array<i64: 0>} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'test.adjoints' needs one entry per result (1), got 2}}
  %y = moe.l2_norm %x {test.adjoints = array<i64: 0, 0>} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'test.adjoints' entry 0 (3) is neither -1 nor an argument of @f}}
  %y = moe.l2_norm %x {test.adjoints = array<i64: 3>} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @f(%dy: tensor<?x4xf32>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{argument #0 of type 'tensor<?x4xf32>' cannot be the adjoint of result #0 of type 'tensor<?x8xf32>'}}
  %y = moe.l2_norm %x {test.adjoints = array<i64: 0>} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'test.adjoints' must be an array<i64>}}
  %y = moe.l2_norm %x {test.adjoints = 0 : i64} : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
