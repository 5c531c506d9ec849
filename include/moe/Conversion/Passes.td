//===- Passes.td - moe conversion passes -----------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Declarations of the passes that convert moe ops into upstream dialects.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_PASSES_TD
#define MOE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertMoEToLinalg : Pass<"convert-moe-to-linalg"> {
  let summary = "Lower element-wise and normalisation moe primitives to linalg";
  let description = [{
    Rewrites the moe primitives that are plain tensor algebra into
    `linalg.generic` ops on tensors plus `arith`, `math` and `tensor` ops,
    following ALGORITHMS.md:

    * `moe.l2_norm`: `x / sqrt(sum(x^2) + eps)` over the last dimension
      (section 1.2);
    * `moe.rms_norm`: `x * rsqrt(mean(x^2) + eps) * w` (section 7.2);
    * `moe.decay_gate`: both gates of section 2.1, with or without `A_log`;
      the softplus is evaluated as `max(x, 0) + log1p(exp(-|x|))`, which
      neither overflows nor loses the small values;
    * `moe.short_conv`: a left zero `tensor.pad` of `W - 1` steps and one
      contraction over the window, then the optional SiLU (section 1.2);
    * `moe.cross_entropy`: max, log-sum-exp and the picked logit per token,
      then the mean over the tokens whose label is not `ignore_index`
      (section 7.2; the mean of no token is NaN);
    * `moe.embedding`: a gather of table rows with `tensor.extract`;
    * `moe.glu_ffn`: `act(x Wg, x Wu) Wd` with the contractions and the
      activation (SwiGLU or SiTU-GLU, sections 6 and 7.1) in fp32;
    * `moe.attn_res_mix`: per source the RMS-normalised score against the
      query, a softmax over the sources (shifted by their max) and the
      weighted sum of the raw sources (sections 5.1 and 5.5);
    * the gradient ops of `MoECommonGradOps.td` (`moe.decay_gate_grad`,
      `moe.l2_norm_grad`, `moe.rms_norm_grad`, `moe.short_conv_grad`,
      `moe.embedding_grad`, `moe.attn_res_mix_grad`): element-wise generics
      for the input gradients, fp32 reductions over the tokens for the
      weight gradients (sections 1.2, 2.1, 5.3, 7.2), and for the embedding
      a `scf.for` over the tokens in order that adds each gradient row to
      its id's row (a deterministic scatter-add; ids outside the table add
      nothing).

    Reductions, norms, gates and the loss are computed in fp32 and the result
    is converted back to the op's element type. Batch and sequence
    dimensions, and any dimension the ops allow to be dynamic, may be
    dynamic. Other ops (`moe.kda`, routing, attention, ...) are left
    unchanged: this is a partial conversion.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def ConvertMoEModelToFunc : Pass<"convert-moe-model-to-func", "ModuleOp"> {
  let summary = "Turn each moe.model into a function of its packed parameters";
  let description = [{
    Rewrites every `moe.model @name` of the module into

    ```mlir
    func.func @name(%params: tensor<Nxf32>, %tokens: ..., %labels: ...)
        -> tensor<f32>
    ```

    where `%params` holds all `N` scalars of the model's parameters, packed
    one after the other in the order the `moe.param` ops appear in the body
    (depth first), each in row-major order. Every `moe.param` becomes a
    `tensor.extract_slice` of its range, a `tensor.expand_shape` (or
    `tensor.collapse_shape` for a 0-d parameter) to its shape and, when its
    element type is not f32, a conversion: the packed values are the fp32
    master weights (ALGORITHMS.md section 7.4). `moe.return` becomes
    `func.return`. The body's other ops move unchanged.

    The packing is the calling convention between compiled models and the
    program that initialises and feeds them (`moe-compile`'s driver); the
    same order and offsets are what `mlir::moe::getParamLayout` returns.

    Input: verified `moe.model` ops (the layer ops may or may not be
    decomposed yet). Output: no `moe.model`, `moe.param` or `moe.return`
    remain.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def MoELowerDynamicExpandShape : Pass<"moe-lower-dynamic-expand-shape"> {
  let summary = "Turn memref.expand_shape with several dynamic sizes in one "
                "group into memref.reinterpret_cast";
  let description = [{
    A `memref.expand_shape` that splits one dimension into several dynamic
    ones (`memref<?x256xf32>` into `memref<?x?x256xf32>`, as when a model
    with a dynamic batch and sequence unflattens its tokens) becomes a
    `memref.reinterpret_cast` of the source's base buffer
    (`memref.extract_strided_metadata`) with the source's offset, the op's
    output sizes, and in each group the strides
    `stride[j] = stride[j + 1] * size[j + 1]`, the last one being the
    source dimension's stride.

    MLIR 22's `-expand-strided-metadata` crashes on exactly these ops, so
    `moe-lower-to-cpu` runs this pass right before it. Every other
    `expand_shape` is left to `-expand-strided-metadata`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def MoEContractionsToBLAS : Pass<"moe-contractions-to-blas", "::mlir::ModuleOp"> {
  let summary = "Replace fp32 contraction linalg ops on buffers by calls to "
                "the CPU runtime's BLAS-backed moe_cpu_contract_f32";
  let description = [{
    A linalg op on memrefs with two fp32 inputs A, B and one fp32 output C,
    projected-permutation indexing maps and the body
    `C += A * B` (`arith.mulf` of the two inputs, `arith.addf` with the
    output, in either operand order) is a contraction: its loop dimensions
    are K (reductions, in A and B), M (in A and C only), N (in B and C
    only) and batch (in all three). One or two K dimensions (two: a weight
    gradient summed over tokens [B, T]) and at most two outer dimensions
    besides one M and one N (batch dimensions, further M or N dimensions,
    or output-only ones) are handled; the op becomes a call to

      func.func private @moe_cpu_contract_f32(index x 26)

    with each operand's aligned pointer and offset, the loop sizes, and
    each operand's element stride along M, N, K, the outer K and the outer
    dimensions (0 where the operand lacks one). The runtime (lib/CpuRuntime)
    folds dimensions that continue M, N or K contiguously into it and calls
    OpenBLAS's cblas_sgemm on each slice whose matrices have a unit stride,
    a loop nest otherwise.

    The call accumulates into C (beta = 1), as the op does; BLAS sums the K
    products in its own order, so results differ from the loop nest's in
    the last bits. Ops whose static trip count is below `min-macs`
    multiply-adds are left alone, as is anything else.
  }];
  let options = [
    Option<"minMacs", "min-macs", "int64_t", /*default=*/"4096",
           "Leave contractions with fewer static multiply-adds than this "
           "as loops (dynamic sizes always qualify)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def MoECollectivesToRuntime
    : Pass<"moe-collectives-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Replace the buffer forms of the collectives by calls to the "
                "distributed runtime (Gloo on the CPU)";
  let description = [{
    `moe.all_reduce_in_place %buffer {ranks = D}` becomes

      func.call @moe_dist_all_reduce_sum(%data, %count, %dtype)
          : (index, index, index) -> ()

    `moe.expert_rank` becomes `func.call @moe_dist_group_rank(1)`,
    `moe.all_to_all_into %in, %out` a call of `@moe_dist_all_to_all(%in,
    %out, %bytes_per_rank, 1)` and `moe.all_to_all_v_into %in, %send,
    %out, %recv` one of `@moe_dist_all_to_all_v(%in, %send_bytes, %out,
    %recv_bytes, 1)` with the row counts turned into byte counts on the
    stack (group 1: this rank's expert-parallel group);
    `moe.all_gather_into %input, %output {ranks = D}`

      func.call @moe_dist_all_gather(%in, %out, %bytes_per_rank)
          : (index, index, index) -> ()

    where `%data`, `%in` and `%out` are the addresses of the buffers' first
    elements (aligned pointer plus offset), `%count` the number of elements, `%dtype`
    0 for f32, 1 for i64 and 2 for f64, and `%bytes_per_rank` the input's
    size in bytes (lib/DistRuntime/DistRuntime.h). The buffers are
    contiguous (the ops' verifiers ask for identity layouts). The runtime
    checks at start-up that the world size is the `ranks` the program was
    compiled for, and every collective checks that the ranks agree on the
    size.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // MOE_CONVERSION_PASSES_TD
