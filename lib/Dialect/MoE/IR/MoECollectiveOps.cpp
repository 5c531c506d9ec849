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

/// `[ranks, ...]`: the leading dimension holds one block per rank.
static LogicalResult verifyBlocks(Operation *op, ShapedType type,
                                  int64_t ranks) {
  if (type.getRank() < 1 ||
      (!type.isDynamicDim(0) && type.getDimSize(0) != ranks))
    return op->emitOpError("expects a leading dimension of the ")
           << ranks << " ranks, got " << type;
  return success();
}

/// Row-major rows `[M, ...]` in and `[R, ...]` out: the same element type
/// and row shape.
static LogicalResult verifyRows(Operation *op, ShapedType input,
                                ShapedType output) {
  if (input.getElementType() != output.getElementType())
    return op->emitOpError("expects the result element type ")
           << output.getElementType() << " to equal the input's "
           << input.getElementType();
  if (input.getRank() < 1 || output.getRank() != input.getRank())
    return op->emitOpError("expects rows of the same shape in and out, got ")
           << input << " and " << output;
  for (int64_t i = 1; i < input.getRank(); ++i)
    if (input.getDimSize(i) != output.getDimSize(i))
      return op->emitOpError("expects rows of the same shape in and out, got ")
             << input << " and " << output;
  return success();
}

/// One row count per rank.
static LogicalResult verifyCounts(Operation *op, ShapedType counts,
                                  StringRef name, int64_t ranks) {
  if (counts.getRank() != 1 ||
      (!counts.isDynamicDim(0) && counts.getDimSize(0) != ranks))
    return op->emitOpError("expects ")
           << name << " to hold one count per rank (" << ranks << "), got "
           << counts;
  return success();
}

LogicalResult AllToAllOp::verify() {
  return verifyBlocks(*this, getInput().getType(), getRanks());
}

LogicalResult AllToAllVOp::verify() {
  if (failed(verifyRows(*this, getInput().getType(), getResult().getType())) ||
      failed(verifyCounts(*this, getSendRows().getType(), "send_rows",
                          getRanks())) ||
      failed(verifyCounts(*this, getRecvRows().getType(), "recv_rows",
                          getRanks())))
    return failure();
  return success();
}

LogicalResult AllToAllIntoOp::verify() {
  if (failed(verifyContiguous(*this, getInput().getType(), "input")) ||
      failed(verifyContiguous(*this, getOutput().getType(), "output")))
    return failure();
  if (getInput().getType() != getOutput().getType())
    return emitOpError("expects the input and output buffers to have one "
                       "type, got ")
           << getInput().getType() << " and " << getOutput().getType();
  return verifyBlocks(*this, getInput().getType(), getRanks());
}

LogicalResult AllToAllVIntoOp::verify() {
  auto input = cast<MemRefType>(getInput().getType());
  auto output = cast<MemRefType>(getOutput().getType());
  if (failed(verifyContiguous(*this, input, "input")) ||
      failed(verifyContiguous(*this, output, "output")) ||
      failed(verifyContiguous(*this, getSendRows().getType(), "send_rows")) ||
      failed(verifyContiguous(*this, getRecvRows().getType(), "recv_rows")) ||
      failed(verifyRows(*this, input, output)) ||
      failed(verifyCounts(*this, getSendRows().getType(), "send_rows",
                          getRanks())) ||
      failed(verifyCounts(*this, getRecvRows().getType(), "recv_rows",
                          getRanks())))
    return failure();
  return success();
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

/// `buffer` (of the tensor `tensor`) itself when it is contiguous, else a
/// contiguous copy: the runtime reads one block.
static FailureOr<Value> makeContiguous(RewriterBase &rewriter, Location loc,
                                       Value buffer, Value tensor,
                                       const BufferizationOptions &options) {
  if (cast<MemRefType>(buffer.getType()).getLayout().isIdentity())
    return buffer;
  FailureOr<Value> copy = allocateLike(
      rewriter, loc,
      contiguousBufferType(cast<RankedTensorType>(tensor.getType())), buffer,
      {}, options);
  if (failed(copy) ||
      failed(options.createMemCpy(rewriter, loc, buffer, *copy)))
    return failure();
  return *copy;
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

LogicalResult AllGatherOp::bufferize(RewriterBase &rewriter,
                                     const BufferizationOptions &options,
                                     BufferizationState &state) {
  FailureOr<Value> input = getBuffer(rewriter, getInput(), options, state);
  if (failed(input))
    return failure();
  Location loc = getLoc();
  FailureOr<Value> contiguous =
      makeContiguous(rewriter, loc, *input, getInput(), options);
  if (failed(contiguous))
    return failure();
  SmallVector<Value> leading;
  if (getType().isDynamicDim(0))
    leading.push_back(
        arith::ConstantIndexOp::create(rewriter, loc, getRanks()));
  FailureOr<Value> output = allocateLike(
      rewriter, loc, contiguousBufferType(getType()), *input, leading, options);
  if (failed(output))
    return failure();
  AllGatherIntoOp::create(rewriter, loc, *contiguous, *output, getRanksAttr());
  replaceOpWithBufferizedValues(rewriter, *this, *output);
  return success();
}

LogicalResult AllToAllOp::bufferize(RewriterBase &rewriter,
                                    const BufferizationOptions &options,
                                    BufferizationState &state) {
  FailureOr<Value> input = getBuffer(rewriter, getInput(), options, state);
  if (failed(input))
    return failure();
  Location loc = getLoc();
  FailureOr<Value> contiguous =
      makeContiguous(rewriter, loc, *input, getInput(), options);
  if (failed(contiguous))
    return failure();
  FailureOr<Value> output = allocateLike(
      rewriter, loc, contiguousBufferType(getType()), *input, {}, options);
  if (failed(output))
    return failure();
  AllToAllIntoOp::create(rewriter, loc, *contiguous, *output, getRanksAttr());
  replaceOpWithBufferizedValues(rewriter, *this, *output);
  return success();
}

LogicalResult AllToAllVOp::bufferize(RewriterBase &rewriter,
                                     const BufferizationOptions &options,
                                     BufferizationState &state) {
  Location loc = getLoc();
  SmallVector<Value> contiguous;
  for (Value tensor : {getInput(), getSendRows(), getRecvRows()}) {
    FailureOr<Value> buffer = getBuffer(rewriter, tensor, options, state);
    if (failed(buffer))
      return failure();
    FailureOr<Value> block =
        makeContiguous(rewriter, loc, *buffer, tensor, options);
    if (failed(block))
      return failure();
    contiguous.push_back(*block);
  }
  // [total, row shape of the input].
  SmallVector<Value> leading;
  if (getType().isDynamicDim(0))
    leading.push_back(getTotal());
  MemRefType type = contiguousBufferType(getType());
  SmallVector<Value> dynamicSizes(leading);
  auto inputType = cast<MemRefType>(contiguous[0].getType());
  for (int64_t i = 1; i < inputType.getRank(); ++i)
    if (inputType.isDynamicDim(i))
      dynamicSizes.push_back(
          memref::DimOp::create(rewriter, loc, contiguous[0], i));
  FailureOr<Value> output =
      options.createAlloc(rewriter, loc, type, dynamicSizes);
  if (failed(output))
    return failure();
  AllToAllVIntoOp::create(rewriter, loc, contiguous[0], contiguous[1], *output,
                          contiguous[2], getRanksAttr());
  replaceOpWithBufferizedValues(rewriter, *this, *output);
  return success();
}
