// Arguments and results of every element type moe-run passes: f16 and bf16
// take float32 .npy files and come back as float32; i32 and i64 come back as
// int64. Each is checked against the same computation in f32 (or a
// differently written integer one), with the bound set by the precision of
// the narrow type: 2^-11 relative for f16, 2^-8 for bf16, exact for integers.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=3,17 --seed=21 --low=-3 --high=3
// RUN: moe-run %s --entry=affine_f32 -i %t/x.npy -o %t/f32
// RUN: moe-run %s --entry=affine_f16 -i %t/x.npy -o %t/f16
// RUN: moe-run %s --entry=affine_bf16 -i %t/x.npy -o %t/bf16
// RUN: moe-npy print %t/f16/result0.npy | FileCheck %s --check-prefix=F16
// RUN: moe-npy compare %t/f16/result0.npy %t/f32/result0.npy --rtol=1e-3
// RUN: moe-npy compare %t/bf16/result0.npy %t/f32/result0.npy --rtol=1e-2
// RUN: not moe-npy compare %t/bf16/result0.npy %t/f32/result0.npy --rtol=1e-4
// F16: shape [3, 17] dtype f32

// RUN: moe-npy random %t/i.npy --shape=4,5 --seed=22 --dtype=i32 --low=-1000 --high=1000
// RUN: moe-npy random %t/j.npy --shape=4,5 --seed=23 --dtype=i64 --low=-1000000 --high=1000000
// RUN: moe-run %s --entry=int_mul -i %t/i.npy -i %t/j.npy -o %t/mul
// RUN: moe-run %s --entry=int_add -i %t/i.npy -i %t/j.npy -o %t/add
// RUN: moe-npy stats %t/mul/result0.npy | FileCheck %s --check-prefix=INT
// RUN: moe-npy compare %t/mul/result0.npy %t/add/result0.npy --rtol=0
// RUN: moe-npy compare %t/mul/result1.npy %t/add/result1.npy --rtol=0
// INT: dtype: i64

// A returned argument, a returned constant and a rank-0 result: the
// deallocation pipeline hands each back as a buffer the caller owns.
// RUN: moe-run %s --entry=pass_through -i %t/x.npy -o %t/pass
// RUN: moe-npy compare %t/pass/result0.npy %t/x.npy --rtol=0
// RUN: moe-npy compare %t/pass/result1.npy %t/x.npy --rtol=0
// RUN: moe-npy print %t/pass/result2.npy | FileCheck %s --check-prefix=CST
// RUN: moe-npy print %t/pass/result3.npy | FileCheck %s --check-prefix=SCALAR
// CST: shape [3] dtype i64
// CST-NEXT: values [7, -8, 9]
// SCALAR: shape [] dtype f32
// SCALAR-NEXT: values [2.5]

#id = affine_map<(i, j) -> (i, j)>

// 0.5 * x + 0.25, with the arithmetic in the argument's element type.
func.func @affine_f32(%x: tensor<?x17xf32>) -> tensor<?x17xf32> {
  %half = arith.constant 0.5 : f32
  %quarter = arith.constant 0.25 : f32
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x17xf32>
  %e = tensor.empty(%m) : tensor<?x17xf32>
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x17xf32>) outs(%e : tensor<?x17xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = arith.mulf %in, %half : f32
    %s = arith.addf %p, %quarter : f32
    linalg.yield %s : f32
  } -> tensor<?x17xf32>
  return %r : tensor<?x17xf32>
}

func.func @affine_f16(%x: tensor<?x17xf16>) -> tensor<?x17xf16> {
  %half = arith.constant 0.5 : f16
  %quarter = arith.constant 0.25 : f16
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x17xf16>
  %e = tensor.empty(%m) : tensor<?x17xf16>
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x17xf16>) outs(%e : tensor<?x17xf16>) {
  ^bb0(%in: f16, %out: f16):
    %p = arith.mulf %in, %half : f16
    %s = arith.addf %p, %quarter : f16
    linalg.yield %s : f16
  } -> tensor<?x17xf16>
  return %r : tensor<?x17xf16>
}

func.func @affine_bf16(%x: tensor<3x?xbf16>) -> tensor<3x?xbf16> {
  %half = arith.constant 0.5 : bf16
  %quarter = arith.constant 0.25 : bf16
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<3x?xbf16>
  %e = tensor.empty(%n) : tensor<3x?xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<3x?xbf16>) outs(%e : tensor<3x?xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %p = arith.mulf %in, %half : bf16
    %s = arith.addf %p, %quarter : bf16
    linalg.yield %s : bf16
  } -> tensor<3x?xbf16>
  return %r : tensor<3x?xbf16>
}

// (3 * i, j * j) versus (i + i + i, j squared by a second multiplication
// order); both results are exact in their types.
func.func @int_mul(%i: tensor<4x5xi32>, %j: tensor<4x5xi64>)
    -> (tensor<4x5xi32>, tensor<4x5xi64>) {
  %three = arith.constant dense<3> : tensor<4x5xi32>
  %e32 = tensor.empty() : tensor<4x5xi32>
  %e64 = tensor.empty() : tensor<4x5xi64>
  %a = linalg.mul ins(%i, %three : tensor<4x5xi32>, tensor<4x5xi32>)
                  outs(%e32 : tensor<4x5xi32>) -> tensor<4x5xi32>
  %b = linalg.mul ins(%j, %j : tensor<4x5xi64>, tensor<4x5xi64>)
                  outs(%e64 : tensor<4x5xi64>) -> tensor<4x5xi64>
  return %a, %b : tensor<4x5xi32>, tensor<4x5xi64>
}

func.func @int_add(%i: tensor<4x5xi32>, %j: tensor<4x5xi64>)
    -> (tensor<4x5xi32>, tensor<4x5xi64>) {
  %e32 = tensor.empty() : tensor<4x5xi32>
  %e64 = tensor.empty() : tensor<4x5xi64>
  %a = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%i : tensor<4x5xi32>) outs(%e32 : tensor<4x5xi32>) {
  ^bb0(%in: i32, %out: i32):
    %s = arith.addi %in, %in : i32
    %t = arith.addi %s, %in : i32
    linalg.yield %t : i32
  } -> tensor<4x5xi32>
  %b = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%j : tensor<4x5xi64>) outs(%e64 : tensor<4x5xi64>) {
  ^bb0(%in: i64, %out: i64):
    %abs = math.absi %in : i64
    %p = arith.muli %abs, %abs : i64
    linalg.yield %p : i64
  } -> tensor<4x5xi64>
  return %a, %b : tensor<4x5xi32>, tensor<4x5xi64>
}

func.func @pass_through(%x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<3xi32>, tensor<f32>) {
  %c = arith.constant dense<[7, -8, 9]> : tensor<3xi32>
  %s = arith.constant dense<2.5> : tensor<f32>
  return %x, %x, %c, %s
      : tensor<?x?xf32>, tensor<?x?xf32>, tensor<3xi32>, tensor<f32>
}
