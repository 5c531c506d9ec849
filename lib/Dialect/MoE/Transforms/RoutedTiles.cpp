//===- RoutedTiles.cpp - Tile helpers of the routed-expert lowerings ------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "RoutedTiles.h"

#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::moe;

Value mlir::moe::castTensorTo(ImplicitLocOpBuilder &b, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, type, value);
}

Value mlir::moe::buildPaddedRows(ImplicitLocOpBuilder &b, Value source,
                                 Value offset, Value rows, int64_t size,
                                 Value padValue) {
  RankedTensorType type = tensorTypeOf(source);
  auto attr = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  Value high =
      arith::SubIOp::create(b, arith::ConstantIndexOp::create(b, size), rows);
  SmallVector<OpFoldResult> offsets = {offset}, sizes = {rows}, low = {attr(0)};
  SmallVector<OpFoldResult> highs = {high};
  SmallVector<int64_t> shape = {size};
  if (type.getRank() == 2) {
    offsets.push_back(attr(0));
    sizes.push_back(attr(type.getDimSize(1)));
    low.push_back(attr(0));
    highs.push_back(attr(0));
    shape.push_back(type.getDimSize(1));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), attr(1));
  Value slice =
      tensor::ExtractSliceOp::create(b, source, offsets, sizes, strides);
  return tensor::PadOp::create(
      b, RankedTensorType::get(shape, type.getElementType()), slice, low, highs,
      padValue);
}

Value mlir::moe::buildExpertSlice(ImplicitLocOpBuilder &b, Value weights,
                                  Value expert) {
  RankedTensorType type = tensorTypeOf(weights);
  int64_t rows = type.getDimSize(1), cols = type.getDimSize(2);
  auto sliceType = RankedTensorType::get({rows, cols}, type.getElementType());
  return tensor::ExtractSliceOp::create(
             b, sliceType, weights,
             ArrayRef<OpFoldResult>{expert, b.getIndexAttr(0),
                                    b.getIndexAttr(0)},
             ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows),
                                    b.getIndexAttr(cols)},
             ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                                    b.getIndexAttr(1)})
      .getResult();
}

Value mlir::moe::buildSlotRows(ImplicitLocOpBuilder &b, Value sourceSlot) {
  Type i64 = b.getI64Type();
  Value slots = tensor::DimOp::create(b, sourceSlot, 0);
  Value init = tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{slots}, i64);
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{slots},
                                      ValueRange{init}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value m = forall.getInductionVar(0);
  Value slot = arith::IndexCastOp::create(
      b, b.getIndexType(),
      tensor::ExtractOp::create(b, sourceSlot, ValueRange{m}));
  Value rowId = tensor::FromElementsOp::create(
      b, RankedTensorType::get({1}, i64),
      ValueRange{arith::IndexCastOp::create(b, i64, m)});
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, rowId, forall.getRegionIterArgs()[0], ArrayRef<OpFoldResult>{slot},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  return forall.getResult(0);
}

Value mlir::moe::buildSlotSum(ImplicitLocOpBuilder &b, Value rows,
                              Value slotRow, Value perSlot, bool weighted) {
  TensorBuilder tb(b);
  Value slotsPerToken = tensor::DimOp::create(b, perSlot, 1);
  SmallVector<OpFoldResult> sizes = {tb.sizesOf(perSlot)[0],
                                     tb.sizesOf(rows)[1]};
  Value init = tb.filled(sizes, b.getF32Type(), 0.0);
  return tb
      .generic(
          perSlot, dimsMap(b.getContext(), 3, {0, 2}), init,
          dimsMap(b.getContext(), 3, {0, 1}), 3, 2,
          [&](OpBuilder &nb, Location loc, ValueRange args) {
            Value n = linalg::IndexOp::create(nb, loc, 0);
            Value c = linalg::IndexOp::create(nb, loc, 1);
            Value i = linalg::IndexOp::create(nb, loc, 2);
            Value m = arith::AddIOp::create(
                nb, loc, arith::MulIOp::create(nb, loc, n, slotsPerToken), i);
            Value row = arith::IndexCastOp::create(
                nb, loc, nb.getIndexType(),
                tensor::ExtractOp::create(nb, loc, slotRow, ValueRange{m}));
            Value value = convertScalar(
                nb, loc,
                tensor::ExtractOp::create(nb, loc, rows, ValueRange{row, c}),
                nb.getF32Type());
            if (weighted)
              value = arith::MulFOp::create(nb, loc, args[0], value);
            return SmallVector<Value>{
                arith::AddFOp::create(nb, loc, args[1], value)};
          })
      .front();
}
