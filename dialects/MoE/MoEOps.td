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
def MoE_FloatTensor : RankedTensorOf<[AnyFloat]>;
def MoE_F32Tensor : RankedTensorOf<[F32]>;
def MoE_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def MoE_I64Tensor : RankedTensorOf<[I64]>;
def MoE_ScalarF32Tensor : 0DTensorOf<[F32]>;

def MoE_PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;
def MoE_NonNegativeI64Attr : ConfinedAttr<I64Attr, [IntNonNegative]>;

include "dialects/MoE/MoEStructureOps.td"
include "dialects/MoE/MoELayerOps.td"
include "dialects/MoE/MoEPrimitiveOps.td"

#endif // MOE_DIALECT_MOE_MOEOPS_TD
