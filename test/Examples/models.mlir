// Every model under examples/models verifies, survives a print-and-reparse
// round trip, and has the layer and parameter counts its header states. The
// expected counts below are derived by hand from the model dimensions, not
// copied from the tool.

// A new example must get its own RUN lines here.
// RUN: ls %moe_src_root/examples/models/*.mlir | count 3

// RUN: moe-opt %moe_src_root/examples/models/kimi-tiny.mlir | moe-opt -o /dev/null
// RUN: moe-opt %moe_src_root/examples/models/kimi-tiny.mlir \
// RUN:   -moe-print-model-summary -o /dev/null | FileCheck %s --check-prefix=TINY

// RUN: moe-opt %moe_src_root/examples/models/kimi-small.mlir | moe-opt -o /dev/null
// RUN: moe-opt %moe_src_root/examples/models/kimi-small.mlir \
// RUN:   -moe-print-model-summary -o /dev/null | FileCheck %s --check-prefix=SMALL

// All three compile to host objects with moe-compile (kimi-tiny's executable
// is run by test/moe-compile/kimi-tiny.test).
// RUN: moe-compile %moe_src_root/examples/models/kimi-tiny.mlir --forward-only --emit=obj --opt-level=0 -o %t.tiny.o
// RUN: moe-compile %moe_src_root/examples/models/kimi-small.mlir --forward-only --emit=obj --opt-level=0 -o %t.small.o
// RUN: moe-compile %moe_src_root/examples/models/kimi-linear-48b.mlir --forward-only --emit=obj --opt-level=0 -o %t.48b.o

// RUN: moe-opt %moe_src_root/examples/models/kimi-linear-48b.mlir | moe-opt -o /dev/null
// RUN: moe-opt %moe_src_root/examples/models/kimi-linear-48b.mlir \
// RUN:   -moe-print-model-summary -o /dev/null | FileCheck %s --check-prefix=K48

// kimi-tiny, d = 256, vocab 256, layers K K K M, each with a MoE FFN:
//   embedding, lm_head   2 x 256 x 256                               131,072
//   KDA (x3)             q, k, v 3 x 256 x 256 = 196,608; conv 3 x 256 x 4
//                        = 3,072; gate 256 x 64 + 64 x 256 = 32,768; A_log 4;
//                        dt_bias 4 x 64 = 256; beta 256 x 4 = 1,024; output
//                        gate 32,768; out_norm 64; out 256 x 256 = 65,536
//                                                          = 332,100     996,300
//   MLA (x1)             q 256 x 192 = 49,152; kv_down 256 x 80 = 20,480;
//                        kv_norm 64; kv_up 64 x 256 = 16,384; gate 256 x 128
//                        = 32,768; out 128 x 256 = 32,768  = 151,616     151,616
//   MoE FFN (x4)         routed 3 x 16 x 256 x 128 = 1,572,864; router
//                        16 x 256 = 4,096; bias 16; shared 3 x 256 x 128
//                        = 98,304                          = 1,675,280 6,701,120
//   AttnRes (x9)         query + key_norm 2 x 256                          4,608
//   RMSNorm (x9)         256                                               2,304
//   total                                                              7,987,020
// Active: the embedding counts one row (-65,280) and each layer's routed
// experts 4/16 (-4 x 1,572,864 x 12/16 = -4,718,592): 3,203,148.

// TINY:      model @kimi_tiny: vocab_size 256, hidden_size 256
// TINY-NEXT:   decoder layers: 4 (3 kda_layer, 1 mla_layer)
// TINY-NEXT:   layer ops: embedding=1 attn_res=9 kda_layer=3 moe_ffn=4 mla_layer=1 lm_head=1
// TINY-NEXT:   parameters: 7987020 total (7.99M), 3203148 active per token (3.20M)

// kimi-small, d = 1024, vocab 32768, layers (K K K M) x 4, a dense SiTU-GLU
// FFN in layer 0 and MoE FFNs in layers 1-15, Block AttnRes with blocks of 8
// sub-layers (ALGORITHMS.md section 7.5, small-1gpu):
//   embedding, lm_head   2 x 32768 x 1024                             67,108,864
//   KDA (x12)            q, k, v 3 x 1024 x 1024 = 3,145,728; conv
//                        3 x 1024 x 4 = 12,288; gate 1024 x 128 + 128 x 1024
//                        = 262,144; A_log 8; dt_bias 8 x 128 = 1,024; beta
//                        1024 x 8 = 8,192; output gate 262,144; out_norm 128;
//                        out 1,048,576                   = 4,740,232    56,882,784
//   MLA (x4)             q 1024 x 8 x 192 = 1,572,864; kv_down 1024 x 320
//                        = 327,680; kv_norm 256; kv_up 256 x 8 x 256
//                        = 524,288; gate 1024 x 1,024 = 1,048,576; out
//                        1,024 x 1024 = 1,048,576        = 4,522,240    18,088,960
//   dense FFN (x1)       3 x 1024 x 2816                                 8,650,752
//   MoE FFN (x15)        routed 3 x 64 x 1024 x 512 = 100,663,296;
//                        router 64 x 1024 = 65,536; bias 64; shared
//                        3 x 1024 x 512 = 1,572,864     = 102,301,760 1,534,526,400
//   AttnRes (x33)        query + key_norm 2 x 1024                          67,584
//   RMSNorm (x33)        1024                                               33,792
//   total                                                            1,685,359,136
// Active: the embedding counts one row (-33,553,408) and each MoE layer's
// routed experts 8/64 (-15 x 100,663,296 x 56/64 = -1,321,205,760):
// 330,599,968 (the section's sizing: about 1.7B total, 0.36B active).

// SMALL:      model @kimi_small: vocab_size 32768, hidden_size 1024
// SMALL-NEXT:   decoder layers: 16 (12 kda_layer, 4 mla_layer)
// SMALL-NEXT:   layer ops: embedding=1 attn_res=33 kda_layer=12 glu_ffn=1 moe_ffn=15 mla_layer=4 lm_head=1
// SMALL-NEXT:   parameters: 1685359136 total (1.69B), 330599968 active per token (330.60M)

// kimi-linear-48b, d = 2304, vocab 163840, 20 KDA and 7 MLA layers, a dense
// FFN in layer 0 and MoE FFNs in layers 1-26, no AttnRes:
//   embedding, lm_head   2 x 163840 x 2304                       754,974,720
//   KDA (x20)            q, k, v 3 x 2304 x 4096 = 28,311,552; conv
//                        3 x 4096 x 4 = 49,152; gate 2304 x 128 + 128 x 4096
//                        = 819,200; A_log 32; dt_bias 4096; beta 2304 x 32
//                        = 73,728; output gate 819,200; out_norm 128; out
//                        4096 x 2304 = 9,437,184          = 39,514,272   790,285,440
//   MLA (x7)             q 2304 x 6144 = 14,155,776; kv_down 2304 x 576
//                        = 1,327,104; kv_norm 512; kv_up 512 x 8192
//                        = 4,194,304; out 4096 x 2304 = 9,437,184
//                                                          = 29,114,880  203,804,160
//   dense FFN            3 x 2304 x 9216                              63,700,992
//   MoE FFN (x26)        routed 3 x 256 x 2304 x 1024 = 1,811,939,328;
//                        router 256 x 2304 = 589,824; bias 256; shared
//                        3 x 2304 x 1024 = 7,077,888   = 1,819,607,296 47,309,789,696
//   RMSNorm (x55)        2304                                            126,720
//   total                                                         49,122,681,728
// Active: the embedding counts one row (-377,485,056) and each MoE layer's
// routed experts 8/256 (-26 x 1,811,939,328 x 248/256 = -45,638,221,824):
// 3,106,974,848, i.e. 49.1B total (+2.3% on the published 48B) and 3.1B
// active (+3.6% on the published 3B).

// K48:      model @kimi_linear_48b: vocab_size 163840, hidden_size 2304
// K48-NEXT:   decoder layers: 27 (20 kda_layer, 7 mla_layer)
// K48-NEXT:   layer ops: embedding=1 kda_layer=20 glu_ffn=1 moe_ffn=26 mla_layer=7 lm_head=1
// K48-NEXT:   parameters: 49122681728 total (49.12B), 3106974848 active per token (3.11B)
