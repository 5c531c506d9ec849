//===- Passes.h - moe conversion passes -------------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Declares the conversion passes of moe-mlir and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_PASSES_H
#define MOE_CONVERSION_PASSES_H

#include "moe/Conversion/MoEToLinalg/MoEToLinalg.h"

#include "mlir/Pass/Pass.h"

namespace mlir::moe {

#define GEN_PASS_DECL
#include "moe/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moe/Conversion/Passes.h.inc"

} // namespace mlir::moe

#endif // MOE_CONVERSION_PASSES_H
