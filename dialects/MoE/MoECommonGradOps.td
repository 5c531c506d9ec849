//===- MoECommonGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of the small layers: moe.decay_gate_grad, moe.l2_norm_grad, moe.short_conv_grad, moe.rms_norm_grad, moe.embedding_grad, moe.attn_res_mix_grad.
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD
#define MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD

include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

#endif // MOE_DIALECT_MOE_MOECOMMONGRADOPS_TD
