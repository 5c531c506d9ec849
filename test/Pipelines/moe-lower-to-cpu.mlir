// RUN: moe-opt %s --moe-lower-to-cpu="outline-kinds=false" | FileCheck %s \
// RUN:   --implicit-check-not=linalg. --implicit-check-not=tensor. \
// RUN:   --implicit-check-not=memref. --implicit-check-not=bufferization. \
// RUN:   --implicit-check-not=scf. --implicit-check-not=cf. \
// RUN:   --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:   --implicit-check-not=unrealized_conversion_cast
// RUN: moe-opt %s --pass-pipeline='builtin.module(moe-lower-to-cpu{emit-c-interface=false outline-kinds=false})' | FileCheck %s --check-prefix=NOCIFACE
// The result is translatable to LLVM IR as a whole.
// RUN: moe-opt %s --moe-lower-to-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// moe-lower-to-cpu takes tensor-level upstream IR all the way to the LLVM
// dialect: buffers are malloc'ed, every function gets a C interface whose
// first parameter points to the struct of result descriptors, exp stays an
// LLVM intrinsic and erf becomes a libm call. Nothing else is left.

// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @erff(f32) -> f32
// CHECK-LABEL: llvm.func @two_results(
// CHECK-SAME: -> !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.intr.exp
// CHECK: llvm.call @erff
// CHECK-LABEL: llvm.func @_mlir_ciface_two_results(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-LABEL: llvm.func @no_results(
// CHECK-LABEL: llvm.func @_mlir_ciface_no_results(
// CHECK-SAME: %{{.*}}: !llvm.ptr)

// NOCIFACE-NOT: _mlir_ciface
// NOCIFACE-NOT: llvm.emit_c_interface

// LLVMIR: define void @_mlir_ciface_two_results(ptr %0, ptr %1)

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

func.func @two_results(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c0 : tensor<?x?xf32>
  %n = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %ex = math.exp %in : f32
    %er = math.erf %ex : f32
    linalg.yield %er : f32
  } -> tensor<?x?xf32>
  %er = tensor.empty(%m) : tensor<?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#id, #row],
                       iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<?x?xf32>) outs(%acc : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %y, %s : tensor<?x?xf32>, tensor<?xf32>
}

func.func @no_results(%x: tensor<4xf32>) {
  return
}
