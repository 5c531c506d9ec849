// RUN: moe-opt %s --split-input-file --verify-diagnostics

func.func @one_rank(%g: tensor<4xf32>) {
  // expected-error@+1 {{attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 2}}
  %0 = moe.all_reduce %g {ranks = 1} : tensor<4xf32>
  return
}

// -----

func.func @bad_element(%g: tensor<4xbf16>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or 64-bit signless integer values}}
  %0 = moe.all_reduce %g {ranks = 2} : tensor<4xbf16>
  return
}

// -----

func.func @gather_rank(%r: tensor<8x4xf32>) {
  // expected-error@+1 {{expects a result of rank 3 (the ranks, then the input's shape), got 'tensor<16x4xf32>'}}
  %0 = moe.all_gather %r {ranks = 2} : tensor<8x4xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @gather_leading(%r: tensor<8x4xf32>) {
  // expected-error@+1 {{expects the leading result dimension to be the 2 ranks, got 3}}
  %0 = moe.all_gather %r {ranks = 2} : tensor<8x4xf32> -> tensor<3x8x4xf32>
  return
}

// -----

func.func @gather_shape(%r: tensor<8x?xf32>) {
  // expected-error@+1 {{expects result dimension 2 to be input dimension 1: 'tensor<2x8x4xf32>' is not [ranks] ++ 'tensor<8x?xf32>'}}
  %0 = moe.all_gather %r {ranks = 2} : tensor<8x?xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @gather_type(%r: tensor<8xf32>) {
  // expected-error@+1 {{expects the result element type 'f64' to equal the input's 'f32'}}
  %0 = moe.all_gather %r {ranks = 2} : tensor<8xf32> -> tensor<2x8xf64>
  return
}

// -----

func.func @strided(%a: memref<4xf32, strided<[2]>>) {
  // expected-error@+1 {{expects the reduced buffer to have the identity layout, got 'memref<4xf32, strided<[2]>>'}}
  moe.all_reduce_in_place %a {ranks = 2} : memref<4xf32, strided<[2]>>
  return
}

// -----

func.func @gather_into(%a: memref<4xf32>, %b: memref<2x5xf32>) {
  // expected-error@+1 {{expects result dimension 1 to be input dimension 0: 'memref<2x5xf32>' is not [ranks] ++ 'memref<4xf32>'}}
  moe.all_gather_into %a, %b {ranks = 2} : memref<4xf32>, memref<2x5xf32>
  return
}

// -----

func.func @to_all_blocks(%c: tensor<3x4xi64>) {
  // expected-error@+1 {{expects a leading dimension of the 2 ranks, got 'tensor<3x4xi64>'}}
  %0 = moe.all_to_all %c {ranks = 2} : tensor<3x4xi64>
  return
}

// -----

func.func @to_all_v_counts(%r: tensor<?x8xf32>, %s: tensor<3xi64>, %t: tensor<2xi64>, %n: index) {
  // expected-error@+1 {{expects send_rows to hold one count per rank (2), got 'tensor<3xi64>'}}
  %0 = moe.all_to_all_v %r, %s, %t, %n {ranks = 2} : (tensor<?x8xf32>, tensor<3xi64>, tensor<2xi64>) -> tensor<?x8xf32>
  return
}

// -----

func.func @to_all_v_rows(%r: tensor<?x8xf32>, %s: tensor<2xi64>, %n: index) {
  // expected-error@+1 {{expects rows of the same shape in and out, got 'tensor<?x8xf32>' and 'tensor<?x4xf32>'}}
  %0 = moe.all_to_all_v %r, %s, %s, %n {ranks = 2} : (tensor<?x8xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @to_all_into(%a: memref<2x4xi64>, %b: memref<2x5xi64>) {
  // expected-error@+1 {{expects the input and output buffers to have one type, got 'memref<2x4xi64>' and 'memref<2x5xi64>'}}
  moe.all_to_all_into %a, %b {ranks = 2} : memref<2x4xi64>, memref<2x5xi64>
  return
}
