// The reverse mode on dynamically shaped tensors (the batch x sequence
// dimensions of a model are dynamic): a token count taken from the input,
// expand_shape / collapse_shape with dynamic sizes, a projection and a head
// split like TensorBuilder's, linalg.broadcast over a dynamic dimension, a
// sigmoid, concat along a static dimension of dynamically sized tensors, an
// extract_slice with dynamic sizes, and a weighted sum of squares. fp64;
// gradients of both arguments vs central differences (+-1e-5).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-opt -test-moe-reverse-mode %s -o %t/grad.mlir
// RUN: moe-npy random %t/p.npy --shape=30 --seed=17 --low=-1 --high=1 --dtype=f64
// RUN: moe-npy random %t/x.npy --shape=12 --seed=18 --low=-1 --high=1 --dtype=f64
// RUN: moe-run %t/grad.mlir --entry=dyn_grad -i %t/p.npy -i %t/x.npy -o %t/grad
// RUN: moe-run %t/grad.mlir --entry=dyn_fd -i %t/p.npy -i %t/x.npy -o %t/fd
// RUN: moe-npy compare %t/grad/result1.npy %t/fd/result0.npy --rtol=1e-9 | FileCheck %s
// RUN: moe-npy compare %t/grad/result2.npy %t/fd/result1.npy --rtol=1e-9 | FileCheck %s
// RUN: moe-npy print %t/grad/result2.npy | FileCheck %s --check-prefix=SHAPE
// CHECK: max relative error
// SHAPE: shape [12]

#mk = affine_map<(i, j, k) -> (i, k)>
#kn = affine_map<(i, j, k) -> (k, j)>
#mn = affine_map<(i, j, k) -> (i, j)>
#id3 = affine_map<(i, h, d) -> (i, h, d)>
#col = affine_map<(i, j) -> (j)>
#all = affine_map<(i, j) -> (i, j)>
#none = affine_map<(i, j) -> ()>

func.func @dyn(%p: tensor<30xf64>, %x: tensor<?xf64>) -> tensor<f64> attributes {test.reverse_mode} {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %rows = arith.divui %n, %c4 : index
  %x2 = tensor.expand_shape %x [[0, 1]] output_shape [%rows, 4] : tensor<?xf64> into tensor<?x4xf64>
  %wf = tensor.extract_slice %p[0] [24] [1] : tensor<30xf64> to tensor<24xf64>
  %w = tensor.expand_shape %wf [[0, 1]] output_shape [4, 6] : tensor<24xf64> into tensor<4x6xf64>
  %bias = tensor.extract_slice %p[24] [3] [1] : tensor<30xf64> to tensor<3xf64>
  %weights = tensor.extract_slice %p[24] [6] [1] : tensor<30xf64> to tensor<6xf64>

  %e = tensor.empty(%rows) : tensor<?x6xf64>
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<?x6xf64>) -> tensor<?x6xf64>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x2, %w : tensor<?x4xf64>, tensor<4x6xf64>) outs(%z : tensor<?x6xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  } -> tensor<?x6xf64>
  %heads = tensor.expand_shape %y [[0], [1, 2]] output_shape [%rows, 2, 3] : tensor<?x6xf64> into tensor<?x2x3xf64>
  %e3 = tensor.empty(%rows) : tensor<?x2x3xf64>
  %bb = linalg.broadcast ins(%bias : tensor<3xf64>) outs(%e3 : tensor<?x2x3xf64>) dimensions = [0, 1]
  %sig = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%heads, %bb : tensor<?x2x3xf64>, tensor<?x2x3xf64>) outs(%e3 : tensor<?x2x3xf64>) {
  ^bb0(%h: f64, %b: f64, %o: f64):
    %t = arith.addf %h, %b : f64
    %nt = arith.negf %t : f64
    %ex = math.exp %nt : f64
    %den = arith.addf %one, %ex : f64
    %s = arith.divf %one, %den : f64
    linalg.yield %s : f64
  } -> tensor<?x2x3xf64>
  %merged = tensor.collapse_shape %sig [[0], [1, 2]] : tensor<?x2x3xf64> into tensor<?x6xf64>
  %cat = tensor.concat dim(1) %merged, %x2 : (tensor<?x6xf64>, tensor<?x4xf64>) -> tensor<?x10xf64>
  %win = tensor.extract_slice %cat[0, 2] [%rows, 6] [1, 1] : tensor<?x10xf64> to tensor<?x6xf64>

  %e0 = tensor.empty() : tensor<f64>
  %z0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %loss = linalg.generic {indexing_maps = [#all, #col, #none], iterator_types = ["reduction", "reduction"]}
      ins(%win, %weights : tensor<?x6xf64>, tensor<6xf64>) outs(%z0 : tensor<f64>) {
  ^bb0(%v: f64, %wv: f64, %acc: f64):
    %vw = arith.mulf %v, %wv : f64
    %sq = arith.mulf %vw, %v : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  return %loss : tensor<f64>
}

// Central differences of @dyn in %p, then in %x.
func.func @dyn_fd(%p: tensor<30xf64>, %x: tensor<?xf64>) -> (tensor<30xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %np = arith.constant 30 : index
  %h = arith.constant 1.0e-5 : f64
  %nx = tensor.dim %x, %c0 : tensor<?xf64>
  %initp = tensor.empty() : tensor<30xf64>
  %gp = scf.for %i = %c0 to %np step %c1 iter_args(%acc = %initp) -> (tensor<30xf64>) {
    %pi = tensor.extract %p[%i] : tensor<30xf64>
    %up = arith.addf %pi, %h : f64
    %dn = arith.subf %pi, %h : f64
    %pu = tensor.insert %up into %p[%i] : tensor<30xf64>
    %pd = tensor.insert %dn into %p[%i] : tensor<30xf64>
    %fu = func.call @dyn(%pu, %x) : (tensor<30xf64>, tensor<?xf64>) -> tensor<f64>
    %fd = func.call @dyn(%pd, %x) : (tensor<30xf64>, tensor<?xf64>) -> tensor<f64>
    %a = tensor.extract %fu[] : tensor<f64>
    %b = tensor.extract %fd[] : tensor<f64>
    %num = arith.subf %a, %b : f64
    %step = arith.subf %up, %dn : f64
    %d = arith.divf %num, %step : f64
    %next = tensor.insert %d into %acc[%i] : tensor<30xf64>
    scf.yield %next : tensor<30xf64>
  }
  %initx = tensor.empty(%nx) : tensor<?xf64>
  %gx = scf.for %i = %c0 to %nx step %c1 iter_args(%acc = %initx) -> (tensor<?xf64>) {
    %xi = tensor.extract %x[%i] : tensor<?xf64>
    %up = arith.addf %xi, %h : f64
    %dn = arith.subf %xi, %h : f64
    %xu = tensor.insert %up into %x[%i] : tensor<?xf64>
    %xd = tensor.insert %dn into %x[%i] : tensor<?xf64>
    %fu = func.call @dyn(%p, %xu) : (tensor<30xf64>, tensor<?xf64>) -> tensor<f64>
    %fd = func.call @dyn(%p, %xd) : (tensor<30xf64>, tensor<?xf64>) -> tensor<f64>
    %a = tensor.extract %fu[] : tensor<f64>
    %b = tensor.extract %fd[] : tensor<f64>
    %num = arith.subf %a, %b : f64
    %step = arith.subf %up, %dn : f64
    %d = arith.divf %num, %step : f64
    %next = tensor.insert %d into %acc[%i] : tensor<?xf64>
    scf.yield %next : tensor<?xf64>
  }
  return %gp, %gx : tensor<30xf64>, tensor<?xf64>
}
