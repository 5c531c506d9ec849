// The upstream-op rules of the reverse mode (ReverseMode.cpp, driven by
// -test-moe-reverse-mode) against central differences of the same function,
// all in fp64: @rules_grad's gradient vs @rules_fd, which perturbs each of
// the packed inputs by +-1e-5 and calls @rules twice. Covered: extract_slice
// of a packed buffer (the parameter views), expand_shape / collapse_shape,
// a contraction, linalg.broadcast, an element-wise generic with tanh, exp,
// log1p, sqrt, rsqrt, powf, divf, maximumf, select and subf, a value used
// several times, arith on tensors, concat, insert_slice, linalg.fill and an
// additive reduction to a scalar. The differences are accurate to about
// 1e-9 relative (h^2 truncation and 1e-16 / h rounding).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-opt -test-moe-reverse-mode %s -o %t/grad.mlir
// RUN: moe-npy random %t/p.npy --shape=52 --seed=7 --low=-1 --high=1 --dtype=f64
// RUN: moe-run %t/grad.mlir --entry=rules_grad -i %t/p.npy -o %t/grad
// RUN: moe-run %t/grad.mlir --entry=rules_fd -i %t/p.npy -o %t/fd
// RUN: moe-run %t/grad.mlir --entry=rules -i %t/p.npy -o %t/fwd
// RUN: moe-npy compare %t/grad/result0.npy %t/fwd/result0.npy --exact | FileCheck %s --check-prefix=SAME
// RUN: moe-npy compare %t/grad/result1.npy %t/fd/result0.npy --rtol=1e-9 | FileCheck %s
// RUN: moe-npy stats %t/grad/result1.npy | FileCheck %s --check-prefix=STATS
// SAME: 0 of 1 elements differ
// CHECK: max relative error
// (Entries 40-44 are zero, as the differences say: the insert_slice
// overwrites what they feed.)
// STATS: non-finite: 0

#mk = affine_map<(i, j, k) -> (i, k)>
#kn = affine_map<(i, j, k) -> (k, j)>
#mn = affine_map<(i, j, k) -> (i, j)>
#id2 = affine_map<(i, j) -> (i, j)>
#id1 = affine_map<(i) -> (i)>
#sum1 = affine_map<(i) -> ()>

func.func @rules(%p: tensor<52xf64>) -> tensor<f64> attributes {test.reverse_mode} {
  %zero = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %half = arith.constant 0.5 : f64
  %three_halves = arith.constant 1.5 : f64
  // Parameter views of the packed buffer.
  %xf = tensor.extract_slice %p[0] [12] [1] : tensor<52xf64> to tensor<12xf64>
  %wf = tensor.extract_slice %p[12] [20] [1] : tensor<52xf64> to tensor<20xf64>
  %b = tensor.extract_slice %p[32] [5] [1] : tensor<52xf64> to tensor<5xf64>
  %cf = tensor.extract_slice %p[37] [15] [1] : tensor<52xf64> to tensor<15xf64>
  %x = tensor.expand_shape %xf [[0, 1]] output_shape [3, 4] : tensor<12xf64> into tensor<3x4xf64>
  %w = tensor.expand_shape %wf [[0, 1]] output_shape [4, 5] : tensor<20xf64> into tensor<4x5xf64>
  %c = tensor.expand_shape %cf [[0, 1]] output_shape [3, 5] : tensor<15xf64> into tensor<3x5xf64>

  // y = x w: a contraction into zeros.
  %e35 = tensor.empty() : tensor<3x5xf64>
  %z35 = linalg.fill ins(%zero : f64) outs(%e35 : tensor<3x5xf64>) -> tensor<3x5xf64>
  %y = linalg.generic {indexing_maps = [#mk, #kn, #mn],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x4xf64>, tensor<4x5xf64>) outs(%z35 : tensor<3x5xf64>) {
  ^bb0(%a: f64, %bw: f64, %acc: f64):
    %m = arith.mulf %a, %bw : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  } -> tensor<3x5xf64>
  %bb = linalg.broadcast ins(%b : tensor<5xf64>) outs(%e35 : tensor<3x5xf64>) dimensions = [0]

  // An element-wise body with many scalar rules; %c is read three times.
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y, %bb, %c : tensor<3x5xf64>, tensor<3x5xf64>, tensor<3x5xf64>) outs(%e35 : tensor<3x5xf64>) {
  ^bb0(%yv: f64, %bv: f64, %cv: f64, %out: f64):
    %t = arith.addf %yv, %bv : f64
    %th = math.tanh %t : f64
    %u = arith.mulf %th, %cv : f64
    %ex = math.exp %u : f64
    %mx = arith.maximumf %ex, %cv : f64
    %yy = arith.mulf %yv, %yv : f64
    %den = arith.addf %one, %yy : f64
    %q = arith.divf %mx, %den : f64
    %l = math.log1p %yy : f64
    %cc = arith.mulf %cv, %cv : f64
    %cc1 = arith.addf %cc, %one : f64
    %sq = math.sqrt %cc1 : f64
    %rs = math.rsqrt %cc1 : f64
    %pw = math.powf %cc1, %three_halves : f64
    %pos = arith.cmpf ogt, %bv, %zero : f64
    %sel = arith.select %pos, %sq, %rs : f64
    %a1 = arith.addf %q, %l : f64
    %a2 = arith.subf %a1, %sel : f64
    %a3 = arith.addf %a2, %pw : f64
    %a4 = arith.mulf %a3, %half : f64
    linalg.yield %a4 : f64
  } -> tensor<3x5xf64>

  // Reshape, arith on tensors, concat, insert_slice.
  %rf = tensor.collapse_shape %r [[0, 1]] : tensor<3x5xf64> into tensor<15xf64>
  %prod = arith.mulf %rf, %cf : tensor<15xf64>
  %mixed = arith.subf %prod, %rf : tensor<15xf64>
  %cat = tensor.concat dim(0) %mixed, %b : (tensor<15xf64>, tensor<5xf64>) -> tensor<20xf64>
  %bsq = arith.mulf %b, %b : tensor<5xf64>
  %ins = tensor.insert_slice %bsq into %cat[3] [5] [1] : tensor<5xf64> into tensor<20xf64>
  %neg = arith.negf %ins : tensor<20xf64>
  %two = arith.constant dense<2.0> : tensor<20xf64>
  %wsq = arith.mulf %wf, %wf : tensor<20xf64>
  %den = arith.addf %wsq, %two : tensor<20xf64>
  %quot = arith.divf %neg, %den : tensor<20xf64>

  // 1/2 sum of squares, an additive reduction into a 0-d tensor.
  %e0 = tensor.empty() : tensor<f64>
  %z0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %loss = linalg.generic {indexing_maps = [#id1, #sum1],
                          iterator_types = ["reduction"]}
      ins(%quot : tensor<20xf64>) outs(%z0 : tensor<f64>) {
  ^bb0(%v: f64, %acc: f64):
    %v2 = arith.mulf %v, %v : f64
    %h2 = arith.mulf %v2, %half : f64
    %s = arith.addf %acc, %h2 : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  return %loss : tensor<f64>
}

// Central differences of @rules in every input.
func.func @rules_fd(%p: tensor<52xf64>) -> tensor<52xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 52 : index
  %h = arith.constant 1.0e-5 : f64
  %init = tensor.empty() : tensor<52xf64>
  %g = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<52xf64>) {
    %pi = tensor.extract %p[%i] : tensor<52xf64>
    %up = arith.addf %pi, %h : f64
    %dn = arith.subf %pi, %h : f64
    %pu = tensor.insert %up into %p[%i] : tensor<52xf64>
    %pd = tensor.insert %dn into %p[%i] : tensor<52xf64>
    %fu = func.call @rules(%pu) : (tensor<52xf64>) -> tensor<f64>
    %fd = func.call @rules(%pd) : (tensor<52xf64>) -> tensor<f64>
    %a = tensor.extract %fu[] : tensor<f64>
    %b = tensor.extract %fd[] : tensor<f64>
    %num = arith.subf %a, %b : f64
    %step = arith.subf %up, %dn : f64
    %d = arith.divf %num, %step : f64
    %next = tensor.insert %d into %acc[%i] : tensor<52xf64>
    scf.yield %next : tensor<52xf64>
  }
  return %g : tensor<52xf64>
}
