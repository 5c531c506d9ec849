//===- MoEGradOps.h - moe gradient ops --------------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The backward ops that -moe-build-training-step emits through
// DifferentiableOpInterface. Kept out of MoE.h: only code that builds or
// lowers gradients includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_IR_MOEGRADOPS_H
#define MOE_DIALECT_MOE_IR_MOEGRADOPS_H

#include "moe/Dialect/MoE/IR/MoE.h"

#define GET_OP_CLASSES
#include "dialects/MoE/MoELinearAttentionGradOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/MoE/MoECommonGradOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/MoE/MoEAttentionGradOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/MoE/MoERoutingGradOps.h.inc"

#endif // MOE_DIALECT_MOE_IR_MOEGRADOPS_H
