//===- MoECommonGradOps.cpp - gradient ops and adjoints ------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoECommonGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them: the decay
// gate, the L2 and RMS norms, the short convolution, the embedding and the
// attention-residual mix.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

#include "VerifyUtils.h"

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

#define GET_OP_CLASSES
#include "dialects/MoE/MoECommonGradOps.cpp.inc"

void MoEDialect::registerCommonGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoECommonGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

/// Checks that the gradient `name` has the type of the operand it belongs
/// to, `operandName`.
static LogicalResult verifyGradType(Operation *op, StringRef name, Type type,
                                    StringRef operandName, Type expected) {
  if (type == expected)
    return success();
  return op->emitOpError("expects ")
         << name << " to have the type of " << operandName << ", " << expected
         << ", got " << type;
}

LogicalResult DecayGateGradOp::verify() {
  if (!getGate().isBounded() && !getALog())
    return emitOpError("the softplus gate requires A_log");
  if (failed(verifyShape(*this, "raw", getRaw().getType(),
                         {kAnyDim, kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  ArrayRef<int64_t> rawShape = getRaw().getType().getShape();
  int64_t heads = rawShape[2], keyDim = rawShape[3];
  if (failed(verifyShape(*this, "dt_bias", getDtBias().getType(),
                         {heads, keyDim})))
    return failure();
  if (getALog() &&
      failed(verifyShape(*this, "a_log", getALog().getType(), {heads})))
    return failure();
  if (failed(verifyShape(*this, "grad", getGrad().getType(), rawShape)))
    return failure();
  if (failed(verifyGradType(*this, "raw_grad", getRawGrad().getType(), "raw",
                            getRaw().getType())) ||
      failed(verifyGradType(*this, "dt_bias_grad", getDtBiasGrad().getType(),
                            "dt_bias", getDtBias().getType())))
    return failure();
  if (static_cast<bool>(getALog()) != static_cast<bool>(getALogGrad()))
    return emitOpError("expects an a_log_grad result exactly when a_log is "
                       "given");
  if (getALog())
    return verifyGradType(*this, "a_log_grad", getALogGrad().getType(), "a_log",
                          getALog().getType());
  return success();
}

LogicalResult L2NormGradOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult ShortConvGradOp::verify() {
  if (failed(verifyShape(*this, "input", getInput().getType(),
                         {kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  return verifyShape(*this, "weight", getWeight().getType(),
                     {dimOf(getInput().getType(), 2), kAnyDim});
}

LogicalResult RMSNormGradOp::verify() {
  if (failed(verifyMinRank(*this, "input", getInput().getType(), 1)))
    return failure();
  int64_t width = getInput().getType().getShape().back();
  if (failed(verifyShape(*this, "weight", getWeight().getType(), {width})))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyShape(*this, "table", getTable().getType(),
                         {kAnyDim, kAnyDim})))
    return failure();
  if (failed(verifyShape(*this, "grad", getGrad().getType(),
                         concatDims(getTokens().getType().getShape(),
                                    {dimOf(getTable().getType(), 1)}))))
    return failure();
  if (getGrad().getType().getElementType() !=
      getTable().getType().getElementType())
    return emitOpError("expects the grad element type ")
           << getGrad().getType().getElementType() << " to match the table's "
           << getTable().getType().getElementType();
  return success();
}

LogicalResult AttnResMixGradOp::verify() {
  OperandRange sources = getSources();
  if (sources.empty())
    return emitOpError("expects at least one source");
  Type gradType = getGrad().getType();
  for (auto [index, source] : llvm::enumerate(sources))
    if (source.getType() != gradType)
      return emitOpError("expects source #")
             << index << " to have the grad type " << gradType << ", got "
             << source.getType();
  if (failed(verifyMinRank(*this, "grad", gradType, 1)))
    return failure();
  if (failed(verifyShape(*this, "query", getQuery().getType(),
                         {cast<RankedTensorType>(gradType).getShape().back()})))
    return failure();
  if (getSourceGrads().size() != sources.size())
    return emitOpError("expects one source gradient per source (")
           << sources.size() << "), got " << getSourceGrads().size();
  for (auto [index, sourceGrad] : llvm::enumerate(getSourceGrads()))
    if (sourceGrad.getType() != gradType)
      return emitOpError("expects source gradient #")
             << index << " to have the sources' type " << gradType << ", got "
             << sourceGrad.getType();
  if (failed(verifyGradType(*this, "query_grad", getQueryGrad().getType(),
                            "query", getQuery().getType())))
    return failure();
  return verifyPositiveFinite(*this, "epsilon", getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

/// Fills `operandAdjoints` with `numOperands` nulls: a zero result adjoint
/// gives every operand a zero (absent) gradient.
static LogicalResult noGradient(Operation *op,
                                SmallVectorImpl<Value> &operandAdjoints) {
  operandAdjoints.assign(op->getNumOperands(), Value());
  return success();
}

LogicalResult
DecayGateOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                           SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  SmallVector<Type> types = {getRaw().getType(), getDtBias().getType()};
  if (getALog())
    types.push_back(getALog().getType());
  auto gradOp = DecayGateGradOp::create(builder, getLoc(), types, getGate(),
                                        grad, getRaw(), getDtBias(), getALog());
  operandAdjoints.assign(gradOp->result_begin(), gradOp->result_end());
  return success();
}

LogicalResult L2NormOp::buildAdjoints(OpBuilder &builder,
                                      ValueRange resultAdjoints,
                                      SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  Value inputGrad =
      L2NormGradOp::create(builder, getLoc(), getInput().getType(), grad,
                           getInput(), getEpsilonAttr());
  operandAdjoints.assign({inputGrad});
  return success();
}

LogicalResult
ShortConvOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                           SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  auto gradOp = ShortConvGradOp::create(builder, getLoc(), getInput().getType(),
                                        getWeight().getType(), grad, getInput(),
                                        getWeight(), getSiluAttr());
  operandAdjoints.assign({gradOp.getInputGrad(), gradOp.getWeightGrad()});
  return success();
}

LogicalResult
RMSNormOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                         SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  auto gradOp = RMSNormGradOp::create(builder, getLoc(), getInput().getType(),
                                      getWeight().getType(), grad, getInput(),
                                      getWeight(), getEpsilonAttr());
  operandAdjoints.assign({gradOp.getInputGrad(), gradOp.getWeightGrad()});
  return success();
}

LogicalResult
EmbeddingOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                           SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  Value tableGrad = EmbeddingGradOp::create(
      builder, getLoc(), getTable().getType(), grad, getTokens(), getTable());
  // Token ids are integers: no gradient.
  operandAdjoints.assign({Value(), tableGrad});
  return success();
}

LogicalResult
AttnResMixOp::buildAdjoints(OpBuilder &builder, ValueRange resultAdjoints,
                            SmallVectorImpl<Value> &operandAdjoints) {
  Value grad = resultAdjoints.front();
  if (!grad)
    return noGradient(*this, operandAdjoints);
  SmallVector<Type> sourceTypes(getSources().getTypes());
  auto gradOp = AttnResMixGradOp::create(
      builder, getLoc(), sourceTypes, getQuery().getType(), grad, getSources(),
      getQuery(), getEpsilonAttr());
  operandAdjoints.assign(gradOp.getSourceGrads().begin(),
                         gradOp.getSourceGrads().end());
  operandAdjoints.push_back(gradOp.getQueryGrad());
  return success();
}
