//===- MoECommonGradOps.cpp - gradient ops and adjoints ------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoECommonGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

using namespace mlir;
using namespace mlir::moe;

#define GET_OP_CLASSES
#include "dialects/MoE/MoECommonGradOps.cpp.inc"

void MoEDialect::registerCommonGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoECommonGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

LogicalResult DecayGateOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult L2NormOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult ShortConvOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult RMSNormOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult EmbeddingOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult AttnResMixOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}
