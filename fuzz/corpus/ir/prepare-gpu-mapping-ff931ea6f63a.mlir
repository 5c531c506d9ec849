func.func @kernel_reads_argument(%arg0: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x4xf32>
  %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x4xf32>
  scf.forall (%i) in (%dim) {
    %src = memref.subview %arg0[%i, 0] [1, 4] [1, 1] : memref<?x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    %dst = memref.subview %alloc[%i, 0] [1, 4] [1, 1] : memref<?x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    memref.copy %src, %dst : memref<1x4xf32, strided<[4, 1], offset: ?>> to memref<1x4xf32, strided<[4, 1], offset: ?>>
  }
  return %alloc : memref<?x4xf32>
}
