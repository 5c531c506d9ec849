// moe-run checks the inputs against the entry's signature before compiling
// anything: each mistake gives one line on stderr and exit status 1. Inputs,
// arguments and dimensions are numbered from 0.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy random %t/x.npy --shape=3,5,4,64
// RUN: moe-npy random %t/m.npy --shape=3,5
// RUN: moe-npy random %t/f8.npy --shape=8
// RUN: moe-npy random %t/ids.npy --shape=8 --dtype=i64 --low=0 --high=10
// RUN: moe-npy random %t/big.npy --shape=8 --dtype=i64 --low=0 --high=10000000000 --seed=3

// The inputs that fit: a dynamic dimension takes the file's size.
// RUN: moe-run %s --entry=kda_forward -i %t/x.npy -i %t/x.npy -o %t/ok
// RUN: moe-npy print %t/ok/result0.npy | FileCheck %s --check-prefix=OK
// OK: shape [3, 5, 4, 64] dtype f32

// RUN: not moe-run %s --entry=kda_forward -i %t/x.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: moe-run: error: @kda_forward takes 2 arguments but 1 input was given (-i)
// RUN: not moe-run %s --entry=kda_forward -i %t/x.npy -i %t/x.npy -i %t/x.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=COUNT3
// COUNT3: moe-run: error: @kda_forward takes 2 arguments but 3 inputs were given (-i)

// RUN: not moe-run %s --entry=kda_forward -i %t/x.npy -i %t/m.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: moe-run: error: input 1 (m.npy) has shape [3, 5] but argument 1 of @kda_forward expects tensor<?x?x4x64xf32>: rank 2, expected 4

// RUN: moe-npy random %t/x5.npy --shape=3,5,5,64
// RUN: not moe-run %s --entry=kda_forward -i %t/x.npy -i %t/x5.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=DIM
// DIM: moe-run: error: input 1 (x5.npy) has shape [3, 5, 5, 64] but argument 1 of @kda_forward expects tensor<?x?x4x64xf32>: dimension 2 is 5, expected 4

// RUN: not moe-run %s --entry=gather -i %t/f8.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=WANTINT
// WANTINT: moe-run: error: input 0 (f8.npy) has dtype f32 but argument 0 of @gather expects tensor<8xi32>: expected an integer array (i32 or i64)
// RUN: not moe-run %s --entry=kda_forward -i %t/x.npy -i %t/ids.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=RANK1
// RANK1: moe-run: error: input 1 (ids.npy) has shape [8] but argument 1 of @kda_forward expects tensor<?x?x4x64xf32>: rank 1, expected 4
// RUN: not moe-run %s --entry=scale -i %t/ids.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=WANTFLOAT
// WANTFLOAT: moe-run: error: input 0 (ids.npy) has dtype i64 but argument 0 of @scale expects tensor<?xf32>: expected a floating-point array (f16, f32 or f64)
// RUN: not moe-run %s --entry=gather -i %t/big.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=NARROW
// NARROW: moe-run: error: input 0 (big.npy): element {{[0-9]+}} ({{[0-9]+}}) does not fit in i32
// RUN: moe-run %s --entry=gather -i %t/ids.npy -o %t/gather

// RUN: not moe-run %s --entry=missing -o %t/out 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: moe-run: error: no function @missing in {{.*}}errors.mlir (available: @kda_forward, @gather, @scale, @scalar_arg, @memref_result, @unranked)
// RUN: not moe-run %s --entry=private_fn -o %t/out 2>&1 | FileCheck %s --check-prefix=PRIVATE
// PRIVATE: moe-run: error: @private_fn is private; make it public to call it
// RUN: not moe-run %s --entry=external -o %t/out 2>&1 | FileCheck %s --check-prefix=EXTERNAL
// EXTERNAL: moe-run: error: @external is only declared; moe-run needs a definition
// RUN: not moe-run %s --entry=scalar_arg -o %t/out 2>&1 | FileCheck %s --check-prefix=SCALAR
// SCALAR: moe-run: error: argument 1 of @scalar_arg has type f32; moe-run supports ranked tensors of f32, f16, bf16, f64, i32, i64 and index only
// RUN: not moe-run %s --entry=memref_result -o %t/out 2>&1 | FileCheck %s --check-prefix=MEMREF
// MEMREF: moe-run: error: result 0 of @memref_result has type memref<4xf32>; moe-run supports ranked tensors of f32, f16, bf16, f64, i32, i64 and index only
// RUN: not moe-run %s --entry=unranked -o %t/out 2>&1 | FileCheck %s --check-prefix=UNRANKED
// UNRANKED: moe-run: error: argument 0 of @unranked has type tensor<*xf32>; moe-run supports ranked tensors of f32, f16, bf16, f64, i32, i64 and index only

// Bad .npy files are reported with the input's position and path.
// RUN: not moe-run %s --entry=scale -i %s -o %t/out 2>&1 | FileCheck %s --check-prefix=MAGIC
// MAGIC: moe-run: error: input 0: {{.*}}errors.mlir: not a .npy file (bad magic)
// RUN: not moe-run %s --entry=scale -i %t/nothere.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: moe-run: error: input 0: {{.*}}nothere.npy: cannot open: No such file or directory
// RUN: head -c 160 %t/m.npy > %t/cut.npy
// RUN: not moe-run %s --entry=scale -i %t/cut.npy -o %t/out 2>&1 | FileCheck %s --check-prefix=CUT
// CUT: moe-run: error: input 0: {{.*}}cut.npy: truncated data: shape [3, 5] of f32 needs 60 bytes, found 32

func.func @kda_forward(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x4x64xf32>)
    -> tensor<?x?x4x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x4x64xf32>
  %t = tensor.dim %q, %c1 : tensor<?x?x4x64xf32>
  %e = tensor.empty(%b, %t) : tensor<?x?x4x64xf32>
  %r = linalg.add ins(%q, %k : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>)
                  outs(%e : tensor<?x?x4x64xf32>) -> tensor<?x?x4x64xf32>
  return %r : tensor<?x?x4x64xf32>
}

func.func @gather(%ids: tensor<8xi32>) -> tensor<8xi32> {
  return %ids : tensor<8xi32>
}

func.func @scale(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

func.func @scalar_arg(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @memref_result() -> memref<4xf32> {
  %m = memref.alloc() : memref<4xf32>
  return %m : memref<4xf32>
}

func.func @unranked(%x: tensor<*xf32>) {
  return
}

func.func private @private_fn(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func private @external(%x: tensor<4xf32>) -> tensor<4xf32>
