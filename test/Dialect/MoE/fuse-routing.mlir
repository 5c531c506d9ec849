// RUN: moe-opt %s --moe-fuse-routing="token-tile=16 token-groups=4 row-tile=8" --split-input-file --verify-diagnostics | FileCheck %s --implicit-check-not=moe.route --implicit-check-not=moe.dispatch --implicit-check-not=moe.expert_ffn --implicit-check-not=moe.combine
// RUN: not moe-opt %s --moe-fuse-routing="row-tile=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=OPTIONS

// OPTIONS: error: expects positive token-tile (64), token-groups (16) and row-tile (0)

// The routed FFN as -moe-decompose leaves it (E = 8, top-2, d = 16, width 4,
// exact QB). The routing kernel is one scf.forall over groups of 16-token
// tiles; every score tensor inside it is a static [16, 8] tile, and no
// [N, 8] f32 tensor exists outside it (--implicit-check-not below).

// CHECK-LABEL: func.func @routed
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16xf32>, %[[WR:[^:]*]]: tensor<8x16xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[WG:[^:]*]]: tensor<8x16x4xf32>, %[[WU:[^:]*]]: tensor<8x16x4xf32>, %[[WD:[^:]*]]: tensor<8x4x16xf32>)
// CHECK-NOT: tensor<?x8xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x16xf32>
// CHECK: %[[KERNEL:.*]]:5 = scf.forall (%{{.*}}) in (%{{.*}}) shared_outs({{.*}}) -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x8xi64>, tensor<8x?xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<8xi64>, tensor<8x?xf32>)
// CHECK: %[[XT:.*]] = tensor.pad
// CHECK: } : tensor<?x16xf32> to tensor<16x16xf32>
//
// Router GEMM, sigmoid, biased scores.
// CHECK: %[[LOGITS:.*]] = linalg.generic {{.*}} ins(%[[XT]], %[[WR]] : tensor<16x16xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]] : tensor<16x8xf32>)
// CHECK: math.exp
// CHECK: %[[Z:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[B]] : tensor<16x8xf32>, tensor<8xf32>)
//
// Each expert's rank in its token: a larger z, or an equal z at a lower
// index; a NaN ranks as -inf, so the ranks are always a permutation.
// CHECK: %[[ZR:.*]] = linalg.generic {{.*}} ins(%[[Z]] : tensor<16x8xf32>)
// CHECK: arith.cmpf uno
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: %[[RANK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[ZR]], %[[ZR]] : tensor<16x8xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<16x8xi64>)
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[OTHER:.*]] = linalg.index 2
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpi ult, %[[OTHER]], %[[J]]
//
// Selection of real tokens (rank < 2), positions in the group, counts.
// CHECK: %[[SEL:.*]] = linalg.generic {{.*}} ins(%[[RANK]] : tensor<16x8xi64>)
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} ins(%[[SEL]] : tensor<16x8xi64>) outs(%{{.*}} : tensor<16x8xi64>)
// CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}} ins(%[[SEL]] : tensor<16x8xi64>) outs(%{{.*}} : tensor<8xi64>)
// CHECK: %[[SLOT:.*]]:3 = linalg.generic {{.*}} ins(%[[RANK]], %[[S]], %[[POS]] : tensor<16x8xi64>, tensor<16x8xf32>, tensor<16x8xi64>) outs({{.*}} : tensor<16x2xi64>, tensor<16x2xf32>, tensor<16x2xi64>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[SLOT]]#1 : tensor<16x2xf32>) outs(%{{.*}} : tensor<16xf32>)
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[SLOT]]#1, %[[SUM]] : tensor<16x2xf32>, tensor<16xf32>)
// CHECK: arith.constant 9.99999968E-21 : f32
// CHECK: arith.constant 2.500000e+00 : f32
//
// Exact QB statistics: the cut (rank 2) and r = cut - s, expert-major.
// CHECK: %[[CUT:.*]] = linalg.generic {{.*}} ins(%[[RANK]], %[[Z]] : tensor<16x8xi64>, tensor<16x8xf32>) outs(%{{.*}} : tensor<16xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[CUT]] : tensor<16x8xf32>, tensor<16xf32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: arith.subf
// CHECK: tensor.insert_slice %[[R]] into %{{.*}}[0, %{{.*}}] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x?xf32>
// CHECK: scf.yield {{.*}} : tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<8xi64>, tensor<8x?xf32>
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-5: tensor.parallel_insert_slice
//
// The kernel's per-slot experts, flattened for the scatter; the load sums
// the groups' counts.
// CHECK: %[[EXPERTS:.*]] = tensor.collapse_shape %[[KERNEL]]#1 {{\[}}[0, 1]] : tensor<?x2xi64> into tensor<?xi64>
// CHECK: %[[LOAD:.*]] = linalg.generic {{.*}} ins(%[[KERNEL]]#3 : tensor<?x8xi64>) outs(%{{.*}} : tensor<8xi64>)
//
// Next bias: per expert, two radix selects (4 passes of a 256-bucket
// histogram over the N values of r), the midpoint, then centring.
// CHECK: scf.forall (%[[E:.*]]) in (8) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<8xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i64, i64)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} iter_args({{.*}}) -> (tensor<256xi64>)
// CHECK: tensor.extract %[[KERNEL]]#4[%[[E]], %{{.*}}] : tensor<8x?xf32>
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i64, i1, i64, i64)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: scf.for {{.*}} -> (i64, i64)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[E]]] [1] [1] : tensor<1xf32> into tensor<8xf32>
//
// Dispatch: expert_offsets from the load, then one iteration per token-slot
// scatters its row and slot id to base + position, and records its row.
// CHECK: %[[OFF:.*]] = linalg.generic {{.*}} ins(%[[LOAD]] : tensor<8xi64>) outs(%{{.*}} : tensor<9xi64>)
// CHECK: %[[DISP:.*]]:3 = scf.forall (%[[M:.*]]) in (%{{.*}}) shared_outs({{.*}}) -> (tensor<?x16xf32>, tensor<?xi64>, tensor<?xi64>)
// CHECK: tensor.extract %[[EXPERTS]][%[[M]]] : tensor<?xi64>
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[X]][%{{.*}}, 0] [1, 16] [1, 1] : tensor<?x16xf32> to tensor<1x16xf32>
// CHECK: tensor.parallel_insert_slice %[[ROW]] into %{{.*}}[%[[DEST:.*]], 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<?x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[DEST]]] [1] [1] : tensor<1xi64> into tensor<?xi64>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[M]]] [1] [1] : tensor<1xi64> into tensor<?xi64>
//
// Grouped GEMM: a flat list of 8-row tiles; each finds its expert, pads its
// rows and runs that expert's gate, up and down projections.
// CHECK: %[[FFN:.*]] = scf.forall (%{{.*}}) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x16xf32>)
// CHECK: %[[EXPERT:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (index)
// CHECK: %[[XE:.*]] = tensor.pad
// CHECK: } : tensor<?x16xf32> to tensor<8x16xf32>
// CHECK: %[[WGE:.*]] = tensor.extract_slice %[[WG]][%[[EXPERT]], 0, 0] [1, 16, 4] [1, 1, 1] : tensor<8x16x4xf32> to tensor<16x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[XE]], %[[WGE]] : tensor<8x16xf32>, tensor<16x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: tensor.extract_slice %[[WU]][%[[EXPERT]], 0, 0]
// CHECK: math.exp
// CHECK: %[[WDE:.*]] = tensor.extract_slice %[[WD]][%[[EXPERT]], 0, 0] [1, 4, 16] [1, 1, 1] : tensor<8x4x16xf32> to tensor<4x16xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[WDE]] : tensor<8x4xf32>, tensor<4x16xf32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [%{{.*}}, 16] [1, 1] : tensor<?x16xf32> into tensor<?x16xf32>
//
// Combine: a weighted gather through the dispatch's slot -> row map.
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[W2:.*]] : tensor<?x2xf32>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK: tensor.extract %[[DISP]]#2[%{{.*}}] : tensor<?xi64>
// CHECK: tensor.extract %[[FFN]][%{{.*}}, %{{.*}}] : tensor<?x16xf32>
// CHECK: return %[[Y]], %[[LOAD]], %{{.*}} : tensor<?x16xf32>, tensor<8xi64>, tensor<8xf32>
func.func @routed(%x: tensor<?x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>,
                  %wg: tensor<8x16x4xf32>, %wu: tensor<8x16x4xf32>,
                  %wd: tensor<8x4x16xf32>)
    -> (tensor<?x16xf32>, tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x16xf32>, tensor<?x2xi64>)
      -> (tensor<?x16xf32>, tensor<9xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<9xi64>, tensor<8x16x4xf32>,
         tensor<8x16x4xf32>, tensor<8x4x16xf32>) -> tensor<?x16xf32>
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x16xf32>
  return %y, %load, %nb : tensor<?x16xf32>, tensor<8xi64>, tensor<8xf32>
}

// -----

// Histogram QB (32 bins) on a static batch of 20 tokens (two tiles, the
// second partial) with i32 indices: each group owns an [8, 32] histogram,
// fed by a loop over the tile's real tokens; no [E, N] buffer of r. The
// results are cast back to the static types.

// CHECK-LABEL: func.func @histogram
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: %[[LOW:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK: %[[WIDTH:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: %[[KERNEL:.*]]:5 = scf.forall {{.*}} -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<?x8xi64>, tensor<?x8x32xi64>)
// CHECK: scf.for {{.*}} -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<?x2xi64>, tensor<8xi64>, tensor<8x32xi64>)
// CHECK: arith.minui
// CHECK: %[[ROWS:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x32xi64>)
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[H:.*]] = %{{.*}}) -> (tensor<8x32xi64>)
// CHECK: arith.subf %{{.*}}, %[[LOW]] : f32
// CHECK: arith.divf %{{.*}}, %[[WIDTH]] : f32
// CHECK: math.floor
// CHECK: %[[LAST:.*]] = arith.constant 3.100000e+01 : f32
// CHECK: arith.maxnumf
// CHECK: arith.minnumf %{{.*}}, %[[LAST]] : f32
// CHECK: arith.fptosi
// CHECK: %[[BIN:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.insert %{{.*}} into %[[H]][%[[J]], %[[BIN]]] : tensor<8x32xi64>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0, 0] [1, 8, 32] [1, 1, 1] : tensor<8x32xi64> into tensor<?x8x32xi64>
// CHECK: tensor.cast %{{.*}} : tensor<?x2xf32> to tensor<20x2xf32>
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: tensor.cast %{{.*}} : tensor<?x2xi32> to tensor<20x2xi32>
// CHECK: %[[TOTAL:.*]] = linalg.generic {{.*}} ins(%[[KERNEL]]#4 : tensor<?x8x32xi64>) outs(%{{.*}} : tensor<8x32xi64>)
// The first bin whose running count reaches N k / E, interpolated.
// CHECK: scf.forall (%{{.*}}) in (8)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (i64, i1, index, i64)
// CHECK: arith.cmpf oge
// CHECK-NOT: tensor<8x?xf32>
// CHECK: return
func.func @histogram(%x: tensor<20x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>)
    -> (tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<histogram, bins = 32>>}
      : (tensor<20x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>)
  return %w, %idx, %load, %nb : tensor<20x2xf32>, tensor<20x2xi32>, tensor<8xi64>, tensor<8xf32>
}

// -----

// Sign-bias balancing needs no QB statistics (and top_k may equal E): the
// kernel keeps only its four outputs, and the next bias is
// b + 1e-3 * sign(N k / E - load).

// CHECK-LABEL: func.func @sign_bias
// CHECK: %[[KERNEL:.*]]:4 = scf.forall {{.*}} -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xi64>, tensor<?x8xi64>)
// CHECK-NOT: scf.for {{.*}} -> (tensor<8x
// CHECK: %[[LOAD:.*]] = linalg.generic {{.*}} ins(%[[KERNEL]]#3 : tensor<?x8xi64>)
// CHECK: %[[NEXT:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[LOAD]] : tensor<8xf32>, tensor<8xi64>)
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: arith.constant 1.000000e-03 : f32
// CHECK: return %[[LOAD]], %[[NEXT]]
func.func @sign_bias(%x: tensor<?x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>)
    -> (tensor<8xi64>, tensor<8xf32>) {
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 8, scaling = 1.0,
                              balance = #moe.sign_bias<rate = 1.0e-3>>}
      : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<8xi64>, tensor<8xf32>)
  return %load, %nb : tensor<8xi64>, tensor<8xf32>
}

// -----

// Routing given as data (bf16 rows, i32 indices): the dispatch counts the
// token-slots in tiles of 16 (padding slots carry expert -1), then scans
// and scatters as above. A combine whose source_slot does not come from a
// lowered dispatch inverts it first, then gathers in fp32.

// CHECK-LABEL: func.func @standalone
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x16xbf16>, %[[IDX:[^:]*]]: tensor<?x2xi32>, %[[W:[^:]*]]: tensor<?x2xf32>, %[[SLOT:[^:]*]]: tensor<?xi64>, %[[YP:[^:]*]]: tensor<?x16xbf16>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[IDX]] {{\[}}[0, 1]] : tensor<?x2xi32> into tensor<?xi32>
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: %[[COUNT:.*]]:2 = scf.forall {{.*}} -> (tensor<?xi64>, tensor<?x8xi64>)
// CHECK: arith.constant -1 : i64
// CHECK: tensor.pad
// CHECK: } : tensor<?xi64> to tensor<16xi64>
// CHECK: %[[DISP:.*]]:3 = scf.forall {{.*}} -> (tensor<?x16xbf16>, tensor<?xi64>, tensor<?xi64>)
// CHECK: tensor.extract_slice %[[X]][%{{.*}}, 0] [1, 16] [1, 1] : tensor<?x16xbf16> to tensor<1x16xbf16>
// CHECK: %[[INV:.*]] = scf.forall (%[[M:.*]]) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xi64>)
// CHECK: %[[S:.*]] = tensor.extract %[[SLOT]][%[[M]]] : tensor<?xi64>
// CHECK: %[[SI:.*]] = arith.index_cast %[[S]] : i64 to index
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[SI]]] [1] [1] : tensor<1xi64> into tensor<?xi64>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<?x2xf32>) outs(%{{.*}} : tensor<?x16xf32>)
// CHECK: tensor.extract %[[INV]][%{{.*}}] : tensor<?xi64>
// CHECK: %[[V:.*]] = tensor.extract %[[YP]][%{{.*}}, %{{.*}}] : tensor<?x16xbf16>
// CHECK: arith.extf %[[V]] : bf16 to f32
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<?x16xf32>) outs(%{{.*}} : tensor<?x16xbf16>)
// CHECK: return %[[DISP]]#0, %{{.*}}, %[[DISP]]#1, %[[Y]]
func.func @standalone(%x: tensor<?x16xbf16>, %idx: tensor<?x2xi32>, %w: tensor<?x2xf32>,
                      %slot: tensor<?xi64>, %yp: tensor<?x16xbf16>)
    -> (tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>, tensor<?x16xbf16>) {
  %xp, %off, %slot2 = moe.dispatch %x, %idx {num_experts = 8 : i64}
      : (tensor<?x16xbf16>, tensor<?x2xi32>)
      -> (tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>)
  %y = moe.combine %yp, %slot, %w
      : (tensor<?x16xbf16>, tensor<?xi64>, tensor<?x2xf32>) -> tensor<?x16xbf16>
  return %xp, %off, %slot2, %y : tensor<?x16xbf16>, tensor<9xi64>, tensor<?xi64>, tensor<?x16xbf16>
}

// -----

// The dense FFN (the shared expert) is left to -convert-moe-to-linalg.

// CHECK-LABEL: func.func @dense
// CHECK: moe.glu_ffn
func.func @dense(%x: tensor<?x16xf32>, %wg: tensor<16x4xf32>, %wu: tensor<16x4xf32>,
                 %wd: tensor<4x16xf32>) -> tensor<?x16xf32> {
  %y = moe.glu_ffn %x, %wg, %wu, %wd {activation = #moe.activation<swiglu>}
      : tensor<?x16xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<4x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// The routing kernel's tiles need a static hidden size.

func.func @dynamic_hidden(%x: tensor<?x?xf32>, %wr: tensor<8x?xf32>, %b: tensor<8xf32>)
    -> tensor<8xi64> {
  // expected-error @+1 {{'moe.route' op expects a static hidden size (dimension 1 of 'tensor<?x?xf32>')}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x?xf32>, tensor<8x?xf32>, tensor<8xf32>)
      -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return %load : tensor<8xi64>
}

// -----

// The grouped GEMM tiles need static expert count, hidden size and width.

func.func @dynamic_expert_width(%xp: tensor<?x16xf32>, %off: tensor<9xi64>,
                                %wg: tensor<8x16x?xf32>, %wu: tensor<8x16x?xf32>,
                                %wd: tensor<8x?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'moe.expert_ffn' op expects a static expert width (dimension 2 of 'tensor<8x16x?xf32>')}}
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<9xi64>, tensor<8x16x?xf32>,
         tensor<8x16x?xf32>, tensor<8x?x16xf32>) -> tensor<?x16xf32>
  return %yp : tensor<?x16xf32>
}

// -----

func.func @dynamic_expert_count(%xp: tensor<?x16xf32>, %off: tensor<?xi64>,
                                %wg: tensor<?x16x4xf32>, %wu: tensor<?x16x4xf32>,
                                %wd: tensor<?x4x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'moe.expert_ffn' op expects a static expert count (dimension 0 of 'tensor<?x16x4xf32>')}}
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x16xf32>, tensor<?xi64>, tensor<?x16x4xf32>,
         tensor<?x16x4xf32>, tensor<?x4x16xf32>) -> tensor<?x16xf32>
  return %yp : tensor<?x16xf32>
}

// -----

func.func @dynamic_expert_hidden(%xp: tensor<?x?xf32>, %off: tensor<9xi64>,
                                 %wg: tensor<8x?x4xf32>, %wu: tensor<8x?x4xf32>,
                                 %wd: tensor<8x4x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'moe.expert_ffn' op expects a static hidden size (dimension 1 of 'tensor<8x?x4xf32>')}}
  %yp = moe.expert_ffn %xp, %off, %wg, %wu, %wd
      {activation = #moe.activation<swiglu>}
      : (tensor<?x?xf32>, tensor<9xi64>, tensor<8x?x4xf32>,
         tensor<8x?x4xf32>, tensor<8x4x?xf32>) -> tensor<?x?xf32>
  return %yp : tensor<?x?xf32>
}
