//===- MoELayerOps.cpp - verifiers of the layer-level moe ops -------------===//
//
// Part of the moe-mlir project.
//
// Every layer op checks each weight against the shape its math implies, so
// that a model file with a wrong head count or width fails to parse with
// the name of the offending weight instead of failing in a later pass.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "VerifyUtils.h"

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyShape(*this, "table", getTable().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  auto tokensShape = getTokens().getType().getShape();
  if (failed(verifyShape(
          *this, "result", getType(),
          concatDims(tokensShape, {dimOf(getTable().getType(), 1)}))))
    return failure();
  if (getType().getElementType() != getTable().getType().getElementType())
    return emitOpError("expects the result element type ")
           << getType().getElementType() << " to match the table's "
           << getTable().getType().getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  int64_t width = getInput().getType().getShape().back();
  if (failed(verifyShape(*this, "weight", getWeight().getType(), {width})))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// KDALayerOp
//===----------------------------------------------------------------------===//

LogicalResult KDALayerOp::verify() {
  int64_t heads = getNumHeads(), keyDim = getHeadDim(),
          valueDim = getValueDim();
  int64_t hk = mulDims(heads, keyDim), hv = mulDims(heads, valueDim);
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  int64_t d = dimOf(getInput().getType(), 2);
  if (failed(verifyShape(*this, "w_q", getWQ().getType(), {d, hk})) ||
      failed(verifyShape(*this, "w_k", getWK().getType(), {d, hk})) ||
      failed(verifyShape(*this, "w_v", getWV().getType(), {d, hv})) ||
      failed(verifyShape(*this, "conv_q", getConvQ().getType(), {hk, kAnyDim})))
    return failure();
  int64_t window = dimOf(getConvQ().getType(), 1);
  if (failed(
          verifyShape(*this, "conv_k", getConvK().getType(), {hk, window})) ||
      failed(
          verifyShape(*this, "conv_v", getConvV().getType(), {hv, window})) ||
      failed(verifyShape(*this, "w_gate_down", getWGateDown().getType(),
                         {d, kAnyDim})))
    return failure();
  int64_t gateRank = dimOf(getWGateDown().getType(), 1);
  if (failed(verifyShape(*this, "w_gate_up", getWGateUp().getType(),
                         {gateRank, hk})) ||
      failed(verifyShape(*this, "a_log", getALog().getType(), {heads})) ||
      failed(verifyShape(*this, "dt_bias", getDtBias().getType(),
                         {heads, keyDim})) ||
      failed(verifyShape(*this, "w_beta", getWBeta().getType(), {d, heads})) ||
      failed(verifyShape(*this, "w_out_gate_down", getWOutGateDown().getType(),
                         {d, kAnyDim})))
    return failure();
  int64_t outGateRank = dimOf(getWOutGateDown().getType(), 1);
  if (failed(verifyShape(*this, "w_out_gate_up", getWOutGateUp().getType(),
                         {outGateRank, hv})) ||
      failed(
          verifyShape(*this, "out_norm", getOutNorm().getType(), {valueDim})) ||
      failed(verifyShape(*this, "w_out", getWOut().getType(), {hv, d})) ||
      failed(verifyShape(*this, "result", getType(),
                         concatDims(leadingDims(getInput().getType()), {d}))))
    return failure();
  return verifyPositiveFinite(*this, "norm_eps",
                              getNormEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// MLALayerOp
//===----------------------------------------------------------------------===//

LogicalResult MLALayerOp::verify() {
  bool hasLoRA = getWQDown() || getQNorm() || getWQUp();
  if (hasLoRA && !(getWQDown() && getQNorm() && getWQUp()))
    return emitOpError("expects q_lora to give w_q_down, q_norm and w_q_up "
                       "together");
  if (static_cast<bool>(getWQ()) == hasLoRA)
    return emitOpError("expects exactly one of q(...) and q_lora(...)");

  int64_t heads = getNumHeads(), nope = getNopeHeadDim(),
          rope = getRopeHeadDim(), valueDim = getVHeadDim();
  int64_t hqk = mulDims(heads, addDims(nope, rope)),
          hv = mulDims(heads, valueDim);
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  int64_t d = dimOf(getInput().getType(), 2);

  if (getWQ()) {
    if (failed(verifyShape(*this, "w_q", getWQ().getType(), {d, hqk})))
      return failure();
  } else {
    if (failed(verifyShape(*this, "w_q_down", getWQDown().getType(),
                           {d, kAnyDim})))
      return failure();
    int64_t qRank = dimOf(getWQDown().getType(), 1);
    if (failed(verifyShape(*this, "q_norm", getQNorm().getType(), {qRank})) ||
        failed(verifyShape(*this, "w_q_up", getWQUp().getType(), {qRank, hqk})))
      return failure();
  }

  if (failed(verifyShape(*this, "w_kv_down", getWKvDown().getType(),
                         {d, kAnyDim})))
    return failure();
  int64_t kvDownWidth = dimOf(getWKvDown().getType(), 1);
  if (!ShapedType::isDynamic(kvDownWidth) && kvDownWidth <= rope)
    return emitOpError("expects w_kv_down's width (")
           << kvDownWidth << ") to exceed rope_head_dim (" << rope
           << "): it holds the latent and the shared rope key";
  int64_t kvRank =
      ShapedType::isDynamic(kvDownWidth) ? kAnyDim : kvDownWidth - rope;
  if (failed(verifyShape(*this, "kv_norm", getKvNorm().getType(), {kvRank})) ||
      failed(verifyShape(*this, "w_kv_up", getWKvUp().getType(),
                         {kvRank, mulDims(heads, addDims(nope, valueDim))})))
    return failure();
  if (getWGate() &&
      failed(verifyShape(*this, "w_gate", getWGate().getType(), {d, hv})))
    return failure();
  if (failed(verifyShape(*this, "w_out", getWOut().getType(), {hv, d})) ||
      failed(verifyShape(*this, "result", getType(),
                         concatDims(leadingDims(getInput().getType()), {d}))))
    return failure();
  return verifyPositiveFinite(*this, "norm_eps",
                              getNormEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// MoEFFNOp and GLUFFNOp
//===----------------------------------------------------------------------===//

/// Checks the three weights of a dense gated FFN of width `d`.
static LogicalResult verifyDenseFFNWeights(Operation *op, StringRef prefix,
                                           int64_t d, Type gate, Type up,
                                           Type down) {
  std::string g = (prefix + "gate").str(), u = (prefix + "up").str(),
              dn = (prefix + "down").str();
  if (failed(verifyShape(op, g, gate, {d, kAnyDim})))
    return failure();
  int64_t width = dimOf(gate, 1);
  if (failed(verifyShape(op, u, up, {d, width})) ||
      failed(verifyShape(op, dn, down, {width, d})))
    return failure();
  return success();
}

LogicalResult MoEFFNOp::verify() {
  RoutingAttr routing = getRouting();
  int64_t experts = routing.getNumExperts();
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 2)))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  if (failed(verifyShape(*this, "w_router", getWRouter().getType(),
                         {experts, d})) ||
      failed(verifyShape(*this, "router_bias", getRouterBias().getType(),
                         {experts})) ||
      failed(verifyShape(*this, "w_gate", getWGate().getType(),
                         {experts, d, kAnyDim})))
    return failure();
  int64_t width = dimOf(getWGate().getType(), 2);
  if (failed(verifyShape(*this, "w_up", getWUp().getType(),
                         {experts, d, width})) ||
      failed(verifyShape(*this, "w_down", getWDown().getType(),
                         {experts, width, d})) ||
      failed(verifyShape(*this, "load", getLoad().getType(), {experts})) ||
      failed(
          verifyShape(*this, "next_bias", getNextBias().getType(), {experts})))
    return failure();

  int numShared = static_cast<bool>(getWSharedGate()) +
                  static_cast<bool>(getWSharedUp()) +
                  static_cast<bool>(getWSharedDown());
  if (numShared == 0)
    return success();
  if (numShared != 3)
    return emitOpError("expects the shared expert's three weights together");
  return verifyDenseFFNWeights(
      *this, "w_shared_", d, getWSharedGate().getType(),
      getWSharedUp().getType(), getWSharedDown().getType());
}

LogicalResult GLUFFNOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  return verifyDenseFFNWeights(*this, "w_", d, getWGate().getType(),
                               getWUp().getType(), getWDown().getType());
}

//===----------------------------------------------------------------------===//
// AttnResOp
//===----------------------------------------------------------------------===//

/// Checks that every source has the result's type and that the query-like
/// vectors have the model width.
static LogicalResult
verifyMixOperands(Operation *op, ValueRange sources, Type resultType,
                  ArrayRef<std::pair<StringRef, Type>> vectors) {
  if (sources.empty())
    return op->emitOpError("expects at least one source");
  for (auto [index, source] : llvm::enumerate(sources)) {
    if (source.getType() != resultType)
      return op->emitOpError("expects source #")
             << index << " to have the result type " << resultType << ", got "
             << source.getType();
  }
  if (failed(verifyMinRank(op, "result", resultType, 1)))
    return failure();
  int64_t d = cast<RankedTensorType>(resultType).getShape().back();
  for (auto [name, type] : vectors)
    if (failed(verifyShape(op, name, type, {d})))
      return failure();
  return success();
}

LogicalResult AttnResOp::verify() {
  if (failed(verifyMixOperands(*this, getSources(), getType(),
                               {{"query", getQuery().getType()},
                                {"key_norm", getKeyNorm().getType()}})))
    return failure();
  // getExpectedNumSources adds up to two to sublayer / block_size.
  if (getSublayer() / getBlockSize() >
      std::numeric_limits<int64_t>::max() - 2)
    return emitOpError("expects sub-layer ")
           << getSublayer() << " to read fewer than 2^63 - 1 sources "
           << "(block_size " << getBlockSize() << ")";
  int64_t expected = getExpectedNumSources(getSublayer(), getBlockSize());
  if (static_cast<int64_t>(getSources().size()) != expected)
    return emitOpError("expects ")
           << expected << " sources for sub-layer " << getSublayer()
           << " with block_size " << getBlockSize() << ", got "
           << getSources().size();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult AttnResMixOp::verify() {
  if (failed(verifyMixOperands(*this, getSources(), getType(),
                               {{"query", getQuery().getType()}})))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// LMHeadOp, LinearCrossEntropyOp and CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult LMHeadOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  if (failed(
          verifyShape(*this, "weight", getWeight().getType(), {kAnyDim, d})) ||
      failed(verifyShape(*this, "labels", getLabels().getType(),
                         leadingDims(getInput().getType()))))
    return failure();
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 2)))
    return failure();
  int64_t d = getInput().getType().getShape().back();
  SmallVector<int64_t> tokens = leadingDims(getInput().getType());
  if (failed(
          verifyShape(*this, "weight", getWeight().getType(), {kAnyDim, d})) ||
      failed(verifyShape(*this, "labels", getLabels().getType(), tokens)) ||
      failed(verifyShape(*this, "lse", getLse().getType(), tokens)))
    return failure();
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyMinRank(*this, "logits", getLogits().getType(), 1)))
    return failure();
  return verifyShape(*this, "labels", getLabels().getType(),
                     leadingDims(getLogits().getType()));
}
