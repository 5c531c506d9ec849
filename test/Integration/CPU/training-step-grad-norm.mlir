// The training step's global gradient norm (metrics[0], ALGORITHMS.md 7.4)
// over a large gradient: 1/2 sum(w^2) over 4,194,304 parameters has the
// gradient w, so the norm must be ||w|| (fp64 by NumPy). One running fp32
// sum of the 4M squares drops the small ones once it is large: NumPy's
// sequential fp32 sum (cumsum) of these squares is 1.5e-3 low, and kimi-tiny's
// norm came out 1.3% low that way. -moe-build-training-step sums rows of
// 4096 squares, then the row sums: observed 8.3e-8 relative.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/p.npy --shape=4194304 --seed=11 --low=-1 --high=1
// RUN: moe-npy random %t/m.npy --shape=4194304 --seed=12 --low=0 --high=0
// RUN: moe-npy random %t/tok.npy --shape=1,2 --seed=13 --low=0 --high=7 --dtype=i32
// RUN: moe-reference adamw-hyper -o %t/h.npy --lr=0.01 --beta1=0.9 --beta2=0.95 --eps=1e-8 --weight-decay=0 --max-grad-norm=0 --step=1
// RUN: moe-run %s --build-training-step --entry=squares_train_step --opt-level=0 -i %t/p.npy -i %t/m.npy -i %t/m.npy -i %t/tok.npy -i %t/tok.npy -i %t/h.npy -o %t/s
// RUN: %python %S/Inputs/grad-norm-check.py %t/p.npy %t/s/result4.npy 1e-6 | FileCheck %s
// CHECK: gradient norm {{.*}}: relative error {{.*}} <= 1e-06

moe.model @squares(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %w = moe.param "w" init <normal, std = 0.5> : tensor<2048x2048xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                          iterator_types = ["reduction", "reduction"]}
      ins(%w : tensor<2048x2048xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %h = arith.mulf %sq, %half : f32
    %r = arith.addf %acc, %h : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
