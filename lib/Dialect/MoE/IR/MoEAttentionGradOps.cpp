//===- MoEAttentionGradOps.cpp - gradient ops and adjoints ------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoEAttentionGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

using namespace mlir;
using namespace mlir::moe;

#define GET_OP_CLASSES
#include "dialects/MoE/MoEAttentionGradOps.cpp.inc"

void MoEDialect::registerAttentionGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoEAttentionGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

LogicalResult MLAAttentionOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult CrossEntropyOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}
