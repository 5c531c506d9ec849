//===- TimeWindowSum.cpp - A short convolution without a padded copy ------===//
//
// Part of the moe-mlir project.
//
// The short convolution's window sum as one element-wise generic: on the
// GPU, the padded copy (a fill and a copy), the accumulator's fill and the
// separate activation pass each cost a kernel over the whole activation.
//
//===----------------------------------------------------------------------===//

#include "TimeWindowSum.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::moe;

Value mlir::moe::timeWindowSum(ImplicitLocOpBuilder &b, TensorBuilder &tb,
                               Value input, Value weight, WindowSide side,
                               ValueRange extras, Type resultElementType,
                               WindowEpilogue epilogue) {
  int64_t window = tensorTypeOf(weight).getDimSize(1);
  if (ShapedType::isDynamic(window) || window < 1)
    return {};
  Type f32 = b.getF32Type();
  Value length = side == WindowSide::Future
                     ? Value(tensor::DimOp::create(b, input, 1))
                     : Value();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(extras.size(),
                              AffineMap::getMultiDimIdentityMap(3, ctx));
  return tb.mapIndexed(
      tb.sizesOf(input), extras, maps, resultElementType,
      [&](OpBuilder &nb, Location loc, ValueRange args) -> Value {
        Value batch = linalg::IndexOp::create(nb, loc, 0);
        Value time = linalg::IndexOp::create(nb, loc, 1);
        Value channel = linalg::IndexOp::create(nb, loc, 2);
        auto index = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, loc, v);
        };
        Value zero = arith::ConstantOp::create(nb, loc, nb.getZeroAttr(f32));
        Value sum = zero;
        for (int64_t i = 0; i < window; ++i) {
          // The step this tap reads, and whether it lies in [0, T); an
          // outside tap reads a clamped step and adds w * 0, as the padded
          // copy's zero does.
          Value step = time, inside;
          if (side == WindowSide::Past && i < window - 1) {
            Value back = index(window - 1 - i);
            inside = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::uge,
                                           time, back);
            step = arith::SelectOp::create(
                nb, loc, inside, arith::SubIOp::create(nb, loc, time, back),
                time);
          } else if (side == WindowSide::Future && i > 0) {
            Value ahead = arith::AddIOp::create(nb, loc, time, index(i));
            inside = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult,
                                           ahead, length);
            step = arith::SelectOp::create(nb, loc, inside, ahead, time);
          }
          Value x = convertScalar(
              nb, loc,
              tensor::ExtractOp::create(nb, loc, input,
                                        ValueRange{batch, step, channel}),
              f32);
          if (inside)
            x = arith::SelectOp::create(nb, loc, inside, x, zero);
          int64_t tap = side == WindowSide::Past ? i : window - 1 - i;
          Value w = convertScalar(
              nb, loc,
              tensor::ExtractOp::create(nb, loc, weight,
                                        ValueRange{channel, index(tap)}),
              f32);
          sum = arith::AddFOp::create(nb, loc, sum,
                                      arith::MulFOp::create(nb, loc, x, w));
        }
        return epilogue(nb, loc, sum, args);
      });
}
