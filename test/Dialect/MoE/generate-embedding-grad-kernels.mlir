// RUN: moe-opt %s -split-input-file -moe-generate-embedding-grad-kernels -verify-diagnostics | FileCheck %s

// The table's gradient -> a launch with a block of 256 threads per table row
// and token segment, and 32 bytes of shared memory (the eight warps' ballot
// masks), on the flattened ids and gradient rows. Segments: a 2048th of the
// tokens, at most 32 and at most 64 MiB / (300 x 48 x 4 bytes) of them, at
// least one. With one segment the kernel writes the table's gradient;
// otherwise each segment's sums go to a partial table (S x 300 rows) and a
// second kernel adds the segments in order. Each block walks its segment
// (whole 256-token steps) 256 tokens at a time: each thread's token against
// the block's row id, a ballot per warp, lane 0 publishing it, a barrier;
// then the matching rows in token order (warp by warp, the lowest set bit
// first); a barrier before the next step.

// CHECK-LABEL: func.func @embedding_grad(
// CHECK:         %[[IDS:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<?x?xi32> into tensor<?xi32>
// CHECK:         %[[ROWS:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<?x?x48xf32> into tensor<?x48xf32>
// CHECK:         %[[OUT:.+]] = memref.alloc() : memref<300x48xf32>
// CHECK:         %[[N:.+]] = memref.dim %{{.+}}, %c0{{.*}} : memref<?xi32>
// CHECK:         %[[BYTES:.+]] = arith.muli %{{.+}}, %c192
// CHECK:         %[[BYSIZE:.+]] = arith.divui %c67108864, %{{.+}}
// CHECK:         %[[BYTOKENS:.+]] = arith.divui %[[N]], %c2048
// CHECK:         %[[MIN:.+]] = arith.minui %[[BYSIZE]], %[[BYTOKENS]]
// CHECK:         %[[CAP:.+]] = arith.minui %[[MIN]], %c32
// CHECK:         %[[S:.+]] = arith.maxui %[[CAP]], %c1
// CHECK:         %[[PARTIAL:.+]] = memref.alloc(%{{.+}}) : memref<?x48xf32>
// CHECK:         gpu.launch_func  @moe_embedding_grad_kernels::@embedding_grad0 blocks in (%{{.+}}, %[[S]], %c1{{.*}}) threads in (%c256, %c1{{.*}}, %c1{{.*}})  dynamic_shared_memory_size %c32_i32 args({{.*}} : memref<?xi32>, {{.*}} : memref<?x48xf32>, %[[OUT]] : memref<300x48xf32>, %[[PARTIAL]] : memref<?x48xf32>)
// CHECK:         %[[SEVERAL:.+]] = arith.cmpi ult, %c1{{.*}}, %[[S]]
// CHECK:         scf.if %[[SEVERAL]] {
// CHECK:           gpu.launch_func  @moe_embedding_grad_kernels::@embedding_grad_combine0 {{.*}} args(%[[PARTIAL]] : memref<?x48xf32>, %[[OUT]] : memref<300x48xf32>, %[[S]] : index)
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT:     moe.embedding_grad
// CHECK:       gpu.module @moe_embedding_grad_kernels
// CHECK:         gpu.func @embedding_grad0({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK:           %[[ROW:.+]] = gpu.block_id  x
// CHECK:           %[[SEG:.+]] = gpu.block_id  y
// CHECK:           %[[V:.+]] = gpu.grid_dim  x
// CHECK:           %[[SEGS:.+]] = gpu.grid_dim  y
// CHECK:           %[[ROWID:.+]] = arith.index_cast %[[ROW]] : index to i32
// CHECK:           %[[FIRST:.+]] = arith.minui %{{.+}}, %[[TOKENS:.+]] : index
// CHECK:           %[[END:.+]] = arith.minui %{{.+}}, %[[TOKENS]] : index
// CHECK:           %[[SUM:.+]] = scf.for %[[N0:.+]] = %[[FIRST]] to %[[END]] step %c256{{.*}} iter_args
// CHECK:             %[[ID:.+]] = memref.load %{{.+}} : memref<?xi32>
// CHECK:             %[[EQ:.+]] = arith.cmpi eq, %[[ID]], %[[ROWID]] : i32
// CHECK:             %[[MATCH:.+]] = arith.andi %{{.+}}, %[[EQ]] : i1
// CHECK:             %[[MASK:.+]] = nvvm.vote.sync  ballot %{{.+}}, %[[MATCH]] -> i32
// CHECK:             memref.store %[[MASK]], %{{.+}} : memref<8xi32, #gpu.address_space<workgroup>>
// CHECK:             gpu.barrier
// CHECK:             scf.for
// CHECK:               scf.while
// CHECK:                 "llvm.intr.cttz"
// CHECK:                 memref.load %{{.+}} : memref<?x48xf32>
// CHECK:                 arith.addf
// CHECK:             gpu.barrier
// CHECK:           %[[ONE:.+]] = arith.cmpi eq, %[[SEGS]], %c1
// CHECK:           scf.if %[[ONE]] {
// CHECK:               memref.store %[[SUM]], %{{.+}}[%[[ROW]], %{{.+}}] : memref<300x48xf32>
// CHECK:           %[[MANY:.+]] = arith.xori %[[ONE]], %true
// CHECK:           scf.if %[[MANY]] {
// CHECK:             %[[BASE:.+]] = arith.muli %[[SEG]], %[[V]]
// CHECK:             %[[PROW:.+]] = arith.addi %[[BASE]], %[[ROW]]
// CHECK:               memref.store %[[SUM]], %{{.+}}[%[[PROW]], %{{.+}}] : memref<?x48xf32>
// CHECK:         gpu.func @embedding_grad_combine0(
// CHECK:           scf.for %[[S2:.+]] = %c0{{.*}} to %{{.+}} step %c1{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}) -> (f32)
// CHECK:             memref.load %{{.+}} : memref<?x48xf32>
// CHECK:             arith.addf %[[ACC]]
// CHECK:           memref.store %{{.+}} : memref<300x48xf32>
func.func @embedding_grad(%dh: tensor<?x?x48xf32>, %tokens: tensor<?x?xi32>, %table: tensor<300x48xf32>) -> tensor<300x48xf32> {
  %d = moe.embedding_grad %dh, %tokens, %table : tensor<?x?x48xf32>, tensor<?x?xi32>, tensor<300x48xf32>
  return %d : tensor<300x48xf32>
}

// -----

// A dynamic vocabulary: no launch for an empty table. A width of 512: two
// columns per thread, no guard.

// CHECK-LABEL: func.func @dynamic_vocab(
// CHECK:         %[[V:.+]] = tensor.dim %{{.+}}, %c0
// CHECK:         %[[ANY:.+]] = arith.cmpi ult, %c0{{.*}}, %[[V]]
// CHECK:         scf.if %[[ANY]] {
// CHECK:           gpu.launch_func  @moe_embedding_grad_kernels::@embedding_grad0 blocks in (%[[V]], %{{.+}}, %c1{{.*}})
// CHECK:       gpu.func @embedding_grad0(
// CHECK:         scf.for {{.*}} -> (f32, f32)
// CHECK-NOT:     arith.select {{.*}} : f32
// CHECK:         gpu.return
func.func @dynamic_vocab(%dh: tensor<?x512xf32>, %ids: tensor<?xi64>, %table: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %d = moe.embedding_grad %dh, %ids, %table : tensor<?x512xf32>, tensor<?xi64>, tensor<?x512xf32>
  return %d : tensor<?x512xf32>
}

// -----

// What the kernel does not take stays for the generic lowering, with a remark.

func.func @declined(%dh: tensor<?x?x48xbf16>, %tokens: tensor<?x?xi32>, %table: tensor<300x48xbf16>,
                    %row: tensor<48xf32>, %token: tensor<i32>, %t: tensor<300x48xf32>,
                    %wide: tensor<?x4096xf32>, %ids: tensor<?xi32>, %wt: tensor<8x4096xf32>)
    -> (tensor<300x48xbf16>, tensor<300x48xf32>, tensor<8x4096xf32>) {
  // expected-remark @+1 {{embedding_grad left to the generic lowering: the gradient or the table is not f32}}
  %a = moe.embedding_grad %dh, %tokens, %table : tensor<?x?x48xbf16>, tensor<?x?xi32>, tensor<300x48xbf16>
  // expected-remark @+1 {{embedding_grad left to the generic lowering: a single token}}
  %b = moe.embedding_grad %row, %token, %t : tensor<48xf32>, tensor<i32>, tensor<300x48xf32>
  // expected-remark @+1 {{embedding_grad left to the generic lowering: the table width is not static and at most 2048}}
  %c = moe.embedding_grad %wide, %ids, %wt : tensor<?x4096xf32>, tensor<?xi32>, tensor<8x4096xf32>
  return %a, %b, %c : tensor<300x48xbf16>, tensor<300x48xf32>, tensor<8x4096xf32>
}
