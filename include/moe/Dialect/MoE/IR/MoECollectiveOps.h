//===- MoECollectiveOps.h - moe collectives ---------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The collectives of a sharded training step
// (dialects/MoE/MoECollectiveOps.td). Kept out of MoE.h: only code that shards,
// bufferizes or lowers them includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_IR_MOECOLLECTIVEOPS_H
#define MOE_DIALECT_MOE_IR_MOECOLLECTIVEOPS_H

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"

#define GET_OP_CLASSES
#include "dialects/MoE/MoECollectiveOps.h.inc"

#endif // MOE_DIALECT_MOE_IR_MOECOLLECTIVEOPS_H
