//===- MoE.h - moe dialect, attributes and ops ------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Declares the moe dialect by including the classes generated from
// dialects/MoE/*.td.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_IR_MOE_H
#define MOE_DIALECT_MOE_IR_MOE_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/MoE/MoEDialect.h.inc"
#include "dialects/MoE/MoEEnums.h.inc"
#include "dialects/MoE/MoEInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/MoE/MoEAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/MoE/MoEOps.h.inc"

#endif // MOE_DIALECT_MOE_IR_MOE_H
