//===- MoECollectiveOps.cpp - moe collectives -----------------------------===//
//
// Part of the moe-mlir project.
//
// Verifiers and bufferization of the collectives (MoECollectiveOps.td).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::bufferization;

#define GET_OP_CLASSES
#include "dialects/MoE/MoECollectiveOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// `[ranks] ++ shape(input)` against `output`, dynamic sizes matching
/// anything; same element type.
static LogicalResult verifyStacked(Operation *op, ShapedType input,
                                   ShapedType output, int64_t ranks) {
  if (input.getElementType() != output.getElementType())
    return op->emitOpError("expects the result element type ")
           << output.getElementType() << " to equal the input's "
           << input.getElementType();
  if (output.getRank() != input.getRank() + 1)
    return op->emitOpError("expects a result of rank ")
           << input.getRank() + 1
           << " (the ranks, then the input's shape), got " << output;
  if (!ShapedType::isDynamic(output.getDimSize(0)) &&
      output.getDimSize(0) != ranks)
    return op->emitOpError("expects the leading result dimension to be the ")
           << ranks << " ranks, got " << output.getDimSize(0);
  for (int64_t i = 0; i < input.getRank(); ++i) {
    int64_t in = input.getDimSize(i), out = output.getDimSize(i + 1);
    if (ShapedType::isDynamic(in) != ShapedType::isDynamic(out) ||
        (!ShapedType::isDynamic(in) && in != out))
      return op->emitOpError("expects result dimension ")
             << i + 1 << " to be input dimension " << i << ": " << output
             << " is not [ranks] ++ " << input;
  }
  return success();
}

/// The buffer forms hand the runtime one contiguous block.
static LogicalResult verifyContiguous(Operation *op, MemRefType type,
                                      StringRef name) {
  if (!type.getLayout().isIdentity())
    return op->emitOpError("expects the ")
           << name << " buffer to have the identity layout, got " << type;
  return success();
}

LogicalResult AllGatherOp::verify() {
  return verifyStacked(*this, getInput().getType(), getResult().getType(),
                       getRanks());
}

LogicalResult AllReduceInPlaceOp::verify() {
  return verifyContiguous(*this, getBuffer().getType(), "reduced");
}

LogicalResult AllGatherIntoOp::verify() {
  if (failed(verifyContiguous(*this, getInput().getType(), "input")) ||
      failed(verifyContiguous(*this, getOutput().getType(), "output")))
    return failure();
  return verifyStacked(*this, getInput().getType(), getOutput().getType(),
                       getRanks());
}

//===----------------------------------------------------------------------===//
// Bufferization: each result is a fresh contiguous buffer
//===----------------------------------------------------------------------===//

/// The identity-layout buffer type of a tensor.
static MemRefType contiguousBufferType(RankedTensorType type) {
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// A fresh contiguous buffer of `type`: the sizes `leading` of its first
/// dynamic dimensions, then those of the buffer `like`.
static FailureOr<Value> allocateLike(RewriterBase &rewriter, Location loc,
                                     MemRefType type, Value like,
                                     ArrayRef<Value> leading,
                                     const BufferizationOptions &options) {
  SmallVector<Value> dynamicSizes(leading);
  auto likeType = cast<MemRefType>(like.getType());
  for (int64_t i = 0; i < likeType.getRank(); ++i)
    if (likeType.isDynamicDim(i))
      dynamicSizes.push_back(memref::DimOp::create(rewriter, loc, like, i));
  return options.createAlloc(rewriter, loc, type, dynamicSizes);
}

bool AllReduceOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return true;
}
bool AllReduceOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return false;
}
AliasingValueList AllReduceOp::getAliasingValues(OpOperand &,
                                                 const AnalysisState &) {
  return {};
}
bool AllReduceOp::bufferizesToAllocation(Value) { return true; }

FailureOr<BufferLikeType>
AllReduceOp::getBufferType(Value value, const BufferizationOptions &,
                           const BufferizationState &, SmallVector<Value> &) {
  return cast<BufferLikeType>(
      contiguousBufferType(cast<RankedTensorType>(value.getType())));
}

LogicalResult AllReduceOp::bufferize(RewriterBase &rewriter,
                                     const BufferizationOptions &options,
                                     BufferizationState &state) {
  FailureOr<Value> input = getBuffer(rewriter, getInput(), options, state);
  if (failed(input))
    return failure();
  MemRefType type = contiguousBufferType(getType());
  FailureOr<Value> sum =
      allocateLike(rewriter, getLoc(), type, *input, {}, options);
  if (failed(sum) ||
      failed(options.createMemCpy(rewriter, getLoc(), *input, *sum)))
    return failure();
  AllReduceInPlaceOp::create(rewriter, getLoc(), *sum, getRanksAttr());
  replaceOpWithBufferizedValues(rewriter, *this, *sum);
  return success();
}

bool AllGatherOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return true;
}
bool AllGatherOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return false;
}
AliasingValueList AllGatherOp::getAliasingValues(OpOperand &,
                                                 const AnalysisState &) {
  return {};
}
bool AllGatherOp::bufferizesToAllocation(Value) { return true; }

FailureOr<BufferLikeType>
AllGatherOp::getBufferType(Value value, const BufferizationOptions &,
                           const BufferizationState &, SmallVector<Value> &) {
  return cast<BufferLikeType>(
      contiguousBufferType(cast<RankedTensorType>(value.getType())));
}

LogicalResult AllGatherOp::bufferize(RewriterBase &rewriter,
                                     const BufferizationOptions &options,
                                     BufferizationState &state) {
  FailureOr<Value> input = getBuffer(rewriter, getInput(), options, state);
  if (failed(input))
    return failure();
  Location loc = getLoc();
  // The runtime reads one contiguous block: copy a strided view first.
  Value contiguous = *input;
  if (!cast<MemRefType>(input->getType()).getLayout().isIdentity()) {
    FailureOr<Value> copy =
        allocateLike(rewriter, loc, contiguousBufferType(getInput().getType()),
                     *input, {}, options);
    if (failed(copy) ||
        failed(options.createMemCpy(rewriter, loc, *input, *copy)))
      return failure();
    contiguous = *copy;
  }
  SmallVector<Value> leading;
  if (getType().isDynamicDim(0))
    leading.push_back(
        arith::ConstantIndexOp::create(rewriter, loc, getRanks()));
  FailureOr<Value> output = allocateLike(
      rewriter, loc, contiguousBufferType(getType()), *input, leading, options);
  if (failed(output))
    return failure();
  AllGatherIntoOp::create(rewriter, loc, contiguous, *output, getRanksAttr());
  replaceOpWithBufferizedValues(rewriter, *this, *output);
  return success();
}
