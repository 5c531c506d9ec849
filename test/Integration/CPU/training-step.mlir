// -moe-build-training-step on a small model whose loss needs no moe op's
// adjoint: 1/2 sum((a * s)^2) + sum(tanh(a)) over two parameters, next to a
// moe.moe_ffn (exact quantile balancing) that the loss does not read. Its
// load and next_bias must still reach the step.
//
//  * @quad_grad vs central differences of the forward (fp32, h = 1e-2:
//    the loss is quadratic in each scalar but for tanh), over all 160
//    slots: the zero gradient of the unused parameters and of the router
//    bias buffer included;
//  * @quad_train_step vs the naive fp64 AdamW of `moe-reference adamw`, fed
//    with @quad_grad's gradient, with clipping active (max norm 0.5) and off,
//    weight decay on "a" and not on "s" (no_weight_decay), buffers untouched
//    except the router bias, overwritten with the next_bias that @route_ref
//    computes from the same parameters and tokens; metrics [grad norm,
//    MaxVio, loads] vs the reference's from @route_ref's loads.

// Layout: embed.weight 0 (32), w_router 32 (16), router_bias 48 (4, buffer),
// w_gate 52 (32), w_up 84 (32), w_down 116 (32), a 148 (6), s 154 (6, no
// weight decay); P = 160.

// RUN: rm -rf %t && mkdir -p %t
// RUN: moe-opt -moe-build-training-step %s -o %t/step.mlir
// RUN: moe-npy random %t/p.npy --shape=160 --seed=3 --low=-1 --high=1
// RUN: moe-npy random %t/m.npy --shape=160 --seed=4 --low=-0.1 --high=0.1
// RUN: moe-npy random %t/v.npy --shape=160 --seed=5 --low=0 --high=0.01
// RUN: moe-npy random %t/tok.npy --shape=2,6 --seed=6 --low=0 --high=7 --dtype=i32
// RUN: moe-npy random %t/lab.npy --shape=2,6 --seed=8 --low=0 --high=7 --dtype=i32

// The gradient against central differences.
// RUN: moe-run %t/step.mlir --entry=quad -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/fwd
// RUN: moe-run %t/step.mlir --entry=quad_loss -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/loss
// RUN: moe-npy compare %t/fwd/result0.npy %t/loss/result0.npy --exact | FileCheck %s --check-prefix=EXACT
// RUN: moe-run %t/step.mlir --entry=quad_grad -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/grad
// RUN: moe-run %t/step.mlir --entry=quad_fd -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/fd
// RUN: moe-npy compare %t/grad/result1.npy %t/fd/result0.npy --rtol=2e-4 | FileCheck %s --check-prefix=GRAD
// GRAD: max relative error
// The same through moe-run's own pre-pass.
// RUN: moe-run %s --build-training-step --entry=quad_grad -i %t/p.npy -i %t/tok.npy -i %t/lab.npy -o %t/grad2
// RUN: moe-npy compare %t/grad2/result1.npy %t/grad/result1.npy --exact | FileCheck %s --check-prefix=EXACT

// The router's next bias and loads, from the layer itself.
// RUN: moe-run %t/step.mlir --entry=route_ref -i %t/p.npy -i %t/tok.npy -o %t/route

// A step with clipping (the gradient norm is about 3, above 0.5).
// RUN: moe-reference adamw-hyper -o %t/h1.npy --lr=0.01 --beta1=0.9 --beta2=0.95 --eps=1e-8 --weight-decay=0.1 --max-grad-norm=0.5 --step=3
// RUN: moe-run %t/step.mlir --entry=quad_train_step -i %t/p.npy -i %t/m.npy -i %t/v.npy -i %t/tok.npy -i %t/lab.npy -i %t/h1.npy -o %t/s1
// RUN: moe-reference adamw %t/p.npy %t/m.npy %t/v.npy %t/grad/result1.npy %t/h1.npy --no-decay=154:6 --buffer=48:4 --set=48:%t/route/result0.npy --loads=%t/route/result1.npy --out-params=%t/r1p.npy --out-m=%t/r1m.npy --out-v=%t/r1v.npy --out-metrics=%t/r1x.npy | FileCheck %s --check-prefix=CLIP
// CLIP: grad_norm {{[0-9.e+-]+}} clip 0.{{[0-9]+}}
// RUN: moe-npy compare %t/s1/result0.npy %t/grad/result0.npy --exact | FileCheck %s --check-prefix=EXACT
// RUN: moe-npy compare %t/s1/result1.npy %t/r1p.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/s1/result2.npy %t/r1m.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/s1/result3.npy %t/r1v.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/s1/result4.npy %t/r1x.npy --rtol=1e-6 | FileCheck %s
// EXACT: {{^}}0 of
// CHECK: max relative error

// The same step without clipping differs from it.
// RUN: moe-reference adamw-hyper -o %t/h2.npy --lr=0.01 --beta1=0.9 --beta2=0.95 --eps=1e-8 --weight-decay=0.1 --max-grad-norm=0 --step=3
// RUN: moe-run %t/step.mlir --entry=quad_train_step -i %t/p.npy -i %t/m.npy -i %t/v.npy -i %t/tok.npy -i %t/lab.npy -i %t/h2.npy -o %t/s2
// RUN: moe-reference adamw %t/p.npy %t/m.npy %t/v.npy %t/grad/result1.npy %t/h2.npy --no-decay=154:6 --buffer=48:4 --set=48:%t/route/result0.npy --loads=%t/route/result1.npy --out-params=%t/r2p.npy --out-m=%t/r2m.npy --out-v=%t/r2v.npy --out-metrics=%t/r2x.npy | FileCheck %s --check-prefix=NOCLIP
// NOCLIP: clip 1{{$}}
// RUN: moe-npy compare %t/s2/result1.npy %t/r2p.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/s2/result2.npy %t/r2m.npy --rtol=1e-6 | FileCheck %s
// RUN: moe-npy compare %t/s2/result3.npy %t/r2v.npy --rtol=1e-6 | FileCheck %s
// RUN: not moe-npy compare %t/s2/result1.npy %t/r1p.npy --rtol=1e-6

moe.model @quad(vocab_size = 8, hidden_size = 4) {
^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
  %table = moe.param "embed.weight" init <normal, std = 0.02> : tensor<8x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %wr = moe.param "layers.0.ffn.w_router" init <normal, std = 0.02> : tensor<4x4xf32>
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
  %a = moe.param "a" init <normal, std = 0.02> : tensor<6xf32>
  %s = moe.param "s" init <ones> no_weight_decay : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%a, %s : tensor<6xf32>, tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %sv: f32, %acc: f32):
    %as = arith.mulf %av, %sv : f32
    %sq = arith.mulf %as, %as : f32
    %h = arith.mulf %sq, %half : f32
    %t = math.tanh %av : f32
    %term = arith.addf %h, %t : f32
    %r = arith.addf %acc, %term : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  moe.return %loss : tensor<f32>
}

// The loss written out again as a function (the verifier rejects a call to
// the model's symbol before the pass runs); the RUN lines check that it is
// @quad's, bit for bit.
func.func @quad_loss(%p: tensor<160xf32>, %tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>) -> tensor<f32> {
  %a = tensor.extract_slice %p[148] [6] [1] : tensor<160xf32> to tensor<6xf32>
  %s = tensor.extract_slice %p[154] [6] [1] : tensor<160xf32> to tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%a, %s : tensor<6xf32>, tensor<6xf32>) outs(%z : tensor<f32>) {
  ^bb0(%av: f32, %sv: f32, %acc: f32):
    %as = arith.mulf %av, %sv : f32
    %sq = arith.mulf %as, %as : f32
    %h = arith.mulf %sq, %half : f32
    %t = math.tanh %av : f32
    %term = arith.addf %h, %t : f32
    %r = arith.addf %acc, %term : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// Central differences of @quad_loss.
func.func @quad_fd(%p: tensor<160xf32>, %tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>) -> tensor<160xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 160 : index
  %h = arith.constant 1.0e-2 : f32
  %init = tensor.empty() : tensor<160xf32>
  %g = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (tensor<160xf32>) {
    %pi = tensor.extract %p[%i] : tensor<160xf32>
    %up = arith.addf %pi, %h : f32
    %dn = arith.subf %pi, %h : f32
    %pu = tensor.insert %up into %p[%i] : tensor<160xf32>
    %pd = tensor.insert %dn into %p[%i] : tensor<160xf32>
    %fu = func.call @quad_loss(%pu, %tokens, %labels) : (tensor<160xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<f32>
    %fd = func.call @quad_loss(%pd, %tokens, %labels) : (tensor<160xf32>, tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<f32>
    %a = tensor.extract %fu[] : tensor<f32>
    %b = tensor.extract %fd[] : tensor<f32>
    %num = arith.subf %a, %b : f32
    %step = arith.subf %up, %dn : f32
    %d = arith.divf %num, %step : f32
    %next = tensor.insert %d into %acc[%i] : tensor<160xf32>
    scf.yield %next : tensor<160xf32>
  }
  return %g : tensor<160xf32>
}

// The layer's next bias and load, from the packed parameters, through
// moe.moe_ffn itself.
func.func @route_ref(%p: tensor<160xf32>, %tokens: tensor<?x?xi32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t0 = tensor.extract_slice %p[0] [32] [1] : tensor<160xf32> to tensor<32xf32>
  %table = tensor.expand_shape %t0 [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
  %r0 = tensor.extract_slice %p[32] [16] [1] : tensor<160xf32> to tensor<16xf32>
  %wr = tensor.expand_shape %r0 [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %rb = tensor.extract_slice %p[48] [4] [1] : tensor<160xf32> to tensor<4xf32>
  %g0 = tensor.extract_slice %p[52] [32] [1] : tensor<160xf32> to tensor<32xf32>
  %wg = tensor.expand_shape %g0 [[0, 1, 2]] output_shape [4, 4, 2] : tensor<32xf32> into tensor<4x4x2xf32>
  %u0 = tensor.extract_slice %p[84] [32] [1] : tensor<160xf32> to tensor<32xf32>
  %wu = tensor.expand_shape %u0 [[0, 1, 2]] output_shape [4, 4, 2] : tensor<32xf32> into tensor<4x4x2xf32>
  %d0 = tensor.extract_slice %p[116] [32] [1] : tensor<160xf32> to tensor<32xf32>
  %wd = tensor.expand_shape %d0 [[0, 1, 2]] output_shape [4, 2, 4] : tensor<32xf32> into tensor<4x2x4xf32>
  %x = moe.embedding %tokens, %table : tensor<?x?xi32>, tensor<8x4xf32> -> tensor<?x?x4xf32>
  %y, %load, %next = moe.moe_ffn %x router(%wr, %rb) experts(%wg, %wu, %wd)
      {routing = #moe.routing<experts = 4, top_k = 2, scaling = 1.0,
                               balance = #moe.quantile_balance<exact>>,
       activation = #moe.activation<swiglu>}
      : (tensor<?x?x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4x2xf32>,
         tensor<4x4x2xf32>, tensor<4x2x4xf32>)
      -> (tensor<?x?x4xf32>, tensor<4xi64>, tensor<4xf32>)
  %e = tensor.empty() : tensor<4xf32>
  %loadf = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                           iterator_types = ["parallel"]}
      ins(%load : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%l: i64, %o: f32):
    %f = arith.sitofp %l : i64 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  return %next, %loadf : tensor<4xf32>, tensor<4xf32>
}
