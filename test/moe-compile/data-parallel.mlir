// moe-compile --data-parallel=N: the sharded training step (-moe-shard
// before -moe-build-training-step), whose collectives call the Gloo
// runtime, and the manifest line that makes the driver join the group.
// The training itself is checked in train-data-parallel.test.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-compile %s --data-parallel=2 --emit=mlir -o %t/toy.mlir
// RUN: FileCheck %s --check-prefix=IR < %t/toy.mlir
// IR-DAG: llvm.func @moe_dist_all_reduce_sum(i64, i64, i64)
// IR-DAG: llvm.func @moe_dist_all_gather(i64, i64, i64)
// IR-DAG: llvm.mlir.global external constant @moe_model_manifest("moe-model 1\0Aname toy\0A{{.*}}\0Aprogram train\0A{{.*}}data_parallel 2\0A\00")

// RUN: not moe-compile %s --data-parallel=0 -o %t/x 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: --data-parallel must be at least 1
// RUN: not moe-compile %s --expert-parallel=0 -o %t/x 2>&1 | FileCheck %s --check-prefix=EPZERO
// EPZERO: error: --expert-parallel must be at least 1

// --data-parallel=2 --expert-parallel=2: four ranks in groups of two.
// RUN: moe-compile %s --data-parallel=2 --expert-parallel=2 --emit=mlir -o %t/dpep.mlir
// RUN: FileCheck %s --check-prefix=DPEP < %t/dpep.mlir
// DPEP-DAG: llvm.func @moe_dist_all_to_all_v(i64, i64, i64, i64, i64)
// DPEP-DAG: llvm.func @moe_dist_all_to_all(i64, i64, i64, i64)
// DPEP-DAG: llvm.func @moe_dist_group_rank(i64) -> i64
// DPEP-DAG: llvm.mlir.global external constant @moe_model_manifest("moe-model 1\0Aname toy\0A{{.*}}\0Aprogram train\0A{{.*}}data_parallel 4\0Aexpert_parallel 2\0A\00")
// RUN: not moe-compile %s --data-parallel=2 --forward-only -o %t/x 2>&1 | FileCheck %s --check-prefix=FWD
// FWD: error: --data-parallel and --expert-parallel shard the training program; a --forward-only program has no step to shard
// RUN: not moe-compile %s --data-parallel=2 --target=cuda -o %t/x 2>&1 | FileCheck %s --check-prefix=CUDA
// CUDA: error: --data-parallel and --expert-parallel need --target=cpu: the CUDA back end has no NCCL collectives yet

// --data-parallel=1 is the ordinary program.
// RUN: moe-compile %s --data-parallel=1 --emit=mlir -o %t/one.mlir
// RUN: not grep -e moe_dist -e data_parallel %t/one.mlir

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
