//===- MoETypes.td - operand constraints of moe ops ------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Type and attribute constraints shared by the forward ops (MoEOps.td) and
// the gradient ops (MoE*GradOps.td), which are generated separately.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOETYPES_TD
#define MOE_DIALECT_MOE_MOETYPES_TD

include "dialects/MoE/MoEBase.td"

def MoE_FloatTensor : RankedTensorOf<[AnyFloat]>;
def MoE_F32Tensor : RankedTensorOf<[F32]>;
def MoE_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def MoE_I64Tensor : RankedTensorOf<[I64]>;
def MoE_ScalarF32Tensor : 0DTensorOf<[F32]>;

def MoE_PositiveI64Attr : ConfinedAttr<I64Attr, [IntPositive]>;
def MoE_NonNegativeI64Attr : ConfinedAttr<I64Attr, [IntNonNegative]>;

#endif // MOE_DIALECT_MOE_MOETYPES_TD
