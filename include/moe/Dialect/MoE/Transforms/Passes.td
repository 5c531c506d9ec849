//===- Passes.td - moe dialect passes --------------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Declarations of the passes that transform moe IR.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD
#define MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MoEDecompose : Pass<"moe-decompose"> {
  let summary = "Rewrite layer ops into primitive moe ops and upstream ops";
  let description = [{
    Rewrites every layer op (`moe.kda_layer`, `moe.mla_layer`,
    `moe.moe_ffn`, `moe.attn_res`, `moe.lm_head`) into the primitive ops of
    the moe dialect plus `linalg`, `arith`, `math` and `tensor` ops,
    following ALGORITHMS.md exactly:

    * projections become `linalg.generic` contractions over the last
      dimension, reshapes become `tensor.expand_shape`/`collapse_shape`;
    * `moe.kda_layer` becomes short convolutions, `moe.l2_norm`,
      `moe.decay_gate`, a sigmoid `beta`, `moe.kda`, `moe.rms_norm` and the
      sigmoid output gate;
    * `moe.mla_layer` becomes the latent projections, `moe.rms_norm`, slices
      and concatenations that build per-head keys, and
      `moe.mla_attention` with its gate;
    * `moe.moe_ffn` becomes `moe.route`, `moe.dispatch`, `moe.expert_ffn`,
      `moe.combine` and the shared `moe.glu_ffn`;
    * `moe.attn_res` folds its key norm into the query and becomes
      `moe.attn_res_mix`;
    * `moe.lm_head` becomes `moe.linear_cross_entropy` (the projection fused
      with the loss; a rank-1 input keeps a logits contraction and
      `moe.cross_entropy`).

    Ops that are already primitive (`moe.embedding`, `moe.rms_norm`,
    `moe.glu_ffn`, ...) are left alone. Batch and sequence dimensions may be
    dynamic. The output verifies and contains no layer op.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::moe::MoEDialect"
  ];
}

def MoEBuildTrainingStep
    : Pass<"moe-build-training-step", "::mlir::ModuleOp"> {
  let summary = "Build the gradient and the training step of every moe.model";
  let description = [{
    Implements the contract of docs/Training.md. Every `moe.model @M`
    becomes three functions of its packed parameters (`getParamLayout`
    order, `P` fp32 scalars):

    * `@M(params, tokens, labels) -> loss`: the forward, as
      `-convert-moe-model-to-func` builds it;
    * `@M_grad(params, tokens, labels) -> (loss, grad: tensor<Pxf32>)`: the
      model decomposed (`populateDecomposeLayerPatterns`) and differentiated
      in reverse (`moe/Dialect/MoE/Transforms/ReverseMode.h`): moe ops
      through `DifferentiableOpInterface`, upstream ops (`linalg`
      structured ops, tensor reshapes, slices, concatenations, element-wise
      `arith` on tensors) by the rules of ReverseMode.cpp. Buffer slots
      (router biases) get a zero gradient;
    * `@M_train_step(params, m, v, tokens, labels, hyper: tensor<8xf32>) ->
      (loss, params, m, v, metrics: tensor<Mxf32>)`: global gradient norm,
      clipping by `max_grad_norm` (off when `<= 0`), AdamW (ALGORITHMS.md
      7.4; no decoupled decay on `no_weight_decay` parameters), buffers left
      to the balancer: each router bias slot takes its `moe.moe_ffn`'s
      `next_bias`. `hyper = [lr, beta1, beta2, eps, weight_decay,
      max_grad_norm, 1/(1-beta1^t), 1/(1-beta2^t)]`. `metrics = [grad norm
      before clipping, MaxVio of each MoE layer (max(load)/mean(load) - 1),
      the loads of each MoE layer]`, named entry by entry by the function's
      `moe.metric_names` (`grad_norm`, `<ffn>.max_vio`, then `<ffn>.load`
      once per expert, where `<ffn>` is the router bias's name without
      `.router_bias`, e.g. `layers.0.ffn`).

    Errors (located): an op between the parameters and the loss that cannot
    be differentiated, a router bias that is not a `buffer` param, a
    `@M_grad` or `@M_train_step` that already exists.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::moe::MoEDialect"
  ];
}

def MoEShard : Pass<"moe-shard", "::mlir::ModuleOp"> {
  let summary = "Shard the training step of every moe.model over ranks";
  let description = [{
    Runs before `-moe-build-training-step` and marks each `moe.model` with
    `moe.data_parallel = D : i64`, which that pass and
    `-moe-fuse-routing` read (docs/Distributed.md):

    * data parallel (`dp = D`): each of the D ranks runs the step on its
      own `1/D` of the global batch (the same number of tokens on every
      rank). `@M_train_step` and `@M_grad` sum the loss and the packed
      gradient over the ranks (`moe.all_reduce`) and divide by D, so every
      rank clips and applies AdamW to the same mean gradient and keeps
      identical parameters. Each `moe.route` of those functions balances on
      the global batch: its loads are summed over the ranks, the token count
      too, and the quantile balancer's statistics become global (the exact
      method gathers every rank's `r` values with `moe.all_gather` and
      selects the quantile among all of them; the histogram method sums the
      histograms), so that every rank writes the same next bias, the one a
      single process computes on the concatenated batch.

    * expert parallel (`ep = P`): the ranks form groups of P consecutive
      ranks, and each rank of a group owns E / P experts of every MoE layer
      (`moe.expert_parallel = P`). In the gradient and the training step,
      each `moe.expert_ffn` and `moe.expert_ffn_grad` then sends every
      expert-sorted row to the rank that owns its expert (the counts by
      `moe.all_to_all`, the rows by `moe.all_to_all_v`), computes this
      rank's experts on the rows it receives, and sends the results back,
      so the dispatch, the combine and the token order are unchanged. The
      weights stay replicated: a rank's gradient is zero for the experts of
      the other ranks of its group, and the mean over all ranks gives every
      rank the full gradient.

    The world holds `dp * ep` ranks, each with its own share of every batch
    (`moe.data_parallel = dp * ep`). `dp = ep = 1` leaves the module
    unchanged. Errors: a degree below 1, a model already marked with other
    degrees, and (in `-moe-build-training-step`) a MoE layer whose expert
    count is not a multiple of `ep`.
  }];
  let options = [
    Option<"dataParallel", "dp", "int64_t", /*default=*/"1",
           "Number of data-parallel groups (>= 1)">,
    Option<"expertParallel", "ep", "int64_t", /*default=*/"1",
           "Number of ranks that share the experts of every MoE layer "
           "(>= 1)">
  ];
}

def MoEPrintModelSummary : Pass<"moe-print-model-summary", "::mlir::ModuleOp"> {
  let summary = "Print each model's layers, parameters and active parameters";
  let description = [{
    For every `moe.model` in the module, prints one block to standard output:
    the model's name, vocabulary and width, the number of layer ops of each
    kind, the total parameter count, and the parameters active per token.

    Active parameters count every parameter once, except that the routed
    experts of a `moe.moe_ffn` count `top_k / experts` of their weights and
    an embedding table counts one row (the row a token reads). The IR is not
    changed.
  }];
}


def MoETileLinearAttention : Pass<"moe-tile-linear-attention"> {
  let summary = "Chunk moe.kda and moe.kda_grad into tiles, dense on the diagonal only where proven safe";
  let description = [{
    Lowers every `moe.kda` op into the chunked WY/UT algorithm of
    ALGORITHMS.md sections 1.4-1.6 on tensors: an `scf.forall` over
    (batch, head), an `scf.for` over chunks of `chunk-size` tokens that
    carries the fp32 recurrent state, and inside each chunk static tiles:
    the in-chunk cumulative decay, the intra-chunk matrices `Aqk` and `L`
    from a grid of `sub-chunk-size` tiles, forward substitution for
    `(I + L)^-1`, the W/U pseudo-values, the output and the state update.
    The sequence is padded with zeros to whole chunks (a padded step has
    zero decay, key, value and beta, so it changes nothing); batch and
    length may be dynamic.

    Off-diagonal tiles are always factored through their first row (both
    factors are at most 1). Each diagonal tile takes:

    * the dense path (factored exponentials through the `reference` row,
      two matmuls, select masking) when the decay-bound analysis proves
      `E_ref(c) * |g_min| <= L_op` for the query's element type;
    * otherwise, with `runtime-guard`, a per-tile `scf.if` on the exact
      exponent range of the tile (section 2.4), choosing the dense or the
      per-position path at run time;
    * otherwise the per-position path, which only exponentiates
      differences `Gamma_i - Gamma_j` with `j <= i`.

    Every kda op gets a remark that says which path it took and why, with
    the bound, the exponent, the limit and the margin.

    `moe.kda_grad` is lowered by the same pass into the chunked backward of
    section 1.7: the chunks' state-free quantities in parallel, then per
    (batch, head, value block) a forward sweep storing each chunk's incoming
    state and a reverse sweep storing its outgoing state adjoint, then every
    chunk's gradients in parallel from those,
    with its diagonal path decided the same way and reported by a
    `kda_grad tiled with ...` remark.
    `test-force-dense` takes the dense path regardless of the proof; it
    exists to show what the proof prevents.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", "64",
           "Tokens per chunk (a power of two)">,
    Option<"subChunkSize", "sub-chunk-size", "int64_t", "16",
           "Rows per diagonal tile (a power of two, at most chunk-size)">,
    Option<"reference", "reference", "std::string", "\"mid\"",
           "Reference row of the dense diagonal path: pre, start or mid">,
    Option<"runtimeGuard", "runtime-guard", "bool", "true",
           "Guard unproven diagonal tiles at run time instead of always "
           "taking the per-position path">,
    Option<"testForceDense", "test-force-dense", "bool", "false",
           "Test only: take the dense diagonal path even where it is not "
           "proven safe">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoEGenerateKDAKernels : Pass<"moe-generate-kda-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate tensor-core GPU kernels for moe.kda";
  let description = [{
    The GPU back end's kernel generator for `moe.kda` (DESIGN.md, "a kernel
    generator that builds the gpu.func from the op's attributes and the
    proof's verdict"). Each eligible `moe.kda` op becomes two kernels in a
    `gpu.module` and their `gpu.launch_func`s, between
    `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
    of the results; FLA's pipeline of ALGORITHMS.md section 1.5 with
    chunks of 64 tokens and diagonal tiles of 16 rows:

    * `kda_prep` (one block of 128 threads per chunk, all chunks in
      parallel): the decay gate and the in-chunk cumulative decay in fp32,
      the L2 norms of q and k (fused when the operands come from
      `moe.l2_norm` and `moe.decay_gate`), the intra-chunk matrices `Aqk`
      and `L` from 16x16 tiles on tensor cores (`mma.sync` m16n8k16, bf16
      operands staged in shared memory, fp32 accumulation), forward
      substitution for `(I + L)^-1` in fp32, then `W` and `U` on tensor
      cores and the decayed keys and queries, written as bf16;
    * `kda_state` (one block per batch, head and `value-tile` columns of
      the state, sequential over chunks): the fp32 state in registers,
      `Vn = U - W S`, `O = Qd S + Aqk Vn` and
      `S <- exp(Gamma_last) S + Kd^T Vn`, all on tensor cores.

    Off-diagonal tiles are factored through their first row (both factors
    at most 1). Diagonal tiles are dense tensor-core tiles factored through
    their middle row where the decay-bound analysis proves section 2.2's
    condition for bf16 operands; otherwise they are computed per position
    on CUDA cores (no tensor cores, exponents of differences only).
    `diagonal` overrides the choice. A remark on each op gives the path and
    the numbers. Ops the generator does not handle (K other than 64 or
    128, a value width that `value-tile` does not divide, non-f32 operands,
    an initial state) are left to `-moe-tile-linear-attention`, with a
    remark saying why.
  }];
  let options = [
    Option<"valueTile", "value-tile", "int64_t", "16",
           "State columns per block of the state kernel (8, 16 or 32)">,
    Option<"diagonal", "diagonal", "std::string", "\"auto\"",
           "Diagonal tiles: auto (dense where proven), dense, or "
           "per-position">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoEGenerateAttentionKernels
    : Pass<"moe-generate-attention-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate a tensor-core flash-attention GPU kernel for moe.mla_attention";
  let description = [{
    The GPU back end's kernel generator for `moe.mla_attention`
    (DESIGN.md, "a kernel generator that builds the gpu.func from the op's
    attributes"). Each eligible op becomes one kernel in the `gpu.module`
    `moe_attention_kernels` and its `gpu.launch_func`, between
    `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
    of the results: the causal FlashAttention-2 forward of ALGORITHMS.md
    section 3.2.

    * One block per (query tile of `query-tile` rows, head, batch), on a
      grid of (heads x batch, query tiles): the last query tiles (which see
      the most keys) of every head run first, the shortest last. Each
      warp owns 16 query rows (one row of 16-row `mma.sync` fragments) for
      query tiles of 64 and 128 (four or eight warps), 32 rows for 256
      (eight warps, each K and V fragment used twice). A tile whose shared
      memory would exceed the 227 KiB a block can have is halved.
    * q, k, v and the gate may each be f32 or bf16 (the output has v's
      type). bf16 operands are read in place; with `convert-once` (the
      default) a prep kernel `<name>_convert` (one block per key tile, head
      and batch) first writes the fp32 ones among K and V as bf16
      `[B, Tp, H, D]` device buffers (`gpu.alloc`; Tp: T rounded up to
      whole key tiles, the extra rows zero). Without it, every block
      converts the fp32 K and V tiles it reads.
    * The query tile is staged once in shared memory as bf16 (cp.async
      when bf16, converted by the block when fp32); with 16-row warps its
      `ldmatrix` A fragments are then kept in registers for the whole key
      loop (and its shared memory reused by the second stage).
    * For every key tile of 64 keys up to the diagonal, K (64 x D_qk) and
      V (64 x D_v) reach shared memory row-major with rows padded by 8
      elements (16-byte `cp.async.cg` copies, `nvgpu.device_async_copy`,
      zero-filled past the sequence) in two stages, one key tile ahead:
      each step waits for its tile's copies, passes the step's only
      barrier and issues the next tile's. Fragments come from
      `ldmatrix.x4`: K's rows are the n-major B operand of `S = Q K^T`,
      V's the k-major B operand of `O += P V` (read transposed), two
      8-column fragments per load.
    * `S` on tensor cores (`mma.sync` m16n8k16, bf16 operands, fp32
      accumulators); the causal mask (a select of `-inf`) only on the
      `query-tile / 64` diagonal tiles; the running row max `m` (of the raw
      scores) and row sum `l` in fp32 (row max reduced across the four
      lanes of a row by shuffles; `l` kept per lane and reduced once at
      the end); `P = exp2(S c - m c)` with `c = scale * log2(e)` (one FMA
      and `ex2.approx.ftz` per score) rounded to bf16 and re-packed from
      accumulator fragments into A fragments in registers; the `O`
      accumulators rescaled by `exp2((m_old - m_new) c)`; `O += P V` on
      tensor cores.
    * The epilogue writes `O / l`, times `sigmoid(gate)` when the op has a
      gate, and `lse = scale m + ln(l)` when the op's `lse` result has a
      use.

    Batch, length and heads may be dynamic; rows past the sequence read as
    zero and are not written. An op that the generator does not handle
    (a width that is not a static multiple of 16 up to 256, an operand
    neither f32 nor bf16) is left to `-moe-tile-attention` with a remark
    that says why; every handled op gets a remark with the kernel's shape.
  }];
  let options = [
    Option<"queryTile", "query-tile", "int64_t", "256",
           "Query rows per block: 64 (four warps of 16 rows), 128 (eight "
           "warps of 16 rows) or 256 (eight warps of 32 rows, each K and V "
           "fragment used twice)">,
    Option<"convertOnce", "convert-once", "bool", "true",
           "Convert fp32 K and V to bf16 once, in a prep kernel that writes "
           "them to [B, Tp, H, D] device buffers (Tp: T rounded up to key "
           "tiles), so that the forward kernel stages them with 16-byte "
           "copies; otherwise every block converts the fp32 K and V tiles "
           "it reads">
  ];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of moe.mla_attention ops replaced by a GPU kernel">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoEGenerateAttentionGradKernels
    : Pass<"moe-generate-attention-grad-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate tensor-core flash-attention backward GPU kernels "
                "for moe.mla_attention_grad";
  let description = [{
    The GPU back end's kernel generator for `moe.mla_attention_grad`: the
    causal FlashAttention-2 style backward of ALGORITHMS.md section 3.3,
    with the op's sigmoid output gate. Each eligible op becomes three
    kernels in the `gpu.module` `moe_attention_grad_kernels` and their
    `gpu.launch_func`s, between `bufferization.to_buffer` of the operands
    and `bufferization.to_tensor` of the results (allocated like the op's
    result types):

    * `<name>_prep`, one block of four warps per (64 rows, head, batch):
      per row, `dO = d_output sigmoid(gate)` (`d_output` without a gate),
      `D = rowsum(d_output output)` (a warp sum), and `d_gate = d_output
      output (1 - sigmoid(gate))` in the gate's type (the gated output is
      never divided by the sigmoid), all in fp32; q, k, v and dO written as
      bf16 `[B, H, Tp, D]` device buffers (`gpu.alloc`; Tp: T rounded up to
      64, the extra rows zero), `lse log2(e)` and `D` as fp32 `[B, H, Tp]`
      (zero past T).
    * `<name>_dkdv`, one block per (key tile of 64, head, batch) on a grid
      of (heads x batch, key tiles), the first key tiles (which see the most
      queries) first; each warp owns 16 keys. K and V stay in shared memory
      (and their `ldmatrix` A fragments in registers while `D_qk + D_v <=
      128`); the query tiles from the diagonal on stream through two
      cp.async stages (Q, dO, and the tile's lse and D). Per query tile:
      `S^T = K Q^T`, `P^T = exp2(S^T scale log2(e) - lse log2(e))`
      (`ex2.approx.ftz`, masked on the diagonal tile only), `dP^T = V dO^T`,
      `dS^T = P^T o (dP^T - D)`, then `dV += P^T dO` and `dK += dS^T Q`,
      P and dS rounded to bf16 A fragments in registers. dK is scaled once.
    * `<name>_dq`, one block per (query tile of 64, head, batch), the last
      (longest) first; each warp owns 16 queries, with the rows' lse and D
      in registers, and walks the key tiles up to the diagonal (K and V
      through two cp.async stages): the same `P` and `dS`, and `dQ += dS K`.
      A separate pass rather than fp32 atomics from the dK dV blocks: it
      recomputes `S` and `dP`, but each result element is written by one
      block in one order, so the backward is deterministic.

    Every tile product is `mma.sync` m16n8k16 with bf16 operands from
    `ldmatrix.x4` and fp32 accumulators (the forward generator's precision
    policy); rows are padded by 8 elements in shared memory. Batch, length
    and heads may be dynamic; rows past the sequence are zero in the copies
    and are not written. An op that the generator does not handle (a width
    that is not a static multiple of 16 up to 256, an operand neither f32
    nor bf16) is left to `-moe-tile-attention` with a remark that says why;
    every handled op gets a remark with the kernels' shape.
  }];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of moe.mla_attention_grad ops replaced by GPU kernels">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoEGenerateEmbeddingGradKernels
    : Pass<"moe-generate-embedding-grad-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate a GPU kernel for moe.embedding_grad";
  let description = [{
    The GPU back end's kernel for the embedding table's gradient
    (ALGORITHMS.md section 7.2): each `moe.embedding_grad` with an f32
    gradient and table of static width (at most 2048) becomes one launch of
    a kernel in the `gpu.module` `moe_embedding_grad_kernels`, between
    `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
    of the result. Block `v` (one per table row, 256 threads) walks the
    tokens 256 at a time: each thread compares one token's id with `v`,
    each warp's matches become a ballot mask in shared memory, then every
    thread adds the gradient rows of the matching tokens, in token order,
    to its columns' sums (registers), and finally stores its columns of row
    `v`. Each row's sum therefore adds its terms in token order, as the
    op defines and the CPU back end computes it, bit for bit. Ids outside
    `[0, vocab)` match no block and add nothing.

    Other ops (a single token, a non-f32 operand, a dynamic or wider table)
    are left to the generic lowering, a host loop over the tokens, with a
    remark saying why.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoEGenerateRoutingKernels
    : Pass<"moe-generate-routing-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate GPU kernels for moe.route and its moe.dispatch";
  let description = [{
    The GPU back end's kernel generator for the routing half of an MoE FFN
    (ALGORITHMS.md sections 4.1-4.5): each eligible `moe.route`, with the
    `moe.dispatch` ops of its indices, becomes kernels in the `gpu.module`
    `moe_routing_kernels` and their launches, between
    `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
    of the results. It is `-moe-fuse-routing`'s algorithm, hand-mapped:

    * `routeN_route`, one block of four warps per 64 tokens: the router GEMM
      on tensor cores (`mma.sync` m16n8k16 from `ldmatrix` fragments, bf16
      operands staged by a 3-stage `cp.async.cg` pipeline, fp32
      accumulators) when input and router
      weights are bf16, d a multiple of 16 and E of 8, else on fp32 CUDA
      cores; sigmoid, `z = s + bias`, the top-k by rank (ties to the lower
      expert, NaN as -inf), the weights, each tile's count per expert and
      each slot's position in the tile's run of its expert (the tile half
      of a stable counting sort), and `r = cut - s` stored expert-major
      (exact QB) or counted into the histogram (histogram QB). No
      [N, E] tensor other than exact QB's `r` goes to memory;
    * `routeN_scan`, one block: per-tile counts -> `load` (i64), each
      tile's first row per expert and every fused dispatch's
      `expert_offsets`;
    * `routeN_quantile`, one block per expert (QB only): the q-th and
      (q+1)-th smallest `r` by one MSD radix select over order-preserving
      integer keys (four 8-bit passes; one histogram serves both ranks
      while their prefixes agree), or the histogram's crossing bin,
      interpolated;
    * `routeN_bias`, one block: `next_bias` centred (an empty batch keeps
      `bias - mean(bias)`), or the sign-bias step;
    * `routeN_scatterM` per fused dispatch, one warp per token: 16-byte
      copies of the token's row to its k rows in expert order, and
      `source_slot`.

    N may be dynamic (N = 0 launches empty grids, which the runtime skips);
    d and E must be static, elements f32 or bf16, `top_k < E <= 128`,
    `top_k <= 32`. Routes it does not take are left to `-moe-fuse-routing`
    with a remark that says why, as are dispatches of a taken route whose
    expert count or row width it cannot handle (they read the generated
    indices).
  }];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of moe.route ops replaced by GPU kernels">,
    Statistic<"numFusedDispatches", "num-fused-dispatches",
              "Number of moe.dispatch ops replaced by a scatter kernel">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoEGenerateExpertKernels
    : Pass<"moe-generate-expert-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate tensor-core grouped-GEMM GPU kernels for MoE experts";
  let description = [{
    The GPU back end's kernel generator for the expert half of an MoE FFN
    (ALGORITHMS.md sections 4.4, 6 and 7.1). Kernels go to the `gpu.module`
    `moe_expert_kernels`, between `bufferization.to_buffer` of the
    operands and `bufferization.to_tensor` of the results.

    * `moe.expert_ffn` (rows grouped by `expert_offsets`): a schedule
      kernel turns the offsets into a table of row tiles (128 rows of one
      expert each, at most `ceil(M / 128) + E`; unused entries -1), then
      two GEMM kernels run over the table: gate/up, `h = act(x Wg, x Wu)`
      (SwiGLU `silu(a) u` or SiTU-GLU `gate_beta tanh(a / gate_beta)
      sigmoid(a) cap(u)`, in fp32 from the accumulators) in its epilogue,
      written as bf16 to a device buffer; and down, `h Wd`, written in the
      result's type (f32 or bf16).
    * `moe.glu_ffn` (the shared expert, or a dense FFN): the same two
      GEMMs over consecutive 128-row tiles of all rows, with no table. An
      input `[..., d]` (a model's dense layers, on `[B, T, d]`) is
      collapsed to its rows first and the result expanded back.
    * GEMM blocks: 128 rows by `block-cols` columns (the gate/up GEMM's are
      half gate, half up, at the same output columns, so the epilogue finds
      both in one thread), one warp per 64 x 64, `mma.sync` m16n8k16 with
      bf16 operands and fp32 accumulators. Operands reach shared memory by
      16-byte `cp.async.cg` copies into `stages` buffers of
      `reduction-step` elements, `stages - 2` steps ahead of use with one
      barrier per step; their 16-byte chunks are XOR-swizzled by row so
      that neither the copies nor the `ldmatrix.x4` fragment reads (B
      transposed from the k-major weights) conflict on banks. Rows past a
      group's end are read (clamped to the last row) but not written.
    * Precision (`matmul-precision`, the precision policy of the GPU back
      end's matmuls): `bf16` (the default) takes f32 inputs and weights as
      well: each f32 operand is rounded to bf16 (round to nearest even) by
      a conversion kernel into a device buffer before the GEMMs (the
      weights once per op, all experts), the GEMMs keep bf16 operands and
      fp32 accumulation, the activation is computed in fp32 and the result
      is delivered in the op's own type (an f32 op's down GEMM stores fp32
      accumulators). Only the matmul operands (x, the weights and h) are
      rounded. `exact` generates only ops whose input and weights are
      already bf16 (f32 ones are left to the fp32 paths below), and only
      bf16 combines.
    * `moe.combine`: the inverse of `source_slot` (a kernel), then one
      block per token summing its k weighted rows in fp32, slot by slot
      from zero (ALGORITHMS.md section 7.1), with 16-byte loads and stores
      of f32 or bf16 rows. A combine whose only use is an element-wise sum
      with another tensor of its type (the shared expert's output, as
      `-moe-decompose` builds it) adds that tensor to the fp32 sum, and the
      sum is replaced: one fp32 sum and one rounding to the result's type.

    Handled: f32 or bf16 input and weights (bf16 only under
    `matmul-precision=exact`), `swiglu` and `situ_glu`, a static hidden
    size that `block-cols` divides and a static expert width that
    `block-cols / 2` divides, both at least `(stages - 2) *
    reduction-step`; f32 or bf16 `[N, d]` combines with `d` a static
    multiple of 8. The row count may be dynamic (no launch without rows).
    What is not handled is left to `-moe-fuse-routing` (expert_ffn,
    combine) and `-convert-moe-to-linalg` (glu_ffn) with a remark that says
    why.
  }];
  let options = [
    Option<"reductionStep", "reduction-step", "int64_t", "32",
           "Reduction elements per pipeline stage of the GEMMs (32 or 64)">,
    Option<"stages", "stages", "int64_t", "4",
           "Shared-memory stages of the GEMMs (3 to 6), filled stages - 2 "
           "steps ahead of use">,
    Option<"blockCols", "block-cols", "int64_t", "128",
           "Columns of a GEMM block tile (128: four warps, 256: eight), "
           "each warp 64 x 64 of 128 rows">,
    Option<"matmulPrecision", "matmul-precision", "std::string", "\"bf16\"",
           "Precision policy of the GEMMs: bf16 (f32 operands rounded to "
           "bf16, fp32 accumulation, results in the op's type) or exact "
           "(only ops whose operands are already bf16)">
  ];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of moe.expert_ffn, moe.glu_ffn and moe.combine ops "
              "replaced by GPU kernels">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoEGenerateExpertGradKernels
    : Pass<"moe-generate-expert-grad-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate tensor-core grouped-GEMM GPU kernels for the "
                "expert FFN's gradient";
  let description = [{
    The GPU back end's kernel generator for `moe.expert_ffn_grad`
    (ALGORITHMS.md sections 6 and 7.1). Kernels go to the `gpu.module`
    `moe_expert_grad_kernels`, between `bufferization.to_buffer` of the
    operands and `bufferization.to_tensor` of the results. For each expert
    `j` and its rows (`o = expert_offsets`):

    1. `dh = dy Wd[j]^T` (fp32, `[M, F]`);
    2. `a, u = x Wg[j], x Wu[j]` with the activation's adjoint in the
       epilogue: `h = act(a, u)`, `da = dh dact/da`, `du = dh dact/du`
       (SwiGLU or SiTU-GLU, fp32), stored as bf16 `h [M, F]` and
       `[da | du] [M, 2F]`;
    3. `input_grad = [da | du] [Wg[j] | Wu[j]]^T`, in the op's type;
    4. `w_down_grad[j] = h^T dy` and 5. `[w_gate_grad[j] | w_up_grad[j]] =
       x^T [da | du]`: each expert's rows are split into `splits` runs of
       whole reduction steps, with `splits` the smallest count that gives
       at least `split-blocks` blocks over all experts (at most 64); each
       run writes an fp32 partial, and
    6. one kernel sums the partials in split order into the results. No
       atomics: every run of the same inputs gives the same bits.

    Steps 1 to 3 run one block per 128-row tile of one expert; a tile finds
    its expert by scanning the offsets (no schedule kernel). An expert
    without rows gets zero weight gradients; without any rows only the
    weight-gradient kernels run (on empty runs, reading nothing).

    GEMM blocks are 128 rows by 128 (or 64) columns, four warps, `mma.sync`
    m16n8k16 with bf16 operands and fp32 accumulators, fed by 16-byte
    `cp.async.cg` copies into `stages` XOR-swizzled shared-memory buffers
    of 32 reduction elements; the weight gradients read both operands
    reduction-major (`ldmatrix.trans` for A) and zero-fill the rows past a
    run's end.

    Precision (`matmul-precision`): under `bf16` (the default) f32 `input`,
    `result_grad` and weights are rounded to bf16 by a conversion kernel;
    `dh` stays fp32 and `h`, `da`, `du` are rounded to bf16 as the next
    GEMMs' operands. Under `exact` only ops whose operands are bf16 are
    taken. Handled: `[M, d]` rows (M dynamic), static weights, a hidden
    size that is a multiple of 128 and an expert width that is a multiple
    of 64. Other ops are left to `-moe-lower-routing-grad` with a remark
    that says why.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "4",
           "Shared-memory stages of the GEMMs (3 to 6), filled stages - 2 "
           "steps ahead of use">,
    Option<"splitBlocks", "split-blocks", "int64_t", "264",
           "Blocks the weight-gradient GEMMs aim for over all experts: each "
           "expert's rows are split until (experts x splits x tiles) reaches "
           "it">,
    Option<"matmulPrecision", "matmul-precision", "std::string", "\"bf16\"",
           "Precision policy of the GEMMs: bf16 (f32 operands rounded to "
           "bf16, fp32 accumulation, results in the op's type) or exact "
           "(only ops whose operands are already bf16)">
  ];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of moe.expert_ffn_grad ops replaced by GPU kernels">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MoETileAttention : Pass<"moe-tile-attention"> {
  let summary = "Tile moe.mla_attention and its adjoint into flash-attention";
  let description = [{
    Lowers every `moe.mla_attention` op into the flash-attention forward of
    ALGORITHMS.md section 3.2 on tensors: an `scf.forall` over (batch, head,
    query tile of `query-tile` rows) whose body works on static fp32 tiles.
    For each query tile it keeps a running row maximum `m`, a running row
    sum `l` and an accumulator `Acc: [query-tile, D_v]`, and walks the key
    tiles of `key-tile` keys in two parts:

    * an `scf.for` over the key tiles strictly below the diagonal (every key
      precedes every query of the tile), which needs no mask;
    * the diagonal key tiles (one when `query-tile` divides `key-tile`,
      `query-tile / key-tile` otherwise), the only place where the causal
      mask is applied, by a select of `-inf`.

    Key tiles above the diagonal are never visited. Each step computes
    `S = Q K^T`, `m' = max(m, rowmax S)`, `P = exp2(S - m')`,
    `c = exp2(m - m')`, `l = c l + rowsum P`, `Acc = c Acc + P V`; the scale
    `scale * log2(e)` is folded into the query tile once, so `exp2` gives the
    natural-base softmax. The epilogue writes `Acc / l`, times
    `sigmoid(gate)` when the op has a gate, and the log-sum-exp
    `lse = ln(2) m + ln(l)` in fp32.

    Input requirements: static `D_qk` and `D_v` (they may differ); batch,
    length and heads may be dynamic; any float element type (tiles are
    computed in fp32 and the output is converted back). The sequence is
    padded with zeros to a multiple of the larger tile. Padded keys never
    reach a real query: every key in a tile below the diagonal precedes a
    real query, and on the diagonal tiles the causal mask removes every key
    after the query, in particular every padded one. Padded query rows are
    computed (they stay finite) and sliced away.

    Every row has a visible key in the first key tile it sees, so `m` is
    finite after the first step and no `exp2(-inf + inf)` arises.

    `moe.mla_attention_grad` becomes the flash-attention backward of
    section 3.3 on the same tiles and padding. On whole tensors first:
    `dO = d_output * sigmoid(gate)`, `D = rowsum(d_output * output)` (equal
    to `rowsum(dO * o)`, as `output = o * sigmoid(gate)`) and
    `d_gate = d_output * output * (1 - sigmoid(gate))`. Then an
    `scf.forall` over (batch, head, key tile) walks the query tiles that see
    the key tile (the overlapping ones masked, the later ones not),
    recomputing `P = exp(scale q K^T - lse)` from the saved log-sum-exp and
    accumulating `dV += P^T dO` and `dK += dS^T (scale q)` with
    `dS = P * (dO V^T - D)`; and an `scf.forall` over (batch, head, query
    tile) walks the key tiles as the forward does for
    `dQ = scale * sum dS K`. Padded query rows have zero `dO`, `D` and
    `lse`, so their `dS` is zero and they add nothing to `dK` and `dV`.

    The output contains no `moe.mla_attention` or `moe.mla_attention_grad`.
    An op whose `D_v` is dynamic,
    or tile sizes that are not positive or of which neither divides the
    other, give a located error and the pass fails.
  }];
  let options = [
    Option<"queryTile", "query-tile", "int64_t", "64",
           "Query rows per tile (Br); one of query-tile and key-tile must "
           "divide the other">,
    Option<"keyTile", "key-tile", "int64_t", "64",
           "Keys per tile (Bc); one of query-tile and key-tile must divide "
           "the other">
  ];
  let statistics = [
    Statistic<"numTiled", "num-tiled",
              "Number of moe.mla_attention(_grad) ops tiled">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}


def MoEChunkLoss : Pass<"moe-chunk-loss", "::mlir::func::FuncOp"> {
  let summary = "Lower the lm_head loss and its adjoint to whole-batch projections of vocabulary chunks and row reductions";
  let description = [{
    The GPU back end's form of `moe.linear_cross_entropy` (ALGORITHMS.md
    section 7.2), at the host level where a GEMM and row reductions are
    each one kernel over all the tokens (the tile form of `-moe-tile-loss`
    is one program per token tile, without tensor cores). The tokens are
    flattened to `[N, d]`; for each chunk of `vocab-chunk` rows of `W`
    (unrolled; the last one may be shorter) it builds the fp32 logits of
    the chunk, `z_c = x W_c^T` (a projection, which
    `-moe-generate-gemm-kernels` takes where it runs), their row maximum,
    and updates the per-token online log-sum-exp (running maximum `m` and
    sum `l = l exp(m - m') + sum exp(z_c - m')`) and the label's logit (a
    gather from the chunk holding it). Then `lse = m + log l` and the mean
    of `lse - z[label]` over the valid labels. Only one chunk's
    `[N, vocab-chunk]` logits exist at a time.

    `moe.linear_cross_entropy_grad` becomes, for each chunk, the chunk's
    logits again (a projection), their adjoint
    `G_c = c (exp(z_c - lse) - onehot(label))` (one element-wise op; `c` is
    `d_loss / N_valid` on the valid tokens, 0 on the others), the projection
    `G_c W_c` added into `d_input` and the weight gradient `G_c^T x`, the
    chunk's rows of `d_weight` (a sum over the tokens, which
    `-moe-generate-gemm-kernels` takes as a row-split GEMM).

    Requirements: static `d` and `V` (a located error otherwise). Operands
    of any float type; the logits, statistics, loss and adjoints are fp32,
    the input gradients converted to the operands' types.
  }];
  let options = [
    Option<"vocabChunk", "vocab-chunk", "int64_t", /*default=*/"8192",
           "Vocabulary rows of W per chunk (positive)">
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "Number of loss ops lowered">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoETileLoss : Pass<"moe-tile-loss"> {
  let summary = "Lower the lm_head loss and its adjoints in vocabulary chunks";
  let description = [{
    Lowers the loss ops of ALGORITHMS.md section 7.2 to tensor-level tile
    IR, never materialising the `[tokens, V]` logits of the fused ops:

    * `moe.linear_cross_entropy`: an `scf.forall` over tiles of `token-tile`
      tokens (the tokens flattened and padded with zeros to a multiple of
      the tile). Each tile walks the vocabulary in chunks of `vocab-chunk`
      rows of `W` with an `scf.for` (then one static remainder chunk when
      `V` is not a multiple of the chunk), computes the fp32 scores
      `S = x W_c^T` of the chunk only and keeps an online log-sum-exp (the
      running row maximum `m` and sum `l` of `exp(S - m)`) and the label's
      score. The per-token `lse = m + log l` is a result; the mean over the
      valid tokens of `lse - z[label]` is reduced on the whole (small)
      per-token vectors.
    * `moe.linear_cross_entropy_grad`: with `c_t = d_loss / N_valid` on the
      valid tokens (0 on the ignored and padded ones) and
      `G = c (exp(S - lse) - onehot(label))` recomputed chunk by chunk:
      `d_input = G W` by an `scf.forall` over token tiles walking the
      vocabulary chunks, and `d_weight = G^T input` by an `scf.forall` over
      the vocabulary chunks (plus one for the remainder chunk) walking the
      token tiles. Both accumulate in fp32.
    * `moe.cross_entropy_grad` (explicit logits): `linalg.generic` ops on
      the logits: the row maximum, the log-sum-exp, the valid count and
      `d_logits = c (softmax - onehot)`.

    Requirements: a static `d` and `V` for the fused ops (a located error
    otherwise). Tokens may be dynamic; operands of any float type are
    converted to fp32 tiles and the adjoints converted back.
  }];
  let options = [
    Option<"tokenTile", "token-tile", "int64_t", "32",
           "Tokens per tile of the fused ops">,
    Option<"vocabChunk", "vocab-chunk", "int64_t", "256",
           "Vocabulary rows of W per chunk of the fused ops">
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "Number of loss ops lowered">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoEPrepareGPUMapping : Pass<"moe-prepare-gpu-mapping", "::mlir::ModuleOp"> {
  let summary = "Ready bufferized tiled IR for mapping scf.forall onto GPU blocks";
  let description = [{
    Runs on bufferized tiled IR (after one-shot bufferization), before the
    upstream `scf-forall-to-parallel`, `gpu-map-parallel-loops` and
    `convert-parallel-loops-to-gpu` passes turn each `scf.forall` into a
    `gpu.launch` whose blocks are the forall's iterations:

    * `memref.copy` inside an `scf.forall` becomes `linalg.copy`, which
      lowers to loops (the host runtime's `memrefCopy` is not available in a
      kernel);
    * an argument of a public function that a forall reads is copied
      once, at entry, into a new buffer (the caller's memory may not be
      readable by the GPU); the functions of `-moe-outline-kinds`, which
      only the program calls, take its buffers as they are;
    * every host `memref.alloc` / `memref.dealloc` (outside any forall)
      becomes a `gpu.alloc` / `gpu.dealloc`: in device memory when only
      kernels touch the buffer, `host_shared` when host code may read or
      write it or the program's caller receives it. That is decided across
      the calls of outlined kinds: a buffer a kind returns is host-shared
      only if some caller's host code reaches the call's result, and one
      passed to a kind counts as reached only if the kind's host code
      reaches its argument.

    Buffers allocated inside a forall body stay `memref.alloc` and become
    per-block device-heap allocations.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect"
  ];
}

def MoEFuseRouting : Pass<"moe-fuse-routing"> {
  let summary = "Lower routing, dispatch, grouped experts and combine into fused tile IR";
  let description = [{
    Lowers the routed half of an MoE FFN (ALGORITHMS.md sections 4.1-4.5 and
    7.1), as `-moe-decompose` leaves it, into tensor-level tile IR:

    * **Routing kernel.** Every `moe.route` becomes one `scf.forall` over
      groups of token tiles (`token-groups` groups at most, each walking a
      contiguous run of `token-tile` tokens with an `scf.for`, the way
      persistent thread blocks do). Per tile, on static `[token-tile, E]`
      tiles: the router GEMM and the sigmoid, `z = s + bias`, each expert's
      rank in its token (`|{j' : z_j' > z_j or (z_j' = z_j and j' < j)}|`,
      so ties go to the lower index), the k selected experts in rank order,
      the renormalised weights times the scaling factor, the per-expert
      counts and, for every selected token-slot, its position in its
      group's run of that expert (the tile half of a stable counting sort).
      For quantile balancing the tile also computes the cut (the score of
      rank k) and `r = cut - s`: the histogram form adds `r` into the
      group's `[E, bins]` histogram over `[min b - 1, max b + 1]`; the
      exact form writes `r` expert-major into an `[E, N]` buffer. No
      `[N, E]` score tensor exists outside a tile; the exact form's `r`
      buffer is the one per-expert array of N values that an exact
      quantile needs (the histogram form needs only `E x bins` counts per
      group).
    * **Dispatch.** Each `moe.dispatch` of the route's indices reuses the
      kernel's counts and positions: a scan of the per-group counts gives
      `expert_offsets` and each group's first row per expert, and an
      `scf.forall` over token-slots scatters every row and slot id to
      `offset + position` (experts in order, tokens stable within an
      expert). A `moe.dispatch` whose indices come from elsewhere gets the
      same counting sort over token-slots.
    * **Bias update.** Exact quantile balancing selects, per expert (an
      `scf.forall` over experts), the q-th and (q+1)-th smallest `r` with
      `q = round(N k / E)` clamped to `[1, N]`, by an MSD radix select over
      the floats' order-preserving integer keys (four passes of 8 bits,
      O(N) per expert, bounded by the `[E, N]` buffer); their midpoint,
      centred, is the next bias. The histogram form finds the bin where the
      running count reaches `N k / E` and interpolates; the sign form adds
      `rate * sign(N k / E - load)`. An empty batch keeps the centred bias.
    * **Grouped experts.** Every `moe.expert_ffn` becomes an `scf.forall`
      over a flat list of row tiles (`ceil(rows_j / row-tile)` for expert
      `j`): each tile finds its expert, pads its rows to `row-tile`, and
      runs the gate, up and down GEMMs of that expert with the activation
      in fp32.
    * **Combine.** Every `moe.combine` becomes a weighted gather in fp32
      through the token-slot to row map of its dispatch (or the inverse of
      `source_slot` when the dispatch was not lowered here).

    Requirements: static hidden size `d` for `moe.route`; static expert
    count, hidden size and width for `moe.expert_ffn`; the token count may
    be dynamic everywhere. An op that fails them gets an error and the pass
    fails. `moe.glu_ffn` (the shared expert) is left to
    `-convert-moe-to-linalg`. The output contains no `moe.route`,
    `moe.dispatch`, `moe.expert_ffn` or `moe.combine`.
  }];
  let options = [
    Option<"tokenTile", "token-tile", "int64_t", "64",
           "Tokens per tile of the routing kernel">,
    Option<"tokenGroups", "token-groups", "int64_t", "16",
           "Most groups of the routing kernel; each walks a contiguous run "
           "of token tiles">,
    Option<"rowTile", "row-tile", "int64_t", "32",
           "Rows per tile of the grouped expert GEMMs">
  ];
  let statistics = [
    Statistic<"numRoutes", "num-routes", "Number of moe.route ops lowered">,
    Statistic<"numFusedDispatches", "num-fused-dispatches",
              "Number of moe.dispatch ops fused with their route">,
    Statistic<"numDispatches", "num-dispatches",
              "Number of stand-alone moe.dispatch ops lowered">,
    Statistic<"numExpertFFNs", "num-expert-ffns",
              "Number of moe.expert_ffn ops lowered to grouped GEMMs">,
    Statistic<"numCombines", "num-combines", "Number of moe.combine ops lowered">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoELowerRoutingGrad : Pass<"moe-lower-routing-grad"> {
  let summary = "Lower the gradient ops of routing, dispatch, experts and combine";
  let description = [{
    Lowers the backward of the MoE FFN (ALGORITHMS.md sections 4.1, 6 and
    7.1), the ops that `DifferentiableOpInterface` builds for `moe.route`,
    `moe.dispatch`, `moe.expert_ffn`, `moe.glu_ffn` and `moe.combine`, into
    tensor-level IR. They read the forward's values (indices, source_slot,
    expert_offsets, weights, expert outputs) as SSA values, so this pass may
    run before or after `-moe-fuse-routing`:

    * `moe.route_grad`: the k selected scores are recomputed by a gather of
      the selected router rows, the logit gradient
      `scaling / S (dw - <dw, s> / S) s (1 - s)` per token-slot, the input
      gradient by a gather of the same rows, and the router-weight gradient
      by one fp32 contraction over tokens of the dense `[N, E]` logit
      gradient (zero where unselected): deterministic, no atomics.
    * `moe.dispatch_grad`: the inverse of source_slot, then each token sums
      its k slot rows in slot order (the gather of `moe.combine` with unit
      weights).
    * `moe.expert_ffn_grad`: an `scf.forall` over experts; each walks its
      rows in `row-tile` tiles (an `scf.for`, padded with zeros), recomputes
      the gate and up GEMMs, forms `dh = dy W_down^T`, the activation's
      derivatives (SwiGLU, SiTU-GLU with overflow-free `sech^2`), the input
      gradient of the tile, and accumulates `x^T da`, `x^T du`, `h^T dy`
      into its own fp32 weight gradients: grouped GEMMs over the
      expert-sorted rows, no two experts writing one value. Experts without
      rows get zeros. With `expert-blocks` above the expert count, each
      expert's rows are split into contiguous runs of whole tiles, one
      forall iteration per (expert, split), each writing fp32 partial
      weight gradients that a sum over the splits (in split order)
      completes: more parallel iterations for a GPU, within
      `expert-partial-bytes` of partials. The input gradient is written in
      place into each split's rows of the result, so the loop holds no
      buffer of a run-time size.
    * `moe.glu_ffn_grad`: the same math on whole tensors, weight gradients
      contracted over every leading dimension.
    * `moe.combine_grad`: `dy[n] w[n, i]` gathered per row and
      `dw[n, i] = <out[row(n, i)], dy[n]>` through the inverse of
      source_slot, in fp32.

    Requirements: static `d`, `E` and widths (the token count may be
    dynamic). An op that fails them gets an error and the pass fails.
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", "32",
           "Rows per tile of the grouped expert gradient GEMMs">,
    Option<"expertBlocks", "expert-blocks", "int64_t", "1",
           "Split each expert's rows until experts x splits reaches this "
           "many parallel iterations (1: one per expert)">,
    Option<"expertPartialBytes", "expert-partial-bytes", "int64_t",
           "268435456",
           "At most this many bytes of fp32 partial weight gradients for "
           "the splits">
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered",
              "Number of routing gradient ops lowered">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoEProfileOps : Pass<"moe-profile-ops", "::mlir::ModuleOp"> {
  let summary = "Time every moe op of the program with the CPU timer runtime";
  let description = [{
    Opt-in instrumentation ("where did the time go"). Every op of the moe
    dialect inside a function (forward and gradient ops alike; nested moe
    ops count with their outermost one) is bracketed by

      func.call @moe_prof_begin(%id, %name) : (i64, !llvm.ptr) -> ()
      ... the op ...
      func.call @moe_prof_end(%id) : (i64) -> ()

    where `%id` numbers the op kinds of the module in order of first
    appearance and `%name` is the address of an internal constant string
    holding the kind's name (`moe.kda`, `moe.rms_norm`, ...). The calls have
    side effects, so the code each op lowers to stays between them; ops
    that a later pass fuses with others (routing, dispatch, experts and
    combine in -moe-fuse-routing) are timed where the fused code lands.
    The CPU runtime (lib/CpuRuntime) sums the time per kind and prints a
    table to stderr when the program exits. moe-lower-to-cpu runs this
    pass right after -moe-decompose when its `profile` option is set.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def MoEInsertShapeChecks : Pass<"moe-insert-shape-checks", "::mlir::ModuleOp"> {
  let summary = "Check at run time that the dynamic sizes an op ties agree";
  let description = [{
    The verifiers check the sizes that types make static. A dynamic size is
    only known when the program runs, and an op whose operands disagree
    there (a key with batch 1 next to a query with batch 2) would read past
    the smaller buffer. This pass puts, before every moe op inside a
    function, one call

      func.call @moe_check_dim(%actual, %expected, %what, %against)
          : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()

    per dimension that the op ties to another operand's dimension where at
    least one of the two is dynamic: `%what` and `%against` are internal
    constant strings naming the op, its source location and the two
    operand dimensions (`moe.kda at m.mlir:4:12: dimension 0 (B) of key`).
    The run-time function (lib/CpuRuntime/Checks.cpp, linked into the
    executables moe-compile builds and loaded by moe-run) prints

      error: moe.kda at m.mlir:4:12: dimension 0 (B) of key is 1, but
      dimension 0 (B) of query is 2

    and exits with status 1 when they differ. Static against static is the
    verifier's job and emits nothing; sizes tied through arithmetic (slots
    = tokens x top_k, heads x head_dim) are left to the verifier and the
    ops' own lowering. moe-lower-to-cpu runs this pass first.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def MoEOutlineKinds : Pass<"moe-outline-kinds", "::mlir::ModuleOp"> {
  let summary = "Compile each distinct kind of moe op once: outline it into one private function per kind";
  let description = [{
    A model repeats its layers: kimi-linear-48b has 27 decoder layers of
    three kinds, and the training step holds each layer's forward and
    backward ops. Lowered inline, every instance is tiled, bufferized and
    optimised by LLVM as its own copy. This pass runs after
    `-moe-decompose` (on primitive and gradient ops) and replaces every
    group of moe ops by a `func.call` of a private function that holds the
    group; groups that are the same kind share one function, so the back
    end compiles each kind once.

    A group is a maximal set of pure moe ops of one block that are tied by
    their operands (`moe.route` with the `moe.dispatch`, `moe.expert_ffn`
    and `moe.combine` that read it; `moe.l2_norm` and `moe.decay_gate` with
    the `moe.kda` they feed): the passes that fuse such ops (the routing
    fusion, the KDA kernel generator's fused norms and gate) see them
    together. Its operands from outside become the function's arguments
    (constants are copied in), its results used outside become the
    function's results. Two groups are the same kind when their functions
    are the same text: the same ops in the same order, with the same
    operand types, attributes and result types. The decay-bound analysis
    reaches into the functions (they are private, so it sees every call),
    and every op computes exactly what it computed inline: the lowering of
    each op is unchanged, so the numbers are bit-identical.

    A group whose results are needed, outside it, before its last op (a
    cycle through other ops) is outlined op by op instead. Collectives,
    ops with regions and ops with memory effects stay where they are.
    The functions carry the unit attribute `moe.outlined_kind`, and so do
    the calls the pass creates: later passes (the deallocation pipeline's
    view flow, -moe-early-dealloc) ask of every call whether it calls an
    outlined kind, and the mark answers without a symbol lookup.

    With `glue` (the default), the ops between the layer ops are outlined
    too, each alone: every `linalg.generic` on tensors whose outputs are
    fresh (a `tensor.empty`, or a `linalg.fill` of one: the projections,
    their gradients, the optimizer's update) and every element-wise `arith`
    or `math` op on whole tensors (the residual sums), one function per
    kind. Fresh tensors and constants are copied into the functions, so a
    function never writes what it is given; values a region reads from
    above become arguments. kimi-linear-48b's training step held 3,466
    such generics of far fewer kinds, all inline in one function that LLVM
    optimised for minutes.
  }];
  let options = [
    Option<"glue", "glue", "bool", /*default=*/"true",
           "Also outline each structured or element-wise op on tensors "
           "between the layer ops, alone">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def MoEOneShotBufferize : Pass<"moe-one-shot-bufferize", "::mlir::ModuleOp"> {
  let summary = "One-Shot Bufferize the module, with the outlined kinds taking views instead of copies";
  let description = [{
    Upstream's `-one-shot-bufferize` with function boundaries, returning
    allocations from loops allowed (the chunk loops carry a state each
    iteration computes afresh), as the back ends ran it before, but with
    one change of the function boundary types. A public function and any
    function that is not an outlined kind keeps the static identity layout
    (its C interface, the runtime's calls); a function of
    `-moe-outline-kinds` (marked `moe.outlined_kind`) takes memrefs with
    the identity's strides and a dynamic offset
    (`memref<256x4xf32, strided<[4, 1], offset: ?>>`). A parameter is a
    view at a fixed offset into the packed buffer: under the identity
    layout every call of a kind copied each parameter it reads into a fresh
    buffer (679 copy kernels in kimi-tiny's CUDA training step); now the
    caller casts the view. A view that is not contiguous is still copied
    (the cast would not be valid), and a returned argument is still cloned
    by the ownership-based deallocation, so results stay fresh buffers.

    A kind's arguments are read-only (`bufferization.writable = false`): a
    kind that would update an argument in place writes a fresh buffer
    instead, so a caller that reads the value afterwards no longer copies
    it before the call. Result types are inferred from the body (a fresh
    buffer: the identity layout), so that a caller can collapse a
    `[B, T, n]` result into `[B T, n]` rows without a copy (the contiguous
    view's outer stride is dynamic, which `memref.collapse_shape` cannot
    take). Together these took kimi-tiny's CUDA training program from 861
    `memref.copy` ops to 466 and its peak memory on an H100 from 6.55 to
    5.50 GiB.

    For the same reason an argument of dynamic shape that the kind
    collapses across its outer dimensions, or reads through an
    identity-layout `bufferization.to_buffer` (what the kernel generators
    ask for), takes the identity layout: the kind copied the contiguous
    view at every call, now only a caller whose value is not contiguous
    copies it. kimi-tiny's CUDA training step: 394 copy kernels to 323,
    754 launch sites to 683.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def MoEBufferInsertChains
    : Pass<"moe-buffer-insert-chains", "::mlir::func::FuncOp"> {
  let summary = "Write long chains of tensor.insert_slice into one fresh buffer before One-Shot Bufferize";
  let description = [{
    Runs just before One-Shot Bufferize. A chain here is a sequence of
    `tensor.insert_slice` ops in a function's body block whose first
    destination is a fresh tensor (a `tensor.empty`, or a `linalg.fill` of
    one) and where each link is the only user of the one before it. The
    training step builds its packed gradient that way, one link per
    parameter (1,374 links for kimi-linear-48b), and One-Shot Bufferize's
    conflict analysis of such a chain grows with a high power of its length:
    a synthetic chain of 100 links took 3 s, one of 200 links 47 s, and
    kimi-linear-48b's step did not finish in 13 minutes.

    A chain of at least `min-links` links becomes one `memref.alloc` of the
    root's shape (filled like the root, when it is a fill), a
    `bufferization.materialize_in_destination` of each link's source into a
    `memref.subview` of it, in the links' order, and one
    `bufferization.to_tensor restrict writable` after the last link that
    replaces the chain's value. The writes are the ones the in-place chain
    would have done; the analysis no longer has to prove them in place.

    When the root's shape is static (and its elements whole bytes), the
    buffer is allocated as bytes (`memref<Nxi8>`) and seen through a
    `memref.view` at shift 0; a link that writes one contiguous run of it
    (static offsets and sizes, unit strides, a box spanning whole rows of
    every dimension after its first one of more than one element) writes
    into a `memref.view` at the run's byte shift instead of a subview. The
    view has an identity layout, so a copy into it is one memcpy: on the
    GPU, `-moe-map-forall-to-gpu` makes it a `gpu.memcpy` (upstream's
    lowering of `gpu.memcpy` ignores a destination's offset, but a view's
    shift is in its pointer) instead of a kernel per offset. Other links
    keep a `memref.subview` of the whole view.

    A link ends the chain before it when its source's rank differs from the
    destination's (a rank-reducing insert) or when its destination carries
    an encoding. Chains inside loops and other regions are left alone.
  }];
  let options = [
    Option<"minLinks", "min-links", "int64_t", /*default=*/"8",
           "The shortest chain that is rewritten">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def MoESplitFreshDeallocs
    : Pass<"moe-split-fresh-deallocs", "::mlir::func::FuncOp"> {
  let summary = "Give each fresh buffer of a bufferization.dealloc its own dealloc";
  let description = [{
    Runs in the buffer deallocation pipeline, between ownership-based
    deallocation and `-buffer-deallocation-simplification`. Ownership-based
    deallocation frees all the buffers of a block in one
    `bufferization.dealloc` at its end: in a whole model's training step
    that is one op with 7,622 buffers (kimi-linear-48b). Upstream's
    simplification splits such an op by asking, of every buffer, whether it
    may be the same allocation as each other one: 58 million queries, 28 s
    of kimi-linear-48b's compile.

    When every buffer of a `bufferization.dealloc` is fresh, that is a
    distinct value that is a `memref.alloc` result or a result of a call of
    an outlined kind (`-moe-outline-kinds`, whose results are fresh
    buffers), no two of them can be one allocation, and this pass gives
    each its own `bufferization.dealloc` with its condition and the whole
    `retain` list, as the simplification's own split would: every updated
    condition that is used becomes the `arith.ori` of the new ops' ones.
    A dealloc with a buffer that is not fresh (a block argument, a view, the
    result of any other op) or with a repeated buffer is left to upstream.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
  ];
}

def MoEEarlyDealloc : Pass<"moe-early-dealloc", "::mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use instead of at the end of its block";
  let description = [{
    Runs on bufferized code after the buffer deallocation pipeline, whose
    `memref.dealloc` ops sit at the end of the block that allocated the
    buffer (ownership-based deallocation frees at block ends). A model's
    forward is mostly one block, so every activation of every layer would
    stay allocated until the function returns: the peak memory is the sum
    of all buffers. This pass moves each `memref.dealloc` of a
    `memref.alloc` of the same block (or of a result of a call of a
    `-moe-outline-kinds` function, which is a fresh buffer too) up to just
    after the last op of the
    block that uses the buffer or any of its views (the aliases of
    `BufferViewFlowAnalysis`: subviews, reshapes, casts, loop-carried
    values), so that the allocator can reuse the memory for later buffers:
    liveness-based reuse. With the GPU back end's stream-ordered
    allocations the release is ordered after the kernels that read it.

    A dealloc stays where it is when an alias of its buffer is used by an
    op that turns it into something the analysis cannot follow (a pointer
    as an index, a conversion cast, a call other than of an outlined kind,
    which only reads its operands), or when its operand is neither a
    `memref.alloc` nor an outlined kind's result of the same block.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def MoESinkIntoGPULaunches : Pass<"moe-sink-into-gpu-launches"> {
  let summary = "Copy the constants and memref.dim ops a gpu.launch body uses into it";
  let description = [{
    Runs just before `-gpu-kernel-outlining`, which makes every value a
    launch body uses but does not define a kernel argument: in MLIR 22 it
    sinks nothing, and the canonicalizer hoists the constants of launch
    bodies to their function's entry block. A kernel then divides by a
    tile width it receives at run time (delinearizing a [B, T, 256] index:
    a 32-bit division per element where a shift would do), reads
    `memref.dim` through a local-memory copy of the sizes, and loses every
    static trip count. Each launch gets its own copies of the constant-like
    ops and `memref.dim` ops (of values it captures anyway) it uses, with
    their operands' defining ops of those kinds, through upstream's
    `sinkOperationsIntoLaunchOp`; the originals stay for their other users.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MoEOutlineGPUKernels : Pass<"moe-outline-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Upstream's -gpu-kernel-outlining, keeping each gpu.launch's nvvm.* attributes on its kernel";
  let description = [{
    Runs upstream's `-gpu-kernel-outlining` and then puts the `nvvm.*`
    attributes each `gpu.launch` carried (hints to the PTX compiler such as
    `nvvm.minctasm`, the blocks per SM its registers must allow; upstream
    drops a launch's attributes) on the `gpu.func` it became, where
    `-convert-gpu-to-nvvm` keeps them for the PTX (`.minnctapersm`). A
    launch is matched to its kernel by the kernel's name: a launch with
    such attributes and no `function` name (or one another launch uses) is
    given a unique one first.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MoEDedupeGPUModules : Pass<"moe-dedupe-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Keep one gpu.module of each set of identical ones and launch its kernels instead";
  let description = [{
    `moe-lower-to-nvvm` runs it twice: right after the kernels are
    outlined, so that their lowering handles each distinct kernel once, and
    after they are lowered to NVVM, before they are serialized (for
    modules the lowering made equal). Kernel outlining makes one
    `gpu.module` per launch, so
    two launches of the same code (the same copy, fill or element-wise
    kernel at the same shapes in several layers' glue, or in the forward
    and the training step) are two modules, each compiled to PTX and each
    loaded at run time: 1,278 modules of 591 distinct ones in kimi-tiny's
    CUDA training program. Two modules are identical when their text is,
    with the module's name and its kernels' names set aside (kernels are
    matched by position). Every `gpu.launch_func` of a duplicate's kernel
    then launches the first module's kernel, and the duplicate is erased.
    A module whose symbol is used by anything other than a launch is kept.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MoEGPUModulesToBinaries
    : Pass<"moe-gpu-modules-to-binaries", "::mlir::ModuleOp"> {
  let summary = "Serialize every gpu.module to a gpu.binary, the modules in parallel";
  let description = [{
    What upstream's `-gpu-module-to-binary` does (each module's targets
    serialize it to an object: PTX, cubin or fatbin; the module becomes a
    `gpu.binary` of the objects, with its offloading handler), with the
    modules serialized on the context's threads: a training program has
    hundreds of kernels and each one's LLVM compile (translation, libdevice
    link, optimisation, NVPTX) is independent of the others'. The binaries
    replace the modules in their order; a module that fails to serialize is
    an error at its location.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "What the objects hold: isa (PTX), bin (cubin) or fatbin">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MoEAsyncGPUStream : Pass<"moe-async-gpu-stream", "::mlir::ModuleOp"> {
  let summary = "Run each function's GPU work asynchronously, in program order, on one stream that outlined kinds share with their callers";
  let description = [{
    Runs on host code after `-moe-map-forall-to-gpu`. The GPU ops of each
    host block (`gpu.launch`, `gpu.launch_func`, device `gpu.alloc`,
    `gpu.dealloc`, `gpu.memcpy`, `gpu.memset`) become asynchronous and are
    chained by their tokens, in program order, from one `gpu.wait async`
    (which the GPU-to-LLVM lowering makes one stream): the host queues a
    whole function's kernels without waiting for any. Allocation and
    release of device buffers are stream-ordered too (moert's adapter
    serves them from the driver's memory pool).

    The host waits (`gpu.wait`) only where it must: before an op of its own
    with memory effects (a load of a value a kernel wrote, a call), before
    an op with regions (whose blocks get their own chains), and before the
    block's terminator, so the caller finds every result written.
    `gpu.alloc host_shared` stays synchronous: it is not stream-ordered.
    A `gpu.launch` or `gpu.launch_func` that is already asynchronous joins
    the chain; a `gpu.wait async` without dependencies is replaced by the
    chain's token.

    An `scf.if` that only guards launches (no results, nothing in its else
    block, and a then block of launches, waits and pure ops without
    regions: the generators' "the grid is empty without rows") would make
    the host wait; it is replaced by its then block instead, each launch's
    grid x size `arith.select`ed to 0 when the condition fails (moert's
    adapter launches nothing for an empty grid). So a model's forward pass
    has one wait, before it returns, and its whole step can be captured as
    a CUDA graph.

    The functions of `-moe-outline-kinds` (private, marked
    `moe.outlined_kind`, one block) run on their caller's stream: each
    takes a `!gpu.async.token` as its last argument, starts its chain on
    it, and returns its chain's last token as its last result; a call of
    one passes the chain's token and goes on with the returned one, so the
    host does not wait before the call nor in the callee's return, and a
    model compiled with outlined layers still queues its whole step
    without waiting. Upstream's GPU-to-LLVM lowering can only wait for a
    stream created in the same function (it takes any other token for an
    event), so where the host must wait for a stream that came through a
    call or an argument, it calls moert's `moertMlirStreamWait` (which
    synchronizes the stream and keeps it); a block whose own stream went
    through calls gives it back at its end with `moertMlirStreamRelease`.
    The two are declared when used.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect"];
}

def MoEFuseElementwise : Pass<"moe-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Compute an element-wise linalg.generic inside its only, element-wise user";
  let description = [{
    Fuses producer into consumer where both are `linalg.generic` ops on
    tensors with parallel loops only, over as many loops, the producer's
    result has no other user and both sides index it by a permutation
    (upstream's `linalg::fuseElementwiseOps`): the consumer's body computes
    the producer's elements itself, and the intermediate tensor (a kernel
    launch and a round trip through memory on the host; a tile buffer,
    its barrier and its loads in a tile program) is gone. Repeated to a
    fixed point, a chain of element-wise ops becomes one op.

    One-to-one only: no element is computed twice (a producer read under a
    broadcasting map stays), and a consumer with reductions keeps its body
    (the contractions the GEMM and tile-contraction generators match, the
    reductions the warp and column mappings match). The arithmetic of each
    element is unchanged; where the PTX compiler may fuse a multiply into a
    following add (NVPTX contracts by default), a fused chain may round
    once where two ops rounded twice.

    The GPU pipeline (`moe-lower-to-nvvm`) runs it before bufferization,
    after the GEMM generator has taken the host code's contractions.
  }];
  let statistics = [
    Statistic<"numFusions", "num-fusions",
              "Producers computed inside their consumer">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MoEInPlaceLoopCarries : Pass<"moe-in-place-loop-carries", "::mlir::func::FuncOp"> {
  let summary = "Make the loops of scf.forall bodies update their carried tensors in place";
  let description = [{
    Runs on tensor IR before bufferization, for the GPU. In every `scf.for`
    inside an `scf.forall` body, each tensor the loop yields that is not
    already written into its iteration argument (through the destinations of
    destination-style ops: `linalg` outs, `tensor.insert_slice` dests) is
    copied into it by a `linalg.copy` right before the yield. One-shot
    bufferization then keeps every loop-carried value in the buffer of the
    loop's init instead of returning a fresh buffer from each iteration:
    the carried buffer exists once, so `-moe-map-forall-to-gpu` can give
    every tile buffer of the iteration a fixed place (shared memory or a
    per-block scratch slice) and spread the program over the block's threads.
    A KDA gradient's chunk sweeps carry their 64 x 64 state this way; the
    copy costs one tile per iteration. The CPU pipeline does not run it.
  }];
  let statistics = [
    Statistic<"numCopies", "num-copies", "Number of loop-carried tensors copied into their iteration argument">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoEMapForallToGPU : Pass<"moe-map-forall-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Turn each scf.forall of bufferized tiled IR into a GPU kernel whose threads share the tile program";
  let description = [{
    Runs on bufferized tiled IR after `-moe-prepare-gpu-mapping`. Each
    outermost `scf.forall` becomes a `gpu.launch`:

    * **Tile programs** (a body with structured ops: the fused experts,
      the lm_head loss, ...): one thread block per iteration, `block-size`
      threads. Every `linalg` op of the body is spread over the block's
      threads: its parallel dimensions, linearized (innermost fastest, so
      that neighbouring threads touch neighbouring elements), are walked
      with the thread index as start and the block size as step; its
      reductions stay sequential loops inside; a `gpu.barrier` follows it.
      Ops without a parallel dimension, and scalar writes outside
      structured ops, run on thread 0, followed by a barrier. Scalar code
      (index arithmetic, loops, loads) runs on every thread alike, so the
      control flow around each barrier is uniform.
    * The body's tile buffers (`memref.alloc` of static shape) become views
      into the block's dynamic shared memory, at offsets fixed here; when
      they need more than `shared-memory-bytes`, views into one global
      scratch buffer of that size per block, allocated before the launch
      and freed after it, except for the buffers accessed most per byte
      (bytes its ops touch through views, times the trip counts of the
      loops around them, over the buffer's size), which stay in shared
      memory as long as they fit in `partial-shared-memory-bytes`; with
      `share-spilled-tiles` (on) such a program's buffers share bytes by
      lifetime (below), and when that plan fits, all of them stay in
      shared memory. No tile is allocated from the
      device heap. With
      `share-tile-memory` (off by default: on an H100 it saved about 4 ms
      of kimi-tiny's 66 ms KDA gradient but not the training step), buffers whose lifetimes do not overlap share
      bytes: a buffer is live from its allocation to the end
      of the last operation of its block that uses it (through views; a
      loop that uses it counts whole), and for ever when a terminator or a
      loop's carried values reach it; the largest buffers are placed first,
      each at the lowest offset clear of those it overlaps, and a barrier
      precedes each buffer that shares bytes. kimi-tiny's KDA gradient
      stage then needs 321 KiB of tiles per block instead of 1,058 KiB.
    * A tile program's launch carries `nvvm.minctasm` =
      `tile-blocks-per-sm` (2), which `-moe-outline-gpu-kernels` puts on
      its kernel: the PTX compiler keeps its registers within what that
      many resident blocks allow. A tile program waits on its memory after
      every op, so a second block per SM hides more latency than registers
      do: kimi-tiny's KDA gradient stage used 248 registers (one block per
      SM) and took 26.6 ms a step on an H100, with two blocks 19.8 ms.
      A launch whose shared memory leaves room for fewer blocks (228 KiB
      per SM, 1 KiB reserved per block) asks for as many as fit.
    * With `elide-barriers` (on), a barrier of the program's top level
      goes when the ops since the last barrier kept and those up to the
      next one are independent: no byte one of them writes is read or
      written by the other (`BarrierElision.cpp`; tile buffers told apart
      by their byte ranges in the block's memory, other buffers and ops of
      unknown effects depending on everything). Warps done with one op then
      start the next instead of waiting for the block.
    * A static element-wise op of a tile program gives each thread up to
      `tile-elements-per-thread` (8) of its iterations per trip, their
      loads issued before their computations and stores (as for the
      element-wise host ops): more loads in flight per thread, where the
      program waits on its tiles' memory (kimi-tiny's training step on an
      H100: 70.3 ms of kernels with 1, 67.2 with 8; earlier 76.3 with 16,
      whose registers spill). The count is the largest up to the option
      whose trips are all full (the op's iterations a multiple of
      `block-size` times it), and the threads' loops step by the constant
      block size, so the copies need no guards and fold their index
      arithmetic: kimi-tiny's CUDA compile took 54.0 s with guarded
      copies, 22.3 s now (19.3 s with 1) on a 2-core machine.
    * **Element programs** (a body without structured ops, such as a
      scatter of indices): one thread per iteration, `block-size` threads
      per block, the last block guarded; tile buffers become
      `memref.alloca` (thread-private).

    * **Tile contractions** with `tile-contractions=tf32` (what
      `--matmul-precision=bf16`, the default, selects): a tile program's
      `out + a * b` contraction over static f32 tiles (C[m, n] from A[m, k]
      and B[k, n], each in either index order, m a multiple of 16, n and k
      of 8) runs on the block's warps with `mma.sync` m16n8k8 tf32, each
      warp taking 16 x 8 tiles of C in turn with fragments read straight
      from the tile buffers and rounded to tf32 (cvt.rna), accumulated in
      fp32. Otherwise (and with `fp32`) it is spread over threads like any
      other structured op.

    * **Host copies** between the program's buffers (not from the
      caller's memory, which stays a host copy) run on the GPU: one
      between two memrefs of the same type with identity layouts is one
      `gpu.memcpy` (the byte views of `-moe-buffer-insert-chains` are such
      destinations: the training step's gradients go into its packed
      buffer without a kernel each); any other becomes a `linalg.copy`,
      mapped like the host's other structured ops.

    A tile program with a buffer of dynamic shape keeps one thread per
    block and its buffers on the device heap (correct but slow). A forall
    whose body holds another `scf.forall` is rejected with an error.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"sharedMemoryBytes", "shared-memory-bytes", "int64_t",
           /*default=*/"200704",
           "Most dynamic shared memory per block for tile buffers (bytes; "
           "the H200 allows 232448); beyond it, tiles go to global scratch">,
    Option<"partialSharedMemoryBytes", "partial-shared-memory-bytes",
           "int64_t", /*default=*/"200704",
           "When a tile program's buffers need more than "
           "shared-memory-bytes: the shared memory per block its most "
           "accessed buffers get (bytes), the rest going to global scratch "
           "(0: all to global scratch)">,
    Option<"shareSpilledTiles", "share-spilled-tiles", "bool",
           /*default=*/"true",
           "Let the buffers of a tile program that needs more than "
           "shared-memory-bytes share bytes by lifetime, whatever "
           "share-tile-memory says">,
    Option<"shareTileMemory", "share-tile-memory", "bool", /*default=*/"false",
           "Let tile buffers whose lifetimes do not overlap share bytes "
           "(a barrier before each buffer that shares bytes); off by "
           "default: no faster training step measured">,
    Option<"tileBlocksPerSM", "tile-blocks-per-sm", "int64_t",
           /*default=*/"2",
           "Blocks of a tile program that an SM must be able to hold: its "
           "launch gets nvvm.minctasm, so the PTX compiler keeps the "
           "registers per thread within what that many blocks allow "
           "(0: no limit)">,
    Option<"tileElementsPerThread", "tile-elements-per-thread", "int64_t",
           /*default=*/"8",
           "Most iterations of a tile program's element-wise op that a "
           "thread issues together, loads first (1: one at a time)">,
    Option<"elideBarriers", "elide-barriers", "bool", /*default=*/"true",
           "Erase a tile program's barriers between stretches of ops that "
           "touch no common bytes (or only read them)">,
    Option<"tileContractions", "tile-contractions", "std::string",
           /*default=*/"\"fp32\"",
           "How tile programs' f32 matmul-like contractions run: fp32 (CUDA "
           "cores, whole output elements per thread) or tf32 (mma.sync "
           "m16n8k8 per warp, operands rounded to tf32, fp32 accumulation)">
  ];
  let statistics = [
    Statistic<"numElidedBarriers", "num-elided-barriers", "Number of tile-program barriers erased between independent ops">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def MoEGenerateGEMMKernels
    : Pass<"moe-generate-gemm-kernels", "::mlir::ModuleOp"> {
  let summary = "Generate tensor-core GEMM GPU kernels for dense projections";
  let description = [{
    The GPU back end's kernel generator for the dense contractions of the
    host code (issue #13): every projection as `TensorBuilder::project` and
    `TensorBuilder::contract` build it (the attention, KDA and gate
    projections, the shared expert's dense FFN when it is lowered to linalg)
    and every `linalg.matmul` becomes one launch of a generated tensor-core
    GEMM in the `gpu.module` `moe_gemm_kernels`, between
    `bufferization.to_buffer` of the operands and `bufferization.to_tensor`
    of the result, ahead of bufferization. It runs right after the moe ops
    are lowered to upstream tensor IR, so it sees the `linalg.generic`s that
    `-moe-map-forall-to-gpu` would otherwise turn into one thread per output
    element with a sequential reduction.

    Taken: a `linalg.generic` on tensors, outside any `scf.forall` or GPU
    op, with two inputs and one output whose loops are `[m..., n, k]`
    (all parallel but the last), maps `(m..., k)` for the input,
    `(k, n)` or `(n, k)` (transposed) for the weight and `(m..., n)` for
    the output, and the body `acc + a * b` (either order), each operand
    `arith.extf`-ed from bf16 or already f32; or a `linalg.matmul` with
    the default or a transposed-B map. The output is f32 and starts as a
    `linalg.fill` of a constant (the accumulators start at it); the input
    and weight are f32 or bf16. The reduction K must be a static multiple
    of 8 (a pipeline step takes 32; the last one reads zeros past K: MLA's
    kv-down input gradient has K = 80) and the width N a static multiple
    of 8; the leading dimensions
    (flattened into M rows) may be dynamic. Anything else is left to the
    existing path; with `remarks`, contraction-like ops that are declined
    get a remark saying why.

    The kernel: blocks of 128 rows by 128 columns (64 when N is not a
    multiple of 128), four warps of 64 rows each, `mma.sync` m16n8k16 with
    bf16 operands and fp32 accumulators fed by `ldmatrix.x4` from shared
    memory, `stages` buffers of 32 reduction elements whose 16-byte chunks
    are XOR-swizzled by row (neither the fills nor the fragment reads
    conflict on banks). bf16 operands are copied by 16-byte `cp.async`
    `stages - 2` steps ahead of use; f32 operands are loaded into
    registers one step ahead (two 16-byte loads per 8 elements), rounded
    to bf16 and stored to shared memory after the current step's MMAs.
    Rows past M and columns past N are read clamped to the last row or
    column and not stored; the grid is empty (no launch) without rows.
    The result is stored in fp32.

    Precision (`operand-type`): `bf16` (the default) rounds f32 operands
    to bf16 (8 significant bits, a relative error of at most 2^-9 per
    operand) and accumulates in fp32; `f32-exact` keeps every contraction
    with an f32 operand on the exact fp32 path and takes only those whose
    operands are both bf16 already.
  }];
  let options = [
    Option<"operandType", "operand-type", "std::string", "\"bf16\"",
           "Matmul operand precision: bf16 (f32 operands rounded to bf16, "
           "fp32 accumulation) or f32-exact (contractions with an f32 "
           "operand are not taken)">,
    Option<"stages", "stages", "int64_t", "4",
           "Shared-memory stages of the GEMM pipeline (3 to 6)">,
    Option<"remarks", "remarks", "bool", "false",
           "Emit a remark for every contraction-like op that is not taken, "
           "with the reason">
  ];
  let statistics = [
    Statistic<"numGenerated", "num-generated",
              "Number of contractions replaced by generated GEMM kernels">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // MOE_DIALECT_MOE_TRANSFORMS_PASSES_TD
