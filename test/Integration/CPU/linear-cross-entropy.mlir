// moe.linear_cross_entropy (the lm_head projection fused with the mean
// cross-entropy, ALGORITHMS.md section 7.2) and its adjoint
// moe.linear_cross_entropy_grad, lowered by -moe-tile-loss in token tiles
// that walk the vocabulary in chunks, through moe-run, against the fp64
// `linear_cross_entropy` of moe-reference (explicit logits, textbook
// softmax; its adjoints are checked against finite differences below).
//
// V = 600 is not a multiple of the chunk: 2 chunks of 256 and a remainder of
// 88 with the default options, 9 chunks of 64 and a remainder of 24 with
// token-tile=8 vocab-chunk=64. 2 x 37 = 74 tokens are not a multiple of the
// token tile either. Labels: max(raw, -1) for raw in [-30, 599] with
// ignore_index = -1, so that a few positions are ignored (the LABELS line
// shows that this seed draws some) and the others cover the whole
// vocabulary. The loss adjoint is 1.5. Observed relative errors: loss and
// lse ~1e-7, dx ~9e-7, dW ~3e-7; the bounds are 1e-6 (forward) and 5e-6
// (adjoints).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=2,37,40 --seed=61 --low=-2 --high=2
// RUN: moe-npy random %t/w.npy --shape=600,40 --seed=62 --low=-0.5 --high=0.5
// RUN: moe-npy random %t/raw.npy --shape=2,37 --seed=63 --dtype=i32 --low=-30 --high=599
// RUN: moe-run %s --entry=loss -i %t/x.npy -i %t/w.npy -i %t/raw.npy -o %t/fwd
// RUN: moe-npy stats %t/fwd/result2.npy | FileCheck %s --check-prefix=LABELS
// RUN: moe-reference linear_cross_entropy %t/x.npy %t/w.npy %t/fwd/result2.npy --ignore-index=-1 --d-loss=1.5 -o %t/ref_loss.npy --lse=%t/ref_lse.npy --dx=%t/ref_dx.npy --dw=%t/ref_dw.npy
// RUN: moe-npy compare %t/fwd/result0.npy %t/ref_loss.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/fwd/result1.npy %t/ref_lse.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %s --entry=grad -i %t/x.npy -i %t/w.npy -i %t/fwd/result2.npy -o %t/bwd
// RUN: moe-npy compare %t/bwd/result0.npy %t/ref_dx.npy --rtol=5e-6 | FileCheck %s
// RUN: moe-npy compare %t/bwd/result1.npy %t/ref_dw.npy --rtol=5e-6 | FileCheck %s

// Small tiles: many chunks and token tiles.
// RUN: moe-opt %s --moe-tile-loss="token-tile=8 vocab-chunk=64" -o %t/small.mlir
// RUN: moe-run %t/small.mlir --entry=loss -i %t/x.npy -i %t/w.npy -i %t/raw.npy -o %t/fwd_small
// RUN: moe-npy compare %t/fwd_small/result0.npy %t/ref_loss.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/fwd_small/result1.npy %t/ref_lse.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %t/small.mlir --entry=grad -i %t/x.npy -i %t/w.npy -i %t/fwd/result2.npy -o %t/bwd_small
// RUN: moe-npy compare %t/bwd_small/result0.npy %t/ref_dx.npy --rtol=5e-6 | FileCheck %s
// RUN: moe-npy compare %t/bwd_small/result1.npy %t/ref_dw.npy --rtol=5e-6 | FileCheck %s

// The GPU back end's whole-batch form (-moe-chunk-loss, before the tiling
// would take the ops): 2 chunks of 256 and a remainder of 88, the logits of
// each chunk for all tokens, their adjoint G, d_input summed over the chunks
// and d_weight's rows chunk by chunk; the same bounds.
// RUN: moe-opt %s --pass-pipeline='builtin.module(func.func(moe-chunk-loss{vocab-chunk=256}))' -o %t/chunks.mlir
// RUN: moe-run %t/chunks.mlir --entry=loss -i %t/x.npy -i %t/w.npy -i %t/raw.npy -o %t/fwd_chunks
// RUN: moe-npy compare %t/fwd_chunks/result0.npy %t/ref_loss.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/fwd_chunks/result1.npy %t/ref_lse.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-run %t/chunks.mlir --entry=grad -i %t/x.npy -i %t/w.npy -i %t/fwd/result2.npy -o %t/bwd_chunks
// RUN: moe-npy compare %t/bwd_chunks/result0.npy %t/ref_dx.npy --rtol=5e-6 | FileCheck %s
// RUN: moe-npy compare %t/bwd_chunks/result1.npy %t/ref_dw.npy --rtol=5e-6 | FileCheck %s

// The reference's adjoints against fp64 central differences (every entry of
// a small problem with ignored labels).
// RUN: moe-npy random %t/sx.npy --shape=3,5,6 --seed=64 --low=-2 --high=2
// RUN: moe-npy random %t/sw.npy --shape=11,6 --seed=65 --low=-1 --high=1
// RUN: moe-npy random %t/sl.npy --shape=3,5 --seed=66 --dtype=i32 --low=-1 --high=10
// RUN: moe-npy stats %t/sl.npy | FileCheck %s --check-prefix=LABELS
// RUN: moe-reference linear_cross_entropy %t/sx.npy %t/sw.npy %t/sl.npy --ignore-index=-1 --d-loss=1.5 -o %t/s.npy --check-fd --fd-tolerance=1e-8 | FileCheck %s --check-prefix=FD

// LABELS: min: -1
// CHECK: max relative error
// FD: fd check dx: 90 entries
// FD: fd check dw: 66 entries
// FD: fd check passed

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @loss(%x: tensor<?x?x40xf32>, %w: tensor<600x40xf32>, %raw: tensor<?x?xi32>)
    -> (tensor<f32>, tensor<?x?xf32>, tensor<?x?xi32>) {
  %labels = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%raw : tensor<?x?xi32>) outs(%raw : tensor<?x?xi32>) {
  ^bb0(%r: i32, %o: i32):
    %ignored = arith.constant -1 : i32
    %l = arith.maxsi %r, %ignored : i32
    linalg.yield %l : i32
  } -> tensor<?x?xi32>
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels {ignore_index = -1 : i64}
      : (tensor<?x?x40xf32>, tensor<600x40xf32>, tensor<?x?xi32>)
      -> (tensor<f32>, tensor<?x?xf32>)
  return %loss, %lse, %labels : tensor<f32>, tensor<?x?xf32>, tensor<?x?xi32>
}

func.func @grad(%x: tensor<?x?x40xf32>, %w: tensor<600x40xf32>, %labels: tensor<?x?xi64>)
    -> (tensor<?x?x40xf32>, tensor<600x40xf32>) {
  %loss, %lse = moe.linear_cross_entropy %x, %w, %labels {ignore_index = -1 : i64}
      : (tensor<?x?x40xf32>, tensor<600x40xf32>, tensor<?x?xi64>)
      -> (tensor<f32>, tensor<?x?xf32>)
  %d = arith.constant dense<1.5> : tensor<f32>
  %dx, %dw = moe.linear_cross_entropy_grad %x, %w, %labels, %lse, %d {ignore_index = -1 : i64}
      : (tensor<?x?x40xf32>, tensor<600x40xf32>, tensor<?x?xi64>, tensor<?x?xf32>, tensor<f32>)
      -> (tensor<?x?x40xf32>, tensor<600x40xf32>)
  return %dx, %dw : tensor<?x?x40xf32>, tensor<600x40xf32>
}
