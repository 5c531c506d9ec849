// Dynamic sizes that an op ties together are checked when the program runs
// (-moe-insert-shape-checks in moe-lower-to-cpu): inputs whose sizes
// disagree stop with one error line naming the op, its location and both
// operand dimensions, and exit status 1, instead of reading past the
// smaller buffer.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/q.npy --shape=1,8,2,16 --seed=1
// RUN: moe-npy random %t/q_b2.npy --shape=2,8,2,16 --seed=2
// RUN: moe-npy random %t/q_t9.npy --shape=1,9,2,16 --seed=3
// RUN: moe-npy random %t/v.npy --shape=1,8,2,8 --seed=4
// RUN: moe-npy random %t/g.npy --shape=1,8,2,16 --low=-1 --high=-0.1 --seed=5
// RUN: moe-npy random %t/beta.npy --shape=1,8,2 --low=0 --high=1 --seed=6

// The inputs that agree run, and give what the fully static program gives.
// RUN: moe-run %s --entry=kda -i %t/q.npy -i %t/q.npy -i %t/v.npy -i %t/g.npy -i %t/beta.npy -o %t/ok
// RUN: moe-run %s --entry=kda_static -i %t/q.npy -i %t/q.npy -i %t/v.npy -i %t/g.npy -i %t/beta.npy -o %t/static
// RUN: moe-npy compare %t/ok/result0.npy %t/static/result0.npy --exact

// A query of batch 2 with the rest of batch 1.
// RUN: not moe-run %s --entry=kda -i %t/q_b2.npy -i %t/q.npy -i %t/v.npy -i %t/g.npy -i %t/beta.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=BATCH
// BATCH: error: moe.kda at {{.*}}dynamic-sizes.mlir:{{[0-9]+}}:12: dimension 0 (B) of key is 1, but dimension 0 (B) of query is 2
// BATCH-NOT: result

// A key of 9 steps against 8.
// RUN: not moe-run %s --entry=kda -i %t/q.npy -i %t/q_t9.npy -i %t/v.npy -i %t/g.npy -i %t/beta.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=LENGTH
// LENGTH: error: moe.kda at {{.*}}: dimension 1 (T) of key is 9, but dimension 1 (T) of query is 8

// Against a static size, the constant is the reference.
// RUN: not moe-run %s --entry=kda_static_query -i %t/q.npy -i %t/q_b2.npy -i %t/v.npy -i %t/g.npy -i %t/beta.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=STATIC
// STATIC: error: moe.kda at {{.*}}: dimension 0 (B) of key is 2, but dimension 0 (B) of query is 1

// The sources of an AttnRes mix must agree on every dimension.
// RUN: moe-npy random %t/s0.npy --shape=1,8,16 --seed=7
// RUN: moe-npy random %t/s1.npy --shape=1,9,16 --seed=8
// RUN: moe-npy random %t/w.npy --shape=16 --seed=9
// RUN: not moe-run %s --entry=mix -i %t/s0.npy -i %t/s1.npy -i %t/w.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=MIX
// MIX: error: moe.attn_res_mix at {{.*}}: dimension 1 of source #1 is 9, but dimension 1 of source #0 is 8

// Labels of another length than the logits' tokens.
// RUN: moe-npy random %t/logits.npy --shape=2,8,32 --seed=10
// RUN: moe-npy random %t/labels.npy --shape=2,7 --dtype=i32 --low=0 --high=31 --seed=11
// RUN: not moe-run %s --entry=loss -i %t/logits.npy -i %t/labels.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=LOSS
// LOSS: error: moe.cross_entropy at {{.*}}: dimension 1 of labels is 7, but dimension 1 of logits is 8

func.func @kda(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x8xf32>, %g: tensor<?x?x2x16xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<?x?x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>)
  return %o : tensor<?x?x2x8xf32>
}

func.func @kda_static(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>,
    %v: tensor<1x8x2x8xf32>, %g: tensor<1x8x2x16xf32>,
    %beta: tensor<1x8x2xf32>) -> tensor<1x8x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>,
         tensor<1x8x2x16xf32>, tensor<1x8x2xf32>)
      -> (tensor<1x8x2x8xf32>, tensor<1x2x16x8xf32>)
  return %o : tensor<1x8x2x8xf32>
}

func.func @kda_static_query(%q: tensor<1x8x2x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x8xf32>, %g: tensor<?x?x2x16xf32>,
    %beta: tensor<?x?x2xf32>) -> tensor<1x8x2x8xf32> {
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x8x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2xf32>)
      -> (tensor<1x8x2x8xf32>, tensor<1x2x16x8xf32>)
  return %o : tensor<1x8x2x8xf32>
}

func.func @mix(%b0: tensor<?x?x16xf32>, %b1: tensor<?x?x16xf32>,
    %w: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %0 = moe.attn_res_mix %b0, %b1 query(%w)
      : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %0 : tensor<?x?x16xf32>
}

func.func @loss(%logits: tensor<?x?x32xf32>, %labels: tensor<?x?xi32>) -> tensor<f32> {
  %0 = moe.cross_entropy %logits, %labels
      : (tensor<?x?x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}
