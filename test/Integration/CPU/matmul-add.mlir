// moe-run on dynamic shapes: D = A·B + C with linalg.matmul + linalg.add,
// against an independent reference, @matmul_add_loops, written as explicit
// scf.for loops over tensor.extract/tensor.insert that accumulate in f64 and
// round once. The bound 1e-5 is relative to max|D| (moe-npy compare).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/a.npy --shape=5,7 --seed=1
// RUN: moe-npy random %t/b.npy --shape=7,3 --seed=2
// RUN: moe-npy random %t/c.npy --shape=5,3 --seed=3 --low=-4 --high=4
// RUN: moe-run %s --entry=matmul_add -i %t/a.npy -i %t/b.npy -i %t/c.npy -o %t/out
// RUN: moe-run %s --entry=matmul_add_loops -i %t/a.npy -i %t/b.npy -i %t/c.npy -o %t/ref
// RUN: moe-npy print %t/out/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/out/result0.npy %t/ref/result0.npy --rtol=1e-5 | FileCheck %s

// Other sizes through the same code: a single row and K = 1.
// RUN: moe-npy random %t/a1.npy --shape=1,1 --seed=4
// RUN: moe-npy random %t/b1.npy --shape=1,9 --seed=5
// RUN: moe-npy random %t/c1.npy --shape=1,9 --seed=6
// RUN: moe-run %s --entry=matmul_add -i %t/a1.npy -i %t/b1.npy -i %t/c1.npy -o %t/out1
// RUN: moe-run %s --entry=matmul_add_loops -i %t/a1.npy -i %t/b1.npy -i %t/c1.npy -o %t/ref1
// RUN: moe-npy compare %t/out1/result0.npy %t/ref1/result0.npy --rtol=1e-5 | FileCheck %s

// SHAPE: shape [5, 3] dtype f32
// CHECK: max relative error

func.func @matmul_add(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>,
                      %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%m, %n) : tensor<?x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  %ab = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>)
                      outs(%acc : tensor<?x?xf32>) -> tensor<?x?xf32>
  %sum = linalg.add ins(%ab, %c : tensor<?x?xf32>, tensor<?x?xf32>)
                    outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %sum : tensor<?x?xf32>
}

func.func @matmul_add_loops(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>,
                            %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %k = tensor.dim %a, %c1 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%m, %n) : tensor<?x?xf32>
  %res = scf.for %i = %c0 to %m step %c1 iter_args(%d = %init) -> tensor<?x?xf32> {
    %row = scf.for %j = %c0 to %n step %c1 iter_args(%dr = %d) -> tensor<?x?xf32> {
      %dot = scf.for %l = %c0 to %k step %c1 iter_args(%s = %zero) -> f64 {
        %x = tensor.extract %a[%i, %l] : tensor<?x?xf32>
        %y = tensor.extract %b[%l, %j] : tensor<?x?xf32>
        %xd = arith.extf %x : f32 to f64
        %yd = arith.extf %y : f32 to f64
        %p = arith.mulf %xd, %yd : f64
        %s2 = arith.addf %s, %p : f64
        scf.yield %s2 : f64
      }
      %cij = tensor.extract %c[%i, %j] : tensor<?x?xf32>
      %cd = arith.extf %cij : f32 to f64
      %t = arith.addf %dot, %cd : f64
      %tf = arith.truncf %t : f64 to f32
      %dr2 = tensor.insert %tf into %dr[%i, %j] : tensor<?x?xf32>
      scf.yield %dr2 : tensor<?x?xf32>
    }
    scf.yield %row : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}
