// moe-compile builds a training program by default: -moe-build-training-step,
// then @moe_model_train_step and @moe_model_forward in the object (the
// unused @<model>_grad dropped) and the train step's metric names in the
// manifest, linked with the training driver. The model is small and its
// loss, half the sum of squares of the embedded tokens, needs only adjoints
// that exist everywhere (embedding, linalg); a MoE FFN that the loss does
// not read still routes every step, so its MaxVio reaches the step lines and
// quantile balancing rewrites its router bias. kimi-tiny's training is
// tested in train-kimi-tiny.test.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-compile %s --emit=mlir -o %t/toy.mlir
// RUN: FileCheck %s --check-prefix=IR < %t/toy.mlir
// RUN: not grep toy_grad %t/toy.mlir
// IR-DAG: llvm.func @_mlir_ciface_moe_model_train_step(
// IR-DAG: llvm.func @_mlir_ciface_moe_model_forward(
// IR-DAG: llvm.mlir.global external constant @moe_model_manifest("moe-model 1\0Aname toy\0A{{.*}}\0Aprogram train\0Ametrics 6\0Ametric 0 1 grad_norm\0Ametric 1 1 layers.0.ffn.max_vio\0Ametric 2 4 layers.0.ffn.load\0A\00")

// RUN: moe-compile %s -o %t/toy
// RUN: %t/toy --help | FileCheck %s --check-prefix=HELP
// HELP: Trains the model 'toy' (compiled by moe-compile) with AdamW
// HELP: Model: vocab_size 256, hidden_size 4, 6 parameter tensors, 1140 scalars, 6 metrics. Target: cpu.

// The loss falls; each line has the gradient norm and the MaxVio of the
// MoE layer.
// RUN: %t/toy --steps=40 --seq-len=8 --batch=2 --lr=0.05 --eval-every=20 \
// RUN:   --dump-params=%t/p > %t/a.txt
// RUN: FileCheck %s --check-prefix=TRAIN < %t/a.txt
// TRAIN: training toy: 1140 parameters, batch 2 x 8 tokens, 40 steps
// TRAIN: {{^step 1 loss [0-9.]+ lr 0\.0125 grad-norm [0-9.]+ max-vio [0-9.]+ \(layers\.0\.ffn\) tok/s [0-9.]+$}}
// TRAIN: {{^step 20 loss [0-9.]+ lr 0\.05 grad-norm [0-9.]+ max-vio [0-9.]+ \(layers\.0\.ffn\) tok/s [0-9.]+ val-loss [0-9.]+$}}
// TRAIN: {{^step 40 loss .* val-loss 0\.[0-9]+$}}
// TRAIN: {{^loss ([5-9]|[1-9][0-9])\.[0-9]* -> [0-4]\.[0-9]+ after 40 steps \(640 tokens\)$}}
// TRAIN: time: total

// The start names the MoE layer; --metrics has its MaxVio and its 4
// experts' loads at every step.
// RUN: %t/toy --steps=3 --seq-len=8 --batch=2 --metrics=%t/m.jsonl | FileCheck %s --check-prefix=SUMMARY
// SUMMARY: model: toy, vocab_size 256, hidden_size 4, 6 parameter tensors, 1140 scalars, 1 MoE layers (layers.0.ffn: 4 experts)
// RUN: FileCheck %s --check-prefix=METRICS < %t/m.jsonl
// METRICS: {{^\{"bad_steps":0,"grad_norm":[0-9.]+,"loss":[0-9.]+,"lr":[0-9.e-]+,"moe":\{"layers\.0\.ffn":\{"load":\[[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+\],"max_vio":[0-9.]+\}\},"skipped":false,"step":1,"tokens_per_s":[0-9.e+]+\}$}}
// METRICS-NEXT: "step":2,
// METRICS-NEXT: "step":3,

// Quantile balancing wrote the router bias (it starts at zero).
// RUN: moe-npy stats %t/p/layers.0.ffn.router_bias.npy | FileCheck %s --check-prefix=BIAS
// BIAS-NOT: {{^(min|max): 0$}}
// BIAS: non-finite: 0

// Bit for bit the same run again.
// RUN: %t/toy --steps=40 --seq-len=8 --batch=2 --lr=0.05 --eval-every=20 > %t/b.txt
// RUN: sed -e 's/ tok\/s [0-9.]*//' %t/a.txt | grep '^step' > %t/a.steps
// RUN: sed -e 's/ tok\/s [0-9.]*//' %t/b.txt | grep '^step' > %t/b.steps
// RUN: diff %t/a.steps %t/b.steps

// Checkpoints of a compiled model: the router bias is saved with the
// parameters, and 17 steps, a resume and 23 more give the same step lines
// and the same final parameters (router bias included) as the run above.
// RUN: %t/toy --steps=40 --seq-len=8 --batch=2 --lr=0.05 --eval-every=20 \
// RUN:   --save-dir=%t/ckpt --stop-after=17 > %t/c.txt
// RUN: moe-safetensors check %t/ckpt/step-00000017/model.safetensors | FileCheck %s --check-prefix=CKPT
// CKPT: layers.0.ffn.router_bias F32 [4] bytes
// RUN: %t/toy --resume=%t/ckpt --dump-params=%t/q > %t/d.txt
// RUN: cat %t/c.txt %t/d.txt | sed -e 's/ tok\/s [0-9.]*//' | grep '^step' > %t/cd.steps
// RUN: diff %t/a.steps %t/cd.steps
// RUN: cmp %t/p/layers.0.ffn.router_bias.npy %t/q/layers.0.ffn.router_bias.npy
// RUN: for f in %t/p/*.npy; do cmp $f %t/q/$(basename $f) || exit 1; done

// A step with a non-finite loss (MOE_TEST_POISON_STEPS runs step 5 on NaN
// parameters) is skipped: every parameter and the router bias, which
// quantile balancing rewrites at every other step, stay as they were.
// RUN: env MOE_TEST_POISON_STEPS=5 %t/toy --steps=40 --seq-len=8 --batch=2 \
// RUN:   --lr=0.05 --save-dir=%t/bad --save-every=1 --stop-after=6 | FileCheck %s --check-prefix=SKIP
// SKIP: step 5 loss nan {{.*}} skipped (1 in a row, 1 in all)
// SKIP-NEXT: saved checkpoint
// SKIP-NEXT: {{^step 6 loss [0-9.]+ }}
// RUN: moe-safetensors compare %t/bad/step-00000004/model.safetensors %t/bad/step-00000005/model.safetensors | FileCheck %s --check-prefix=UNCHANGED
// UNCHANGED-DAG: layers.0.ffn.router_bias same
// UNCHANGED-DAG: embed.weight same
// UNCHANGED-NOT: differs
// RUN: not moe-safetensors compare %t/bad/step-00000005/model.safetensors %t/bad/step-00000006/model.safetensors | FileCheck %s --check-prefix=CHANGED
// CHANGED-DAG: layers.0.ffn.router_bias differs
// CHANGED-DAG: embed.weight differs

moe.model @toy(vocab_size = 256, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.5> : tensor<256x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<256x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.5> : tensor<4x4xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.02> : tensor<4x4x2xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.02> : tensor<4x2x4xf32>
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(b, t, h) -> (b, t, h)>, affine_map<(b, t, h) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%x : tensor<?x?x4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%xv: f32, %acc: f32):
    %sq = arith.mulf %xv, %xv : f32
    %h = arith.mulf %sq, %half : f32
    %r = arith.addf %acc, %h : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
