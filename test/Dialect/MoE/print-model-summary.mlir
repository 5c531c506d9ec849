// RUN: moe-opt %s -split-input-file -verify-diagnostics \
// RUN:   -moe-print-model-summary -o /dev/null | FileCheck %s

// One MLA decoder layer with a MoE FFN, then a dense FFN. Counted by hand:
//   embed.weight        16 x 8 = 128, active one row           128 /   8
//   four norm weights   4 x 8                                    32 /  32
//   MLA                 w_q 8 x 4 = 32, w_kv_down 8 x 4 = 32,
//                       kv_norm 2, w_kv_up 2 x 4 = 8,
//                       w_out 2 x 8 = 16                         90 /  90
//   MoE router          w_router 4 x 8 = 32, router_bias 4       36 /  36
//   routed experts      3 x 4 x 8 x 4 = 384, active 2/4         384 / 192
//   shared expert       8 x 2 + 8 x 2 + 2 x 8                    48 /  48
//   dense FFN           3 x 8 x 4                                96 /  96
//   lm_head.weight      16 x 8                                  128 / 128
//   unused parameter    3 (still part of the model)               3 /   3
//   total                                                       945 / 633

// CHECK-LABEL: model @small: vocab_size 16, hidden_size 8
// CHECK-NEXT:    decoder layers: 1 (0 kda_layer, 1 mla_layer)
// CHECK-NEXT:    layer ops: embedding=1 mla_layer=1 moe_ffn=1 glu_ffn=1 lm_head=1
// CHECK-NEXT:    parameters: 945 total (945), 633 active per token (633)
moe.model @small(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h0 = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>

  %n0 = moe.param "layers.0.mixer_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x0 = moe.rms_norm %h0, %n0 : tensor<?x?x8xf32>, tensor<8xf32>
  %wq = moe.param "layers.0.mixer.w_q" init <normal, std = 0.02> : tensor<8x4xf32>
  %wkvd = moe.param "layers.0.mixer.w_kv_down" init <normal, std = 0.02> : tensor<8x4xf32>
  %kvn = moe.param "layers.0.mixer.kv_norm" init <ones> no_weight_decay : tensor<2xf32>
  %wkvu = moe.param "layers.0.mixer.w_kv_up" init <normal, std = 0.02> : tensor<2x4xf32>
  %wo = moe.param "layers.0.mixer.w_out" init <normal, std = 0.02> : tensor<2x8xf32>
  %a = moe.mla_layer %x0 q(%wq) kv(%wkvd, %kvn, %wkvu) out(%wo)
      {num_heads = 1 : i64, nope_head_dim = 2 : i64, rope_head_dim = 2 : i64,
       v_head_dim = 2 : i64}
      : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<2xf32>,
         tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<?x?x8xf32>
  %h1 = arith.addf %h0, %a : tensor<?x?x8xf32>

  %n1 = moe.param "layers.0.ffn_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x1 = moe.rms_norm %h1, %n1 : tensor<?x?x8xf32>, tensor<8xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<4x8xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<4x8x4xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<4x8x4xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<4x4x8xf32>
  %sg = moe.param "layers.0.ffn.w_shared_gate" init <normal, std = 0.02> : tensor<8x2xf32>
  %su = moe.param "layers.0.ffn.w_shared_up" init <normal, std = 0.02> : tensor<8x2xf32>
  %sd = moe.param "layers.0.ffn.w_shared_down" init <normal, std = 0.02> : tensor<2x8xf32>
  %f, %load, %next_bias = moe.moe_ffn %x1 router(%wr, %rb) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8x4xf32>,
         tensor<4x8x4xf32>, tensor<4x4x8xf32>, tensor<8x2xf32>, tensor<8x2xf32>,
         tensor<2x8xf32>) -> (tensor<?x?x8xf32>, tensor<4xi64>, tensor<4xf32>)
  %h2 = arith.addf %h1, %f : tensor<?x?x8xf32>

  %n2 = moe.param "layers.1.ffn_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %x2 = moe.rms_norm %h2, %n2 : tensor<?x?x8xf32>, tensor<8xf32>
  %dg = moe.param "layers.1.ffn.w_gate" init <normal, std = 0.02> : tensor<8x4xf32>
  %du = moe.param "layers.1.ffn.w_up" init <normal, std = 0.02> : tensor<8x4xf32>
  %dd = moe.param "layers.1.ffn.w_down" init <normal, std = 0.02> : tensor<4x8xf32>
  %g = moe.glu_ffn %x2, %dg, %du, %dd {activation = #moe.activation<swiglu>}
      : tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>
  %h3 = arith.addf %h2, %g : tensor<?x?x8xf32>

  %unused = moe.param "unused" init <zeros> : tensor<3xf32>
  %nf = moe.param "final_norm.weight" init <ones> no_weight_decay : tensor<8xf32>
  %out = moe.rms_norm %h3, %nf : tensor<?x?x8xf32>, tensor<8xf32>
  %head = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %loss = moe.lm_head %out, %head, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// Every model in the module is summarized. A table that both the embedding
// and the lm_head read (tied embeddings) counts in full, 16 x 8 = 128; an
// untied embedding counts one row, 8 + 128 = 136.

// CHECK-LABEL: model @tied: vocab_size 16, hidden_size 8
// CHECK:         parameters: 128 total (128), 128 active per token (128)
moe.model @tied(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
  %loss = moe.lm_head %h, %table, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// CHECK-LABEL: model @untied: vocab_size 16, hidden_size 8
// CHECK-NEXT:    decoder layers: 0 (0 kda_layer, 0 mla_layer)
// CHECK-NEXT:    layer ops: embedding=1 lm_head=1
// CHECK-NEXT:    parameters: 256 total (256), 136 active per token (136)
moe.model @untied(vocab_size = 16, hidden_size = 8) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %h = moe.embedding %tokens, %table
      : tensor<?x?xi32>, tensor<16x8xf32> -> tensor<?x?x8xf32>
  %head = moe.param "lm_head.weight" init <normal, std = 0.02> : tensor<16x8xf32>
  %loss = moe.lm_head %h, %head, %labels
      : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// -----

// A module without a model is an error, and nothing is printed.

// CHECK-NOT: model @
// expected-error @+1 {{no moe.model to summarize}}
module {
}
