// moe-compile reports a bad input with its location and exits 1; it never
// crashes. Each case is a separate file (split here by // -----).

// RUN: rm -rf %t && mkdir -p %t
// RUN: split-file %s %t

// RUN: not moe-compile %t/none.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: none.mlir:1:1: error: expects a moe.model at the top level of the input, found none

// RUN: not moe-compile %t/syntax.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: syntax.mlir:4:66: error: expected non-function type

// RUN: not moe-compile %t/verify.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: verify.mlir:4:8: error: 'moe.embedding' op expects result to have shape [?, ?, 4], got [?, ?, 5]
// VERIFY-NOT: PLEASE submit a bug report

// RUN: not moe-compile %t/two.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: two.mlir:9:1: error: the input holds 2 models; choose one with --model=NAME
// TWO: two.mlir:1:1: note: model @a
// TWO: two.mlir:9:1: note: model @b

// RUN: not moe-compile %t/two.mlir --model=c -o %t/x 2>&1 | FileCheck %s --check-prefix=NAMED
// NAMED: error: no moe.model named @c
// NAMED: note: available: @a

// RUN: moe-compile %t/two.mlir --model=b --forward-only --emit=mlir | FileCheck %s --check-prefix=PICKED
// PICKED: llvm.func @moe_model_forward
// PICKED: llvm.mlir.global external constant @moe_model_manifest("moe-model 1\0Aname b\0A{{.*}}\0Aprogram forward\0A\00")

// RUN: not moe-compile %t/i64.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=I64
// I64: i64.mlir:1:1: error: 'moe.model' op expects token ids of type tensor<?x?xi32> for moe-compile's driver, got 'tensor<?x?xi64>'

// RUN: not moe-compile %t/missing.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: moe-compile: error: cannot open input file '{{.*}}missing.mlir'

// The cuda target reports the same located errors.
// RUN: not moe-compile %t/verify.mlir --target=cuda -o %t/x 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: not moe-compile %t/two.mlir --target=cuda -o %t/x 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: not moe-compile %t/i64.mlir --target=cuda -o %t/x 2>&1 | FileCheck %s --check-prefix=I64

// RUN: not moe-compile %t/two.mlir --model=a --target=cuda --gpu-format=ptx -o %t/x 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: moe-compile: error: --gpu-format must be isa, bin or fatbin, got 'ptx'
// RUN: not moe-compile %t/two.mlir --model=a --target=cuda --matmul-precision=tf32 -o %t/x 2>&1 | FileCheck %s --check-prefix=PRECISION
// PRECISION: moe-compile: error: --matmul-precision must be bf16 or exact, got 'tf32'

// Sharding is for CPU training programs only (no NCCL lowering yet).
// RUN: not moe-compile %t/two.mlir --model=a --target=cuda --data-parallel=2 -o %t/x 2>&1 | FileCheck %s --check-prefix=CUDADP
// CUDADP: moe-compile: error: --data-parallel and --expert-parallel need --target=cpu: the CUDA back end has no NCCL collectives yet

// RUN: not moe-compile %t/two.mlir --model=a --forward-only --target=cuda --driver-lib=%t/nolib.a -o %t/x 2>&1 | FileCheck %s --check-prefix=LIB
// RUN: not moe-compile %t/two.mlir --model=a --forward-only --target=cuda --cuda-lib=%t/nocuda.so -o %t/x 2>&1 | FileCheck %s --check-prefix=CUDALIB
// CUDALIB: moe-compile: error: cannot find the CUDA driver library '{{.*}}nocuda.so' to link with

// RUN: not moe-compile %t/two.mlir --model=a --emit=obj -o - 2>&1 | FileCheck %s --check-prefix=STDOUT
// STDOUT: moe-compile: error: cannot write an object or executable to stdout

// RUN: not moe-compile %t/two.mlir --model=a --forward-only --driver-lib=%t/nolib.a -o %t/x 2>&1 | FileCheck %s --check-prefix=LIB
// LIB: moe-compile: error: cannot find the driver library '{{.*}}nolib.a'

//--- none.mlir
func.func @f() {
  return
}

//--- syntax.mlir
moe.model @m(vocab_size = 8, hidden_size = 4) {
^bb0(%t: tensor<?x?xi32>, %l: tensor<?x?xi32>):
  %w = moe.param "w" init <normal, std = 0.02> : tensor<8x4xf32>
  %e = moe.embedding %t, %w : tensor<?x?xi32>, tensor<8x4xf32> ->

//--- verify.mlir
moe.model @m(vocab_size = 8, hidden_size = 4) {
^bb0(%t: tensor<?x?xi32>, %l: tensor<?x?xi32>):
  %w = moe.param "w" init <normal, std = 0.02> : tensor<8x4xf32>
  %e = moe.embedding %t, %w : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x5xf32>
  %o = moe.param "o" init <normal, std = 0.02> : tensor<8x5xf32>
  %loss = moe.lm_head %e, %o, %l
      : (tensor<?x?x5xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

//--- two.mlir
moe.model @a(vocab_size = 8, hidden_size = 4) {
^bb0(%t: tensor<?x?xi32>, %l: tensor<?x?xi32>):
  %w = moe.param "w" init <normal, std = 0.02> : tensor<8x4xf32>
  %e = moe.embedding %t, %w : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %loss = moe.lm_head %e, %w, %l
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
moe.model @b(vocab_size = 8, hidden_size = 4) {
^bb0(%t: tensor<?x?xi32>, %l: tensor<?x?xi32>):
  %w = moe.param "w" init <normal, std = 0.02> : tensor<8x4xf32>
  %e = moe.embedding %t, %w : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %loss = moe.lm_head %e, %w, %l
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

//--- i64.mlir
moe.model @m(vocab_size = 8, hidden_size = 4) {
^bb0(%t: tensor<?x?xi64>, %l: tensor<?x?xi64>):
  %w = moe.param "w" init <normal, std = 0.02> : tensor<8x4xf32>
  %e = moe.embedding %t, %w : tensor<?x?xi64>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %loss = moe.lm_head %e, %w, %l
      : (tensor<?x?x4xf32>, tensor<8x4xf32>, tensor<?x?xi64>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
