// RUN: moe-opt %s -moe-map-forall-to-gpu --mlir-disable-threading | FileCheck %s

// Kernel names are numbered per function. One thread runs the pass on both
// functions here, as a thread of a multi-threaded run may; with a count
// kept across functions, @names_b's kernels were _1 and _2, and which
// numbers a function got depended on the threads (so did the executable).

// CHECK-LABEL: func.func @names_a
// CHECK:         gpu.launch {{.*}} module(@names_a_generic_l{{[0-9]+}}_0) function(@names_a_generic_l{{[0-9]+}}_0)
// CHECK-LABEL: func.func @names_b
// CHECK:         gpu.launch {{.*}} module(@names_b_generic_l{{[0-9]+}}_0) function(@names_b_generic_l{{[0-9]+}}_0)
// CHECK:         gpu.launch {{.*}} module(@names_b_generic_l{{[0-9]+}}_1) function(@names_b_generic_l{{[0-9]+}}_1)
func.func @names_a(%x: memref<64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}
func.func @names_b(%x: memref<64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%y : memref<64xf32>) outs(%x : memref<64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.subf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}
