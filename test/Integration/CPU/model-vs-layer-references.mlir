// The loss of a model compiled by moe-compile equals the loss computed by
// composing moe-reference's fp64 layer references on the same weights and
// tokens: embedding, three Block AttnRes mixes (ALGORITHMS.md section 5.2,
// blocks of 2 sub-layers, so 1, 2 and 2 sources) and the output mix over 3
// sources, RMSNorm pre-norms, a SwiGLU dense FFN, a MoE FFN with a shared
// expert, a SiTU-GLU dense FFN, the final norm and lm_head + cross-entropy.
// Weights come from the executable (--dump-params), tokens are seeded
// random ids. Queries, key norms and norm weights are drawn from N(0, 0.5^2)
// instead of the usual zeros and ones, so that every mix and norm matters.
// fp32 against fp64: relative error bound 1e-4 on the loss.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-npy tokens %t/tokens.bin --count=200 --vocab=64 --seed=11
// RUN: moe-compile %s --forward-only -o %t/model --opt-level=0
// RUN: %t/model --tokens=%t/tokens.bin --batch=3 --seq-len=40 --seed=5 \
// RUN:   --dump-params=%t/p --dump-batch=%t/b --loss-npy=%t/loss.npy \
// RUN:   | FileCheck %s --check-prefix=LOSS

// The references, layer by layer.
// RUN: moe-reference embedding %t/b/tokens.npy %t/p/embed.weight.npy -o %t/b0.npy
// RUN: moe-reference attn_res %t/b0.npy %t/p/l0.res.query.npy \
// RUN:   %t/p/l0.res.key_norm.npy -o %t/m0.npy
// RUN: moe-reference rms_norm %t/m0.npy %t/p/l0.norm.weight.npy -o %t/x0.npy
// RUN: moe-reference glu_ffn %t/x0.npy %t/p/l0.ffn.w_gate.npy \
// RUN:   %t/p/l0.ffn.w_up.npy %t/p/l0.ffn.w_down.npy -o %t/f0.npy
// RUN: moe-reference attn_res %t/b0.npy %t/f0.npy %t/p/l1.res.query.npy \
// RUN:   %t/p/l1.res.key_norm.npy -o %t/m1.npy
// RUN: moe-reference rms_norm %t/m1.npy %t/p/l1.norm.weight.npy -o %t/x1.npy
// RUN: moe-reference moe_ffn %t/x1.npy %t/p/l1.ffn.w_router.npy \
// RUN:   %t/p/l1.ffn.router_bias.npy %t/p/l1.ffn.w_gate.npy \
// RUN:   %t/p/l1.ffn.w_up.npy %t/p/l1.ffn.w_down.npy \
// RUN:   %t/p/l1.ffn.w_shared_gate.npy %t/p/l1.ffn.w_shared_up.npy \
// RUN:   %t/p/l1.ffn.w_shared_down.npy --top-k=2 --scaling=1.5 -o %t/f1.npy
// Block 1 is complete: b1 = f0 + f1, a plain sum (section 5.2).
// RUN: moe-reference add %t/f0.npy %t/f1.npy -o %t/b1.npy
// RUN: moe-reference attn_res %t/b0.npy %t/b1.npy %t/p/l2.res.query.npy \
// RUN:   %t/p/l2.res.key_norm.npy -o %t/m2.npy
// RUN: moe-reference rms_norm %t/m2.npy %t/p/l2.norm.weight.npy -o %t/x2.npy
// RUN: moe-reference glu_ffn %t/x2.npy %t/p/l2.ffn.w_gate.npy \
// RUN:   %t/p/l2.ffn.w_up.npy %t/p/l2.ffn.w_down.npy --activation=situ_glu \
// RUN:   --gate-beta=4 --up-beta=25 -o %t/f2.npy
// RUN: moe-reference attn_res %t/b0.npy %t/b1.npy %t/f2.npy \
// RUN:   %t/p/final_res.query.npy %t/p/final_res.key_norm.npy -o %t/m3.npy
// RUN: moe-reference rms_norm %t/m3.npy %t/p/final_norm.weight.npy -o %t/out.npy
// RUN: moe-reference linear %t/out.npy %t/p/lm_head.weight.npy \
// RUN:   --transpose-weight -o %t/logits.npy
// RUN: moe-reference cross_entropy %t/logits.npy %t/b/labels.npy -o %t/ref.npy
// RUN: moe-npy compare %t/loss.npy %t/ref.npy --rtol=1e-4 | FileCheck %s

// LOSS: loss {{[0-9]+\.[0-9]+}}
// CHECK: max relative error

moe.model @layers(vocab_size = 64, hidden_size = 32) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %embed = moe.param "embed.weight" init <normal, std = 1.0> : tensor<64x32xf32>
  %b0 = moe.embedding %tokens, %embed
      : tensor<?x?xi32>, tensor<64x32xf32> -> tensor<?x?x32xf32>

  // Sub-layer 0: [b0] -> SwiGLU dense FFN.
  %q0 = moe.param "l0.res.query" init <normal, std = 0.5> : tensor<32xf32>
  %k0 = moe.param "l0.res.key_norm" init <normal, std = 0.5> : tensor<32xf32>
  %m0 = moe.attn_res %b0 query(%q0) key_norm(%k0)
      {block_size = 2 : i64, sublayer = 0 : i64}
      : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %n0 = moe.param "l0.norm.weight" init <normal, std = 0.5> : tensor<32xf32>
  %x0 = moe.rms_norm %m0, %n0 : tensor<?x?x32xf32>, tensor<32xf32>
  %g0 = moe.param "l0.ffn.w_gate" init <normal, std = 0.2> : tensor<32x48xf32>
  %u0 = moe.param "l0.ffn.w_up" init <normal, std = 0.2> : tensor<32x48xf32>
  %d0 = moe.param "l0.ffn.w_down" init <normal, std = 0.2> : tensor<48x32xf32>
  %f0 = moe.glu_ffn %x0, %g0, %u0, %d0 {activation = #moe.activation<swiglu>}
      : tensor<?x?x32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>

  // Sub-layer 1: [b0, f0] -> MoE FFN, 4 experts, top-2, a shared expert.
  %q1 = moe.param "l1.res.query" init <normal, std = 0.5> : tensor<32xf32>
  %k1 = moe.param "l1.res.key_norm" init <normal, std = 0.5> : tensor<32xf32>
  %m1 = moe.attn_res %b0, %f0 query(%q1) key_norm(%k1)
      {block_size = 2 : i64, sublayer = 1 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>)
      -> tensor<?x?x32xf32>
  %n1 = moe.param "l1.norm.weight" init <normal, std = 0.5> : tensor<32xf32>
  %x1 = moe.rms_norm %m1, %n1 : tensor<?x?x32xf32>, tensor<32xf32>
  %wr = moe.param "l1.ffn.w_router" init <normal, std = 0.5> : tensor<4x32xf32>
  %rb = moe.param "l1.ffn.router_bias" init <normal, std = 0.1> buffer : tensor<4xf32>
  %wg = moe.param "l1.ffn.w_gate" init <normal, std = 0.2> : tensor<4x32x16xf32>
  %wu = moe.param "l1.ffn.w_up" init <normal, std = 0.2> : tensor<4x32x16xf32>
  %wd = moe.param "l1.ffn.w_down" init <normal, std = 0.2> : tensor<4x16x32xf32>
  %sg = moe.param "l1.ffn.w_shared_gate" init <normal, std = 0.2> : tensor<32x16xf32>
  %su = moe.param "l1.ffn.w_shared_up" init <normal, std = 0.2> : tensor<32x16xf32>
  %sd = moe.param "l1.ffn.w_shared_down" init <normal, std = 0.2> : tensor<16x32xf32>
  %f1, %load, %next = moe.moe_ffn %x1 router(%wr, %rb) experts(%wg, %wu, %wd)
      shared(%sg, %su, %sd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.5,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x32xf32>, tensor<4x32xf32>, tensor<4xf32>,
         tensor<4x32x16xf32>, tensor<4x32x16xf32>, tensor<4x16x32xf32>,
         tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>)
      -> (tensor<?x?x32xf32>, tensor<4xi64>, tensor<4xf32>)
  %b1 = arith.addf %f0, %f1 : tensor<?x?x32xf32>

  // Sub-layer 2: [b0, b1] -> SiTU-GLU dense FFN.
  %q2 = moe.param "l2.res.query" init <normal, std = 0.5> : tensor<32xf32>
  %k2 = moe.param "l2.res.key_norm" init <normal, std = 0.5> : tensor<32xf32>
  %m2 = moe.attn_res %b0, %b1 query(%q2) key_norm(%k2)
      {block_size = 2 : i64, sublayer = 2 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>)
      -> tensor<?x?x32xf32>
  %n2 = moe.param "l2.norm.weight" init <normal, std = 0.5> : tensor<32xf32>
  %x2 = moe.rms_norm %m2, %n2 : tensor<?x?x32xf32>, tensor<32xf32>
  %g2 = moe.param "l2.ffn.w_gate" init <normal, std = 0.2> : tensor<32x24xf32>
  %u2 = moe.param "l2.ffn.w_up" init <normal, std = 0.2> : tensor<32x24xf32>
  %d2 = moe.param "l2.ffn.w_down" init <normal, std = 0.2> : tensor<24x32xf32>
  %f2 = moe.glu_ffn %x2, %g2, %u2, %d2
      {activation = #moe.activation<situ_glu, gate_beta = 4.0, up_beta = 25.0>}
      : tensor<?x?x32xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<24x32xf32>

  // Output: [b0, b1, f2], final norm, lm_head and the loss.
  %q3 = moe.param "final_res.query" init <normal, std = 0.5> : tensor<32xf32>
  %k3 = moe.param "final_res.key_norm" init <normal, std = 0.5> : tensor<32xf32>
  %m3 = moe.attn_res %b0, %b1, %f2 query(%q3) key_norm(%k3)
      {block_size = 2 : i64, sublayer = 3 : i64}
      : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>,
         tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %nf = moe.param "final_norm.weight" init <normal, std = 0.5> : tensor<32xf32>
  %out = moe.rms_norm %m3, %nf : tensor<?x?x32xf32>, tensor<32xf32>
  %lm = moe.param "lm_head.weight" init <normal, std = 0.3> : tensor<64x32xf32>
  %loss = moe.lm_head %out, %lm, %labels
      : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<f32>
  moe.return %loss : tensor<f32>
}
