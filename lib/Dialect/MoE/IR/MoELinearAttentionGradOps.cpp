//===- MoELinearAttentionGradOps.cpp - gradient ops and adjoints ----------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoELinearAttentionGradOps.td (registration, verifiers)
// and the DifferentiableOpInterface of the forward ops that emit them.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

#include "VerifyUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

#define GET_OP_CLASSES
#include "dialects/MoE/MoELinearAttentionGradOps.cpp.inc"

void MoEDialect::registerLinearAttentionGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoELinearAttentionGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// KDAGradOp
//===----------------------------------------------------------------------===//

double KDAGradOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(dimOf(getQuery().getType(), 3)));
}

LogicalResult KDAGradOp::verify() {
  Value initialState = getInitialState();
  FailureOr<SmallVector<int64_t>> stateShape = verifyKDAOperands(
      *this, getQuery().getType(), getKey().getType(), getValue().getType(),
      getLogDecay().getType(), getBeta().getType(),
      initialState ? initialState.getType() : Type(), "output_adjoint",
      getOutputAdjoint().getType(), getStateLayout() == StateLayout::KeyMajor);
  if (failed(stateShape))
    return failure();
  if (getFinalStateAdjoint() &&
      failed(verifyShape(*this, "final_state_adjoint",
                         getFinalStateAdjoint().getType(), *stateShape)))
    return failure();
  if (failed(verifyShape(*this, "d_initial_state", getDInitialState().getType(),
                         *stateShape)))
    return failure();

  // Each gradient has the type of the value it belongs to.
  auto sameType = [&](StringRef name, Value gradient, StringRef of,
                      Value operand) -> LogicalResult {
    if (gradient.getType() == operand.getType())
      return success();
    return emitOpError("expects ")
           << name << " to have the type of " << of << " (" << operand.getType()
           << "), got " << gradient.getType();
  };
  if (failed(sameType("d_query", getDQuery(), "query", getQuery())) ||
      failed(sameType("d_key", getDKey(), "key", getKey())) ||
      failed(sameType("d_value", getDValue(), "value", getValue())) ||
      failed(sameType("d_log_decay", getDLogDecay(), "log_decay",
                      getLogDecay())) ||
      failed(sameType("d_beta", getDBeta(), "beta", getBeta())))
    return failure();
  if (getInitialState() &&
      failed(sameType("d_initial_state", getDInitialState(), "initial_state",
                      getInitialState())))
    return failure();
  if (getScale())
    return verifyPositiveFinite(*this, "scale", getScale()->convertToDouble());
  return success();
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

/// A zero tensor of the (possibly dynamically shaped) type of `like`.
static Value zerosLike(OpBuilder &b, Location loc, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  Value zero =
      arith::ConstantOp::create(b, loc, type.getElementType(),
                                b.getFloatAttr(type.getElementType(), 0.0));
  Value filled =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
          .getResult(0);
  if (filled.getType() != type)
    filled = tensor::CastOp::create(b, loc, type, filled);
  return filled;
}

LogicalResult KDAOp::buildAdjoints(OpBuilder &b, ValueRange resultAdjoints,
                                   SmallVectorImpl<Value> &operandAdjoints) {
  operandAdjoints.assign(getNumOperands(), Value());
  Value outputAdjoint = resultAdjoints[0];
  Value finalStateAdjoint = resultAdjoints[1];
  // Neither result reaches the loss: no gradient flows.
  if (!outputAdjoint && !finalStateAdjoint)
    return success();
  Location loc = getLoc();
  if (!outputAdjoint)
    outputAdjoint = zerosLike(b, loc, getOutput());

  Type stateType = getInitialState() ? getInitialState().getType()
                                     : getFinalState().getType();
  auto grad = KDAGradOp::create(
      b, loc, getQuery().getType(), getKey().getType(), getValue().getType(),
      getLogDecay().getType(), getBeta().getType(), stateType, getQuery(),
      getKey(), getValue(), getLogDecay(), getBeta(), getInitialState(),
      outputAdjoint, finalStateAdjoint, getScaleAttr(), getStateLayoutAttr());
  operandAdjoints[0] = grad.getDQuery();
  operandAdjoints[1] = grad.getDKey();
  operandAdjoints[2] = grad.getDValue();
  operandAdjoints[3] = grad.getDLogDecay();
  operandAdjoints[4] = grad.getDBeta();
  if (getInitialState())
    operandAdjoints[5] = grad.getDInitialState();
  return success();
}
