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
include "dialects/MoE/MoETypes.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// What a collective may carry: the element types of the runtime's calls.
def MoE_CollectiveElement : AnyTypeOf<[F32, F64, I64]>;
def MoE_CollectiveTensor : RankedTensorOf<[F32, F64, I64]>;
def MoE_CollectiveBuffer : MemRefOf<[F32, F64, I64]>;
def MoE_RankCount : ConfinedAttr<I64Attr, [IntMinValue<2>]>;

// A collective on tensors. Its result bufferizes to a fresh contiguous
// buffer that the buffer form fills: it reads its operands, writes none of
// them and aliases nothing. Each op defines only `bufferize`.
class MoE_TensorCollectiveOp<string mnemonic, list<Trait> traits = []>
    : MoE_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<BufferizableOpInterface,
          ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
           "getAliasingValues", "bufferize", "bufferizesToAllocation",
           "getBufferType"]>])> {
  let extraClassDefinition = [{
    bool $cppClass::bufferizesToMemoryRead(
        ::mlir::OpOperand &, const ::mlir::bufferization::AnalysisState &) {
      return true;
    }
    bool $cppClass::bufferizesToMemoryWrite(
        ::mlir::OpOperand &, const ::mlir::bufferization::AnalysisState &) {
      return false;
    }
    ::mlir::bufferization::AliasingValueList $cppClass::getAliasingValues(
        ::mlir::OpOperand &, const ::mlir::bufferization::AnalysisState &) {
      return {};
    }
    bool $cppClass::bufferizesToAllocation(::mlir::Value) { return true; }
    ::mlir::FailureOr<::mlir::bufferization::BufferLikeType>
    $cppClass::getBufferType(::mlir::Value value,
                             const ::mlir::bufferization::BufferizationOptions &,
                             const ::mlir::bufferization::BufferizationState &,
                             ::llvm::SmallVector<::mlir::Value> &) {
      auto type = ::llvm::cast<::mlir::RankedTensorType>(value.getType());
      return ::llvm::cast<::mlir::bufferization::BufferLikeType>(
          ::mlir::MemRefType::get(type.getShape(), type.getElementType()));
    }
  }];
}

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

def MoE_AllReduceOp : MoE_TensorCollectiveOp<"all_reduce", [
    SameOperandsAndResultType]> {
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

def MoE_AllGatherOp : MoE_TensorCollectiveOp<"all_gather"> {
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

//===----------------------------------------------------------------------===//
// Expert-parallel exchanges
//===----------------------------------------------------------------------===//

def MoE_ExpertRankOp : MoE_Op<"expert_rank", [Pure]> {
  let summary = "This process's rank in its expert-parallel group";
  let description = [{
    The rank, in `[0, ranks)`, of this process inside its expert-parallel
    group: the `ranks` consecutive processes `[(r / ranks) * ranks,
    (r / ranks + 1) * ranks)` of the world (docs/Distributed.md). It owns the
    experts `[rank * E / ranks, (rank + 1) * E / ranks)` of every MoE layer.

    ```mlir
    %rank = moe.expert_rank {ranks = 2}
    ```
  }];
  let arguments = (ins MoE_RankCount:$ranks);
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

def MoE_AllToAllOp : MoE_TensorCollectiveOp<"all_to_all", [
    SameOperandsAndResultType]> {
  let summary = "Blocks exchanged between the ranks of an expert-parallel group";
  let description = [{
    `input: [ranks, ...]`: every rank of the expert-parallel group sends
    block `q` to group rank `q`; `result[p]` is the block that group rank `p`
    sent to this rank.

    ```mlir
    %recv = moe.all_to_all %send {ranks = 2} : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins MoE_CollectiveTensor:$input, MoE_RankCount:$ranks);
  let results = (outs MoE_CollectiveTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def MoE_AllToAllVOp : MoE_TensorCollectiveOp<"all_to_all_v"> {
  let summary = "Ragged row exchange between the ranks of an expert-parallel group";
  let description = [{
    `input: [M, ...]` holds the rows for group rank 0, then those for rank 1,
    ...: `send_rows[q]` rows for rank `q` (`sum(send_rows) = M`). The result
    holds the `recv_rows[p]` rows that group rank `p` sent to this rank, in
    `p` order; `total = sum(recv_rows)` is its number of rows. What rank `p`
    sends to `q` must be what `q` expects from `p` (the runtime checks and
    stops every rank otherwise).

    ```mlir
    %rows = moe.all_to_all_v %sorted, %send, %recv, %total {ranks = 2}
        : (tensor<?x64xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins MoE_FloatTensor:$input, MoE_I64Tensor:$send_rows,
                       MoE_I64Tensor:$recv_rows, Index:$total,
                       MoE_RankCount:$ranks);
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $send_rows `,` $recv_rows `,` $total attr-dict `:`
    `(` type($input) `,` type($send_rows) `,` type($recv_rows) `)` `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def MoE_AllToAllIntoOp : MoE_Op<"all_to_all_into"> {
  let summary = "moe.all_to_all on buffers";
  let description = [{
    The buffer form of `moe.all_to_all`: contiguous `input` and `output` of
    the same type `[ranks, ...]`.
  }];
  let arguments = (ins Arg<MoE_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<MoE_CollectiveBuffer, "", [MemWrite]>:$output,
                       MoE_RankCount:$ranks);
  let assemblyFormat = [{
    $input `,` $output attr-dict `:` type($input) `,` type($output)
  }];
  let hasVerifier = 1;
}

def MoE_AllToAllVIntoOp : MoE_Op<"all_to_all_v_into"> {
  let summary = "moe.all_to_all_v on buffers";
  let description = [{
    The buffer form of `moe.all_to_all_v`: contiguous row-major `input` and
    `output` of the same element type and row shape, and the row counts.
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$input,
                       Arg<MemRefOf<[I64]>, "", [MemRead]>:$send_rows,
                       Arg<AnyMemRef, "", [MemWrite]>:$output,
                       Arg<MemRefOf<[I64]>, "", [MemRead]>:$recv_rows,
                       MoE_RankCount:$ranks);
  let assemblyFormat = [{
    $input `,` $send_rows `,` $output `,` $recv_rows attr-dict `:`
    type($input) `,` type($send_rows) `,` type($output) `,` type($recv_rows)
  }];
  let hasVerifier = 1;
}

#endif // MOE_DIALECT_MOE_MOECOLLECTIVEOPS_TD
