// @<model>_grad through the moe ops whose adjoints exist (embedding,
// rms_norm, short_conv, l2_norm, attn_res), the decomposition's attn_res
// key-norm fold, a projection and a weighted sum of squares, against fp32
// central differences (h = 1e-2) of the pass's own forward @common, for all
// 76 slots. The difference function is appended to the pass's output
// (split-file), since the model's symbol is no function before the pass.

// RUN: rm -rf %t && split-file %s %t
// RUN: moe-opt -moe-build-training-step %t/model.mlir -o %t/step.mlir
// RUN: awk '{ line[NR] = $0 } END { n = NR; while (line[n] != "}") n--; for (i = 1; i < n; i++) print line[i] }' %t/step.mlir > %t/combined.mlir
// RUN: cat %t/fd.mlir >> %t/combined.mlir && echo "}" >> %t/combined.mlir
// RUN: moe-npy random %t/p.npy --shape=76 --seed=21 --low=-1 --high=1
// RUN: moe-npy random %t/tok.npy --shape=2,5 --seed=22 --low=0 --high=7 --dtype=i32
// RUN: moe-npy random %t/lab.npy --shape=2,5 --seed=23 --low=0 --high=7 --dtype=i32
// RUN: moe-run %t/combined.mlir --entry=common_grad -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/grad
// RUN: moe-run %t/combined.mlir --entry=common_fd -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/fd
// RUN: moe-npy compare %t/grad/result1.npy %t/fd/result0.npy --rtol=5e-4 | FileCheck %s
// CHECK: max relative error

//--- model.mlir
// Layout: embed 0 (32), conv 32 (16), norm 48 (4), query 52 (4),
// key_norm 56 (4), w 60 (16); P = 76.
moe.model @common(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %emb = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %cw = moe.param "conv" init <normal, std = 0.02> : tensor<4x4xf32>
  %conv = moe.short_conv %emb, %cw {silu} : tensor<?x?x4xf32>, tensor<4x4xf32>
  %nw = moe.param "norm.weight" init <ones> no_weight_decay : tensor<4xf32>
  %normed = moe.rms_norm %conv, %nw : tensor<?x?x4xf32>, tensor<4xf32>
  %unit = moe.l2_norm %normed {epsilon = 1.0e-3 : f64} : tensor<?x?x4xf32>
  %q = moe.param "res.query" init <zeros> no_weight_decay : tensor<4xf32>
  %kn = moe.param "res.key_norm" init <ones> no_weight_decay : tensor<4xf32>
  %mix = moe.attn_res %emb, %unit query(%q) key_norm(%kn) {block_size = 4 : i64, sublayer = 1 : i64}
      : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  %w = moe.param "w" init <normal, std = 0.02> : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %mix, %c0 : tensor<?x?x4xf32>
  %t = tensor.dim %mix, %c1 : tensor<?x?x4xf32>
  %e = tensor.empty(%b, %t) : tensor<?x?x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, t, n, d) -> (b, t, d)>,
                                        affine_map<(b, t, n, d) -> (d, n)>,
                                        affine_map<(b, t, n, d) -> (b, t, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%mix, %w : tensor<?x?x4xf32>, tensor<4x4xf32>) outs(%z : tensor<?x?x4xf32>) {
  ^bb0(%a: f32, %wv: f32, %acc: f32):
    %m = arith.mulf %a, %wv : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(b, t, n) -> (b, t, n)>, affine_map<(b, t, n) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%y : tensor<?x?x4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %h = arith.mulf %sq, %half : f32
    %s = arith.addf %acc, %h : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}

//--- fd.mlir
  func.func @common_fd(%p: tensor<76xf32>, %tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>) -> tensor<76xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 76 : index
    %h = arith.constant 1.0e-2 : f32
    %init = tensor.empty() : tensor<76xf32>
    %g = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<76xf32>) {
      %pi = tensor.extract %p[%i] : tensor<76xf32>
      %up = arith.addf %pi, %h : f32
      %dn = arith.subf %pi, %h : f32
      %pu = tensor.insert %up into %p[%i] : tensor<76xf32>
      %pd = tensor.insert %dn into %p[%i] : tensor<76xf32>
      %fu = func.call @common(%pu, %tokens, %labels) : (tensor<76xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<f32>
      %fd = func.call @common(%pd, %tokens, %labels) : (tensor<76xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<f32>
      %a = tensor.extract %fu[] : tensor<f32>
      %b = tensor.extract %fd[] : tensor<f32>
      %num = arith.subf %a, %b : f32
      %step = arith.subf %up, %dn : f32
      %d = arith.divf %num, %step : f32
      %next = tensor.insert %d into %acc[%i] : tensor<76xf32>
      scf.yield %next : tensor<76xf32>
    }
    return %g : tensor<76xf32>
  }
