//===- MoELinearAttentionGradOps.td - gradient ops -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Backward ops of KDA: moe.kda_grad.
// Generated apart from MoEOps.td (their own .inc files, included through
// moe/Dialect/MoE/IR/MoEGradOps.h) so that a change here rebuilds only the
// code that builds or lowers gradients.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD
#define MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD

include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

#endif // MOE_DIALECT_MOE_MOELINEARATTENTIONGRADOPS_TD
