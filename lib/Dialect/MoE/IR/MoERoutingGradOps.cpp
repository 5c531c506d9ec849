//===- MoERoutingGradOps.cpp - gradient ops and adjoints ------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoERoutingGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them: moe.route,
// moe.dispatch, moe.expert_ffn, moe.glu_ffn and moe.combine.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"

#include "VerifyUtils.h"

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

#define GET_OP_CLASSES
#include "dialects/MoE/MoERoutingGradOps.cpp.inc"

void MoEDialect::registerRoutingGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoERoutingGradOps.cpp.inc"
      >();
  // The collectives (MoECollectiveOps.td) ride on this hook: a hook of
  // their own in MoEBase.td would rebuild every file that includes MoE.h.
  addOperations<AllReduceOp, AllGatherOp, AllReduceInPlaceOp, AllGatherIntoOp,
                ExpertRankOp, AllToAllOp, AllToAllVOp, AllToAllIntoOp,
                AllToAllVIntoOp>();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult RouteGradOp::verify() {
  int64_t experts = getRouting().getNumExperts();
  int64_t topK = getRouting().getTopK();
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t tokens = dimOf(getInput().getType(), 0);
  int64_t d = dimOf(getInput().getType(), 1);
  if (failed(verifyShape(*this, "w_router", getWRouter().getType(),
                         {experts, d})) ||
      failed(verifyShape(*this, "indices", getIndices().getType(),
                         {tokens, topK})) ||
      failed(verifyShape(*this, "weights_grad", getWeightsGrad().getType(),
                         {tokens, topK})))
    return failure();
  return success();
}

LogicalResult DispatchGradOp::verify() {
  if (failed(verifyShape(*this, "indices", getIndices().getType(),
                         {kAnyDim, kAnyDim})) ||
      failed(verifyShape(*this, "permuted_grad", getPermutedGrad().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t tokens = dimOf(getIndices().getType(), 0);
  int64_t slots = mulDims(tokens, dimOf(getIndices().getType(), 1));
  int64_t d = dimOf(getPermutedGrad().getType(), 1);
  if (failed(verifyShape(*this, "permuted_grad", getPermutedGrad().getType(),
                         {slots, d})) ||
      failed(verifyShape(*this, "source_slot", getSourceSlot().getType(),
                         {slots})) ||
      failed(verifyShape(*this, "input_grad", getInputGrad().getType(),
                         {tokens, d})))
    return failure();
  if (getInputGrad().getType().getElementType() !=
      getPermutedGrad().getType().getElementType())
    return emitOpError("expects input_grad to have the element type of "
                       "permuted_grad, got ")
           << getInputGrad().getType().getElementType() << " and "
           << getPermutedGrad().getType().getElementType();
  return success();
}

/// Checks the three weights of an expert group (`experts` may be kAnyDim
/// for the dense FFN, which then has rank-2 weights) against width `d`.
static LogicalResult verifyGatedWeights(Operation *op, bool grouped, int64_t d,
                                        Type gate, Type up, Type down) {
  SmallVector<int64_t> gateShape = {d, kAnyDim};
  if (grouped)
    gateShape.insert(gateShape.begin(), kAnyDim);
  if (failed(verifyShape(op, "w_gate", gate, gateShape)))
    return failure();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(gate).getShape();
  int64_t width = shape.back();
  SmallVector<int64_t> upShape = {d, width}, downShape = {width, d};
  if (grouped) {
    upShape.insert(upShape.begin(), shape.front());
    downShape.insert(downShape.begin(), shape.front());
  }
  if (failed(verifyShape(op, "w_up", up, upShape)) ||
      failed(verifyShape(op, "w_down", down, downShape)))
    return failure();
  return success();
}

LogicalResult ExpertFFNGradOp::verify() {
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t d = dimOf(getInput().getType(), 1);
  if (failed(verifyGatedWeights(*this, /*grouped=*/true, d,
                                getWGate().getType(), getWUp().getType(),
                                getWDown().getType())))
    return failure();
  int64_t experts = dimOf(getWGate().getType(), 0);
  return verifyShape(*this, "expert_offsets", getExpertOffsets().getType(),
                     {addDims(experts, 1)});
}

LogicalResult GLUFFNGradOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  return verifyGatedWeights(*this, /*grouped=*/false, d, getWGate().getType(),
                            getWUp().getType(), getWDown().getType());
}

LogicalResult CombineGradOp::verify() {
  if (failed(verifyShape(*this, "expert_output", getExpertOutput().getType(),
                         {kAnyDim, kAnyDim})) ||
      failed(verifyShape(*this, "weights", getWeights().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t tokens = dimOf(getWeights().getType(), 0);
  int64_t slots = mulDims(tokens, dimOf(getWeights().getType(), 1));
  int64_t d = dimOf(getExpertOutput().getType(), 1);
  if (failed(verifyShape(*this, "expert_output", getExpertOutput().getType(),
                         {slots, d})) ||
      failed(verifyShape(*this, "source_slot", getSourceSlot().getType(),
                         {slots})) ||
      failed(verifyShape(*this, "result_grad", getResultGrad().getType(),
                         {tokens, d})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

/// Fills `operandAdjoints` with one null per operand of `op`: no gradient
/// flows (every result adjoint it needs is zero).
static LogicalResult noGradient(Operation *op,
                                SmallVectorImpl<Value> &operandAdjoints) {
  operandAdjoints.assign(op->getNumOperands(), Value());
  return success();
}

LogicalResult RouteOp::buildAdjoints(OpBuilder &builder,
                                     ValueRange resultAdjoints,
                                     SmallVectorImpl<Value> &operandAdjoints) {
  // Only the weights carry a gradient: indices, load and next_bias are
  // integers or balancer state.
  Value weightsGrad = resultAdjoints[0];
  if (!weightsGrad)
    return noGradient(*this, operandAdjoints);
  auto grad = RouteGradOp::create(
      builder, getLoc(), getInput().getType(), getWRouter().getType(),
      getInput(), getWRouter(), getIndices(), weightsGrad, getRouting());
  operandAdjoints.assign({grad.getInputGrad(), grad.getWRouterGrad(), Value()});
  return success();
}

LogicalResult
DispatchOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                          SmallVectorImpl<Value> &operandAdjoints) {
  Value permutedGrad = resultAdjoints[0];
  if (!permutedGrad)
    return noGradient(*this, operandAdjoints);
  Value inputGrad =
      DispatchGradOp::create(builder, getLoc(), getInput().getType(),
                             permutedGrad, getSourceSlot(), getIndices());
  operandAdjoints.assign({inputGrad, Value()});
  return success();
}

LogicalResult
ExpertFFNOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                           SmallVectorImpl<Value> &operandAdjoints) {
  Value resultGrad = resultAdjoints[0];
  if (!resultGrad)
    return noGradient(*this, operandAdjoints);
  auto grad = ExpertFFNGradOp::create(
      builder, getLoc(),
      TypeRange{getInput().getType(), getWGate().getType(), getWUp().getType(),
                getWDown().getType()},
      getInput(), getExpertOffsets(), getWGate(), getWUp(), getWDown(),
      resultGrad, getActivation());
  operandAdjoints.assign({grad.getInputGrad(), Value(), grad.getWGateGrad(),
                          grad.getWUpGrad(), grad.getWDownGrad()});
  return success();
}

LogicalResult GLUFFNOp::buildAdjoints(OpBuilder &builder,
                                      ValueRange resultAdjoints,
                                      SmallVectorImpl<Value> &operandAdjoints) {
  Value resultGrad = resultAdjoints[0];
  if (!resultGrad)
    return noGradient(*this, operandAdjoints);
  auto grad =
      GLUFFNGradOp::create(builder, getLoc(),
                           TypeRange{getInput().getType(), getWGate().getType(),
                                     getWUp().getType(), getWDown().getType()},
                           getInput(), getWGate(), getWUp(), getWDown(),
                           resultGrad, getActivation());
  operandAdjoints.assign({grad.getInputGrad(), grad.getWGateGrad(),
                          grad.getWUpGrad(), grad.getWDownGrad()});
  return success();
}

LogicalResult
CombineOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                         SmallVectorImpl<Value> &operandAdjoints) {
  Value resultGrad = resultAdjoints[0];
  if (!resultGrad)
    return noGradient(*this, operandAdjoints);
  auto grad = CombineGradOp::create(
      builder, getLoc(),
      TypeRange{getExpertOutput().getType(), getWeights().getType()},
      getExpertOutput(), getSourceSlot(), getWeights(), resultGrad);
  operandAdjoints.assign(
      {grad.getExpertOutputGrad(), Value(), grad.getWeightsGrad()});
  return success();
}
