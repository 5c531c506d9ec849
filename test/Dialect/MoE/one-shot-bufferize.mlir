// RUN: moe-opt %s --moe-one-shot-bufferize --split-input-file | FileCheck %s

// A parameter is a slice of the packed buffer at a fixed offset: the
// outlined kind takes it as a view with a dynamic offset, cast at the call
// and not copied. A column slice is no contiguous view: it is copied into
// an identity buffer, cast to the argument's type. Public functions and
// functions that are not outlined kinds keep the identity layout. A kind's
// result type is inferred from its body: a fresh buffer, so the identity
// layout, which a function that is not a kind takes as it is.

// CHECK-LABEL: func.func @step
// CHECK-SAME:  (%[[P:.*]]: memref<96xf32>, %[[X:.*]]: memref<?x8xf32>) -> memref<8xf32>
// CHECK:      %[[W:.*]] = memref.subview %[[P]][16] [64] [1] : memref<96xf32> to memref<64xf32, strided<[1], offset: 16>>
// CHECK:      %[[WE:.*]] = memref.expand_shape %[[W]]
// CHECK-SAME:   into memref<8x8xf32, strided<[8, 1], offset: 16>>
// CHECK-DAG:  %[[WC:.*]] = memref.cast %[[WE]] : memref<8x8xf32, strided<[8, 1], offset: 16>> to memref<8x8xf32, strided<[8, 1], offset: ?>>
// CHECK-DAG:  %[[XC:.*]] = memref.cast %[[X]] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
// CHECK:      %[[Y:.*]] = call @__moe_kind_project(%[[XC]], %[[WC]]) {moe.outlined_kind} : (memref<?x8xf32, strided<[8, 1], offset: ?>>, memref<8x8xf32, strided<[8, 1], offset: ?>>) -> memref<?x8xf32>
// CHECK:      %[[COLS:.*]] = memref.subview %[[WE]][0, 0] [8, 4] [1, 1]
// CHECK:      %[[BUF:.*]] = memref.alloc() {{.*}}: memref<8x4xf32>
// CHECK-NEXT: %[[BUFC:.*]] = memref.cast %[[BUF]] : memref<8x4xf32> to memref<8x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT: memref.copy %[[COLS]], %[[BUFC]]
// CHECK:      %[[S:.*]] = call @__moe_kind_sum(%[[BUFC]]) {{.*}} -> memref<8xf32>
// CHECK-NOT:  memref.copy
// CHECK:      call @plain(%[[S]]) : (memref<8xf32>) -> memref<8xf32>

// CHECK-LABEL: func.func private @__moe_kind_project
// CHECK-SAME:  (%{{.*}}: memref<?x8xf32, strided<[8, 1], offset: ?>>, %{{.*}}: memref<8x8xf32, strided<[8, 1], offset: ?>>) -> memref<?x8xf32>
// CHECK-LABEL: func.func private @__moe_kind_sum
// CHECK-SAME:  (%{{.*}}: memref<8x4xf32, strided<[4, 1], offset: ?>>) -> memref<8xf32>
// CHECK-LABEL: func.func private @plain
// CHECK-SAME:  (%{{.*}}: memref<8xf32>) -> memref<8xf32>
func.func @step(%packed: tensor<96xf32>, %x: tensor<?x8xf32>) -> tensor<8xf32> {
  %w_flat = tensor.extract_slice %packed[16] [64] [1] : tensor<96xf32> to tensor<64xf32>
  %w = tensor.expand_shape %w_flat [[0, 1]] output_shape [8, 8] : tensor<64xf32> into tensor<8x8xf32>
  %y = call @__moe_kind_project(%x, %w) {moe.outlined_kind} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %cols = tensor.extract_slice %w[0, 0] [8, 4] [1, 1] : tensor<8x8xf32> to tensor<8x4xf32>
  %s = call @__moe_kind_sum(%cols) {moe.outlined_kind} : (tensor<8x4xf32>) -> tensor<8xf32>
  %t = call @plain(%s) : (tensor<8xf32>) -> tensor<8xf32>
  return %t : tensor<8xf32>
}

func.func private @__moe_kind_project(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32>
    attributes {moe.outlined_kind} {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x8xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%rows) : tensor<?x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%init : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

func.func private @__moe_kind_sum(%a: tensor<8x4xf32>) -> tensor<8xf32>
    attributes {moe.outlined_kind} {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.reduce ins(%a : tensor<8x4xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %s : tensor<8xf32>
}

func.func private @plain(%a: tensor<8xf32>) -> tensor<8xf32> {
  %e = linalg.add ins(%a, %a : tensor<8xf32>, tensor<8xf32>) outs(%a : tensor<8xf32>) -> tensor<8xf32>
  return %e : tensor<8xf32>
}

// -----

// A kind whose sum could overwrite its first argument: the argument is
// read-only, so the kind writes a fresh buffer and the caller, which reads
// %x again afterwards, passes it without a copy. The [?, ?, 8] result is a
// fresh buffer with the identity layout, which the caller collapses into
// rows without a copy (the contiguous view's dynamic outer stride could
// not be collapsed).

// CHECK-LABEL: func.func @residual
// CHECK-SAME:  (%[[X:.*]]: memref<?x?x8xf32>, %[[F:.*]]: memref<?x?x8xf32>)
// CHECK-NOT:  memref.copy
// CHECK:      %[[SUM:.*]] = call @__moe_kind_add({{.*}}) {moe.outlined_kind} : ({{.*}}) -> memref<?x?x8xf32>
// CHECK-NOT:  memref.copy
// CHECK:      memref.collapse_shape %[[SUM]] {{\[\[}}0, 1], [2]] : memref<?x?x8xf32> into memref<?x8xf32>
// CHECK-NOT:  memref.copy
// CHECK:      return

// CHECK-LABEL: func.func private @__moe_kind_add
// CHECK-SAME:  -> memref<?x?x8xf32>
// CHECK:      %[[OUT:.*]] = memref.alloc
// CHECK:      linalg.add {{.*}} outs(%[[OUT]]
// CHECK:      return %[[OUT]] : memref<?x?x8xf32>
func.func @residual(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>) -> (tensor<?x8xf32>, tensor<?x?x8xf32>) {
  %sum = call @__moe_kind_add(%x, %f) {moe.outlined_kind} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %rows = tensor.collapse_shape %sum [[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
  %again = call @__moe_kind_add(%x, %x) {moe.outlined_kind} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %rows, %again : tensor<?x8xf32>, tensor<?x?x8xf32>
}

func.func private @__moe_kind_add(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    attributes {moe.outlined_kind} {
  %e = linalg.add ins(%a, %b : tensor<?x?x8xf32>, tensor<?x?x8xf32>) outs(%a : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}

// -----

// A kind that collapses a [?, ?, 8] argument into rows: the contiguous view
// (dynamic outer stride) would be copied inside the kind at every call, so
// that argument takes the identity layout. The caller's fresh activation
// passes as it is; a view with an offset (a slice of a stacked buffer) is
// copied at its call instead. The static 8 x 8 weight keeps the contiguous
// view: no copy at the call.

// CHECK-LABEL: func.func @rows
// CHECK-SAME:  (%[[X:.*]]: memref<?x?x8xf32>, %[[S:.*]]: memref<2x?x?x8xf32>, %[[W:.*]]: memref<8x8xf32>)
// CHECK:      %[[WC:.*]] = memref.cast %[[W]] : memref<8x8xf32> to memref<8x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NOT:  memref.copy
// CHECK:      call @__moe_kind_rows(%[[X]], %[[WC]]) {moe.outlined_kind} : (memref<?x?x8xf32>, memref<8x8xf32, strided<[8, 1], offset: ?>>) -> memref<?x8xf32>
// CHECK:      %[[SLICE:.*]] = memref.subview %[[S]][1, 0, 0, 0]
// CHECK:      %[[BUF:.*]] = memref.alloc({{.*}}) {{.*}}: memref<?x?x8xf32>
// CHECK:      memref.copy %[[SLICE]], %[[BUF]]
// CHECK:      call @__moe_kind_rows(%[[BUF]], %{{.*}}) {moe.outlined_kind}

// CHECK-LABEL: func.func private @__moe_kind_rows
// CHECK-SAME:  (%[[A:.*]]: memref<?x?x8xf32>, %{{.*}}: memref<8x8xf32, strided<[8, 1], offset: ?>>) -> memref<?x8xf32>
// CHECK-NOT:  memref.copy
// CHECK:      memref.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : memref<?x?x8xf32> into memref<?x8xf32>
func.func @rows(%x: tensor<?x?x8xf32>, %stack: tensor<2x?x?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %stack, %c1 : tensor<2x?x?x8xf32>
  %t = tensor.dim %stack, %c2 : tensor<2x?x?x8xf32>
  %y = call @__moe_kind_rows(%x, %w) {moe.outlined_kind} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %slice = tensor.extract_slice %stack[1, 0, 0, 0] [1, %b, %t, 8] [1, 1, 1, 1] : tensor<2x?x?x8xf32> to tensor<?x?x8xf32>
  %z = call @__moe_kind_rows(%slice, %w) {moe.outlined_kind} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y, %z : tensor<?x8xf32>, tensor<?x8xf32>
}

func.func private @__moe_kind_rows(%a: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32>
    attributes {moe.outlined_kind} {
  %c0 = arith.constant 0 : index
  %rows = tensor.collapse_shape %a [[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
  %n = tensor.dim %rows, %c0 : tensor<?x8xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%n) : tensor<?x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = linalg.matmul ins(%rows, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%init : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
