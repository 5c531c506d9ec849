//===- MoEOps.cpp - generated moe op definitions --------------------------===//
//
// Part of the moe-mlir project.
//
// Instantiates the op classes generated from dialects/MoE/MoEOps.td. The
// hand-written verifiers live next to their op group in MoE*Ops.cpp.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::moe;

#define GET_OP_CLASSES
#include "dialects/MoE/MoEOps.cpp.inc"
