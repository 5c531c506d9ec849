// RUN: moe-opt %s -test-moe-decay-bounds -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEFAULT
// RUN: moe-opt %s -test-moe-decay-bounds='tile-lengths=8,32 references=start,mid operand-type=bf16' \
// RUN:   -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: moe-opt %s -test-moe-decay-bounds='operand-type=f16' -mlir-print-op-on-diagnostic=false \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=F16

// Invalid options are reported on the root op. Each needs its own run, so
// these are checked on stderr rather than with -verify-diagnostics.
// RUN: not moe-opt %s -test-moe-decay-bounds='tile-lengths=16,0' -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-LENGTH
// RUN: not moe-opt %s -test-moe-decay-bounds='references=pre,end' -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-REFERENCE
// RUN: not moe-opt %s -test-moe-decay-bounds='operand-type=f8' -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TYPE

// The options apply to every moe.kda and every unit probe: by default c = 16
// with the pre, start and mid references against f32.

// DEFAULT: remark: decay bound -5; c=16 ref=pre f32: proven (exponent 80 <= limit 87.34, margin 7.34)
// DEFAULT: remark: decay bound -5; c=16 ref=start f32: proven (exponent 75 <= limit 87.34, margin 12.34)
// DEFAULT: remark: decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)
// DEFAULT-NOT: remark

// LIST: remark: decay bound -5; c=8 ref=start bf16: proven (exponent 35 <= limit 87.34, margin 52.34)
// LIST: remark: decay bound -5; c=8 ref=mid bf16: proven (exponent 20 <= limit 87.34, margin 67.34)
// LIST: remark: decay bound -5; c=32 ref=start bf16: not proven (exponent 155 > limit 87.34, margin -67.66)
// LIST: remark: decay bound -5; c=32 ref=mid bf16: proven (exponent 80 <= limit 87.34, margin 7.34)
// LIST-NOT: remark
func.func @kda(%q: tensor<2x64x4x16xf32>, %v: tensor<2x64x4x16xf32>,
               %beta: tensor<2x64x4xf32>, %raw: tensor<2x64x4x16xf32>,
               %dt_bias: tensor<4x16xf32>) -> tensor<2x64x4x16xf32> {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<2x64x4x16xf32>, tensor<4x16xf32>) -> tensor<2x64x4x16xf32>
  %o, %s = moe.kda %q, %q, %v, %g, %beta
      : (tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>, tensor<2x64x4x16xf32>,
         tensor<2x64x4x16xf32>, tensor<2x64x4xf32>)
      -> (tensor<2x64x4x16xf32>, tensor<2x4x16x16xf32>)
  return %o : tensor<2x64x4x16xf32>
}

// F16: remark: decay bound -5; c=16 ref=pre f16: not proven (exponent 80 > limit 9.7, margin -70.3)
// F16: remark: decay bound -5; c=16 ref=start f16: not proven (exponent 75 > limit 9.7, margin -65.3)
// F16: remark: decay bound -5; c=16 ref=mid f16: not proven (exponent 40 > limit 9.7, margin -30.3)
// F16-NOT: remark

// BAD-LENGTH: error: expects tile lengths >= 1, found 0
// BAD-REFERENCE: error: expects references pre, start or mid, found 'end'
// BAD-TYPE: error: expects operand-type f16, bf16, tf32, f32 or f64, found 'f8'
