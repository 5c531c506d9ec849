// RUN: moe-opt %s --moe-generate-kda-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: moe-opt %s --moe-generate-kda-kernels="diagonal=per-position" -split-input-file 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: not moe-opt %s --moe-generate-kda-kernels="diagonal=diag" 2>&1 | FileCheck %s --check-prefix=BAD-DIAGONAL
// RUN: not moe-opt %s --moe-generate-kda-kernels="value-tile=12" 2>&1 | FileCheck %s --check-prefix=BAD-TILE

// BAD-DIAGONAL: error: unknown diagonal 'diag', expected auto, dense or per-position
// BAD-TILE: error: expects value-tile 8, 16 or 32, got 12

// A bounded gate: the diagonal tiles are proven safe for bf16 operands and
// take the dense tensor-core path. The L2 norms and the gate are fused: the
// kernels read the raw q, k and gate input, and none of the moe ops stays.

// CHECK-LABEL: func.func @bounded(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x2x64xf32>, %[[K:[^:]+]]: tensor<?x?x2x64xf32>,
// CHECK-SAME: %[[V:[^:]+]]: tensor<?x?x2x32xf32>, %[[Z:[^:]+]]: tensor<?x?x2x64xf32>
// CHECK-NOT: moe.
// CHECK-DAG: bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: bufferization.to_buffer %[[K]] read_only
// CHECK-DAG: bufferization.to_buffer %[[V]] read_only
// CHECK-DAG: bufferization.to_buffer %[[Z]] read_only
// CHECK: gpu.alloc async
// CHECK: %[[OUT:.+]] = memref.alloc({{.*}}) : memref<?x?x2x32xf32>
// CHECK: gpu.launch_func @moe_kda_kernels::@kda0_prep blocks in ({{.*}}) threads in (%c256{{.*}}) dynamic_shared_memory_size
// CHECK: gpu.launch_func @moe_kda_kernels::@kda0_state blocks in ({{.*}}) threads in (%c128{{.*}}) dynamic_shared_memory_size
// CHECK: %[[RESULT:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
// CHECK: gpu.module @moe_kda_kernels
// CHECK: gpu.func @kda0_prep({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: gpu.func @kda0_state({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: scf.for
// CHECK: nvvm.mma.sync

// FORCED: remark: kda GPU kernels with chunk 64, sub-chunk 16: per-position diagonal tiles, forced by diagonal=per-position (bound -5.00,

func.func @bounded(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>,
                   %v: tensor<?x?x2x32xf32>, %z: tensor<?x?x2x64xf32>,
                   %beta: tensor<?x?x2xf32>, %A_log: tensor<2xf32>,
                   %dt_bias: tensor<2x64xf32>) -> tensor<?x?x2x32xf32> {
  %qn = moe.l2_norm %q : tensor<?x?x2x64xf32>
  %kn = moe.l2_norm %k : tensor<?x?x2x64xf32>
  %g = moe.decay_gate <bounded, g_min = -5.0> %z, %dt_bias, %A_log
      : (tensor<?x?x2x64xf32>, tensor<2x64xf32>, tensor<2xf32>) -> tensor<?x?x2x64xf32>
  // expected-remark @below {{kda GPU kernels with chunk 64, sub-chunk 16: dense tensor-core diagonal tiles, proven safe (bound -5.00, mid reference over 16 rows: exponent 4.000000e+01 vs limit 8.733654e+01 for bf16, margin 4.733654e+01)}}
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>,
         tensor<?x?x2x64xf32>, tensor<?x?x2xf32>)
      -> (tensor<?x?x2x32xf32>, tensor<?x2x64x32xf32>)
  return %o : tensor<?x?x2x32xf32>
}

// -----

// A softplus gate has no lower bound: per-position diagonal tiles. A norm
// with another use stays for that use; the kernels still fuse it.

// CHECK-LABEL: func.func @softplus(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x?x1x128xf32>
// CHECK: %[[QN:.+]] = moe.l2_norm %[[Q]]
// CHECK-NOT: moe.decay_gate
// CHECK-NOT: moe.kda
// CHECK: bufferization.to_buffer %[[Q]] read_only
// CHECK: gpu.launch_func @moe_kda_kernels::@kda0_prep
// CHECK: gpu.launch_func @moe_kda_kernels::@kda0_state
// CHECK: return {{.*}}, %[[QN]]

func.func @softplus(%q: tensor<?x?x1x128xf32>, %k: tensor<?x?x1x128xf32>,
                    %v: tensor<?x?x1x128xf32>, %z: tensor<?x?x1x128xf32>,
                    %beta: tensor<?x?x1xf32>, %A_log: tensor<1xf32>,
                    %dt_bias: tensor<1x128xf32>)
    -> (tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>) {
  %qn = moe.l2_norm %q : tensor<?x?x1x128xf32>
  %kn = moe.l2_norm %k : tensor<?x?x1x128xf32>
  %g = moe.decay_gate <softplus> %z, %dt_bias, %A_log
      : (tensor<?x?x1x128xf32>, tensor<1x128xf32>, tensor<1xf32>) -> tensor<?x?x1x128xf32>
  // expected-remark @below {{per-position diagonal tiles, not proven (bound none, mid reference over 16 rows: exponent INF vs limit 8.733654e+01 for bf16, margin -INF)}}
  %o, %s = moe.kda %qn, %kn, %v, %g, %beta
      : (tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>,
         tensor<?x?x1x128xf32>, tensor<?x?x1xf32>)
      -> (tensor<?x?x1x128xf32>, tensor<?x1x128x128xf32>)
  return %o, %qn : tensor<?x?x1x128xf32>, tensor<?x?x1x128xf32>
}

// -----

// Operands that come from elsewhere are read as they are (no fusion); a
// log-decay argument has no proven bound. Both results are used, and the
// value-major state is written transposed.

// CHECK-LABEL: func.func @unfused(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<2x?x3x64xf32>, %[[K:[^:]+]]: tensor<2x?x3x64xf32>, %[[V:[^:]+]]: tensor<2x?x3x64xf32>, %[[G:[^:]+]]: tensor<2x?x3x64xf32>
// CHECK-DAG: bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: bufferization.to_buffer %[[G]] read_only
// CHECK: %[[STATE:.+]] = memref.alloc() : memref<2x3x64x64xf32>
// CHECK: gpu.launch_func @moe_kda_kernels::@kda0_state
// CHECK: bufferization.to_tensor %[[STATE]] restrict writable
// CHECK: gpu.func @kda0_prep(%{{.*}}: memref<2x?x3x64xf32>, %{{.*}}: memref<2x?x3x64xf32>, %{{.*}}: memref<2x?x3x64xf32>, %{{.*}}: memref<2x?x3xf32>, %{{.*}}: memref<2x?x3x64xf32>, %{{.*}}: memref<?xbf16>

func.func @unfused(%q: tensor<2x?x3x64xf32>, %k: tensor<2x?x3x64xf32>,
                   %v: tensor<2x?x3x64xf32>, %g: tensor<2x?x3x64xf32>,
                   %beta: tensor<2x?x3xf32>)
    -> (tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>) {
  // expected-remark @below {{per-position diagonal tiles, not proven (bound none}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta {state_layout = #moe.state_layout<value_major>}
      : (tensor<2x?x3x64xf32>, tensor<2x?x3x64xf32>, tensor<2x?x3x64xf32>,
         tensor<2x?x3x64xf32>, tensor<2x?x3xf32>)
      -> (tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>)
  return %o, %s : tensor<2x?x3x64xf32>, tensor<2x3x64x64xf32>
}

// -----

// What the generator does not handle is left to the tiling pass, with a
// remark that says why.

// CHECK-LABEL: func.func @narrow_keys(
// CHECK: moe.kda
// CHECK-NOT: gpu.module
func.func @narrow_keys(%q: tensor<1x?x2x32xf32>, %k: tensor<1x?x2x32xf32>,
                       %v: tensor<1x?x2x32xf32>, %g: tensor<1x?x2x32xf32>,
                       %beta: tensor<1x?x2xf32>) -> tensor<1x?x2x32xf32> {
  // expected-remark @below {{kda left to -moe-tile-linear-attention: key width 32 is not 64 or 128}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x?x2x32xf32>, tensor<1x?x2x32xf32>, tensor<1x?x2x32xf32>,
         tensor<1x?x2x32xf32>, tensor<1x?x2xf32>)
      -> (tensor<1x?x2x32xf32>, tensor<1x2x32x32xf32>)
  return %o : tensor<1x?x2x32xf32>
}

// -----

// CHECK-LABEL: func.func @initial_state(
// CHECK: moe.kda
func.func @initial_state(%q: tensor<1x?x2x64xf32>, %k: tensor<1x?x2x64xf32>,
                         %v: tensor<1x?x2x64xf32>, %g: tensor<1x?x2x64xf32>,
                         %beta: tensor<1x?x2xf32>, %s0: tensor<1x2x64x64xf32>)
    -> tensor<1x?x2x64xf32> {
  // expected-remark @below {{kda left to -moe-tile-linear-attention: an initial state is given}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta initial_state(%s0)
      : (tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>,
         tensor<1x?x2x64xf32>, tensor<1x?x2xf32>, tensor<1x2x64x64xf32>)
      -> (tensor<1x?x2x64xf32>, tensor<1x2x64x64xf32>)
  return %o : tensor<1x?x2x64xf32>
}

// -----

// CHECK-LABEL: func.func @bf16_operands(
// CHECK: moe.kda
func.func @bf16_operands(%q: tensor<1x?x2x64xbf16>, %k: tensor<1x?x2x64xbf16>,
                         %v: tensor<1x?x2x64xbf16>, %g: tensor<1x?x2x64xf32>,
                         %beta: tensor<1x?x2xbf16>) -> tensor<1x?x2x64xbf16> {
  // expected-remark @below {{kda left to -moe-tile-linear-attention: an operand is not f32}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>,
         tensor<1x?x2x64xf32>, tensor<1x?x2xbf16>)
      -> (tensor<1x?x2x64xbf16>, tensor<1x2x64x64xf32>)
  return %o : tensor<1x?x2x64xbf16>
}

// -----

// CHECK-LABEL: func.func @value_width(
// CHECK: moe.kda
func.func @value_width(%q: tensor<1x?x2x64xf32>, %k: tensor<1x?x2x64xf32>,
                       %v: tensor<1x?x2x24xf32>, %g: tensor<1x?x2x64xf32>,
                       %beta: tensor<1x?x2xf32>) -> tensor<1x?x2x24xf32> {
  // expected-remark @below {{kda left to -moe-tile-linear-attention: the value width is not a static multiple of value-tile and 16}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>, tensor<1x?x2x24xf32>,
         tensor<1x?x2x64xf32>, tensor<1x?x2xf32>)
      -> (tensor<1x?x2x24xf32>, tensor<1x2x64x24xf32>)
  return %o : tensor<1x?x2x24xf32>
}
