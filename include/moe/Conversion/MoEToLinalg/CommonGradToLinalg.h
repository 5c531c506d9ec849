//===- CommonGradToLinalg.h - Lower the common gradient ops -----*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Patterns of -convert-moe-to-linalg that lower the gradient ops of
// MoECommonGradOps.td (decay gate, L2 and RMS norms, short convolution,
// embedding, attention-residual mix) to linalg-on-tensors IR for the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_MOETOLINALG_COMMONGRADTOLINALG_H
#define MOE_CONVERSION_MOETOLINALG_COMMONGRADTOLINALG_H

namespace mlir {
class ConversionTarget;
class RewritePatternSet;

namespace moe {

/// Adds the patterns that lower `moe.decay_gate_grad`, `moe.l2_norm_grad`,
/// `moe.short_conv_grad`, `moe.rms_norm_grad`, `moe.embedding_grad` and
/// `moe.attn_res_mix_grad` to linalg, tensor, scf, arith and math ops.
void populateCommonGradToLinalgPatterns(RewritePatternSet &patterns);

/// Marks the ops that `populateCommonGradToLinalgPatterns` lowers illegal in
/// `target`.
void configureCommonGradToLinalgTarget(ConversionTarget &target);

} // namespace moe
} // namespace mlir

#endif // MOE_CONVERSION_MOETOLINALG_COMMONGRADTOLINALG_H
