//===- MoEModelToFunc.cpp - moe.model to a function of packed params ------===//
//
// Part of the moe-mlir project.
//
// Implements -convert-moe-model-to-func: a model becomes a function whose
// first argument packs all of its parameters into one fp32 buffer, so that
// every model has the same calling convention whatever its parameters.
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/MoEModelToFunc/MoEModelToFunc.h"

#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_CONVERTMOEMODELTOFUNC
#include "moe/Conversion/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "convert-moe-model-to-func"

SmallVector<ParamSlot> mlir::moe::getParamLayout(ModelOp model) {
  SmallVector<ParamSlot> layout;
  int64_t offset = 0;
  model.getBody().walk<WalkOrder::PreOrder>([&](ParamOp param) {
    layout.push_back({param, offset});
    offset += param.getNumElements();
  });
  return layout;
}

int64_t mlir::moe::getNumParamScalars(ModelOp model) {
  int64_t total = 0;
  model.getBody().walk([&](ParamOp param) { total += param.getNumElements(); });
  return total;
}

/// The value of `slot`'s parameter read out of `packed`: its range, shaped
/// and converted to the parameter's type.
static Value buildParamView(ImplicitLocOpBuilder &b, Value packed,
                            ParamSlot slot) {
  RankedTensorType type = slot.param.getType();
  int64_t size = type.getNumElements();
  Type f32 = b.getF32Type();
  auto flatType = RankedTensorType::get({size}, f32);
  Value flat = tensor::ExtractSliceOp::create(
      b, flatType, packed, /*offsets=*/ValueRange{}, /*sizes=*/ValueRange{},
      /*strides=*/ValueRange{}, b.getDenseI64ArrayAttr({slot.offset}),
      b.getDenseI64ArrayAttr({size}), b.getDenseI64ArrayAttr({1}));

  auto shapedType = RankedTensorType::get(type.getShape(), f32);
  Value shaped = flat;
  if (type.getRank() == 0) {
    shaped = tensor::CollapseShapeOp::create(b, shapedType, flat,
                                             ArrayRef<ReassociationIndices>{});
  } else if (type.getRank() > 1) {
    ReassociationIndices all =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    shaped = tensor::ExpandShapeOp::create(b, shapedType, flat,
                                           ArrayRef<ReassociationIndices>{all});
  }
  TensorBuilder tb(b);
  return tb.convert(shaped, type.getElementType());
}

func::FuncOp mlir::moe::convertModelToFunc(ModelOp model,
                                           RewriterBase &rewriter) {
  SmallVector<ParamSlot> layout = getParamLayout(model);
  int64_t total = getNumParamScalars(model);
  Block &body = model.getBody().front();
  auto terminator = cast<ReturnOp>(body.getTerminator());

  auto packedType = RankedTensorType::get({total}, rewriter.getF32Type());
  SmallVector<Type> inputs = {packedType};
  llvm::append_range(inputs, body.getArgumentTypes());
  auto functionType = rewriter.getFunctionType(
      inputs, TypeRange{terminator.getLoss().getType()});

  rewriter.setInsertionPoint(model);
  auto func = func::FuncOp::create(rewriter, model.getLoc(), model.getSymName(),
                                   functionType);
  rewriter.inlineRegionBefore(model.getBody(), func.getBody(), func.end());
  Block &entry = func.getBody().front();
  Value packed = entry.insertArgument(0u, packedType, model.getLoc());

  for (ParamSlot slot : layout) {
    rewriter.setInsertionPoint(slot.param);
    ImplicitLocOpBuilder b(slot.param.getLoc(), rewriter);
    rewriter.replaceOp(slot.param, buildParamView(b, packed, slot));
  }

  rewriter.setInsertionPoint(terminator);
  rewriter.replaceOpWithNewOp<func::ReturnOp>(terminator, terminator.getLoss());
  rewriter.eraseOp(model);
  return func;
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct ConvertMoEModelToFuncPass
    : public moe::impl::ConvertMoEModelToFuncBase<ConvertMoEModelToFuncPass> {
  void runOnOperation() override;
};
} // namespace

void ConvertMoEModelToFuncPass::runOnOperation() {
  // Collect first: the rewrite erases the models it walks over.
  SmallVector<ModelOp> models;
  for (auto model : getOperation().getOps<ModelOp>())
    models.push_back(model);
  IRRewriter rewriter(&getContext());
  for (ModelOp model : models)
    convertModelToFunc(model, rewriter);
}
