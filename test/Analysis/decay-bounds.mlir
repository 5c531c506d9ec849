// RUN: moe-opt %s -split-input-file -test-moe-decay-bounds='references=mid' -verify-diagnostics -o /dev/null

// Propagation of the decay bound from moe.decay_gate to a use. Unless a probe
// says otherwise, each remark checks c = 16, mid reference, f32 operands.

// The worked example of ALGORITHMS.md section 2.2: c = 16, g_min = -5 is safe
// for fp32 with every reference (80, 75, 40 nats) and for none with fp16.
func.func @worked_example(%raw: tensor<?x?x4x16xf32>, %dt_bias: tensor<4x16xf32>) {
  // expected-remark@+3 {{decay bound -5; c=16 ref=pre f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+2 {{decay bound -5; c=16 ref=start f32: proven (exponent 75 <= limit 87.34, margin 12.34)}}
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias {test.decay_probe = {references = ["pre", "start", "mid"]}}
      : (tensor<?x?x4x16xf32>, tensor<4x16xf32>) -> tensor<?x?x4x16xf32>
  // expected-remark@+3 {{decay bound -5; c=16 ref=pre f16: not proven (exponent 80 > limit 9.7, margin -70.3)}}
  // expected-remark@+2 {{decay bound -5; c=16 ref=start f16: not proven (exponent 75 > limit 9.7, margin -65.3)}}
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f16: not proven (exponent 40 > limit 9.7, margin -30.3)}}
  %h = tensor.cast %g {test.decay_probe = {references = ["pre", "start", "mid"], operand_type = f16}}
      : tensor<?x?x4x16xf32> to tensor<?x?x4x16xf32>
  return
}

// -----

// moe.kda reports the bound of its log_decay operand.
func.func @kda_bounded(%q: tensor<2x64x4x16xf32>, %v: tensor<2x64x4x16xf32>,
                       %beta: tensor<2x64x4xf32>, %raw: tensor<2x64x4x16xf32>,
                       %dt_bias: tensor<4x16xf32>, %a_log: tensor<4xf32>) -> tensor<2x64x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias, %a_log
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %o, %s = moe.kda %q, %q, %v, %g, %beta
      : (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>,
         tensor<2x64x4x16xf32>, tensor<2x64x4xf32>)
      -> (tensor<2x64x4x16xf32>, tensor<2x4x16x16xf32>)
  return %o : tensor<2x64x4x16xf32>
}

// -----

// The softplus gate has no lower bound: no tile is ever proven, not even a
// single-row tile whose start reference sums no step, nor in f64.
func.func @softplus_never_proven(%q: tensor<2x64x4x16xf32>, %v: tensor<2x64x4x16xf32>,
                                 %beta: tensor<2x64x4xf32>, %raw: tensor<2x64x4x16xf32>,
                                 %dt_bias: tensor<4x16xf32>, %a_log: tensor<4xf32>) -> tensor<2x64x4x16xf32> {
  // expected-remark@+3 {{decay bound none; c=1 ref=pre f64: not proven (no lower bound, limit 708.4)}}
  // expected-remark@+2 {{decay bound none; c=1 ref=start f64: not proven (no lower bound, limit 708.4)}}
  // expected-remark@+1 {{decay bound none; c=1 ref=mid f64: not proven (no lower bound, limit 708.4)}}
  %g = moe.decay_gate <softplus> %raw, %dt_bias, %a_log {test.decay_probe = {tile_lengths = array<i64: 1>, references = ["pre", "start", "mid"], operand_type = f64}}
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=2 ref=mid f64: not proven (no lower bound, limit 708.4)}}
  %h = tensor.cast %g {test.decay_probe = {tile_lengths = array<i64: 2>, operand_type = f64}} : tensor<2x64x4x16xf32> to tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %o, %s = moe.kda %q, %q, %v, %g, %beta
      : (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>,
         tensor<2x64x4x16xf32>, tensor<2x64x4xf32>)
      -> (tensor<2x64x4x16xf32>, tensor<2x4x16x16xf32>)
  return %o : tensor<2x64x4x16xf32>
}

// -----

// A positive constant scale scales the bound, whichever side it is on; a
// division by a positive constant divides it. Scaling to log2 units (by
// 1/ln 2, as FLA's kernels do) rounds the bound down in f32.
func.func @positive_scale(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %half = arith.constant dense<0.5> : tensor<2x64x4x16xf32>
  %two = arith.constant dense<2.0> : tensor<2x64x4x16xf32>
  %inv_ln2 = arith.constant dense<1.44269504> : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %a = arith.mulf %g, %half {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %b = arith.mulf %half, %g {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %c = arith.divf %g, %two {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -10; c=16 ref=mid f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  %d = arith.mulf %g, %two {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -7.213475227355957; c=16 ref=mid f32: proven (exponent 57.71 <= limit 87.34, margin 29.63)}}
  %e = arith.mulf %g, %inv_ln2 {test.decay_probe} : tensor<2x64x4x16xf32>
  return
}

// -----

// A non-splat positive constant scales by its largest element and divides by
// its smallest.
func.func @non_splat_scale(%raw: tensor<1x2x1x2xf32>, %dt_bias: tensor<1x2xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<1x2x1x2xf32>, tensor<1x2xf32>) -> tensor<1x2x1x2xf32>
  %scale = arith.constant dense<[[[[0.5, 1.0]], [[2.0, 4.0]]]]> : tensor<1x2x1x2xf32>
  // expected-remark@+1 {{decay bound -20; c=16 ref=mid f32: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %a = arith.mulf %g, %scale {test.decay_probe} : tensor<1x2x1x2xf32>
  // expected-remark@+1 {{decay bound -10; c=16 ref=mid f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  %b = arith.divf %g, %scale {test.decay_probe} : tensor<1x2x1x2xf32>
  return
}

// -----

// A scalar extracted from the gate keeps the bound, and so does its product
// with a scalar constant.
func.func @scalar_scale(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %i: index) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %x = tensor.extract %g[%i, %i, %i, %i] {test.decay_probe} : tensor<2x64x4x16xf32>
  %half = arith.constant 0.5 : f32
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %y = arith.mulf %x, %half {test.decay_probe} : f32
  return
}

// -----

// The gate's own bound is g_min rounded down into f32; truncf rounds it down
// into the narrower type, extf keeps it, and a bound below the narrower
// type's range is lost.
func.func @round_down(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>) {
  // expected-remark@+1 {{decay bound -0.30000001192092896; c=16 ref=mid f32: proven (exponent 2.4 <= limit 87.34, margin 84.94)}}
  %g = moe.decay_gate <bounded, g_min = -0.3> %raw, %dt_bias {test.decay_probe}
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -0.30078125; c=16 ref=mid f32: proven (exponent 2.41 <= limit 87.34, margin 84.93)}}
  %b = arith.truncf %g {test.decay_probe} : tensor<2x64x4x16xf32> to tensor<2x64x4x16xbf16>
  // expected-remark@+1 {{decay bound -0.30078125; c=16 ref=mid f32: proven (exponent 2.41 <= limit 87.34, margin 84.93)}}
  %e = arith.extf %b {test.decay_probe} : tensor<2x64x4x16xbf16> to tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -0.300048828125; c=16 ref=mid f32: proven (exponent 2.4 <= limit 87.34, margin 84.94)}}
  %h = arith.truncf %g {test.decay_probe} : tensor<2x64x4x16xf32> to tensor<2x64x4x16xf16>
  %big = moe.decay_gate <bounded, g_min = -70000.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %o = arith.truncf %big {test.decay_probe} : tensor<2x64x4x16xf32> to tensor<2x64x4x16xf16>
  return
}

// -----

// Slicing, reshaping, casting, transposing and broadcasting move elements
// without changing them; inserting and concatenating join the bounds.
func.func @shape_ops(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>,
                     %shape: tensor<2xindex>, %i: index) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %half = arith.constant dense<0.5> : tensor<2x64x4x16xf32>
  %h = arith.mulf %g, %half : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %slice = tensor.extract_slice %h[0, %i, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1] {test.decay_probe}
      : tensor<2x64x4x16xf32> to tensor<2x16x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %expanded = tensor.expand_shape %slice [[0], [1, 2], [3], [4]] output_shape [2, 1, 16, 4, 16] {test.decay_probe}
      : tensor<2x16x4x16xf32> into tensor<2x1x16x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %collapsed = tensor.collapse_shape %expanded [[0, 1, 2], [3, 4]] {test.decay_probe}
      : tensor<2x1x16x4x16xf32> into tensor<32x64xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %reshaped = tensor.reshape %collapsed(%shape) {test.decay_probe}
      : (tensor<32x64xf32>, tensor<2xindex>) -> tensor<?x?xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %cast = tensor.cast %reshaped {test.decay_probe} : tensor<?x?xf32> to tensor<64x32xf32>
  %init = tensor.empty() : tensor<32x64xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %transposed = linalg.transpose ins(%cast : tensor<64x32xf32>) outs(%init : tensor<32x64xf32>)
      permutation = [1, 0] {test.decay_probe}
  %init3 = tensor.empty() : tensor<32x64x2xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %broadcast = linalg.broadcast ins(%transposed : tensor<32x64xf32>) outs(%init3 : tensor<32x64x2xf32>)
      dimensions = [2] {test.decay_probe}
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %inserted = tensor.insert_slice %slice into %g[0, 0, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1] {test.decay_probe}
      : tensor<2x16x4x16xf32> into tensor<2x64x4x16xf32>
  // The rest of an empty tensor is unknown.
  %empty = tensor.empty() : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %partial = tensor.insert_slice %slice into %empty[0, 0, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1] {test.decay_probe}
      : tensor<2x16x4x16xf32> into tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %concat = tensor.concat dim(1) %h, %g {test.decay_probe}
      : (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>) -> tensor<2x128x4x16xf32>
  %x = tensor.extract %g[%i, %i, %i, %i] : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %put = tensor.insert %x into %h[%i, %i, %i, %i] {test.decay_probe} : tensor<2x64x4x16xf32>
  return
}

// -----

// A negative, zero or unknown scale, any other op and function arguments
// have no bound.
func.func @no_bound(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>,
                    %unknown: tensor<2x64x4x16xf32>, %arg: tensor<2x64x4x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %neg = arith.constant dense<-0.5> : tensor<2x64x4x16xf32>
  %zero = arith.constant dense<0.0> : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %a = arith.mulf %g, %neg {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %b = arith.divf %g, %neg {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %c = arith.divf %g, %zero {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %d = arith.mulf %g, %unknown {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %e = arith.mulf %g, %g {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %f = arith.addf %g, %g {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %h = math.exp %g {test.decay_probe} : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %i = tensor.cast %arg {test.decay_probe} : tensor<2x64x4x16xf32> to tensor<2x64x4x16xf32>
  return
}

// -----

// Loop-carried values join the bounds of their init and yielded values; a
// probe on a multi-result op reports every result.
func.func @scf_for(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %n: index) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant dense<0.5> : tensor<2x64x4x16xf32>
  // expected-remark@+2 {{result #0: decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  // expected-remark@+1 {{result #1: decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g, %sum = %g)
      -> (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>) {
    // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
    %tile = tensor.extract_slice %acc[0, 0, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1] {test.decay_probe}
        : tensor<2x64x4x16xf32> to tensor<2x16x4x16xf32>
    %next = arith.mulf %acc, %half : tensor<2x64x4x16xf32>
    %grow = arith.addf %sum, %g : tensor<2x64x4x16xf32>
    scf.yield %next, %grow : tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>
  } {test.decay_probe}
  return
}

// -----

// A loop that scales its carried value up lowers the bound every iteration;
// the analysis widens to "no bound" and terminates.
func.func @scf_for_widening(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %n: index) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %grow = arith.constant dense<1.0000001> : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g) -> tensor<2x64x4x16xf32> {
    %next = arith.mulf %acc, %grow : tensor<2x64x4x16xf32>
    scf.yield %next : tensor<2x64x4x16xf32>
  } {test.decay_probe}
  return
}

// -----

// A constant carried through a loop is still a constant (sparse constant
// propagation), so scaling by it keeps a bound.
func.func @constant_through_loop(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %n: index) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%scale = %half) -> f32 {
    scf.yield %scale : f32
  }
  %x = tensor.extract %g[%c0, %c0, %c0, %c0] : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
  %y = arith.mulf %x, %r {test.decay_probe} : f32
  return
}

// -----

// scf.while: the before-region argument joins the init and the after-region's
// yield; the results are what scf.condition forwards.
func.func @scf_while(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %cond: i1) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %w = scf.while (%arg = %g) : (tensor<2x64x4x16xf32>) -> tensor<2x64x4x16xf32> {
    scf.condition(%cond) %arg : tensor<2x64x4x16xf32>
  } do {
  ^bb0(%arg: tensor<2x64x4x16xf32>):
    %half = arith.constant dense<0.5> : tensor<2x64x4x16xf32>
    %next = arith.mulf %arg, %half : tensor<2x64x4x16xf32>
    scf.yield %next : tensor<2x64x4x16xf32>
  } attributes {test.decay_probe}
  return
}

// -----

// scf.if results join the bounds of both branches.
func.func @scf_if(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>, %cond: i1) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -10; c=16 ref=mid f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  %r = scf.if %cond -> tensor<2x64x4x16xf32> {
    %two = arith.constant dense<2.0> : tensor<2x64x4x16xf32>
    %scaled = arith.mulf %g, %two : tensor<2x64x4x16xf32>
    scf.yield %scaled : tensor<2x64x4x16xf32>
  } else {
    scf.yield %g : tensor<2x64x4x16xf32>
  } {test.decay_probe}
  return
}

// -----

// scf.forall: a shared output starts as its init, and a result joins the
// init with the slices the threads insert.
func.func @scf_forall(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %half = arith.constant dense<0.5> : tensor<2x64x4x16xf32>
  %h = arith.mulf %g, %half : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)}}
  %r = scf.forall (%t) in (4) shared_outs(%out = %h) -> tensor<2x64x4x16xf32> {
    %i = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    // expected-remark@+1 {{decay bound -2.5; c=16 ref=mid f32: proven (exponent 20 <= limit 87.34, margin 67.34)}}
    %mine = tensor.extract_slice %out[0, %i, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1] {test.decay_probe}
        : tensor<2x64x4x16xf32> to tensor<2x16x4x16xf32>
    %tile = tensor.extract_slice %g[0, %i, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1]
        : tensor<2x64x4x16xf32> to tensor<2x16x4x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %tile into %out[0, %i, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1]
          : tensor<2x16x4x16xf32> into tensor<2x64x4x16xf32>
    }
  } {test.decay_probe}
  // An inserted slice without a bound loses it.
  %empty = tensor.empty() : tensor<2x16x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %s = scf.forall (%t) in (4) shared_outs(%out = %g) -> tensor<2x64x4x16xf32> {
    %i = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %empty into %out[0, %i, 0, 0] [2, 16, 4, 16] [1, 1, 1, 1]
          : tensor<2x16x4x16xf32> into tensor<2x64x4x16xf32>
    }
  } {test.decay_probe}
  return
}

// -----

// Elementwise linalg.generic: block arguments carry their operand's bound and
// results the yielded bound. A reduction also keeps its init, here unknown.
func.func @linalg_generic(%raw: tensor<2x64x4x16xf32>, %dt_bias: tensor<4x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %init = tensor.empty() : tensor<2x64x4x16xf32>
  // expected-remark@+1 {{decay bound -7.213475227355957; c=16 ref=mid f32: proven (exponent 57.71 <= limit 87.34, margin 29.63)}}
  %log2 = linalg.generic {
      indexing_maps = [affine_map<(b, t, h, k) -> (b, t, h, k)>, affine_map<(b, t, h, k) -> (b, t, h, k)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%g : tensor<2x64x4x16xf32>) outs(%init : tensor<2x64x4x16xf32>) attrs = {test.decay_probe} {
  ^bb0(%x: f32, %unused: f32):
    %inv_ln2 = arith.constant 1.44269504 : f32
    %y = arith.mulf %x, %inv_ln2 : f32
    linalg.yield %y : f32
  } -> tensor<2x64x4x16xf32>
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<2x4x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  // expected-remark@+1 {{decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)}}
  %min = linalg.generic {
      indexing_maps = [affine_map<(b, t, h, k) -> (b, t, h, k)>, affine_map<(b, t, h, k) -> (b, h, k)>],
      iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%g : tensor<2x64x4x16xf32>) outs(%acc : tensor<2x4x16xf32>) attrs = {test.decay_probe} {
  ^bb0(%x: f32, %m: f32):
    %y = arith.minimumf %x, %m : f32
    linalg.yield %y : f32
  } -> tensor<2x4x16xf32>
  return
}
