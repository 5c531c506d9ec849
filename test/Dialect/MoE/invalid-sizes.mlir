// RUN: moe-opt %s -split-input-file -verify-diagnostics

// Verifier arithmetic on attribute values never wraps around, and no moe op
// takes a tensor with a static size of 0 (regressions of the robustness
// probe: num_experts = 2^63 - 1 made num_experts + 1 look dynamic, and a
// static batch of 0 into moe.kda passed the verifier and then broke the
// lowering with an out-of-bounds slice).

func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects expert_offsets to have a shape its attributes define, but a dimension computed from them overflows 64-bit integers}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 9223372036854775807 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<12x64xf32>, tensor<9xi64>, tensor<12xi64>)
  return
}

// -----

// A dynamic offsets operand does not hide the overflow either.
func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects expert_offsets to have a shape its attributes define, but a dimension computed from them overflows 64-bit integers}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 9223372036854775807 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<12x64xf32>, tensor<?xi64>, tensor<12xi64>)
  return
}

// -----

// The largest num_experts whose offsets still fit.
func.func @f(%x: tensor<6x64xf32>, %idx: tensor<6x2xi64>) {
  // expected-error @+1 {{'moe.dispatch' op expects expert_offsets to have shape [9223372036854775807], got [9]}}
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 9223372036854775806 : i64}
      : (tensor<6x64xf32>, tensor<6x2xi64>) -> (tensor<12x64xf32>, tensor<9xi64>, tensor<12xi64>)
  return
}

// -----

// num_heads * head_dim = 2^62 * 4 wraps to 0 in 64 bits.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x?xf32>,
    %wk: tensor<16x?xf32>, %wv: tensor<16x?xf32>, %cq: tensor<?x4xf32>,
    %ck: tensor<?x4xf32>, %cv: tensor<?x4xf32>, %wfd: tensor<16x4xf32>,
    %wfu: tensor<4x?xf32>, %alog: tensor<?xf32>, %dtb: tensor<?x4xf32>,
    %wb: tensor<16x?xf32>, %wgd: tensor<16x4xf32>, %wgu: tensor<4x?xf32>,
    %on: tensor<4xf32>, %wo: tensor<?x16xf32>) {
  // expected-error @+1 {{'moe.kda_layer' op expects w_q to have a shape its attributes define, but a dimension computed from them overflows 64-bit integers}}
  %0 = moe.kda_layer %x q(%wq) k(%wk) v(%wv) conv(%cq, %ck, %cv)
      gate(%wfd, %wfu, %alog, %dtb) beta(%wb) out_gate(%wgd, %wgu)
      out_norm(%on) out(%wo)
      {num_heads = 4611686018427387904 : i64, head_dim = 4 : i64,
       value_dim = 4 : i64, gate = #moe.decay_gate<bounded, g_min = -5.0>}
      : (tensor<?x?x16xf32>, tensor<16x?xf32>, tensor<16x?xf32>,
         tensor<16x?xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>,
         tensor<16x4xf32>, tensor<4x?xf32>, tensor<?xf32>, tensor<?x4xf32>,
         tensor<16x?xf32>, tensor<16x4xf32>, tensor<4x?xf32>, tensor<4xf32>,
         tensor<?x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

// nope_head_dim + rope_head_dim overflows before the product with the heads.
func.func @f(%x: tensor<?x?x16xf32>, %wq: tensor<16x?xf32>,
    %wkvd: tensor<16x10xf32>, %kvn: tensor<8xf32>, %wkvu: tensor<8x?xf32>,
    %wo: tensor<?x16xf32>) {
  // expected-error @+1 {{'moe.mla_layer' op expects w_q to have a shape its attributes define, but a dimension computed from them overflows 64-bit integers}}
  %0 = moe.mla_layer %x q(%wq) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 1 : i64, nope_head_dim = 9223372036854775807 : i64,
       rope_head_dim = 2 : i64, v_head_dim = 4 : i64}
      : (tensor<?x?x16xf32>, tensor<16x?xf32>, tensor<16x10xf32>,
         tensor<8xf32>, tensor<8x?xf32>, tensor<?x16xf32>)
      -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%b0: tensor<?x?x16xf32>, %w: tensor<16xf32>,
    %rho: tensor<16xf32>) {
  // expected-error @+1 {{'moe.attn_res' op expects sub-layer 9223372036854775807 to read fewer than 2^63 - 1 sources (block_size 1)}}
  %0 = moe.attn_res %b0 query(%w) key_norm(%rho)
      {block_size = 1 : i64, sublayer = 9223372036854775807 : i64}
      : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<0x?x2x64xf32>, %k: tensor<0x?x2x64xf32>,
    %v: tensor<0x?x2x64xf32>, %g: tensor<0x?x2x64xf32>,
    %beta: tensor<0x?x2xf32>) {
  // expected-error @+1 {{'moe.kda' op expects query to have no dimension of static size 0, got 'tensor<0x?x2x64xf32>'}}
  %o, %s = moe.kda %q, %k, %v, %g, %beta
      : (tensor<0x?x2x64xf32>, tensor<0x?x2x64xf32>, tensor<0x?x2x64xf32>,
         tensor<0x?x2x64xf32>, tensor<0x?x2xf32>)
      -> (tensor<0x?x2x64xf32>, tensor<0x2x64x64xf32>)
  return
}

// -----

// An empty model width, caught at the first operand that has it.
func.func @f(%x: tensor<?x0xf32>, %w: tensor<0xf32>) {
  // expected-error @+1 {{'moe.rms_norm' op expects input to have no dimension of static size 0, got 'tensor<?x0xf32>'}}
  %0 = moe.rms_norm %x, %w : tensor<?x0xf32>, tensor<0xf32>
  return
}

// -----

// A static empty batch of tokens into the router (it used to lower to a
// route over nothing; the dialect now rejects empty tensors everywhere).
func.func @f(%x: tensor<0x16xf32>, %wr: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'moe.route' op expects input to have no dimension of static size 0, got 'tensor<0x16xf32>'}}
  %w, %idx, %load, %nb = moe.route %x, %wr, %b
      {routing = #moe.routing<experts = 8, top_k = 2, scaling = 1.0,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<0x16xf32>, tensor<8x16xf32>, tensor<8xf32>)
      -> (tensor<0x2xf32>, tensor<0x2xi64>, tensor<8xi64>, tensor<8xf32>)
  return
}
