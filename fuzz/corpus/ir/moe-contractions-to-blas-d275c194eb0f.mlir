func.func @projection(%x: memref<?x?x256xf32>,
                      %w: memref<256x64xf32, strided<[64, 1], offset: 1024>>,
                      %y: memref<?x?x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                                   affine_map<(b, t, n, k) -> (k, n)>,
                                   affine_map<(b, t, n, k) -> (b, t, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x256xf32>, memref<256x64xf32, strided<[64, 1], offset: 1024>>)
      outs(%y : memref<?x?x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %v, %u : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return
}
