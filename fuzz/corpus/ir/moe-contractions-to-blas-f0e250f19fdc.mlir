func.func @batched_transposed(%q: memref<4x64x32xf32>, %k: memref<4x64x32xf32>,
                              %s: memref<4x64x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(h, i, j, d) -> (h, i, d)>,
                                   affine_map<(h, i, j, d) -> (h, j, d)>,
                                   affine_map<(h, i, j, d) -> (h, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<4x64x32xf32>, memref<4x64x32xf32>)
      outs(%s : memref<4x64x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
