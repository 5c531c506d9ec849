//===- Passes.h - moe dialect passes ----------------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Declares the passes of the moe dialect and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_PASSES_H
#define MOE_DIALECT_MOE_TRANSFORMS_PASSES_H

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::moe {

#define GEN_PASS_DECL
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_PASSES_H
