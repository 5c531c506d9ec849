// RUN: moe-opt %s -test-moe-decay-bounds -verify-diagnostics -o /dev/null

// The safe-tile table of ALGORITHMS.md section 2.2, at every boundary: for
// each g_min, operand type and reference row, the largest power-of-two tile
// length c that satisfies the hard condition E_ref(c) * |g_min| <= L_op and
// the next one (2c), which does not. E_pre(c) = c, E_start(c) = c - 1,
// E_mid(c) = c / 2. L_op = min(ln max, -ln min_normal) comes from the type's
// float semantics: 87.34 for f32, tf32 and bf16 (all min-normal limited,
// -ln 2^-126 = 87.3365), 9.70 for f16 (-ln 2^-14 = 9.7041; printed as 9.7).
//
// Every boundary below matches the table. The table's fp16 rows for
// g_min = -5 list both limits; L_op is the normal-range one, so they are
// pre: 1 (2 gives 10 > 9.70, though <= 11.09 overflow-only) and
// mid: 2 (4 gives 10 > 9.70). tf32 is not a separate row of the table
// (it shares fp32's limits) and is checked alongside.

// g_min = -0.5: every step contributes at most 0.5 nats.
func.func @g_min_0_5(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -0.5> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=pre f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=pre f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 128 gives 63.5 <= 87.34; c = 256 gives 127.5.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=start f32: proven (exponent 63.5 <= limit 87.34, margin 23.84)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=start f32: not proven (exponent 127.5 > limit 87.34, margin -40.16)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 256 gives 64 <= 87.34; c = 512 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=256 ref=mid f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=512 ref=mid f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 256, 512>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=pre tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=pre tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 128 gives 63.5 <= 87.34; c = 256 gives 127.5.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=start tf32: proven (exponent 63.5 <= limit 87.34, margin 23.84)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=start tf32: not proven (exponent 127.5 > limit 87.34, margin -40.16)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 256 gives 64 <= 87.34; c = 512 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=256 ref=mid tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=512 ref=mid tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 256, 512>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=pre bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=pre bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 128 gives 63.5 <= 87.34; c = 256 gives 127.5.
  // expected-remark@+2 {{decay bound -0.5; c=128 ref=start bf16: proven (exponent 63.5 <= limit 87.34, margin 23.84)}}
  // expected-remark@+1 {{decay bound -0.5; c=256 ref=start bf16: not proven (exponent 127.5 > limit 87.34, margin -40.16)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 256 gives 64 <= 87.34; c = 512 gives 128.
  // expected-remark@+2 {{decay bound -0.5; c=256 ref=mid bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -0.5; c=512 ref=mid bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 256, 512>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 16 gives 8 <= 9.7; c = 32 gives 16.
  // expected-remark@+2 {{decay bound -0.5; c=16 ref=pre f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -0.5; c=32 ref=pre f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 16 gives 7.5 <= 9.7; c = 32 gives 15.5.
  // expected-remark@+2 {{decay bound -0.5; c=16 ref=start f16: proven (exponent 7.5 <= limit 9.7, margin 2.2)}}
  // expected-remark@+1 {{decay bound -0.5; c=32 ref=start f16: not proven (exponent 15.5 > limit 9.7, margin -5.8)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 32 gives 8 <= 9.7; c = 64 gives 16.
  // expected-remark@+2 {{decay bound -0.5; c=32 ref=mid f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -0.5; c=64 ref=mid f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}

// g_min = -1: every step contributes at most 1 nats.
func.func @g_min_1(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -1.0> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -1; c=64 ref=pre f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=pre f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 64 gives 63 <= 87.34; c = 128 gives 127.
  // expected-remark@+2 {{decay bound -1; c=64 ref=start f32: proven (exponent 63 <= limit 87.34, margin 24.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=start f32: not proven (exponent 127 > limit 87.34, margin -39.66)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -1; c=128 ref=mid f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=256 ref=mid f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -1; c=64 ref=pre tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=pre tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 64 gives 63 <= 87.34; c = 128 gives 127.
  // expected-remark@+2 {{decay bound -1; c=64 ref=start tf32: proven (exponent 63 <= limit 87.34, margin 24.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=start tf32: not proven (exponent 127 > limit 87.34, margin -39.66)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -1; c=128 ref=mid tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=256 ref=mid tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -1; c=64 ref=pre bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=pre bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 64 gives 63 <= 87.34; c = 128 gives 127.
  // expected-remark@+2 {{decay bound -1; c=64 ref=start bf16: proven (exponent 63 <= limit 87.34, margin 24.34)}}
  // expected-remark@+1 {{decay bound -1; c=128 ref=start bf16: not proven (exponent 127 > limit 87.34, margin -39.66)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 128 gives 64 <= 87.34; c = 256 gives 128.
  // expected-remark@+2 {{decay bound -1; c=128 ref=mid bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -1; c=256 ref=mid bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 128, 256>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 8 gives 8 <= 9.7; c = 16 gives 16.
  // expected-remark@+2 {{decay bound -1; c=8 ref=pre f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -1; c=16 ref=pre f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 8 gives 7 <= 9.7; c = 16 gives 15.
  // expected-remark@+2 {{decay bound -1; c=8 ref=start f16: proven (exponent 7 <= limit 9.7, margin 2.7)}}
  // expected-remark@+1 {{decay bound -1; c=16 ref=start f16: not proven (exponent 15 > limit 9.7, margin -5.3)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 16 gives 8 <= 9.7; c = 32 gives 16.
  // expected-remark@+2 {{decay bound -1; c=16 ref=mid f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -1; c=32 ref=mid f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}

// g_min = -2: every step contributes at most 2 nats.
func.func @g_min_2(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -2.0> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 32 gives 64 <= 87.34; c = 64 gives 128.
  // expected-remark@+2 {{decay bound -2; c=32 ref=pre f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=pre f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 32 gives 62 <= 87.34; c = 64 gives 126.
  // expected-remark@+2 {{decay bound -2; c=32 ref=start f32: proven (exponent 62 <= limit 87.34, margin 25.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=start f32: not proven (exponent 126 > limit 87.34, margin -38.66)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -2; c=64 ref=mid f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=128 ref=mid f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 32 gives 64 <= 87.34; c = 64 gives 128.
  // expected-remark@+2 {{decay bound -2; c=32 ref=pre tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=pre tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 32 gives 62 <= 87.34; c = 64 gives 126.
  // expected-remark@+2 {{decay bound -2; c=32 ref=start tf32: proven (exponent 62 <= limit 87.34, margin 25.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=start tf32: not proven (exponent 126 > limit 87.34, margin -38.66)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -2; c=64 ref=mid tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=128 ref=mid tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 32 gives 64 <= 87.34; c = 64 gives 128.
  // expected-remark@+2 {{decay bound -2; c=32 ref=pre bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=pre bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 32 gives 62 <= 87.34; c = 64 gives 126.
  // expected-remark@+2 {{decay bound -2; c=32 ref=start bf16: proven (exponent 62 <= limit 87.34, margin 25.34)}}
  // expected-remark@+1 {{decay bound -2; c=64 ref=start bf16: not proven (exponent 126 > limit 87.34, margin -38.66)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 64 gives 64 <= 87.34; c = 128 gives 128.
  // expected-remark@+2 {{decay bound -2; c=64 ref=mid bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -2; c=128 ref=mid bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 64, 128>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 4 gives 8 <= 9.7; c = 8 gives 16.
  // expected-remark@+2 {{decay bound -2; c=4 ref=pre f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -2; c=8 ref=pre f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 4, 8>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 4 gives 6 <= 9.7; c = 8 gives 14.
  // expected-remark@+2 {{decay bound -2; c=4 ref=start f16: proven (exponent 6 <= limit 9.7, margin 3.7)}}
  // expected-remark@+1 {{decay bound -2; c=8 ref=start f16: not proven (exponent 14 > limit 9.7, margin -4.3)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 4, 8>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 8 gives 8 <= 9.7; c = 16 gives 16.
  // expected-remark@+2 {{decay bound -2; c=8 ref=mid f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -2; c=16 ref=mid f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}

// g_min = -3: every step contributes at most 3 nats.
func.func @g_min_3(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -3.0> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 16 gives 48 <= 87.34; c = 32 gives 96.
  // expected-remark@+2 {{decay bound -3; c=16 ref=pre f32: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=pre f32: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 16 gives 45 <= 87.34; c = 32 gives 93.
  // expected-remark@+2 {{decay bound -3; c=16 ref=start f32: proven (exponent 45 <= limit 87.34, margin 42.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=start f32: not proven (exponent 93 > limit 87.34, margin -5.66)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 32 gives 48 <= 87.34; c = 64 gives 96.
  // expected-remark@+2 {{decay bound -3; c=32 ref=mid f32: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=64 ref=mid f32: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 16 gives 48 <= 87.34; c = 32 gives 96.
  // expected-remark@+2 {{decay bound -3; c=16 ref=pre tf32: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=pre tf32: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 16 gives 45 <= 87.34; c = 32 gives 93.
  // expected-remark@+2 {{decay bound -3; c=16 ref=start tf32: proven (exponent 45 <= limit 87.34, margin 42.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=start tf32: not proven (exponent 93 > limit 87.34, margin -5.66)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 32 gives 48 <= 87.34; c = 64 gives 96.
  // expected-remark@+2 {{decay bound -3; c=32 ref=mid tf32: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=64 ref=mid tf32: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 16 gives 48 <= 87.34; c = 32 gives 96.
  // expected-remark@+2 {{decay bound -3; c=16 ref=pre bf16: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=pre bf16: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 16 gives 45 <= 87.34; c = 32 gives 93.
  // expected-remark@+2 {{decay bound -3; c=16 ref=start bf16: proven (exponent 45 <= limit 87.34, margin 42.34)}}
  // expected-remark@+1 {{decay bound -3; c=32 ref=start bf16: not proven (exponent 93 > limit 87.34, margin -5.66)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 32 gives 48 <= 87.34; c = 64 gives 96.
  // expected-remark@+2 {{decay bound -3; c=32 ref=mid bf16: proven (exponent 48 <= limit 87.34, margin 39.34)}}
  // expected-remark@+1 {{decay bound -3; c=64 ref=mid bf16: not proven (exponent 96 > limit 87.34, margin -8.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 2 gives 6 <= 9.7; c = 4 gives 12.
  // expected-remark@+2 {{decay bound -3; c=2 ref=pre f16: proven (exponent 6 <= limit 9.7, margin 3.7)}}
  // expected-remark@+1 {{decay bound -3; c=4 ref=pre f16: not proven (exponent 12 > limit 9.7, margin -2.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 2, 4>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 4 gives 9 <= 9.7; c = 8 gives 21.
  // expected-remark@+2 {{decay bound -3; c=4 ref=start f16: proven (exponent 9 <= limit 9.7, margin 0.7)}}
  // expected-remark@+1 {{decay bound -3; c=8 ref=start f16: not proven (exponent 21 > limit 9.7, margin -11.3)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 4, 8>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 4 gives 6 <= 9.7; c = 8 gives 12.
  // expected-remark@+2 {{decay bound -3; c=4 ref=mid f16: proven (exponent 6 <= limit 9.7, margin 3.7)}}
  // expected-remark@+1 {{decay bound -3; c=8 ref=mid f16: not proven (exponent 12 > limit 9.7, margin -2.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 4, 8>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}

// g_min = -5: every step contributes at most 5 nats.
func.func @g_min_5(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -5.0> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 16 gives 80 <= 87.34; c = 32 gives 160.
  // expected-remark@+2 {{decay bound -5; c=16 ref=pre f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=pre f32: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 16 gives 75 <= 87.34; c = 32 gives 155.
  // expected-remark@+2 {{decay bound -5; c=16 ref=start f32: proven (exponent 75 <= limit 87.34, margin 12.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=start f32: not proven (exponent 155 > limit 87.34, margin -67.66)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 32 gives 80 <= 87.34; c = 64 gives 160.
  // expected-remark@+2 {{decay bound -5; c=32 ref=mid f32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=64 ref=mid f32: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 16 gives 80 <= 87.34; c = 32 gives 160.
  // expected-remark@+2 {{decay bound -5; c=16 ref=pre tf32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=pre tf32: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 16 gives 75 <= 87.34; c = 32 gives 155.
  // expected-remark@+2 {{decay bound -5; c=16 ref=start tf32: proven (exponent 75 <= limit 87.34, margin 12.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=start tf32: not proven (exponent 155 > limit 87.34, margin -67.66)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 32 gives 80 <= 87.34; c = 64 gives 160.
  // expected-remark@+2 {{decay bound -5; c=32 ref=mid tf32: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=64 ref=mid tf32: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 16 gives 80 <= 87.34; c = 32 gives 160.
  // expected-remark@+2 {{decay bound -5; c=16 ref=pre bf16: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=pre bf16: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 16 gives 75 <= 87.34; c = 32 gives 155.
  // expected-remark@+2 {{decay bound -5; c=16 ref=start bf16: proven (exponent 75 <= limit 87.34, margin 12.34)}}
  // expected-remark@+1 {{decay bound -5; c=32 ref=start bf16: not proven (exponent 155 > limit 87.34, margin -67.66)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 32 gives 80 <= 87.34; c = 64 gives 160.
  // expected-remark@+2 {{decay bound -5; c=32 ref=mid bf16: proven (exponent 80 <= limit 87.34, margin 7.34)}}
  // expected-remark@+1 {{decay bound -5; c=64 ref=mid bf16: not proven (exponent 160 > limit 87.34, margin -72.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 32, 64>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 1 gives 5 <= 9.7; c = 2 gives 10.
  // expected-remark@+2 {{decay bound -5; c=1 ref=pre f16: proven (exponent 5 <= limit 9.7, margin 4.7)}}
  // expected-remark@+1 {{decay bound -5; c=2 ref=pre f16: not proven (exponent 10 > limit 9.7, margin -0.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 1, 2>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 2 gives 5 <= 9.7; c = 4 gives 15.
  // expected-remark@+2 {{decay bound -5; c=2 ref=start f16: proven (exponent 5 <= limit 9.7, margin 4.7)}}
  // expected-remark@+1 {{decay bound -5; c=4 ref=start f16: not proven (exponent 15 > limit 9.7, margin -5.3)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 2, 4>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 2 gives 5 <= 9.7; c = 4 gives 10.
  // expected-remark@+2 {{decay bound -5; c=2 ref=mid f16: proven (exponent 5 <= limit 9.7, margin 4.7)}}
  // expected-remark@+1 {{decay bound -5; c=4 ref=mid f16: not proven (exponent 10 > limit 9.7, margin -0.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 2, 4>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}

// g_min = -8: every step contributes at most 8 nats.
func.func @g_min_8(%raw: tensor<1x64x1x16xf32>, %dt_bias: tensor<1x16xf32>) {
  %g = moe.decay_gate <bounded, g_min = -8.0> %raw, %dt_bias
      : (tensor<1x64x1x16xf32>, tensor<1x16xf32>) -> tensor<1x64x1x16xf32>
  // f32, pre: c = 8 gives 64 <= 87.34; c = 16 gives 128.
  // expected-remark@+2 {{decay bound -8; c=8 ref=pre f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=pre f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_pre = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["pre"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, start: c = 8 gives 56 <= 87.34; c = 16 gives 120.
  // expected-remark@+2 {{decay bound -8; c=8 ref=start f32: proven (exponent 56 <= limit 87.34, margin 31.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=start f32: not proven (exponent 120 > limit 87.34, margin -32.66)}}
  %f32_start = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["start"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f32, mid: c = 16 gives 64 <= 87.34; c = 32 gives 128.
  // expected-remark@+2 {{decay bound -8; c=16 ref=mid f32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=32 ref=mid f32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %f32_mid = tensor.cast %g {test.decay_probe = {operand_type = f32, references = ["mid"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, pre: c = 8 gives 64 <= 87.34; c = 16 gives 128.
  // expected-remark@+2 {{decay bound -8; c=8 ref=pre tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=pre tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_pre = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["pre"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, start: c = 8 gives 56 <= 87.34; c = 16 gives 120.
  // expected-remark@+2 {{decay bound -8; c=8 ref=start tf32: proven (exponent 56 <= limit 87.34, margin 31.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=start tf32: not proven (exponent 120 > limit 87.34, margin -32.66)}}
  %tf32_start = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["start"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // tf32, mid: c = 16 gives 64 <= 87.34; c = 32 gives 128.
  // expected-remark@+2 {{decay bound -8; c=16 ref=mid tf32: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=32 ref=mid tf32: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %tf32_mid = tensor.cast %g {test.decay_probe = {operand_type = tf32, references = ["mid"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, pre: c = 8 gives 64 <= 87.34; c = 16 gives 128.
  // expected-remark@+2 {{decay bound -8; c=8 ref=pre bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=pre bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_pre = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["pre"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, start: c = 8 gives 56 <= 87.34; c = 16 gives 120.
  // expected-remark@+2 {{decay bound -8; c=8 ref=start bf16: proven (exponent 56 <= limit 87.34, margin 31.34)}}
  // expected-remark@+1 {{decay bound -8; c=16 ref=start bf16: not proven (exponent 120 > limit 87.34, margin -32.66)}}
  %bf16_start = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["start"], tile_lengths = array<i64: 8, 16>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // bf16, mid: c = 16 gives 64 <= 87.34; c = 32 gives 128.
  // expected-remark@+2 {{decay bound -8; c=16 ref=mid bf16: proven (exponent 64 <= limit 87.34, margin 23.34)}}
  // expected-remark@+1 {{decay bound -8; c=32 ref=mid bf16: not proven (exponent 128 > limit 87.34, margin -40.66)}}
  %bf16_mid = tensor.cast %g {test.decay_probe = {operand_type = bf16, references = ["mid"], tile_lengths = array<i64: 16, 32>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, pre: c = 1 gives 8 <= 9.7; c = 2 gives 16.
  // expected-remark@+2 {{decay bound -8; c=1 ref=pre f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -8; c=2 ref=pre f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_pre = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["pre"], tile_lengths = array<i64: 1, 2>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, start: c = 2 gives 8 <= 9.7; c = 4 gives 24.
  // expected-remark@+2 {{decay bound -8; c=2 ref=start f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -8; c=4 ref=start f16: not proven (exponent 24 > limit 9.7, margin -14.3)}}
  %f16_start = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["start"], tile_lengths = array<i64: 2, 4>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  // f16, mid: c = 2 gives 8 <= 9.7; c = 4 gives 16.
  // expected-remark@+2 {{decay bound -8; c=2 ref=mid f16: proven (exponent 8 <= limit 9.7, margin 1.7)}}
  // expected-remark@+1 {{decay bound -8; c=4 ref=mid f16: not proven (exponent 16 > limit 9.7, margin -6.3)}}
  %f16_mid = tensor.cast %g {test.decay_probe = {operand_type = f16, references = ["mid"], tile_lengths = array<i64: 2, 4>}}
      : tensor<1x64x1x16xf32> to tensor<1x64x1x16xf32>
  return
}
