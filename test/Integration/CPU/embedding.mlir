// moe.embedding through convert-moe-to-linalg and moe-run, against the row
// gather of moe-reference (ALGORITHMS.md section 7.2). A gather copies
// values, so the result must be exact (--rtol=0).

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/table.npy --shape=32,8 --seed=61
// RUN: moe-npy random %t/tokens.npy --shape=2,6 --seed=62 --dtype=i32 --low=0 --high=31
// RUN: moe-run %s --entry=embed -i %t/tokens.npy -i %t/table.npy -o %t/out
// RUN: moe-reference embedding %t/tokens.npy %t/table.npy -o %t/ref.npy
// RUN: moe-npy print %t/out/result0.npy | FileCheck %s --check-prefix=SHAPE
// RUN: moe-npy compare %t/out/result0.npy %t/ref.npy --rtol=0 | FileCheck %s

// i64 ids and a table whose size is only known at run time.
// RUN: moe-npy random %t/ids.npy --shape=3,5 --seed=63 --dtype=i64 --low=0 --high=31
// RUN: moe-run %s --entry=embed_dynamic -i %t/ids.npy -i %t/table.npy -o %t/dyn
// RUN: moe-reference embedding %t/ids.npy %t/table.npy -o %t/dyn_ref.npy
// RUN: moe-npy compare %t/dyn/result0.npy %t/dyn_ref.npy --rtol=0 | FileCheck %s

// SHAPE: shape [2, 6, 8] dtype f32
// CHECK: max relative error

func.func @embed(%tokens: tensor<?x?xi32>, %table: tensor<32x8xf32>) -> tensor<?x?x8xf32> {
  %h = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  return %h : tensor<?x?x8xf32>
}

func.func @embed_dynamic(%tokens: tensor<?x?xi64>, %table: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %h = moe.embedding %tokens, %table : tensor<?x?xi64>, tensor<?x?xf32> -> tensor<?x?x?xf32>
  return %h : tensor<?x?x?xf32>
}
