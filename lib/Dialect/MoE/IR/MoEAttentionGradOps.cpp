//===- MoEAttentionGradOps.cpp - gradient ops and adjoints
//------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoEAttentionGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them: attention
// (moe.mla_attention) and the loss (moe.linear_cross_entropy,
// moe.cross_entropy).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

#include "VerifyUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

#define GET_OP_CLASSES
#include "dialects/MoE/MoEAttentionGradOps.cpp.inc"

void MoEDialect::registerAttentionGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoEAttentionGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// Fails unless `result` has the type of `operand`, the value it is the
/// adjoint of.
static LogicalResult verifyAdjointType(Operation *op, StringRef name,
                                       Value result, StringRef operandName,
                                       Value operand) {
  if (result.getType() == operand.getType())
    return success();
  return op->emitOpError("expects ")
         << name << " to have the type of " << operandName << " ("
         << operand.getType() << "), got " << result.getType();
}

double MLAAttentionGradOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(dimOf(getQuery().getType(), 3)));
}

LogicalResult MLAAttentionGradOp::verify() {
  if (failed(verifyShape(*this, "query", getQuery().getType(),
                         {kAnyDim, kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  ArrayRef<int64_t> qShape = getQuery().getType().getShape();
  int64_t batch = qShape[0], length = qShape[1], heads = qShape[2];
  if (ShapedType::isDynamic(qShape[3]))
    return emitOpError("expects a static query/key head dimension");
  if (failed(verifyShape(*this, "key", getKey().getType(), qShape)) ||
      failed(verifyShape(*this, "value", getValue().getType(),
                         {batch, length, heads, kAnyDim})))
    return failure();
  ArrayRef<int64_t> vShape = getValue().getType().getShape();
  if (getGate() &&
      failed(verifyShape(*this, "gate", getGate().getType(), vShape)))
    return failure();
  if (failed(verifyShape(*this, "output", getOutput().getType(), vShape)) ||
      failed(verifyShape(*this, "lse", getLse().getType(),
                         {batch, heads, length})) ||
      failed(verifyShape(*this, "d_output", getDOutput().getType(), vShape)))
    return failure();
  if (static_cast<bool>(getGate()) != static_cast<bool>(getDGate()))
    return emitOpError("expects a d_gate result exactly when there is a gate "
                       "operand");
  if (failed(verifyAdjointType(*this, "d_query", getDQuery(), "query",
                               getQuery())) ||
      failed(verifyAdjointType(*this, "d_key", getDKey(), "key", getKey())) ||
      failed(verifyAdjointType(*this, "d_value", getDValue(), "value",
                               getValue())) ||
      (getGate() && failed(verifyAdjointType(*this, "d_gate", getDGate(),
                                             "gate", getGate()))))
    return failure();
  if (getScale())
    return verifyPositiveFinite(*this, "scale", getScale()->convertToDouble());
  return success();
}

/// Shared by the two cross-entropy adjoints: `labels` (and `lse` when given)
/// have the leading shape of `input`, whose last dimension is `d`.
static LogicalResult verifyTokenOperands(Operation *op, StringRef inputName,
                                         Type input, Value labels, Value lse) {
  if (failed(verifyMinRank(op, inputName, input, lse ? 2 : 1)))
    return failure();
  SmallVector<int64_t> tokens = leadingDims(input);
  if (failed(verifyShape(op, "labels", labels.getType(), tokens)))
    return failure();
  if (lse && failed(verifyShape(op, "lse", lse.getType(), tokens)))
    return failure();
  return success();
}

LogicalResult LinearCrossEntropyGradOp::verify() {
  if (failed(verifyTokenOperands(*this, "input", getInput().getType(),
                                 getLabels(), getLse())))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  if (failed(verifyShape(*this, "weight", getWeight().getType(), {kAnyDim, d})))
    return failure();
  if (failed(verifyAdjointType(*this, "d_input", getDInput(), "input",
                               getInput())) ||
      failed(verifyAdjointType(*this, "d_weight", getDWeight(), "weight",
                               getWeight())))
    return failure();
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyTokenOperands(*this, "logits", getLogits().getType(),
                                 getLabels(), Value())))
    return failure();
  return verifyAdjointType(*this, "d_logits", getDLogits(), "logits",
                           getLogits());
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

/// Fails on `op` when the adjoint of its log-sum-exp result is set: the
/// log-sum-exp is kept for the backward pass and has no adjoint.
static LogicalResult verifyNoLseAdjoint(Operation *op, Value lseAdjoint) {
  if (!lseAdjoint)
    return success();
  return op->emitOpError("has no adjoint for its lse result (it is kept for "
                         "the backward pass only), but one was given");
}

LogicalResult
MLAAttentionOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                              SmallVectorImpl<Value> &operandAdjoints) {
  if (failed(verifyNoLseAdjoint(*this, resultAdjoints[1])))
    return failure();
  operandAdjoints.assign(getNumOperands(), Value());
  Value dOutput = resultAdjoints[0];
  if (!dOutput)
    return success();
  SmallVector<Type> types = {getQuery().getType(), getKey().getType(),
                             getValue().getType()};
  if (getGate())
    types.push_back(getGate().getType());
  auto grad = MLAAttentionGradOp::create(
      builder, getLoc(), types, getQuery(), getKey(), getValue(), getGate(),
      getOutput(), getLse(), dOutput, getScaleAttr());
  // Operands: query, key, value, then the gate when present.
  for (unsigned i = 0, e = grad.getNumResults(); i < e; ++i)
    operandAdjoints[i] = grad.getResult(i);
  return success();
}

LogicalResult
LinearCrossEntropyOp::buildAdjoints(OpBuilder &builder,
                                    ValueRange resultAdjoints,
                                    SmallVectorImpl<Value> &operandAdjoints) {
  if (failed(verifyNoLseAdjoint(*this, resultAdjoints[1])))
    return failure();
  operandAdjoints.assign(getNumOperands(), Value());
  Value dLoss = resultAdjoints[0];
  if (!dLoss)
    return success();
  auto grad = LinearCrossEntropyGradOp::create(
      builder, getLoc(), getInput().getType(), getWeight().getType(),
      getInput(), getWeight(), getLabels(), getLse(), dLoss,
      getIgnoreIndexAttr());
  // Operands: input, weight, labels (an integer tensor: no adjoint).
  operandAdjoints[0] = grad.getDInput();
  operandAdjoints[1] = grad.getDWeight();
  return success();
}

LogicalResult
CrossEntropyOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                              SmallVectorImpl<Value> &operandAdjoints) {
  operandAdjoints.assign(getNumOperands(), Value());
  Value dLoss = resultAdjoints[0];
  if (!dLoss)
    return success();
  // Operands: logits, labels (an integer tensor: no adjoint).
  operandAdjoints[0] = CrossEntropyGradOp::create(
      builder, getLoc(), getLogits().getType(), getLogits(), getLabels(), dLoss,
      getIgnoreIndexAttr());
  return success();
}
