// bench/moe/moe_ffn_train.mlir - the issue's MoE layer forward and backward
// for bench/moe/bench_grad.py: N tokens (dynamic) of d = 2048 in bf16,
// E = 64 routed SwiGLU experts of width F = 1024, top-8, routed scaling 2.5,
// one shared SwiGLU expert of width 1024, exact quantile balancing (the
// layer of moe_ffn_large.mlir).
//
// @moe_ffn_train_forward is moe.moe_ffn as -moe-decompose writes it (route,
// dispatch, grouped experts, combine, the shared expert and their sum: the
// kernels of moe_ffn_large.mlir), returning beside y, load and next_bias
// what the backward reads: the routing weights and indices, the dispatched
// rows, the expert offsets, the source slots and the expert outputs (in
// dispatch order). @moe_ffn_train_backward takes them with the output
// adjoint dy and chains the gradient ops the way reverse mode does
// (test/Integration/CPU/Inputs/moe-grad.mlir's @moe_ffn_grad plus the
// shared expert): combine_grad, expert_ffn_grad, dispatch_grad, route_grad,
// glu_ffn_grad; dx is the sum of the three input gradients, in fp32, then
// rounded to bf16. The gradients have their operands' types (bf16 weight
// gradients, as PyTorch's autograd gives for bf16 weights).

#rows = affine_map<(n, c) -> (n, c)>

func.func @moe_ffn_train_forward(%x: tensor<?x2048xbf16>,
                                 %w_router: tensor<64x2048xbf16>,
                                 %bias: tensor<64xf32>,
                                 %w_gate: tensor<64x2048x1024xbf16>,
                                 %w_up: tensor<64x2048x1024xbf16>,
                                 %w_down: tensor<64x1024x2048xbf16>,
                                 %ws_gate: tensor<2048x1024xbf16>,
                                 %ws_up: tensor<2048x1024xbf16>,
                                 %ws_down: tensor<1024x2048xbf16>)
    -> (tensor<?x2048xbf16>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x2048xbf16>,
        tensor<65xi64>, tensor<?xi64>, tensor<?x2048xbf16>) {
  %w, %idx, %load, %next_bias = moe.route %x, %w_router, %bias
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x2048xbf16>, tensor<64x2048xbf16>, tensor<64xf32>)
      -> (tensor<?x8xf32>, tensor<?x8xi64>, tensor<64xi64>, tensor<64xf32>)
  %xp, %off, %slot = moe.dispatch %x, %idx {num_experts = 64 : i64}
      : (tensor<?x2048xbf16>, tensor<?x8xi64>)
      -> (tensor<?x2048xbf16>, tensor<65xi64>, tensor<?xi64>)
  %yp = moe.expert_ffn %xp, %off, %w_gate, %w_up, %w_down
      {activation = #moe.activation<swiglu>}
      : (tensor<?x2048xbf16>, tensor<65xi64>, tensor<64x2048x1024xbf16>,
         tensor<64x2048x1024xbf16>, tensor<64x1024x2048xbf16>)
      -> tensor<?x2048xbf16>
  %routed = moe.combine %yp, %slot, %w
      : (tensor<?x2048xbf16>, tensor<?xi64>, tensor<?x8xf32>)
      -> tensor<?x2048xbf16>
  %shared = moe.glu_ffn %x, %ws_gate, %ws_up, %ws_down
      {activation = #moe.activation<swiglu>}
      : tensor<?x2048xbf16>, tensor<2048x1024xbf16>, tensor<2048x1024xbf16>,
        tensor<1024x2048xbf16>
  // routed + shared, one element-wise addf as -moe-decompose writes it
  // (-moe-outline-kinds puts it in a function of its own, as for
  // moe_ffn_large.mlir, so it stays a kernel of its own).
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2048xbf16>
  %init = tensor.empty(%n) : tensor<?x2048xbf16>
  %y = linalg.generic {indexing_maps = [#rows, #rows, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%routed, %shared : tensor<?x2048xbf16>, tensor<?x2048xbf16>)
      outs(%init : tensor<?x2048xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %sum = arith.addf %a, %b : bf16
    linalg.yield %sum : bf16
  } -> tensor<?x2048xbf16>
  return %y, %load, %next_bias, %w, %idx, %xp, %off, %slot, %yp
      : tensor<?x2048xbf16>, tensor<64xi64>, tensor<64xf32>,
        tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x2048xbf16>,
        tensor<65xi64>, tensor<?xi64>, tensor<?x2048xbf16>
}

func.func @moe_ffn_train_backward(%x: tensor<?x2048xbf16>,
                                  %w_router: tensor<64x2048xbf16>,
                                  %w_gate: tensor<64x2048x1024xbf16>,
                                  %w_up: tensor<64x2048x1024xbf16>,
                                  %w_down: tensor<64x1024x2048xbf16>,
                                  %ws_gate: tensor<2048x1024xbf16>,
                                  %ws_up: tensor<2048x1024xbf16>,
                                  %ws_down: tensor<1024x2048xbf16>,
                                  %w: tensor<?x8xf32>, %idx: tensor<?x8xi64>,
                                  %xp: tensor<?x2048xbf16>,
                                  %off: tensor<65xi64>, %slot: tensor<?xi64>,
                                  %yp: tensor<?x2048xbf16>,
                                  %dy: tensor<?x2048xbf16>)
    -> (tensor<?x2048xbf16>, tensor<64x2048xbf16>,
        tensor<64x2048x1024xbf16>, tensor<64x2048x1024xbf16>,
        tensor<64x1024x2048xbf16>, tensor<2048x1024xbf16>,
        tensor<2048x1024xbf16>, tensor<1024x2048xbf16>) {
  // y = combine(yp, w) + shared(x).
  %dyp, %dw = moe.combine_grad %yp, %slot, %w, %dy
      : (tensor<?x2048xbf16>, tensor<?xi64>, tensor<?x8xf32>,
         tensor<?x2048xbf16>) -> (tensor<?x2048xbf16>, tensor<?x8xf32>)
  %dxp, %dwg, %dwu, %dwd = moe.expert_ffn_grad %xp, %off, %w_gate, %w_up,
      %w_down, %dyp {activation = #moe.activation<swiglu>}
      : (tensor<?x2048xbf16>, tensor<65xi64>, tensor<64x2048x1024xbf16>,
         tensor<64x2048x1024xbf16>, tensor<64x1024x2048xbf16>,
         tensor<?x2048xbf16>)
      -> (tensor<?x2048xbf16>, tensor<64x2048x1024xbf16>,
          tensor<64x2048x1024xbf16>, tensor<64x1024x2048xbf16>)
  %dx_routed = moe.dispatch_grad %dxp, %slot, %idx
      : (tensor<?x2048xbf16>, tensor<?xi64>, tensor<?x8xi64>)
      -> tensor<?x2048xbf16>
  %dx_router, %dwr = moe.route_grad %x, %w_router, %idx, %dw
      {routing = #moe.routing<experts = 64, top_k = 8, scaling = 2.5,
                              balance = #moe.quantile_balance<exact>>}
      : (tensor<?x2048xbf16>, tensor<64x2048xbf16>, tensor<?x8xi64>,
         tensor<?x8xf32>) -> (tensor<?x2048xbf16>, tensor<64x2048xbf16>)
  %dx_shared, %dsg, %dsu, %dsd = moe.glu_ffn_grad %x, %ws_gate, %ws_up,
      %ws_down, %dy {activation = #moe.activation<swiglu>}
      : (tensor<?x2048xbf16>, tensor<2048x1024xbf16>, tensor<2048x1024xbf16>,
         tensor<1024x2048xbf16>, tensor<?x2048xbf16>)
      -> (tensor<?x2048xbf16>, tensor<2048x1024xbf16>,
          tensor<2048x1024xbf16>, tensor<1024x2048xbf16>)
  // x's adjoint: the three uses' adjoints summed in fp32.
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2048xbf16>
  %init = tensor.empty(%n) : tensor<?x2048xbf16>
  %dx = linalg.generic {indexing_maps = [#rows, #rows, #rows, #rows],
                        iterator_types = ["parallel", "parallel"]}
      ins(%dx_routed, %dx_router, %dx_shared
          : tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x2048xbf16>)
      outs(%init : tensor<?x2048xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16, %out: bf16):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %c32 = arith.extf %c : bf16 to f32
    %ab = arith.addf %a32, %b32 : f32
    %abc = arith.addf %ab, %c32 : f32
    %r = arith.truncf %abc : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<?x2048xbf16>
  return %dx, %dwr, %dwg, %dwu, %dwd, %dsg, %dsu, %dsd
      : tensor<?x2048xbf16>, tensor<64x2048xbf16>,
        tensor<64x2048x1024xbf16>, tensor<64x2048x1024xbf16>,
        tensor<64x1024x2048xbf16>, tensor<2048x1024xbf16>,
        tensor<2048x1024xbf16>, tensor<1024x2048xbf16>
}
