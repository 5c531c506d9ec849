//===- Passes.h - moe conversion passes -------------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Declares the conversion passes of moe-mlir and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_PASSES_H
#define MOE_CONVERSION_PASSES_H

#include "moe/Conversion/MoEModelToFunc/MoEModelToFunc.h"
#include "moe/Conversion/MoEToLinalg/MoEToLinalg.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::moe {

/// Adds the pattern of -moe-lower-dynamic-expand-shape: a
/// `memref.expand_shape` with a group of several dynamic sizes becomes a
/// `memref.reinterpret_cast`.
void populateLowerDynamicExpandShapePatterns(RewritePatternSet &patterns);

#define GEN_PASS_DECL
#include "moe/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moe/Conversion/Passes.h.inc"

} // namespace mlir::moe

#endif // MOE_CONVERSION_PASSES_H
