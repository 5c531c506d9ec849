//===- MoEToLinalg.h - Lower moe primitives to linalg -----------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Patterns that rewrite moe primitives (norms, decay gate, short conv,
// cross-entropy, embedding) into linalg/arith/math/tensor ops on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_MOETOLINALG_MOETOLINALG_H
#define MOE_CONVERSION_MOETOLINALG_MOETOLINALG_H

namespace mlir {
class ConversionTarget;
class RewritePatternSet;

namespace moe {

/// Adds the patterns that lower `moe.l2_norm`, `moe.rms_norm`,
/// `moe.decay_gate`, `moe.short_conv`, `moe.cross_entropy` and
/// `moe.embedding` to linalg-on-tensors IR.
void populateMoEToLinalgPatterns(RewritePatternSet &patterns);

/// Marks the ops that `populateMoEToLinalgPatterns` lowers illegal in
/// `target`.
void configureMoEToLinalgTarget(ConversionTarget &target);

} // namespace moe
} // namespace mlir

#endif // MOE_CONVERSION_MOETOLINALG_MOETOLINALG_H
