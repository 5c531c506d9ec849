//===- MoEOps.td - moe dialect operations ----------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// All moe ops. They are grouped by level into the files included below: the
// model structure (model, param, return), the layer ops that a model
// description uses, and the primitive ops that `-moe-decompose` produces.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEOPS_TD
#define MOE_DIALECT_MOE_MOEOPS_TD

include "dialects/MoE/MoEBase.td"
include "dialects/MoE/MoEAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Operand types shared by all moe ops.
include "dialects/MoE/MoETypes.td"
include "dialects/MoE/MoEInterfaces.td"

include "dialects/MoE/MoEStructureOps.td"
include "dialects/MoE/MoELayerOps.td"
include "dialects/MoE/MoEPrimitiveOps.td"

#endif // MOE_DIALECT_MOE_MOEOPS_TD
