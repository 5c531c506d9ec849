func.func @host_only(%arg0: memref<4xf32>) {
  %buf = memref.alloc() : memref<4xf32>
  memref.copy %arg0, %buf : memref<4xf32> to memref<4xf32>
  %c2 = arith.constant 2 : index
  scf.forall (%i) in (%c2) {
    %tile = memref.alloc() : memref<8xf32>
    memref.dealloc %tile : memref<8xf32>
  }
  memref.dealloc %buf : memref<4xf32>
  return
}
