//===- MoEInterfaces.td - moe op interfaces --------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOEINTERFACES_TD
#define MOE_DIALECT_MOE_MOEINTERFACES_TD

include "mlir/IR/OpBase.td"

def MoE_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::moe";
  let description = [{
    An op whose reverse-mode derivative -moe-build-training-step can build.
    Given the adjoint (the gradient of the loss) of each of the op's results,
    the op builds, at the builder's insertion point, the ops that compute the
    adjoint of each of its operands: usually one gradient op of the dialect
    (`moe.kda_grad`, ...), so that each back end can give it its own kernel.

    Conventions: an adjoint has the type of the value it belongs to; a null
    result adjoint means "zero" (the result does not reach the loss, or it
    is not differentiable, like routing indices); a null operand adjoint
    means that no gradient flows into that operand (integer operands, the
    router's selection bias, ...).
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the adjoints of the operands from `resultAdjoints` (one per
        result, null for zero). Fills `operandAdjoints` with one value per
        operand, null where none flows. Fails (with an error on the op) when
        the op cannot be differentiated, for example when every result
        adjoint it needs is null yet some operand adjoint is required.
      }],
      "::llvm::LogicalResult", "buildAdjoints",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultAdjoints,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandAdjoints)>
  ];
}

#endif // MOE_DIALECT_MOE_MOEINTERFACES_TD
