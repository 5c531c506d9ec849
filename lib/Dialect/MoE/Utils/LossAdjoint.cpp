//===- LossAdjoint.cpp - Pieces of the cross-entropy's adjoint ------------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Utils/LossAdjoint.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::moe;

Value moe::buildIsValid(OpBuilder &b, Location loc, Value label,
                        int64_t ignoreIndex) {
  Value ignore = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(label.getType(), ignoreIndex));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, label, ignore);
}

Value moe::buildTokenCoefficients(ImplicitLocOpBuilder &b, TensorBuilder &tb,
                                  Value labels, Value dLoss,
                                  int64_t ignoreIndex) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  int64_t rank = tensorTypeOf(labels).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap scalarMap = AffineMap::get(rank, 0, {}, ctx);
  Value count = tb.generic(
      {labels}, {identity}, {tb.filled({}, f32, 0.0)}, {scalarMap}, rank, 0,
      [&](OpBuilder &nb, Location loc, ValueRange args) -> SmallVector<Value> {
        Value valid = buildIsValid(nb, loc, args[0], ignoreIndex);
        Value one = floatConstant(nb, loc, f32, 1.0);
        Value zero = floatConstant(nb, loc, f32, 0.0);
        Value counted = arith::SelectOp::create(nb, loc, valid, one, zero);
        return {arith::AddFOp::create(nb, loc, args[1], counted)};
      })[0];
  return tb.mapIndexed(
      tb.sizesOf(labels), {labels, dLoss, count},
      {identity, scalarMap, scalarMap}, f32,
      [&](OpBuilder &nb, Location loc, ValueRange args) -> Value {
        Value valid = buildIsValid(nb, loc, args[0], ignoreIndex);
        Value scale = arith::DivFOp::create(nb, loc, args[1], args[2]);
        return arith::SelectOp::create(nb, loc, valid, scale,
                                       floatConstant(nb, loc, f32, 0.0));
      });
}

Value moe::buildLogitAdjoint(OpBuilder &b, Location loc, Value z, Value lse,
                             Value coefficient, Value label, Value column,
                             Value offset) {
  Type f32 = b.getF32Type();
  Value shifted = arith::SubFOp::create(b, loc, z, lse);
  Value probability = math::ExpOp::create(b, loc, shifted);
  Value vocabIndex = arith::AddIOp::create(b, loc, column, offset);
  Value labelIndex =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), label);
  Value isLabel = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        vocabIndex, labelIndex);
  Value oneHot =
      arith::SelectOp::create(b, loc, isLabel, floatConstant(b, loc, f32, 1.0),
                              floatConstant(b, loc, f32, 0.0));
  Value difference = arith::SubFOp::create(b, loc, probability, oneHot);
  return arith::MulFOp::create(b, loc, coefficient, difference);
}
