//===- MoECollectiveOps.td - collectives over the ranks --------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// The collectives of a sharded training step (docs/Distributed.md): sums and
// gathers over the ranks of a data-parallel group. The tensor forms are what
// -moe-build-training-step and -moe-fuse-routing emit for a model that
// -moe-shard marked; bufferization turns them into the buffer forms, which a
// back end lowers to its communication library (-moe-collectives-to-runtime:
// the CPU runtime's Gloo calls). The program decides what is exchanged; the
// runtime only moves the bytes. Generated apart from MoEOps.td (their own
// .inc files, moe/Dialect/MoE/IR/MoECollectiveOps.h).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOECOLLECTIVEOPS_TD
#define MOE_DIALECT_MOE_MOECOLLECTIVEOPS_TD

include "dialects/MoE/MoEBase.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// What a collective may carry: the element types of the runtime's calls.
def MoE_CollectiveElement : AnyTypeOf<[F32, F64, I64]>;
def MoE_CollectiveTensor : RankedTensorOf<[F32, F64, I64]>;
def MoE_CollectiveBuffer : MemRefOf<[F32, F64, I64]>;
def MoE_RankCount : ConfinedAttr<I64Attr, [IntMinValue<2>]>;

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

def MoE_AllReduceOp : MoE_Op<"all_reduce", [
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
      ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
       "getAliasingValues", "bufferize", "bufferizesToAllocation",
       "getBufferType"]>]> {
  let summary = "Sum of a tensor over the ranks of a group";
  let description = [{
    Every one of the `ranks` processes of the group calls it with a tensor of
    the same shape; each gets the element-wise sum of all of them. The sum
    of fp32 values is taken in the order of the communication library (not
    bit-identical to a sum on one process); i64 sums are exact.

    Bufferization gives the result a buffer of its own (a contiguous copy
    of the input, summed in place), so the communication library always sees
    one contiguous block.

    The op has effects beyond its result (it waits for the other ranks), so
    it is never removed or merged: every rank must execute the same
    collectives in the same order, which the identical program guarantees.

    ```mlir
    %total = moe.all_reduce %grad {ranks = 2} : tensor<1024xf32>
    ```
  }];
  let arguments = (ins MoE_CollectiveTensor:$input, MoE_RankCount:$ranks);
  let results = (outs MoE_CollectiveTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// AllGatherOp
//===----------------------------------------------------------------------===//

def MoE_AllGatherOp : MoE_Op<"all_gather", [
    DeclareOpInterfaceMethods<BufferizableOpInterface,
      ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
       "getAliasingValues", "bufferize", "bufferizesToAllocation",
       "getBufferType"]>]> {
  let summary = "The tensors of every rank of a group, stacked";
  let description = [{
    Every one of the `ranks` processes calls it with a tensor of the same
    shape `S` (the runtime checks that the sizes agree and stops every rank
    with an error if not); each gets `[ranks] ++ S`, where
    `result[r] = input of rank r`.

    ```mlir
    %all = moe.all_gather %needed {ranks = 2}
        : tensor<8x?xf32> -> tensor<2x8x?xf32>
    ```
  }];
  let arguments = (ins MoE_CollectiveTensor:$input, MoE_RankCount:$ranks);
  let results = (outs MoE_CollectiveTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllReduceInPlaceOp
//===----------------------------------------------------------------------===//

def MoE_AllReduceInPlaceOp : MoE_Op<"all_reduce_in_place"> {
  let summary = "moe.all_reduce on a buffer: sums it over the ranks in place";
  let description = [{
    The buffer form of `moe.all_reduce` that bufferization leaves: the
    contiguous `buffer` (identity layout) is replaced by the sum over the
    `ranks` processes of the group.

    ```mlir
    moe.all_reduce_in_place %buffer {ranks = 2} : memref<1024xf32>
    ```
  }];
  let arguments = (ins Arg<MoE_CollectiveBuffer, "", [MemRead, MemWrite]>:$buffer,
                       MoE_RankCount:$ranks);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AllGatherIntoOp
//===----------------------------------------------------------------------===//

def MoE_AllGatherIntoOp : MoE_Op<"all_gather_into"> {
  let summary = "moe.all_gather on buffers";
  let description = [{
    The buffer form of `moe.all_gather`: `output[r]` receives the `input` of
    rank `r`. Both buffers are contiguous (identity layouts), `output` has
    the shape `[ranks] ++ shape(input)` and the same element type.

    ```mlir
    moe.all_gather_into %input, %output {ranks = 2}
        : memref<8x?xf32>, memref<2x8x?xf32>
    ```
  }];
  let arguments = (ins Arg<MoE_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<MoE_CollectiveBuffer, "", [MemWrite]>:$output,
                       MoE_RankCount:$ranks);
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOECOLLECTIVEOPS_TD
