// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu="share-tile-memory=true elide-barriers=false" -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu -verify-diagnostics | FileCheck %s --check-prefix=NOSHARE
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-blocks-per-sm=0 -verify-diagnostics | FileCheck %s --check-prefix=NOHINT
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu -verify-diagnostics | FileCheck %s --check-prefix=UNROLL
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-elements-per-thread=1 -verify-diagnostics | FileCheck %s --check-prefix=ONE
// RUN: not moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-elements-per-thread=0 2>&1 | FileCheck %s --check-prefix=BADUNROLL
// RUN: not moe-opt %s -split-input-file -moe-map-forall-to-gpu=tile-blocks-per-sm=-1 2>&1 | FileCheck %s --check-prefix=BADBLOCKS
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu="partial-shared-memory-bytes=0 share-spilled-tiles=false" -verify-diagnostics | FileCheck %s --check-prefix=NOPARTIAL
// RUN: moe-opt %s -split-input-file -moe-map-forall-to-gpu="partial-shared-memory-bytes=115712 share-spilled-tiles=false" -verify-diagnostics | FileCheck %s --check-prefix=PARTIAL
// RUN: not moe-opt %s -split-input-file -moe-map-forall-to-gpu=partial-shared-memory-bytes=300000 2>&1 | FileCheck %s --check-prefix=BADPARTIAL
// BADUNROLL: error: -moe-map-forall-to-gpu: tile-blocks-per-sm must be at least 0 and tile-elements-per-thread at least 1, got 2 and 0
// BADBLOCKS: error: -moe-map-forall-to-gpu: tile-blocks-per-sm must be at least 0 and tile-elements-per-thread at least 1, got -1 and 8
// BADPARTIAL: error: -moe-map-forall-to-gpu: partial-shared-memory-bytes must be between 0 and shared-memory-bytes (200704), got 300000

// A tile program: one block per iteration, 256 threads. Its tile buffers
// are views of the dynamic shared memory: the unused 8 floats die where they
// are allocated, so the 16x8 tile takes their bytes (512 bytes, not 544; a
// barrier before each of the two views); each
// structured op is a loop over its parallel iterations starting at the
// thread index with the block size as step, followed by a barrier; the
// contraction accumulates in a register (iter_args), loading and storing
// its output element once. The launch asks for registers that let two
// blocks share an SM (nvvm.minctasm, none with tile-blocks-per-sm=0).

// NOHINT-LABEL: func.func @tile_program(
// NOHINT:         gpu.terminator
// NOHINT-NEXT:    }
// NOHINT-NOT:     nvvm.minctasm
// NOHINT-LABEL: func.func
// CHECK-LABEL: func.func @tile_program(
// CHECK:         gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[N:[^,]+]], {{.*}} threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%[[BDX:[^ ]+]] = %c256{{.*}} dynamic_shared_memory_size %c512_i32
// CHECK-SAME:    module(@tile_program_tiles_l{{[0-9]+}}_0) function(@tile_program_tiles_l{{[0-9]+}}_0)
// CHECK:           %[[SMEM:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:           gpu.barrier
// CHECK:           memref.view %[[SMEM]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK:           gpu.barrier
// CHECK:           %[[VIEW:.+]] = memref.view %[[SMEM]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x8xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[TILE:.+]] = memref.memory_space_cast %[[VIEW]] : {{.*}} to memref<16x8xf32>
// CHECK:           scf.for %{{.+}} = %[[TX]] to %{{.+}} step %c256{{[_0-9]*}} {
// CHECK:             memref.store %{{.+}}, %[[TILE]]
// CHECK:           gpu.barrier
// CHECK:           scf.for %[[L:.+]] = %[[TX]] to %{{.+}} step %c256{{[_0-9]*}} {
// CHECK:             %[[INIT:.+]] = memref.load %[[TILE]][%[[I:.+]], %[[J:.+]]] : memref<16x8xf32>
// CHECK:             %[[SUM:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32) {
// CHECK-NOT:           memref.store
// CHECK:               scf.yield
// CHECK:             memref.store %[[SUM]], %[[TILE]][%[[I]], %[[J]]]
// CHECK:           gpu.barrier
// CHECK:           scf.for %{{.+}} = %[[TX]] to %{{.+}} step %c256{{[_0-9]*}} {
// CHECK:           gpu.barrier
// A scalar write outside structured ops runs on thread 0.
// CHECK:           %[[FIRST:.+]] = arith.cmpi eq, %[[TX]], %c0
// CHECK:           scf.if %[[FIRST]] {
// CHECK-NEXT:        memref.store
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NOT:       memref.alloc
// CHECK-NOT:       memref.dealloc
// CHECK:           gpu.terminator
// CHECK-NEXT:    } {nvvm.minctasm = 2 : i32}
// CHECK-NOT:   scf.forall
func.func @tile_program(%x: memref<?x16xf32>, %w: memref<16x8xf32>,
                        %out: memref<?x8xf32>, %count: memref<?xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    %rows = memref.subview %x[%i, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    %norm = memref.alloc() : memref<8xf32>
    %tile = memref.alloc() : memref<16x8xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<16x8xf32>)
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%w, %w : memref<16x8xf32>, memref<16x8xf32>) outs(%tile : memref<16x8xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    %src = memref.subview %tile[0, 0] [1, 8] [1, 1] : memref<16x8xf32> to memref<1x8xf32, strided<[8, 1]>>
    linalg.copy ins(%src : memref<1x8xf32, strided<[8, 1]>>) outs(%dst : memref<1x8xf32, strided<[8, 1], offset: ?>>)
    memref.store %one, %count[%i] : memref<?xf32>
    memref.dealloc %tile : memref<16x8xf32>
    memref.dealloc %norm : memref<8xf32>
  }
  return
}

// -----

// A tile buffer of a size known before the launch (a KDA gradient's
// chunk-state history): a slice per block of one device scratch buffer of
// grid x (m x 8 x 4 bytes, rounded up to 16) bytes, sized on the host and
// freed after the launch; the block keeps its 256 threads.

// CHECK-LABEL: func.func @dynamic_tile(
// CHECK-SAME:    %{{.+}}: memref<?x8xf32>, %[[N:.+]]: index, %[[M:.+]]: index)
// CHECK:         %[[ROW:.+]] = arith.muli %c32, %[[M]]
// CHECK:         %[[END:.+]] = arith.addi %c0{{.*}}, %[[ROW]]
// CHECK:         %[[UP:.+]] = arith.ceildivui %[[END]], %c16
// CHECK:         %[[SLICE:.+]] = arith.muli %[[UP]], %c16
// CHECK:         %[[BYTES:.+]] = arith.muli %{{.+}}, %[[SLICE]]
// CHECK:         %[[SCRATCH:.+]] = gpu.alloc (%[[BYTES]]) : memref<?xi8>
// CHECK:         gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in {{.*}} threads(%{{.+}}) in (%{{.+}} = %c256
// CHECK:           %[[AT:.+]] = arith.muli %[[BX]], %[[SLICE]]
// CHECK:           %[[SHIFT:.+]] = arith.addi %[[AT]], %c0
// CHECK:           memref.view %[[SCRATCH]][%[[SHIFT]]][%[[M]]] : memref<?xi8> to memref<?x8xf32>
// CHECK-NOT:       memref.alloc
// CHECK-NOT:       memref.dealloc
// CHECK:           gpu.terminator
// CHECK:         gpu.dealloc %[[SCRATCH]] : memref<?xi8>
func.func @dynamic_tile(%out: memref<?x8xf32>, %n: index, %m: index) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %history = memref.alloc(%m) : memref<?x8xf32>
    linalg.fill ins(%zero : f32) outs(%history : memref<?x8xf32>)
    %src = memref.subview %history[0, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1]>>
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    linalg.copy ins(%src : memref<1x8xf32, strided<[8, 1]>>) outs(%dst : memref<1x8xf32, strided<[8, 1], offset: ?>>)
    memref.dealloc %history : memref<?x8xf32>
  }
  return
}

// -----

// A tile buffer whose size the iteration computes (read from memory): the
// program keeps one thread per block and its buffer on the device heap.

// CHECK-LABEL: func.func @iteration_sized_tile(
// CHECK:         gpu.launch blocks({{.*}}) threads(%{{.+}}) in (%{{.+}} = %c1
// CHECK:           memref.alloc(%{{.+}}) : memref<?x8xf32>
// CHECK:           memref.dealloc
func.func @iteration_sized_tile(%out: memref<?x8xf32>, %rows: memref<?xindex>,
                                %n: index) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %m = memref.load %rows[%i] : memref<?xindex>
    %tile = memref.alloc(%m) : memref<?x8xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<?x8xf32>)
    %src = memref.subview %tile[0, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1]>>
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<1x8xf32, strided<[8, 1], offset: ?>>
    linalg.copy ins(%src : memref<1x8xf32, strided<[8, 1]>>) outs(%dst : memref<1x8xf32, strided<[8, 1], offset: ?>>)
    memref.dealloc %tile : memref<?x8xf32>
  }
  return
}

// -----

// A tile buffer that a loop carries to its next iteration (yielded, here
// through an scf.if) cannot have a fixed place: the program keeps one
// thread per block and its buffers on the device heap.

// CHECK-LABEL: func.func @carried_tile(
// CHECK:         gpu.launch blocks({{.*}}) threads(%{{.+}}) in (%{{.+}} = %c1
// CHECK:           scf.for
// CHECK:             memref.alloc() : memref<8xf32>
func.func @carried_tile(%out: memref<?x8xf32>, %n: index, %flag: i1) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%i) in (%n) {
    %init = memref.alloc() : memref<8xf32>
    linalg.fill ins(%zero : f32) outs(%init : memref<8xf32>)
    %last = scf.for %k = %c0 to %n step %c1 iter_args(%prev = %init) -> (memref<8xf32>) {
      %next = memref.alloc() : memref<8xf32>
      linalg.copy ins(%prev : memref<8xf32>) outs(%next : memref<8xf32>)
      %pick = scf.if %flag -> (memref<8xf32>) {
        scf.yield %next : memref<8xf32>
      } else {
        scf.yield %prev : memref<8xf32>
      }
      scf.yield %pick : memref<8xf32>
    }
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.copy ins(%last : memref<8xf32>) outs(%dst : memref<8xf32, strided<[1], offset: ?>>)
  }
  return
}

// -----

// In a placed tile program the deallocation pipeline's frees (of a base
// buffer, under a run-time ownership flag) and its dealloc_helper calls go:
// nothing in the kernel is on the heap.

// CHECK-LABEL: func.func @placed_frees(
// CHECK:         gpu.launch {{.*}} threads(%{{.+}}) in (%{{.+}} = %c256
// CHECK-NOT:       memref.dealloc
// CHECK-NOT:       call @dealloc_helper
// CHECK:           gpu.terminator
func.func private @dealloc_helper(memref<?xindex>, memref<?xindex>, memref<?xi1>, memref<?xi1>, memref<?xi1>)
func.func @placed_frees(%out: memref<?x8xf32>, %n: index, %own: i1,
                        %a: memref<?xindex>, %b: memref<?xi1>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %tile = memref.alloc() : memref<8xf32>
    linalg.fill ins(%zero : f32) outs(%tile : memref<8xf32>)
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<?x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.copy ins(%tile : memref<8xf32>) outs(%dst : memref<8xf32, strided<[1], offset: ?>>)
    func.call @dealloc_helper(%a, %a, %b, %b, %b) : (memref<?xindex>, memref<?xindex>, memref<?xi1>, memref<?xi1>, memref<?xi1>) -> ()
    %base, %offset, %size, %stride = memref.extract_strided_metadata %tile : memref<8xf32> -> memref<f32>, index, index, index
    scf.if %own {
      memref.dealloc %base : memref<f32>
    }
  }
  return
}

// -----

// An element program: one thread per iteration, the last block guarded;
// its buffers are thread-private.

// CHECK-LABEL: func.func @element_program(
// CHECK:         %[[BLOCKS:.+]] = arith.ceildivui %{{.+}}, %c256
// CHECK:         gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[BLOCKS]], {{.*}} threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%[[BDX:[^ ]+]] = %c256
// CHECK-SAME:    function(@element_program_elements_l{{[0-9]+}}_0)
// CHECK:           %[[BASE:.+]] = arith.muli %[[BX]], %[[BDX]]
// CHECK:           %[[LIN:.+]] = arith.addi %[[BASE]], %[[TX]]
// CHECK:           %[[IN:.+]] = arith.cmpi ult, %[[LIN]], %{{.+}}
// CHECK:           scf.if %[[IN]] {
// CHECK:             memref.alloca() : memref<1xi64>
// CHECK-NOT:     scf.forall
func.func @element_program(%idx: memref<?xi64>, %out: memref<?xi64>, %n: index) {
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (%n) {
    %v = memref.load %idx[%i] : memref<?xi64>
    %at = arith.index_cast %v : i64 to index
    %ii = arith.index_cast %i : index to i64
    %cell = memref.alloc() : memref<1xi64>
    memref.store %ii, %cell[%c0] : memref<1xi64>
    %dst = memref.subview %out[%at] [1] [1] : memref<?xi64> to memref<1xi64, strided<[1], offset: ?>>
    memref.copy %cell, %dst : memref<1xi64> to memref<1xi64, strided<[1], offset: ?>>
    memref.dealloc %cell : memref<1xi64>
  }
  return
}

// -----

// A host structured op: a grid-stride loop over its parallel iterations.
// An element-wise op gives each thread four iterations per trip (a quarter
// of the blocks): the four elements' loads and sums first, then the first
// one's store and the others' each under a check that it exists. A
// reduction over fewer than 32 iterations takes one iteration per thread
// and trip; a reduction over 32 or more iterations (or a dynamic count)
// takes one warp per output, lanes striding over the reduction, partials
// combined by five xor shuffles, lane 0 updating the output; with no
// parallel dimension, one warp in all.

// CHECK-LABEL: func.func @host_ops(
// CHECK:         gpu.launch {{.*}} threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%[[BDX:[^ ]+]] = %c256
// CHECK-SAME:    function(@host_ops_generic_l{{[0-9]+}}_0)
// CHECK:           %[[START:.+]] = arith.addi %{{.+}}, %[[TX]]
// CHECK:           %[[STEP:.+]] = arith.muli %{{.+}}, %[[BDX]]
// CHECK:           %[[TRIP:.+]] = arith.muli %[[STEP]], %c4
// CHECK:           scf.for %{{.+}} = %[[START]] to %{{.+}} step %[[TRIP]] {
// CHECK-COUNT-4:     memref.load %{{.+}} : memref<?x64xf32>
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        memref.store
// CHECK-COUNT-3:     scf.if
// CHECK-NOT:       gpu.barrier
// CHECK:         gpu.launch {{.*}} threads(%[[TX2:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %c256
// CHECK-SAME:    function(@host_ops_generic_warps_l{{[0-9]+}}_1)
// CHECK:           %[[LANE:.+]] = arith.remui %[[TX2]], %c32
// CHECK:           scf.for
// CHECK:             %[[SUM:.+]] = scf.for %{{.+}} = %[[LANE]] to %{{.+}} step %c32{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}) -> (f32)
// CHECK:               memref.load
// CHECK:               arith.addf %[[ACC]]
// CHECK:             %[[S16:.+]], %{{.+}} = gpu.shuffle  xor %[[SUM]], %c16_i32
// CHECK:             arith.addf %[[SUM]], %[[S16]]
// CHECK-COUNT-4:     gpu.shuffle  xor
// CHECK:             %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK:             scf.if %[[FIRST]] {
// CHECK:               %[[OLD:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK:               %[[NEW:.+]] = arith.addf %[[OLD]], %{{.+}}
// CHECK:               memref.store %[[NEW]], %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK:         function(@host_ops_generic_warps_l{{[0-9]+}}_2)
// CHECK:             arith.maxnumf
// CHECK-COUNT-5:     gpu.shuffle  xor
// CHECK:             memref.store {{.*}} : memref<f32>
// CHECK:         function(@host_ops_generic_warps_l{{[0-9]+}}_3)
// CHECK:             scf.for {{.*}} iter_args({{.*}}) -> (f32, f32)
// CHECK-COUNT-10:    gpu.shuffle  xor
// CHECK:         function(@host_ops_generic_l{{[0-9]+}}_4)
// CHECK-NOT:         gpu.shuffle
// A projection onto [k, n] weights: lanes would read down a column of the
// large weight, so one thread per output; onto small [k, 4] weights, warps.
// CHECK:         function(@host_ops_generic_l{{[0-9]+}}_5)
// CHECK-NOT:         gpu.shuffle
// CHECK:         function(@host_ops_generic_warps_l{{[0-9]+}}_6)
// CHECK:             gpu.shuffle
// CHECK:           return
func.func @host_ops(%x: memref<?x64xf32>, %rows: memref<?xf32>, %total: memref<f32>,
                    %sq: memref<?xf32>, %narrow: memref<?x4xf32>, %four: memref<?xf32>,
                    %wide_w: memref<64x512xf32>, %wide_y: memref<?x512xf32>,
                    %thin_w: memref<64x4xf32>, %thin_y: memref<?x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%x : memref<?x64xf32>) {
  ^bb0(%a: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%rows : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%rows : memref<?xf32>) outs(%total : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maxnumf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%rows, %sq : memref<?xf32>, memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32, %acc2: f32):
    %s = arith.addf %acc, %a : f32
    %a2 = arith.mulf %a, %a : f32
    %s2 = arith.addf %acc2, %a2 : f32
    linalg.yield %s, %s2 : f32, f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%narrow : memref<?x4xf32>) outs(%four : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wide_w : memref<?x64xf32>, memref<64x512xf32>) outs(%wide_y : memref<?x512xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %thin_w : memref<?x64xf32>, memref<64x4xf32>) outs(%thin_y : memref<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Reductions over the tokens onto few outputs whose inputs are not stored
// along the reduction (a norm's weight gradient [B, T, 64] -> [64], a
// weight gradient [N, 16] x [N, 8] -> [16, 8]): split column reductions.
// The host sizes the runs (at least 64 iterations each, about 2^19 threads
// in all) and allocates the partials; the first kernel has one thread per
// (output, run), blockIdx.y the run, folding its run into a partial stored
// run-major (the run's start delinearized once, the token indices then
// stepped with carries); the second has one warp per output combining its runs' partials
// with shuffles, lane 0 adding them to the output. A reduction of fewer
// than 1024 iterations keeps one thread per output.

// CHECK-LABEL: func.func @column_reductions(
// CHECK:         %[[RUNS0:.+]] = arith.minui %{{.+}}, %c65535
// CHECK:         %[[RUNS:.+]] = arith.maxui %[[RUNS0]], %c1
// CHECK:         %[[LEN:.+]] = arith.ceildivui %[[ITERS:.+]], %[[RUNS]]
// CHECK:         %[[ELEMS:.+]] = arith.muli %[[RUNS]], %[[OUTS:[^ ]+]]
// CHECK:         %[[PART:.+]] = gpu.alloc  (%[[ELEMS]]) : memref<?xf32>
// CHECK:         gpu.launch blocks(%{{.+}}, %[[BY:.+]], %{{.+}}) in (%{{.+}} = %{{.+}}, %{{.+}} = %[[RUNS]], %{{.+}} = %c1{{.*}}) threads
// CHECK-SAME:    function(@column_reductions_generic_columns_l{{[0-9]+}}_0)
// CHECK:           %[[COL:.+]] = arith.addi
// CHECK:           %[[IN:.+]] = arith.cmpi ult, %[[COL]], %[[OUTS]]
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[START:.+]] = arith.muli %[[BY]], %[[LEN]]
// CHECK:             %[[END0:.+]] = arith.addi %[[START]], %[[LEN]]
// CHECK:             %[[END:.+]] = arith.minui %[[END0]], %[[ITERS]]
// CHECK:             %[[T0:.+]] = arith.remui %[[START]], %[[T:[^ ]+]]
// CHECK:             %[[B0:.+]] = arith.divui %[[START]], %[[T]]
// CHECK:             %[[SUM:.+]]:3 = scf.for %{{.+}} = %[[START]] to %[[END]] step %c1{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}, %[[BI:.+]] = %[[B0]], %[[TI:.+]] = %[[T0]]) -> (f32, index, index)
// CHECK-NOT:           arith.divui
// CHECK:               memref.load %{{.+}} : memref<?x?x64xf32>
// CHECK:               memref.load %{{.+}} : memref<?x?xf32>
// CHECK:               %[[NEXT:.+]] = arith.addf %[[ACC]]
// CHECK:               %[[TUP:.+]] = arith.addi %[[TI]], %c1
// CHECK:               %[[WRAP:.+]] = arith.cmpi eq, %[[TUP]], %[[T]]
// CHECK:               %[[TN:.+]] = arith.select %[[WRAP]], %c0{{.*}}, %[[TUP]]
// CHECK:               %[[CARRY:.+]] = arith.select %[[WRAP]], %c1{{.*}}, %c0
// CHECK:               %[[BN:.+]] = arith.addi %[[BI]], %[[CARRY]]
// CHECK:               scf.yield %[[NEXT]], %[[BN]], %[[TN]]
// CHECK:             %[[ROW:.+]] = arith.muli %[[BY]], %[[OUTS]]
// CHECK:             %[[SLOT:.+]] = arith.addi %[[ROW]], %[[COL]]
// CHECK:             memref.store %[[SUM]]#0, %[[PART]][%[[SLOT]]] : memref<?xf32>
// CHECK:         gpu.launch
// CHECK-SAME:    function(@column_reductions_generic_columns_sum_l{{[0-9]+}}_1)
// CHECK:           %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK:           scf.for
// CHECK:             scf.for %{{.+}} = %[[LANE]] to %[[RUNS]] step %c32{{.*}} -> (f32)
// CHECK:               memref.load %[[PART]][%{{.+}}] : memref<?xf32>
// CHECK-COUNT-5:     gpu.shuffle  xor
// CHECK:             scf.if
// CHECK:               memref.load %{{.+}} : memref<64xf32>
// CHECK:               memref.store {{.*}} : memref<64xf32>
// CHECK:         gpu.dealloc  %[[PART]] : memref<?xf32>
// CHECK:         function(@column_reductions_generic_columns_l{{[0-9]+}}_2)
// CHECK:           memref.load %{{.+}} : memref<?x16xf32>
// CHECK:           memref.load %{{.+}} : memref<?x8xf32>
// CHECK:         function(@column_reductions_generic_columns_sum_l{{[0-9]+}}_3)
// CHECK:               memref.store {{.*}} : memref<16x8xf32>
// CHECK:         function(@column_reductions_generic_l{{[0-9]+}}_4)
// CHECK-NOT:         gpu.shuffle
// Two terms summed into one output by a chain of adds (a norm weight shared
// by two uses): still one reorderable sum.
// CHECK:         function(@column_reductions_generic_columns_l{{[0-9]+}}_5)
// CHECK:             scf.for {{.*}} iter_args(%[[ACC2:[^ ]+]] = %cst{{.*}}) -> (f32, index, index)
// CHECK:               %[[T1:.+]] = arith.addf %[[ACC2]]
// CHECK:               arith.addf %[[T1]]
// CHECK:         function(@column_reductions_generic_columns_sum_l{{[0-9]+}}_6)
// CHECK:           return
func.func @column_reductions(%dy: memref<?x?x64xf32>, %rstd: memref<?x?xf32>,
                             %dw: memref<64xf32>, %x: memref<?x16xf32>,
                             %g: memref<?x8xf32>, %w: memref<16x8xf32>,
                             %rows: memref<1000x64xf32>, %sums: memref<64xf32>,
                             %dy2: memref<?x?x64xf32>, %rstd2: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %rstd : memref<?x?x64xf32>, memref<?x?xf32>) outs(%dw : memref<64xf32>) {
  ^bb0(%a: f32, %r: f32, %acc: f32):
    %p = arith.mulf %a, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %g : memref<?x16xf32>, memref<?x8xf32>) outs(%w : memref<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%rows : memref<1000x64xf32>) outs(%sums : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %rstd, %dy2, %rstd2 : memref<?x?x64xf32>, memref<?x?xf32>, memref<?x?x64xf32>, memref<?x?xf32>) outs(%dw : memref<64xf32>) {
  ^bb0(%a: f32, %r: f32, %a2: f32, %r2: f32, %acc: f32):
    %p = arith.mulf %a, %r : f32
    %s = arith.addf %acc, %p : f32
    %p2 = arith.mulf %a2, %r2 : f32
    %s2 = arith.addf %s, %p2 : f32
    linalg.yield %s2 : f32
  }
  return
}

// -----

// Tiles share bytes where their lifetimes allow: %a (from its allocation to
// the copy out of it) and %b (to the copy into %c) overlap; %c begins after
// %a's last use and takes %a's bytes (offset 0): 512 bytes, not 768. A
// barrier precedes the views of %a and %c, not that of %b. Without
// share-tile-memory (the default) every tile has bytes of its own.

// CHECK-LABEL: func.func @tile_sharing(
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c512_i32
// CHECK:           %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK:           gpu.barrier
// CHECK-NEXT:      %[[OA:.+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[AT_A:.+]] = arith.addi %{{.+}}, %[[OA]]
// CHECK-NEXT:      memref.view %[[SMEM]][%[[AT_A]]][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:       gpu.barrier
// CHECK:           %[[OB:.+]] = arith.constant 256 : index
// CHECK-NEXT:      %[[AT_B:.+]] = arith.addi %{{.+}}, %[[OB]]
// CHECK-NEXT:      memref.view %[[SMEM]][%[[AT_B]]][]
// The copy out of %a ends with its barrier, then %c's own:
// CHECK:           memref.subview %{{.+}}[%{{.+}}, 0, 0] [1, 1, 64]
// CHECK:           gpu.barrier
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[OC:.+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[AT_C:.+]] = arith.addi %{{.+}}, %[[OC]]
// CHECK-NEXT:      memref.view %[[SMEM]][%[[AT_C]]][]
// CHECK:           gpu.terminator
// NOSHARE-LABEL: func.func @tile_sharing(
// NOSHARE:         gpu.launch {{.*}} dynamic_shared_memory_size %c768_i32
func.func @tile_sharing(%out: memref<?x3x64xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    linalg.fill ins(%zero : f32) outs(%a : memref<64xf32>)
    linalg.fill ins(%one : f32) outs(%b : memref<64xf32>)
    %row0 = memref.subview %out[%i, 0, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%a : memref<64xf32>) outs(%row0 : memref<64xf32, strided<[1], offset: ?>>)
    %c = memref.alloc() : memref<64xf32>
    linalg.copy ins(%b : memref<64xf32>) outs(%c : memref<64xf32>)
    %row1 = memref.subview %out[%i, 1, 0] [1, 1, 64] [1, 1, 1] : memref<?x3x64xf32> to memref<64xf32, strided<[1], offset: ?>>
    linalg.copy ins(%c : memref<64xf32>) outs(%row1 : memref<64xf32, strided<[1], offset: ?>>)
  }
  return
}

// -----

// Tiles beyond the shared-memory budget: one global scratch slice per block.

// CHECK-LABEL: func.func @global_scratch(
// CHECK:         %[[BYTES:.+]] = arith.muli %{{.+}}, %c262144
// CHECK:         %[[SCRATCH:.+]] = gpu.alloc  (%[[BYTES]]) : memref<?xi8>
// CHECK:         gpu.launch
// CHECK:           %[[OFFSET:.+]] = arith.muli %{{.+}}, %c262144
// CHECK:           memref.view %[[SCRATCH]][%{{.+}}][] : memref<?xi8> to memref<65536xf32>
// CHECK:         gpu.dealloc  %[[SCRATCH]] : memref<?xi8>
func.func @global_scratch(%x: memref<?x65536xf32>, %n: index) attributes {} {
  scf.forall (%i) in (%n) {
    %tile = memref.alloc() : memref<65536xf32>
    %row = memref.subview %x[%i, 0] [1, 65536] [1, 1] : memref<?x65536xf32> to memref<65536xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<65536xf32, strided<[1], offset: ?>>) outs(%tile : memref<65536xf32>)
    memref.dealloc %tile : memref<65536xf32>
  }
  return
}

// -----

// Tiles that do not all fit: those accessed most per byte stay in shared
// memory within partial-shared-memory-bytes (here 113 KiB, without
// sharing by lifetime): %hot (32 KiB, read
// four times in a loop: 5 accesses per byte), then %warm (64 KiB, 3 per
// byte); %cold (2 per byte) would pass the budget and %big (256 KiB) never
// fits, so both go to the global scratch slice, in program order.

// PARTIAL-LABEL: func.func @partial_shared(
// PARTIAL:         %[[BYTES:.+]] = arith.muli %{{.+}}, %c327680
// PARTIAL:         %[[SCRATCH:.+]] = gpu.alloc  (%[[BYTES]]) : memref<?xi8>
// PARTIAL:         gpu.launch
// PARTIAL-SAME:      dynamic_shared_memory_size %c98304_i32
// PARTIAL-DAG:       %[[SHARED:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// PARTIAL-DAG:       %[[OFFSET:.+]] = arith.muli %{{.+}}, %c327680
// PARTIAL:           %[[BIG:.+]] = arith.addi %[[OFFSET]], %c0
// PARTIAL:           memref.view %[[SCRATCH]][%[[BIG]]][] : memref<?xi8> to memref<65536xf32>
// PARTIAL:           %[[HOT:.+]] = arith.addi %{{.+}}, %c0
// PARTIAL:           memref.view %[[SHARED]][%[[HOT]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf32, #gpu.address_space<workgroup>>
// PARTIAL:           %[[WARM:.+]] = arith.addi %{{.+}}, %c32768
// PARTIAL:           memref.view %[[SHARED]][%[[WARM]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16384xf32, #gpu.address_space<workgroup>>
// PARTIAL:           %[[COLD:.+]] = arith.addi %[[OFFSET]], %c262144
// PARTIAL:           memref.view %[[SCRATCH]][%[[COLD]]][] : memref<?xi8> to memref<16384xf32>
// PARTIAL:         gpu.dealloc  %[[SCRATCH]] : memref<?xi8>

// By default (196 KiB, sharing by lifetime): %big (256 KiB) alone goes to
// the scratch slice; %hot is dead when %warm is written, and %warm when
// %cold is, so the three take 64 KiB of shared memory from offset 0 (a
// barrier between one's last use and the next one's writes).

// NOSHARE-LABEL: func.func @partial_shared(
// NOSHARE:         arith.muli %{{.+}}, %c262144
// NOSHARE:         gpu.launch
// NOSHARE-SAME:      dynamic_shared_memory_size %c65536_i32
// NOSHARE:           memref.view %{{.+}} : memref<?xi8> to memref<65536xf32>
// NOSHARE:           %[[HOT:.+]] = arith.addi %{{.+}}, %c0
// NOSHARE-NEXT:      memref.view %{{.+}}[%[[HOT]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf32, #gpu.address_space<workgroup>>
// NOSHARE:           gpu.barrier
// NOSHARE:           %[[WARM:.+]] = arith.addi %{{.+}}, %c0
// NOSHARE-NEXT:      memref.view %{{.+}}[%[[WARM]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16384xf32, #gpu.address_space<workgroup>>
// NOSHARE:           gpu.barrier
// NOSHARE:           %[[COLD:.+]] = arith.addi %{{.+}}, %c0
// NOSHARE-NEXT:      memref.view %{{.+}}[%[[COLD]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16384xf32, #gpu.address_space<workgroup>>
// NOSHARE:         } {nvvm.minctasm = 2 : i32}

// With partial-shared-memory-bytes=0, every tile is in the scratch slice.
// NOPARTIAL-LABEL: func.func @partial_shared(
// NOPARTIAL:         arith.muli %{{.+}}, %c425984
// NOPARTIAL:         gpu.launch
// NOPARTIAL-NOT:       dynamic_shared_memory_size
// NOPARTIAL-NOT:     gpu.dynamic_shared_memory
// NOPARTIAL:         gpu.dealloc
func.func @partial_shared(%x: memref<?x65536xf32>, %y: memref<?x8192xf32>, %z: memref<?x16384xf32>, %n: index) attributes {} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (%n) {
    %big = memref.alloc() : memref<65536xf32>
    %row = memref.subview %x[%i, 0] [1, 65536] [1, 1] : memref<?x65536xf32> to memref<65536xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<65536xf32, strided<[1], offset: ?>>) outs(%big : memref<65536xf32>)
    %hot = memref.alloc() : memref<8192xf32>
    linalg.fill ins(%zero : f32) outs(%hot : memref<8192xf32>)
    %out = memref.subview %y[%i, 0] [1, 8192] [1, 1] : memref<?x8192xf32> to memref<8192xf32, strided<[1], offset: ?>>
    scf.for %j = %c0 to %c4 step %c1 {
      linalg.copy ins(%hot : memref<8192xf32>) outs(%out : memref<8192xf32, strided<[1], offset: ?>>)
    }
    %warm = memref.alloc() : memref<16384xf32>
    linalg.fill ins(%zero : f32) outs(%warm : memref<16384xf32>)
    %zrow = memref.subview %z[%i, 0] [1, 16384] [1, 1] : memref<?x16384xf32> to memref<16384xf32, strided<[1], offset: ?>>
    linalg.copy ins(%warm : memref<16384xf32>) outs(%zrow : memref<16384xf32, strided<[1], offset: ?>>)
    linalg.copy ins(%warm : memref<16384xf32>) outs(%zrow : memref<16384xf32, strided<[1], offset: ?>>)
    %cold = memref.alloc() : memref<16384xf32>
    linalg.fill ins(%zero : f32) outs(%cold : memref<16384xf32>)
    linalg.copy ins(%cold : memref<16384xf32>) outs(%zrow : memref<16384xf32, strided<[1], offset: ?>>)
    memref.dealloc %big : memref<65536xf32>
    memref.dealloc %hot : memref<8192xf32>
    memref.dealloc %warm : memref<16384xf32>
    memref.dealloc %cold : memref<16384xf32>
  }
  return
}

// -----

// Two 120 KiB tiles, one dead before the other is written: 240 KiB without
// sharing, more than shared-memory-bytes, so by default they share bytes
// (share-spilled-tiles), and then both fit in shared memory: no global
// scratch (an empty one would still cost an allocation per launch), one
// block per SM.
// Without sharing and partial-shared-memory-bytes=0, both go to scratch.

// NOSHARE-LABEL: func.func @spilled_fits_shared(
// NOSHARE-NOT:     gpu.alloc
// NOSHARE:         gpu.launch
// NOSHARE-SAME:      dynamic_shared_memory_size %c122880_i32
// NOSHARE-NOT:     gpu.alloc
// NOSHARE:         } {nvvm.minctasm = 1 : i32}
// NOSHARE-NOT:     gpu.dealloc
// NOSHARE:         return

// NOPARTIAL-LABEL: func.func @spilled_fits_shared(
// NOPARTIAL:         arith.muli %{{.+}}, %c245760
// NOPARTIAL:         gpu.alloc
// NOPARTIAL:         gpu.launch
// NOPARTIAL-NOT:       dynamic_shared_memory_size
// NOPARTIAL:         gpu.dealloc
func.func @spilled_fits_shared(%x: memref<?x30720xf32>, %n: index) attributes {} {
  scf.forall (%i) in (%n) {
    %row = memref.subview %x[%i, 0] [1, 30720] [1, 1] : memref<?x30720xf32> to memref<30720xf32, strided<[1], offset: ?>>
    %a = memref.alloc() : memref<30720xf32>
    linalg.copy ins(%row : memref<30720xf32, strided<[1], offset: ?>>) outs(%a : memref<30720xf32>)
    linalg.copy ins(%a : memref<30720xf32>) outs(%row : memref<30720xf32, strided<[1], offset: ?>>)
    %b = memref.alloc() : memref<30720xf32>
    linalg.copy ins(%row : memref<30720xf32, strided<[1], offset: ?>>) outs(%b : memref<30720xf32>)
    linalg.copy ins(%b : memref<30720xf32>) outs(%row : memref<30720xf32, strided<[1], offset: ?>>)
    memref.dealloc %a : memref<30720xf32>
    memref.dealloc %b : memref<30720xf32>
  }
  return
}

// -----

// Tiles that fit but take 120 KiB of shared memory: one block per SM at
// most, so the launch asks the PTX compiler for one, not
// tile-blocks-per-sm (2), and the registers need not fit two blocks.

// NOSHARE-LABEL: func.func @one_block_per_sm(
// NOSHARE:         gpu.launch
// NOSHARE-SAME:      dynamic_shared_memory_size %c122880_i32
// NOSHARE:         } {nvvm.minctasm = 1 : i32}
func.func @one_block_per_sm(%x: memref<?x30720xf32>, %n: index) attributes {} {
  scf.forall (%i) in (%n) {
    %tile = memref.alloc() : memref<30720xf32>
    %row = memref.subview %x[%i, 0] [1, 30720] [1, 1] : memref<?x30720xf32> to memref<30720xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<30720xf32, strided<[1], offset: ?>>) outs(%tile : memref<30720xf32>)
    linalg.copy ins(%tile : memref<30720xf32>) outs(%row : memref<30720xf32, strided<[1], offset: ?>>)
    memref.dealloc %tile : memref<30720xf32>
  }
  return
}

// -----

func.func @nested(%n: index) {
  // expected-error @+1 {{'scf.forall' op holds another scf.forall, which the GPU mapping does not take}}
  scf.forall (%i) in (%n) {
    scf.forall (%j) in (%n) {
    }
  }
  return
}

// -----

// A tile program's static element-wise op over a 64 x 64 tile: with
// tile-elements-per-thread=8 (the default) each of the 256 threads takes
// eight elements per trip (step 2048), their loads first, then the
// products, then the stores, none guarded (4096 is a multiple of 2048);
// with 1, one per trip. Over a 64 x 40 tile (ten per thread) five copies fill each trip.

// UNROLL-LABEL: func.func @tile_unroll(
// UNROLL:         gpu.launch
// UNROLL:           %[[STEP:.+]] = arith.muli %c256{{[_0-9]*}}, %c8
// UNROLL:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[STEP]] {
// UNROLL-COUNT-8:     memref.load %subview
// UNROLL-COUNT-8:     arith.mulf
// UNROLL-NOT:         scf.if
// UNROLL-COUNT-8:     memref.store
// UNROLL-NOT:         scf.if
// UNROLL:           }
// UNROLL:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// UNROLL-COUNT-8:     memref.store
// UNROLL:           }
// UNROLL:           %[[STEP5:.+]] = arith.muli %c256{{[_0-9]*}}, %c5
// UNROLL:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[STEP5]] {
// UNROLL-COUNT-5:     memref.load %subview
// UNROLL-NOT:         memref.load %subview
// UNROLL:             arith.mulf
// UNROLL-NOT:         scf.if
// UNROLL-COUNT-5:     memref.store
// UNROLL-NOT:         scf.if
// UNROLL:           }
// ONE-LABEL: func.func @tile_unroll(
// ONE:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c256{{[_0-9]*}} {
// ONE-NEXT:      arith.remui
// ONE-NOT:       scf.if
// ONE:           memref.store
// ONE-NEXT:    }
func.func @tile_unroll(%x: memref<?x64x64xf32>, %out: memref<?x64x64xf32>, %n: index) {
  %two = arith.constant 2.0 : f32
  scf.forall (%i) in (%n) {
    %t = memref.alloc() : memref<64x64xf32>
    %in = memref.subview %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<?x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in : memref<64x64xf32, strided<[64, 1], offset: ?>>) outs(%t : memref<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %two : f32
      linalg.yield %m : f32
    }
    %o = memref.subview %out[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<?x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    linalg.copy ins(%t : memref<64x64xf32>) outs(%o : memref<64x64xf32, strided<[64, 1], offset: ?>>)
    %t40 = memref.alloc() : memref<64x40xf32>
    %in40 = memref.subview %x[%i, 0, 0] [1, 64, 40] [1, 1, 1] : memref<?x64x64xf32> to memref<64x40xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in40 : memref<64x40xf32, strided<[64, 1], offset: ?>>) outs(%t40 : memref<64x40xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %two : f32
      linalg.yield %m : f32
    }
    %o40 = memref.subview %out[%i, 0, 0] [1, 64, 40] [1, 1, 1] : memref<?x64x64xf32> to memref<64x40xf32, strided<[64, 1], offset: ?>>
    linalg.copy ins(%t40 : memref<64x40xf32>) outs(%o40 : memref<64x40xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// -----

// A fill that only initialises a host reduction's output (nothing between
// them touches memory) is no kernel of its own: the warps' lane 0 combines
// the total with the fill's value instead of loading the output. A fill
// followed by another op that writes memory stays.

// CHECK-LABEL: func.func @fill_then_reduction(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x64xf32>, %[[ROWS:[^:]*]]: memref<?xf32>, %[[KEPT:[^:]*]]: memref<?xf32>
// CHECK:         %[[START:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NOT:     fill_then_reduction_fill
// CHECK:         gpu.launch
// CHECK-SAME:    function(@fill_then_reduction_generic_warps_l{{[0-9]+}}_0)
// CHECK:             scf.if
// CHECK-NOT:           memref.load %[[ROWS]]
// CHECK:               %[[NEW:.+]] = arith.addf %[[START]], %{{.+}} : f32
// CHECK:               memref.store %[[NEW]], %[[ROWS]]
// CHECK:         function(@fill_then_reduction_fill_l{{[0-9]+}}_1)
// CHECK:         function(@fill_then_reduction_generic_l{{[0-9]+}}_2)
// CHECK:         function(@fill_then_reduction_generic_warps_l{{[0-9]+}}_3)
// CHECK:               memref.load %[[KEPT]]
// CHECK:           return
func.func @fill_then_reduction(%x: memref<?x64xf32>, %rows: memref<?xf32>, %kept: memref<?xf32>) {
  %start = arith.constant 0.25 : f32
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%start : f32) outs(%rows : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%rows : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%kept : memref<?xf32>)
  // Writes %x, which the reduction reads: the fill above it stays.
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      outs(%x : memref<?x64xf32>) {
  ^bb0(%out: f32):
    %d = arith.addf %out, %out : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%kept : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}
