// moe.embedding_grad through convert-moe-to-linalg and moe-run, against the
// fp64 scatter-add of moe-reference (ALGORITHMS.md section 7.2), which
// checks itself against central finite differences of the gather. Ids
// repeat many times (24 or 30 tokens over a vocabulary of 8), ids of i32 and
// i64, tokens of rank 2 and 1, a table known only at run time, and ids
// outside the table (which add nothing). The error is max|a - b| / max|b|.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/table.npy --shape=8,16 --seed=161
// RUN: moe-npy random %t/tokens.npy --shape=2,12 --seed=162 --dtype=i32 --low=0 --high=7
// RUN: moe-npy random %t/dh.npy --shape=2,12,16 --seed=163
// RUN: moe-npy random %t/ids.npy --shape=30 --seed=164 --dtype=i64 --low=-3 --high=10
// RUN: moe-npy random %t/dh1.npy --shape=30,16 --seed=165

// RUN: moe-run %s --entry=embed_grad -i %t/dh.npy -i %t/tokens.npy -i %t/table.npy -o %t/out
// RUN: moe-reference embedding_grad %t/tokens.npy %t/table.npy %t/dh.npy -o %t/ref.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=3e-7 | FileCheck %s

// i64 ids, some outside [0, 8), a dynamic table.
// RUN: moe-run %s --entry=embed_grad_dynamic -i %t/dh1.npy -i %t/ids.npy -i %t/table.npy -o %t/dyn
// RUN: moe-reference embedding_grad %t/ids.npy %t/table.npy %t/dh1.npy -o %t/dyn_ref.npy \
// RUN:   | FileCheck %s --check-prefix=FD
// RUN: moe-npy compare %t/dyn/result0.npy %t/dyn_ref.npy --rtol=3e-7 | FileCheck %s
// RUN: moe-npy print %t/dyn/result0.npy | FileCheck %s --check-prefix=SHAPE

// CHECK: max relative error
// FD: fd-check table: max relative error
// SHAPE: shape [8, 16] dtype f32

func.func @embed_grad(%dh: tensor<?x?x16xf32>, %tokens: tensor<?x?xi32>, %table: tensor<8x16xf32>)
    -> tensor<8x16xf32> {
  %d = moe.embedding_grad %dh, %tokens, %table
      : tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

func.func @embed_grad_dynamic(%dh: tensor<?x?xf32>, %ids: tensor<?xi64>, %table: tensor<?x?xf32>)
    -> tensor<?x?xf32> {
  %d = moe.embedding_grad %dh, %ids, %table
      : tensor<?x?xf32>, tensor<?xi64>, tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}
