//===- MoEPrimitiveOps.cpp - verifiers of the primitive moe ops -----------===//
//
// Part of the moe-mlir project.
//
// Shape rules of the primitive ops. They mirror the layouts of
// ALGORITHMS.md: activations are [B, T, H, D], states [B, H, K, V] (or
// [B, H, V, K]), routing tensors [N, k] and [E].
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "VerifyUtils.h"

#include <cmath>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

//===----------------------------------------------------------------------===//
// DecayGateOp
//===----------------------------------------------------------------------===//

LogicalResult DecayGateOp::verify() {
  if (!getGate().isBounded() && !getALog())
    return emitOpError("the softplus gate requires A_log");
  if (failed(verifyShape(*this, "raw", getRaw().getType(),
                         {kAnyDim, kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  int64_t heads = dimOf(getRaw().getType(), 2);
  int64_t keyDim = dimOf(getRaw().getType(), 3);
  if (failed(verifyShape(*this, "dt_bias", getDtBias().getType(),
                         {heads, keyDim})))
    return failure();
  if (getALog() &&
      failed(verifyShape(*this, "a_log", getALog().getType(), {heads})))
    return failure();
  return verifyShape(*this, "result", getType(), getRaw().getType().getShape());
}

//===----------------------------------------------------------------------===//
// KDAOp
//===----------------------------------------------------------------------===//

double KDAOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(dimOf(getQuery().getType(), 3)));
}

LogicalResult KDAOp::verify() {
  Value initialState = getInitialState();
  FailureOr<SmallVector<int64_t>> stateShape = verifyKDAOperands(
      *this, getQuery().getType(), getKey().getType(), getValue().getType(),
      getLogDecay().getType(), getBeta().getType(),
      initialState ? initialState.getType() : Type(), "output",
      getOutput().getType(), getStateLayout() == StateLayout::KeyMajor);
  if (failed(stateShape))
    return failure();
  if (failed(verifyShape(*this, "final_state", getFinalState().getType(),
                         *stateShape)))
    return failure();
  if (getScale())
    return verifyPositiveFinite(*this, "scale", getScale()->convertToDouble());
  return success();
}

//===----------------------------------------------------------------------===//
// L2NormOp and ShortConvOp
//===----------------------------------------------------------------------===//

LogicalResult L2NormOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult ShortConvOp::verify() {
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  return verifyShape(*this, "weight", getWeight().getType(),
                     {dimOf(getInput().getType(), 2), kAnyDim});
}

//===----------------------------------------------------------------------===//
// MLAAttentionOp
//===----------------------------------------------------------------------===//

double MLAAttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(dimOf(getQuery().getType(), 3)));
}

LogicalResult MLAAttentionOp::verify() {
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
                         {batch, heads, length})))
    return failure();
  if (getOutput().getType().getElementType() !=
      getValue().getType().getElementType())
    return emitOpError("expects the output element type ")
           << getOutput().getType().getElementType() << " to match the value's "
           << getValue().getType().getElementType();
  if (getScale())
    return verifyPositiveFinite(*this, "scale", getScale()->convertToDouble());
  return success();
}

//===----------------------------------------------------------------------===//
// RouteOp, DispatchOp, ExpertFFNOp, CombineOp
//===----------------------------------------------------------------------===//

LogicalResult RouteOp::verify() {
  int64_t experts = getRouting().getNumExperts();
  int64_t topK = getRouting().getTopK();
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t tokens = dimOf(getInput().getType(), 0);
  int64_t d = dimOf(getInput().getType(), 1);
  if (failed(verifyShape(*this, "w_router", getWRouter().getType(),
                         {experts, d})) ||
      failed(verifyShape(*this, "bias", getBias().getType(), {experts})) ||
      failed(verifyShape(*this, "weights", getWeights().getType(),
                         {tokens, topK})) ||
      failed(verifyShape(*this, "indices", getIndices().getType(),
                         {tokens, topK})) ||
      failed(verifyShape(*this, "load", getLoad().getType(), {experts})) ||
      failed(
          verifyShape(*this, "next_bias", getNextBias().getType(), {experts})))
    return failure();
  return success();
}

LogicalResult DispatchOp::verify() {
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  int64_t tokens = dimOf(getInput().getType(), 0);
  int64_t d = dimOf(getInput().getType(), 1);
  if (failed(verifyShape(*this, "indices", getIndices().getType(),
                         {tokens, kAnyDim})))
    return failure();
  int64_t slots = mulDims(tokens, dimOf(getIndices().getType(), 1));
  if (failed(verifyShape(*this, "permuted", getPermuted().getType(),
                         {slots, d})) ||
      failed(verifyShape(*this, "expert_offsets", getExpertOffsets().getType(),
                         {addDims(getNumExperts(), 1)})) ||
      failed(verifyShape(*this, "source_slot", getSourceSlot().getType(),
                         {slots})))
    return failure();
  return success();
}

LogicalResult ExpertFFNOp::verify() {
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim})) ||
      failed(verifyShape(*this, "w_gate", getWGate().getType(),
                         {kAnyDim, dimOf(getInput().getType(), 1), kAnyDim})))
    return failure();
  ArrayRef<int64_t> gateShape = getWGate().getType().getShape();
  int64_t experts = gateShape[0], d = gateShape[1], width = gateShape[2];
  if (failed(verifyShape(*this, "w_up", getWUp().getType(),
                         {experts, d, width})) ||
      failed(verifyShape(*this, "w_down", getWDown().getType(),
                         {experts, width, d})) ||
      failed(verifyShape(*this, "expert_offsets", getExpertOffsets().getType(),
                         {addDims(experts, 1)})))
    return failure();
  return success();
}

LogicalResult CombineOp::verify() {
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
      failed(verifyShape(*this, "result", getType(), {tokens, d})))
    return failure();
  return success();
}
