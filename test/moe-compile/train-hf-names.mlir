// Hugging Face names in the training executables' checkpoints
// (tools/moe-compile/driver/ParamFiles.h): moe-compile writes each
// parameter's Kimi-Linear name and layout into the manifest; --save-dir with
// --hf-names writes model.safetensors under those names (one tensor per
// expert, torch.nn.Linear weights transposed), --init-from reads it back bit
// for bit (and a checkpoint under moe.param names, and a sharded
// model.safetensors.index.json), --save-shard-bytes writes shards and an
// index that --init-from and --resume read, --resume continues a
// --hf-names run bit for bit; and the errors of --init-from: the index (JSON, repeated keys,
// weight_map, shard names, missing shards, tensors in the wrong shard,
// unknown and missing tensors), dtypes and shapes. The layouts read by
// Python's safetensors, the dtype conversions and a sharded copy made by
// Python are in train-hf-names-python.test. The model is
// train-program.mlir's with a few norms; "aux.scale" has no Hugging Face
// name.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-compile %s -o %t/m
// RUN: moe-compile %s --emit=mlir -o - | FileCheck %s --check-prefix=MANIFEST
// MANIFEST: param 1028 4 normal 0.5 0 0 1 4 aux.scale\0Aparam 1032
// MANIFEST-SAME: layers.0.ffn.w_router\0Ahf 0 0 model.layers.0.block_sparse_moe.gate.weight\0A
// MANIFEST-SAME: layers.0.ffn.w_gate\0Ahf 1 1 model.layers.0.block_sparse_moe.experts.{e}.w1.weight\0A

// Names in a file must be distinct: a Hugging Face name that another
// parameter has is dropped with a warning.
// RUN: sed -e 's/"aux.scale"/"model.norm.weight"/' %s > %t/clash.mlir
// RUN: moe-compile %t/clash.mlir --emit=mlir -o %t/clash.ll.mlir 2>&1 | FileCheck %s --check-prefix=CLASH
// CLASH: warning: has the Hugging Face name 'model.norm.weight' that another parameter already has; --hf-names keeps its moe.param name
// RUN: FileCheck %s --check-prefix=CLASHMANIFEST < %t/clash.ll.mlir
// CLASHMANIFEST: final_norm.weight\0Aprogram train

// RUN: %t/m --help | FileCheck %s --check-prefix=HELP
// HELP: --steps=N          optimizer steps (default 300); 0 trains nothing
// HELP: --init-from=DIR    start a fresh run (step 0, zero moments)
// HELP: --save-shard-bytes=N  write model.safetensors as shards
// HELP: --hf-names         name the tensors of model.safetensors
// HELP: --init-names=N     the names --init-from reads, moe or hf

// The same run saved under both names.
// RUN: %t/m --steps=3 --seq-len=8 --batch=2 --lr=0.05 --save-dir=%t/moe \
// RUN:   --dump-params=%t/p0 > %t/a.txt
// RUN: %t/m --steps=3 --seq-len=8 --batch=2 --lr=0.05 --save-dir=%t/hf \
// RUN:   --hf-names > %t/b.txt
// RUN: moe-safetensors check %t/hf/step-00000003/model.safetensors | FileCheck %s --check-prefix=HF
// HF: metadata moe.step = 3
// HF-NEXT: aux.scale F32 [4]
// HF-NEXT: model.embed_tokens.weight F32 [256, 4]
// HF-NEXT: model.layers.0.block_sparse_moe.experts.0.w1.weight F32 [2, 4]
// HF-NEXT: model.layers.0.block_sparse_moe.experts.0.w2.weight F32 [4, 2]
// HF-NEXT: model.layers.0.block_sparse_moe.experts.0.w3.weight F32 [2, 4]
// HF: model.layers.0.block_sparse_moe.experts.3.w3.weight F32 [2, 4]
// HF-NEXT: model.layers.0.block_sparse_moe.gate.e_score_correction_bias F32 [4]
// HF-NEXT: model.layers.0.block_sparse_moe.gate.weight F32 [4, 4]
// HF-NEXT: model.layers.0.post_attention_layernorm.weight F32 [4]
// HF-NEXT: model.norm.weight F32 [4]
// RUN: moe-safetensors check %t/hf/step-00000003/model.safetensors | grep -c ' F32 ' | FileCheck %s --check-prefix=COUNT
// COUNT: {{^18$}}
// RUN: FileCheck %s --check-prefix=NAMES < %t/hf/step-00000003/state.json
// NAMES: "param_names": "hf"
// RUN: FileCheck %s --check-prefix=MOENAMES < %t/moe/step-00000003/state.json
// MOENAMES: "param_names": "moe"
// The optimizer state keeps the moe.param names.
// RUN: moe-safetensors compare %t/moe/step-00000003/optimizer.safetensors %t/hf/step-00000003/optimizer.safetensors > /dev/null

// --init-from --hf-names, then --steps=0 saves them again: the parameters
// and the file are those of the run, bit for bit.
// RUN: %t/m --init-from=%t/hf/step-00000003 --hf-names --steps=0 --seq-len=8 \
// RUN:   --batch=2 --dump-params=%t/p1 --save-dir=%t/again | FileCheck %s --check-prefix=INIT
// INIT: init-from: 18 tensors from {{.*}}/hf/step-00000003/model.safetensors by Hugging Face names{{$}}
// INIT: settings: {{.*}}--hf-names --keep
// INIT: saved checkpoint {{.*}}/again/step-00000000
// RUN: for f in %t/p0/*.npy; do cmp $f %t/p1/$(basename $f) || exit 1; done
// RUN: moe-safetensors compare %t/hf/step-00000003/model.safetensors %t/again/step-00000000/model.safetensors | FileCheck %s --check-prefix=SAME --implicit-check-not=differs --implicit-check-not=missing
// SAME: model.layers.0.block_sparse_moe.experts.3.w2.weight same
// A fresh run: zero moments, step 0.
// RUN: moe-safetensors check %t/again/step-00000000/optimizer.safetensors > /dev/null
// RUN: FileCheck %s --check-prefix=STEP0 < %t/again/step-00000000/state.json
// STEP0: "step": 0

// --init-from a checkpoint under moe.param names (no --hf-names).
// RUN: %t/m --init-from=%t/moe/step-00000003 --steps=0 --seq-len=8 --batch=2 \
// RUN:   --dump-params=%t/p2 | FileCheck %s --check-prefix=INITMOE
// INITMOE: init-from: 9 tensors from {{.*}}/moe/step-00000003/model.safetensors{{$}}
// RUN: for f in %t/p0/*.npy; do cmp $f %t/p2/$(basename $f) || exit 1; done

// --init-from then training: the run starts at step 1 with the loaded
// parameters (its first loss is the last of the run it came from, the
// same batch aside).
// RUN: %t/m --init-from=%t/hf/step-00000003 --hf-names --steps=2 --seq-len=8 \
// RUN:   --batch=2 | FileCheck %s --check-prefix=FRESH
// FRESH: init-from: 18 tensors
// FRESH: {{^}}step 1 loss
// FRESH: {{^}}step 2 loss

// --resume of a --hf-names run continues it bit for bit.
// RUN: %t/m --steps=6 --seq-len=8 --batch=2 --lr=0.05 --dump-params=%t/r0 > /dev/null
// RUN: %t/m --steps=6 --seq-len=8 --batch=2 --lr=0.05 --save-dir=%t/r \
// RUN:   --hf-names --stop-after=3 > /dev/null
// RUN: %t/m --resume=%t/r --save-dir=%t/r --dump-params=%t/r1 | FileCheck %s --check-prefix=RESUME
// RUN: for f in %t/r0/*.npy; do cmp $f %t/r1/$(basename $f) || exit 1; done
// RESUME: resumed from {{.*}}/r/step-00000003 at step 3
// RESUME: saved checkpoint {{.*}}/r/step-00000006
// RUN: FileCheck %s --check-prefix=NAMES < %t/r/step-00000006/state.json

// --save-shard-bytes: model.safetensors as shards and an index (4096 bytes
// of embedding alone, then the 512 other bytes); --init-from and --resume
// read them bit for bit.
// RUN: %t/m --steps=3 --seq-len=8 --batch=2 --lr=0.05 --save-dir=%t/sh \
// RUN:   --hf-names --save-shard-bytes=1000 > /dev/null
// RUN: ls %t/sh/step-00000003 | FileCheck %s --check-prefix=SHARDLS --implicit-check-not=model.safetensors{{$}}
// SHARDLS: model-00001-of-00002.safetensors
// SHARDLS-NEXT: model-00002-of-00002.safetensors
// SHARDLS-NEXT: model.safetensors.index.json
// SHARDLS-NEXT: optimizer.safetensors
// SHARDLS-NEXT: state.json
// RUN: FileCheck %s --check-prefix=SHARDINDEX < %t/sh/step-00000003/model.safetensors.index.json
// SHARDINDEX: "total_size": 4608
// SHARDINDEX: "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
// SHARDINDEX: "model.norm.weight": "model-00002-of-00002.safetensors"
// RUN: FileCheck %s --check-prefix=SHARDSTATE < %t/sh/step-00000003/state.json
// SHARDSTATE: "model-00001-of-00002.safetensors": {
// SHARDSTATE: "model-00002-of-00002.safetensors": {
// SHARDSTATE: "model.safetensors.index.json": {
// SHARDSTATE: "optimizer.safetensors": {
// RUN: moe-safetensors check %t/sh/step-00000003/model-00001-of-00002.safetensors | FileCheck %s --check-prefix=SHARD1
// SHARD1: model.embed_tokens.weight F32 [256, 4]
// SHARD1-NOT: model.
// RUN: %t/m --init-from=%t/sh/step-00000003 --hf-names --steps=0 --seq-len=8 \
// RUN:   --batch=2 --dump-params=%t/p3 | FileCheck %s --check-prefix=FROMSHARDS
// FROMSHARDS: init-from: 18 tensors from {{.*}}/sh/step-00000003/model.safetensors.index.json by Hugging Face names (2 shards)
// RUN: for f in %t/p0/*.npy; do cmp $f %t/p3/$(basename $f) || exit 1; done
// RUN: %t/m --steps=6 --seq-len=8 --batch=2 --lr=0.05 --save-dir=%t/rs \
// RUN:   --save-shard-bytes=1000 --stop-after=3 > /dev/null
// RUN: %t/m --resume=%t/rs --save-dir=%t/rs --dump-params=%t/rs1 > /dev/null
// RUN: for f in %t/r0/*.npy; do cmp $f %t/rs1/$(basename $f) || exit 1; done
// RUN: ls %t/rs/step-00000006 | FileCheck %s --check-prefix=SHARDLS
// A damaged shard of a checkpoint.
// RUN: printf 'x' >> %t/rs/step-00000003/model-00002-of-00002.safetensors
// RUN: not %t/m --resume=%t/rs/step-00000003 2>&1 | FileCheck %s --check-prefix=DAMAGED
// DAMAGED: error: checkpoint file '{{.*}}/rs/step-00000003/model-00002-of-00002.safetensors' is damaged

// Errors of the options.
// RUN: not %t/m --init-names=hf 2>&1 | FileCheck %s --check-prefix=NAMESOPT
// NAMESOPT: error: --init-names needs --init-from
// RUN: not %t/m --init-from=%t/hf/step-00000003 --init-names=torch 2>&1 | FileCheck %s --check-prefix=NAMESVALUE
// NAMESVALUE: error: option --init-names expects moe or hf, got 'torch'
// RUN: not moe-driver-bigram --init-from=%t/hf/step-00000003 --init-names=hf 2>&1 | FileCheck %s --check-prefix=NAMESHF
// NAMESHF: error: --init-names=hf: the model 'bigram' has no parameter with a Hugging Face name
// --init-names converts: Hugging Face names in, moe.param names out.
// RUN: %t/m --init-from=%t/hf/step-00000003 --init-names=hf --steps=0 --seq-len=8 \
// RUN:   --batch=2 --save-dir=%t/conv > /dev/null
// RUN: moe-safetensors compare %t/moe/step-00000003/model.safetensors %t/conv/step-00000000/model.safetensors > /dev/null
// RUN: not %t/m --save-shard-bytes=10 2>&1 | FileCheck %s --check-prefix=SHARDOPT
// SHARDOPT: error: --save-shard-bytes needs --save-dir
// RUN: not %t/m --init-from=%t/hf/step-00000003 --resume=%t/r 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: --init-from and --resume exclude each other
// RUN: not %t/m --hf-names=1 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: error: option --hf-names takes no value
// RUN: not moe-driver-bigram --hf-names 2>&1 | FileCheck %s --check-prefix=NOHF
// NOHF: error: --hf-names: the model 'bigram' has no parameter with a Hugging Face name
// RUN: mkdir -p %t/empty
// RUN: not %t/m --init-from=%t/empty --steps=0 2>&1 | FileCheck %s --check-prefix=NEITHER
// NEITHER: error: --init-from: '{{.*}}/empty' holds neither model.safetensors nor model.safetensors.index.json

// Names of the other convention, with a hint.
// RUN: not %t/m --init-from=%t/moe/step-00000003 --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=MOEHF
// MOEHF: error: safetensors file '{{.*}}/moe/step-00000003/model.safetensors': tensor 'embed.weight' is no parameter of the model 'hf' under its Hugging Face names (it is the moe.param name of 'embed.weight'; read those with --init-names=moe)
// RUN: not %t/m --init-from=%t/hf/step-00000003 --steps=0 2>&1 | FileCheck %s --check-prefix=HFMOE
// HFMOE: error: safetensors file '{{.*}}/hf/step-00000003/model.safetensors': tensor 'model.embed_tokens.weight' is no parameter of the model 'hf' (it is the Hugging Face name of 'embed.weight'; read those with --init-names=hf)

// The index.
// RUN: mkdir -p %t/i && cp %t/hf/step-00000003/model.safetensors %t/i/all.safetensors
// RUN: printf '{"weight_map": {' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=JSON
// JSON: error: safetensors index '{{.*}}/i/model.safetensors.index.json': is not valid JSON
// RUN: printf '{"weight_map": {"model.norm.weight": "all.safetensors", "model.norm.weight": "all.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: safetensors index '{{.*}}/i/model.safetensors.index.json': the key 'model.norm.weight' appears twice in one object (a tensor mapped twice?)
// RUN: printf '{"metadata": {"total_size": 4}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=NOMAP
// NOMAP: error: safetensors index '{{.*}}/i/model.safetensors.index.json': has no 'weight_map' object (tensor name -> shard file)
// RUN: printf '{"weight_map": {}, "shards": 2}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=UNKNOWNKEY
// UNKNOWNKEY: error: safetensors index '{{.*}}/i/model.safetensors.index.json': has the unknown key 'shards' (expected weight_map and metadata)
// RUN: printf '{"weight_map": {"model.norm.weight": 3}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=NOTFILE
// NOTFILE: error: safetensors index '{{.*}}/i/model.safetensors.index.json': weight_map maps tensor 'model.norm.weight' to 3, not to a file name
// RUN: printf '{"weight_map": {"model.norm.weight": "../hf/all.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=OUTSIDE
// OUTSIDE: error: safetensors index '{{.*}}/i/model.safetensors.index.json': weight_map maps tensor 'model.norm.weight' to '../hf/all.safetensors', not to a file in the index's directory
// RUN: printf '{"weight_map": {"model.layers.0.mixer.q_proj.weight": "all.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: error: safetensors index '{{.*}}/i/model.safetensors.index.json': tensor 'model.layers.0.mixer.q_proj.weight' is no parameter of the model 'hf' under its Hugging Face names{{$}}
// RUN: printf '{"weight_map": {"model.norm.weight": "gone.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=GONE
// GONE: error: safetensors index '{{.*}}/i/model.safetensors.index.json' maps tensor 'model.norm.weight' to 'gone.safetensors', which is not a file in '{{.*}}/i'
// A shard holding tensors the index does not map to it.
// RUN: printf '{"weight_map": {"model.norm.weight": "all.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=UNMAPPED
// UNMAPPED: error: safetensors file '{{.*}}/i/all.safetensors' holds tensor 'aux.scale', which index '{{.*}}/i/model.safetensors.index.json' does not map to it (a tensor in two shards?)
// A shard lacking a tensor the index maps to it; tensors the index lacks.
// RUN: moe-safetensors raw %t/i/norm.safetensors '{"model.norm.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}' 16
// RUN: printf '{"weight_map": {"model.norm.weight": "norm.safetensors", "aux.scale": "norm.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=LACKS
// LACKS: error: safetensors index '{{.*}}/i/model.safetensors.index.json' maps tensor 'aux.scale' to '{{.*}}/i/norm.safetensors', which does not hold it
// RUN: printf '{"metadata": {}, "weight_map": {"model.norm.weight": "norm.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: --init-from: tensor 'model.embed_tokens.weight' (parameter 'embed.weight') is missing from '{{.*}}/i/model.safetensors.index.json'
// A shard that is no valid safetensors file.
// RUN: printf 'abcdefghij' > %t/i/norm.safetensors
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=BADSHARD
// BADSHARD: error: safetensors file '{{.*}}/i/norm.safetensors': 

// Dtypes and shapes.
// RUN: moe-safetensors raw %t/i/norm.safetensors '{"model.norm.weight":{"dtype":"I32","shape":[4],"data_offsets":[0,16]}}' 16
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: safetensors file '{{.*}}/i/norm.safetensors': tensor 'model.norm.weight' (parameter 'final_norm.weight') is I32; the parameters are read from F32, BF16 or F16
// RUN: moe-safetensors raw %t/i/norm.safetensors '{"model.norm.weight":{"dtype":"F32","shape":[5],"data_offsets":[0,20]}}' 20
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: safetensors file '{{.*}}/i/norm.safetensors': tensor 'model.norm.weight' (parameter 'final_norm.weight') has shape [5], the model expects [4]
// RUN: moe-safetensors raw %t/i/w1.safetensors '{"model.layers.0.block_sparse_moe.experts.2.w1.weight":{"dtype":"BF16","shape":[4,2],"data_offsets":[0,16]}}' 16
// RUN: printf '{"weight_map": {"model.layers.0.block_sparse_moe.experts.2.w1.weight": "w1.safetensors"}}' > %t/i/model.safetensors.index.json
// RUN: not %t/m --init-from=%t/i --hf-names --steps=0 2>&1 | FileCheck %s --check-prefix=TRANSPOSE
// TRANSPOSE: error: safetensors file '{{.*}}/i/w1.safetensors': tensor 'model.layers.0.block_sparse_moe.experts.2.w1.weight' (parameter 'layers.0.ffn.w_gate', expert 2) has shape [4, 2], the model expects [2, 4] (the transpose of the parameter's last two dimensions)

moe.model @hf(vocab_size = 256, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.5> : tensor<256x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<256x4xf32> -> tensor<?x?x4xf32>
  %n = moe.param "layers.0.ffn_norm.weight" init <normal, std = 0.5> : tensor<4xf32>
  %h = moe.rms_norm %x, %n : tensor<?x?x4xf32>, tensor<4xf32>
  %s = moe.param "aux.scale" init <normal, std = 0.5> : tensor<4xf32>
  %h2 = moe.rms_norm %h, %s : tensor<?x?x4xf32>, tensor<4xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.5> : tensor<4x4xf32>
  %rb = moe.param "layers.0.ffn.router_bias" init <zeros> buffer : tensor<4xf32>
  %wg = moe.param "layers.0.ffn.w_gate" init <normal, std = 0.5> : tensor<4x4x2xf32>
  %wu = moe.param "layers.0.ffn.w_up" init <normal, std = 0.5> : tensor<4x4x2xf32>
  %wd = moe.param "layers.0.ffn.w_down" init <normal, std = 0.5> : tensor<4x2x4xf32>
  %y, %load, %next = moe.moe_ffn %h2 router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %f = moe.param "final_norm.weight" init <normal, std = 0.5> : tensor<4xf32>
  %o = moe.rms_norm %y, %f : tensor<?x?x4xf32>, tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(b, t, h) -> (b, t, h)>, affine_map<(b, t, h) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%x : tensor<?x?x4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%xv: f32, %acc: f32):
    %sq = arith.mulf %xv, %xv : f32
    %hh = arith.mulf %sq, %half : f32
    %r = arith.addf %acc, %hh : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}
