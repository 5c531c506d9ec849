//===- MoERoutingGradOps.cpp - gradient ops and adjoints ------------------===//
//
// Part of the moe-mlir project.
//
// The gradient ops of MoERoutingGradOps.td (registration, verifiers) and the
// DifferentiableOpInterface of the forward ops that emit them.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"

using namespace mlir;
using namespace mlir::moe;

#define GET_OP_CLASSES
#include "dialects/MoE/MoERoutingGradOps.cpp.inc"

void MoEDialect::registerRoutingGradOps() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoERoutingGradOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Adjoints (DifferentiableOpInterface)
//===----------------------------------------------------------------------===//

LogicalResult RouteOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult DispatchOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult ExpertFFNOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult GLUFFNOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}

LogicalResult CombineOp::buildAdjoints(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &) {
  return emitOpError("has no adjoint yet");
}
