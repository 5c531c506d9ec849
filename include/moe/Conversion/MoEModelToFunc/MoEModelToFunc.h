//===- MoEModelToFunc.h - moe.model to a function of packed params -*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The packed-parameter layout of a model and the rewrite of a `moe.model`
// into a `func.func` that takes its parameters as one fp32 buffer.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CONVERSION_MOEMODELTOFUNC_MOEMODELTOFUNC_H
#define MOE_CONVERSION_MOEMODELTOFUNC_MOEMODELTOFUNC_H

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class RewriterBase;

namespace moe {

/// Where one parameter lives in the packed buffer of its model.
struct ParamSlot {
  ParamOp param;
  /// Index of its first scalar in the buffer.
  int64_t offset;
};

/// The packed layout of `model`'s parameters: every `moe.param` of the body
/// in walk (pre-order) order, each right after the previous one. This is
/// the order `-convert-moe-model-to-func` and every program that fills the
/// buffer agree on.
SmallVector<ParamSlot> getParamLayout(ModelOp model);

/// The total number of scalars of `model`'s parameters.
int64_t getNumParamScalars(ModelOp model);

/// Replaces `model` with a `func.func` of the same name taking
/// `(params: tensor<Nxf32>, tokens, labels)` and returning the loss (see
/// `-convert-moe-model-to-func`). Returns the new function.
func::FuncOp convertModelToFunc(ModelOp model, RewriterBase &rewriter);

} // namespace moe
} // namespace mlir

#endif // MOE_CONVERSION_MOEMODELTOFUNC_MOEMODELTOFUNC_H
