//===- TensorBuilder.cpp - Build linalg-on-tensors IR ---------------------===//
//
// Part of the moe-mlir project.
//
// Implements the linalg/tensor building helpers of TensorBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::moe;

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

RankedTensorType mlir::moe::tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

SmallVector<int64_t> mlir::moe::staticShapeOf(ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    shape.push_back(constant ? *constant : ShapedType::kDynamic);
  }
  return shape;
}

AffineMap mlir::moe::dimsMap(MLIRContext *ctx, int64_t numDims,
                             ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

AffineMap mlir::moe::leadingDimsMap(MLIRContext *ctx, int64_t numDims) {
  return dimsMap(ctx, numDims,
                 llvm::to_vector(llvm::seq<int64_t>(0, numDims - 1)));
}

Value mlir::moe::convertScalar(OpBuilder &b, Location loc, Value value,
                               Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  if (from.getIntOrFloatBitWidth() < type.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, type, value);
  return arith::TruncFOp::create(b, loc, type, value);
}

Value mlir::moe::floatConstant(OpBuilder &b, Location loc, Type type,
                               double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value mlir::moe::buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = floatConstant(b, loc, x.getType(), 1.0);
  Value negated = arith::NegFOp::create(b, loc, x);
  Value exp = math::ExpOp::create(b, loc, negated);
  Value denominator = arith::AddFOp::create(b, loc, one, exp);
  return arith::DivFOp::create(b, loc, one, denominator);
}

Value mlir::moe::buildSoftplus(OpBuilder &b, Location loc, Value x) {
  Value zero = floatConstant(b, loc, x.getType(), 0.0);
  Value positive = arith::MaximumFOp::create(b, loc, x, zero);
  Value magnitude = math::AbsFOp::create(b, loc, x);
  Value negated = arith::NegFOp::create(b, loc, magnitude);
  Value exp = math::ExpOp::create(b, loc, negated);
  Value log = math::Log1pOp::create(b, loc, exp);
  return arith::AddFOp::create(b, loc, positive, log);
}

Value mlir::moe::buildGatedActivation(OpBuilder &b, Location loc, Value a,
                                      Value u, std::optional<double> gateBeta,
                                      std::optional<double> upBeta) {
  Type type = a.getType();
  // beta * tanh(v / beta).
  auto softCap = [&](Value v, double beta) -> Value {
    Value scaled =
        arith::DivFOp::create(b, loc, v, floatConstant(b, loc, type, beta));
    Value tanh = math::TanhOp::create(b, loc, scaled);
    return arith::MulFOp::create(b, loc, tanh,
                                 floatConstant(b, loc, type, beta));
  };
  Value gate = gateBeta ? softCap(a, *gateBeta) : a;
  gate = arith::MulFOp::create(b, loc, gate, buildSigmoid(b, loc, a));
  Value up = upBeta ? softCap(u, *upBeta) : u;
  return arith::MulFOp::create(b, loc, gate, up);
}

std::pair<Value, Value>
mlir::moe::buildGatedActivationGrad(OpBuilder &b, Location loc, Value a,
                                    Value u, std::optional<double> gateBeta,
                                    std::optional<double> upBeta) {
  Type type = a.getType();
  auto constant = [&](double v) { return floatConstant(b, loc, type, v); };
  auto mul = [&](Value l, Value r) -> Value {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) -> Value {
    return arith::AddFOp::create(b, loc, l, r);
  };
  // sech^2(v) = 4 e / (1 + e)^2 with e = exp(-2 |v|) <= 1.
  auto sech2 = [&](Value v) -> Value {
    Value twice = mul(math::AbsFOp::create(b, loc, v), constant(-2.0));
    Value e = math::ExpOp::create(b, loc, twice);
    Value onePlus = add(constant(1.0), e);
    return arith::DivFOp::create(b, loc, mul(constant(4.0), e),
                                 mul(onePlus, onePlus));
  };
  Value sig = buildSigmoid(b, loc, a);
  Value sigNeg = buildSigmoid(b, loc, arith::NegFOp::create(b, loc, a));
  // g(a) and g'(a): silu, or beta tanh(a / beta) sigmoid(a).
  Value gate, gateGrad;
  if (gateBeta) {
    Value scaled = arith::DivFOp::create(b, loc, a, constant(*gateBeta));
    Value capped =
        mul(math::TanhOp::create(b, loc, scaled), constant(*gateBeta));
    gate = mul(capped, sig);
    gateGrad = add(mul(sech2(scaled), sig), mul(gate, sigNeg));
  } else {
    gate = mul(a, sig);
    gateGrad = add(sig, mul(gate, sigNeg));
  }
  // c(u) and c'(u): u and 1, or beta tanh(u / beta) and sech^2(u / beta).
  Value up = u, upGrad;
  if (upBeta) {
    Value scaled = arith::DivFOp::create(b, loc, u, constant(*upBeta));
    up = mul(math::TanhOp::create(b, loc, scaled), constant(*upBeta));
    upGrad = sech2(scaled);
  }
  Value dA = mul(gateGrad, up);
  Value dU = upGrad ? mul(gate, upGrad) : gate;
  return {dA, dU};
}

//===----------------------------------------------------------------------===//
// TensorBuilder
//===----------------------------------------------------------------------===//

SmallVector<OpFoldResult> TensorBuilder::sizesOf(Value value) {
  return tensor::getMixedSizes(b, b.getLoc(), value);
}

Value TensorBuilder::filled(ArrayRef<OpFoldResult> sizes, Type elementType,
                            double value) {
  Value scalar = floatConstant(b, b.getLoc(), elementType, value);
  Value empty = tensor::EmptyOp::create(b, sizes, elementType);
  return linalg::FillOp::create(b, ValueRange{scalar}, ValueRange{empty})
      .getResult(0);
}

SmallVector<Value>
TensorBuilder::generic(ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                       ValueRange inits, ArrayRef<AffineMap> outputMaps,
                       int64_t numLoops, int64_t numParallel, ScalarsFn body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(outputMaps.begin(), outputMaps.end());
  SmallVector<utils::IteratorType> iterators(numParallel,
                                             utils::IteratorType::parallel);
  iterators.append(numLoops - numParallel, utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, TypeRange(inits), inputs, inits, maps, iterators,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        linalg::YieldOp::create(nested, loc, body(nested, loc, args));
      });
  return SmallVector<Value>(op.getResults());
}

Value TensorBuilder::mapIndexed(ArrayRef<OpFoldResult> sizes, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps,
                                Type resultElementType, ScalarFn fn) {
  int64_t rank = sizes.size();
  Value init = tensor::EmptyOp::create(b, sizes, resultElementType);
  return generic(inputs, inputMaps, init, b.getMultiDimIdentityMap(rank), rank,
                 rank,
                 [&](OpBuilder &nested, Location loc,
                     ValueRange args) -> SmallVector<Value> {
                   return {fn(nested, loc, args.drop_back())};
                 })
      .front();
}

Value TensorBuilder::map(ValueRange inputs, Type resultElementType,
                         ScalarFn fn) {
  Value like = inputs.front();
  SmallVector<AffineMap> maps(
      inputs.size(), b.getMultiDimIdentityMap(tensorTypeOf(like).getRank()));
  return mapIndexed(sizesOf(like), inputs, maps, resultElementType, fn);
}

Value TensorBuilder::reduceLast(Value input, Type accType, double init,
                                ScalarFn fn) {
  int64_t rank = tensorTypeOf(input).getRank();
  SmallVector<OpFoldResult> sizes = sizesOf(input);
  sizes.pop_back();
  Value acc = filled(sizes, accType, init);
  return generic(input, b.getMultiDimIdentityMap(rank), acc,
                 leadingDimsMap(b.getContext(), rank), rank, rank - 1,
                 [&](OpBuilder &nested, Location loc, ValueRange args)
                     -> SmallVector<Value> { return {fn(nested, loc, args)}; })
      .front();
}

Value TensorBuilder::zeroPadded(Value value, unsigned dim, OpFoldResult size,
                                Type elementType) {
  value = convert(value, elementType);
  SmallVector<OpFoldResult> sizes = sizesOf(value);
  SmallVector<OpFoldResult> paddedSizes(sizes);
  paddedSizes[dim] = size;
  Value zeros = filled(paddedSizes, elementType, 0.0);
  SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, value, zeros, offsets, sizes, strides)
      .getResult();
}

Value TensorBuilder::convert(Value value, Type elementType) {
  if (tensorTypeOf(value).getElementType() == elementType)
    return value;
  return map(value, elementType,
             [&](OpBuilder &nested, Location loc, ValueRange args) {
               return convertScalar(nested, loc, args[0], elementType);
             });
}

Value TensorBuilder::sigmoid(Value value) {
  return map(value, tensorTypeOf(value).getElementType(),
             [](OpBuilder &nested, Location loc, ValueRange args) {
               return buildSigmoid(nested, loc, args[0]);
             });
}

Value TensorBuilder::multiply(Value lhs, Value rhs) {
  return map(ValueRange{lhs, rhs}, tensorTypeOf(lhs).getElementType(),
             [](OpBuilder &nested, Location loc, ValueRange args) {
               return arith::MulFOp::create(nested, loc, args[0], args[1]);
             });
}

Value TensorBuilder::add(Value lhs, Value rhs) {
  return map(ValueRange{lhs, rhs}, tensorTypeOf(lhs).getElementType(),
             [](OpBuilder &nested, Location loc, ValueRange args) {
               return arith::AddFOp::create(nested, loc, args[0], args[1]);
             });
}

Value TensorBuilder::contract(Value lhs, Value rhs,
                              ArrayRef<OpFoldResult> sizes,
                              ArrayRef<AffineMap> maps) {
  Type f32 = b.getF32Type();
  Value init = filled(sizes, f32, 0.0);
  int64_t numLoops = maps.front().getNumDims();
  return generic(ValueRange{lhs, rhs}, maps.drop_back(), init, maps.back(),
                 numLoops, numLoops - 1,
                 [&](OpBuilder &nested, Location loc,
                     ValueRange args) -> SmallVector<Value> {
                   Value l = convertScalar(nested, loc, args[0], f32);
                   Value r = convertScalar(nested, loc, args[1], f32);
                   Value product = arith::MulFOp::create(nested, loc, l, r);
                   return {
                       arith::AddFOp::create(nested, loc, args[2], product)};
                 })
      .front();
}

Value TensorBuilder::project(Value input, Value weight, Type resultElementType,
                             bool transposed) {
  RankedTensorType weightType = tensorTypeOf(weight);
  int64_t width = weightType.getDimSize(transposed ? 0 : 1);
  int64_t rank = tensorTypeOf(input).getRank();
  SmallVector<OpFoldResult> sizes = sizesOf(input);
  sizes.back() = b.getIndexAttr(width);

  // Loops: the leading dims of input (rank - 1), then n, then d.
  unsigned numLoops = rank + 1;
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> inputExprs, outputExprs;
  for (int64_t i = 0; i < rank - 1; ++i) {
    inputExprs.push_back(getAffineDimExpr(i, ctx));
    outputExprs.push_back(getAffineDimExpr(i, ctx));
  }
  AffineExpr n = getAffineDimExpr(rank - 1, ctx);
  AffineExpr k = getAffineDimExpr(rank, ctx);
  inputExprs.push_back(k);
  outputExprs.push_back(n);
  SmallVector<AffineExpr> weightExprs = transposed
                                            ? SmallVector<AffineExpr>{n, k}
                                            : SmallVector<AffineExpr>{k, n};
  SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inputExprs, ctx),
                                 AffineMap::get(numLoops, 0, weightExprs, ctx),
                                 AffineMap::get(numLoops, 0, outputExprs, ctx)};
  return convert(contract(input, weight, sizes, maps), resultElementType);
}

Value TensorBuilder::matmul(Value lhs, Value rhs, bool transposeLhs,
                            bool transposeRhs) {
  SmallVector<OpFoldResult> lhsSizes = sizesOf(lhs), rhsSizes = sizesOf(rhs);
  OpFoldResult m = transposeLhs ? lhsSizes[1] : lhsSizes[0];
  OpFoldResult n = transposeRhs ? rhsSizes[0] : rhsSizes[1];
  MLIRContext *ctx = b.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx),
             p = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0,
                     transposeLhs ? ArrayRef<AffineExpr>{p, i}
                                  : ArrayRef<AffineExpr>{i, p},
                     ctx),
      AffineMap::get(3, 0,
                     transposeRhs ? ArrayRef<AffineExpr>{j, p}
                                  : ArrayRef<AffineExpr>{p, j},
                     ctx),
      AffineMap::get(3, 0, {i, j}, ctx)};
  return contract(lhs, rhs, {m, n}, maps);
}

Value TensorBuilder::gatedActivation(Value gate, Value up,
                                     std::optional<double> gateBeta,
                                     std::optional<double> upBeta) {
  return map(ValueRange{gate, up}, tensorTypeOf(gate).getElementType(),
             [&](OpBuilder &nested, Location loc, ValueRange args) {
               return buildGatedActivation(nested, loc, args[0], args[1],
                                           gateBeta, upBeta);
             });
}

/// `{{0}, ..., {rank - 3}, {rank - 2, rank - 1}}`: the last two of `rank`
/// dimensions merged.
static SmallVector<ReassociationIndices> lastTwoMerged(int64_t rank) {
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0; i < rank - 2; ++i)
    reassociation.push_back({i});
  reassociation.push_back({rank - 2, rank - 1});
  return reassociation;
}

/// `{{0, ..., rank - 2}, {rank - 1}}`: all but the last of `rank` dimensions
/// merged.
static SmallVector<ReassociationIndices> leadingMerged(int64_t rank) {
  ReassociationIndices leading;
  for (int64_t i = 0; i < rank - 1; ++i)
    leading.push_back(i);
  return {leading, {rank - 1}};
}

Value TensorBuilder::splitHeads(Value value, int64_t heads, int64_t width) {
  RankedTensorType type = tensorTypeOf(value);
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = sizesOf(value);
  sizes.back() = b.getIndexAttr(heads);
  sizes.push_back(b.getIndexAttr(width));
  auto resultType =
      RankedTensorType::get(staticShapeOf(sizes), type.getElementType());
  return tensor::ExpandShapeOp::create(b, resultType, value,
                                       lastTwoMerged(rank + 1), sizes);
}

Value TensorBuilder::mergeHeads(Value value) {
  return tensor::CollapseShapeOp::create(
      b, value, lastTwoMerged(tensorTypeOf(value).getRank()));
}

Value TensorBuilder::flattenTokens(Value value) {
  int64_t rank = tensorTypeOf(value).getRank();
  if (rank == 2)
    return value;
  return tensor::CollapseShapeOp::create(b, value, leadingMerged(rank));
}

/// `{{0, ..., rank - 1}}`: all of `rank` dimensions merged.
static SmallVector<ReassociationIndices> allMerged(int64_t rank) {
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return {all};
}

Value TensorBuilder::flattenAll(Value value) {
  int64_t rank = tensorTypeOf(value).getRank();
  if (rank == 1)
    return value;
  return tensor::CollapseShapeOp::create(b, value, allMerged(rank));
}

Value TensorBuilder::unflattenAll(Value flat, Value like, Type type) {
  RankedTensorType likeType = tensorTypeOf(like);
  int64_t rank = likeType.getRank();
  if (rank != 1) {
    auto expandedType = RankedTensorType::get(
        likeType.getShape(), tensorTypeOf(flat).getElementType());
    flat = tensor::ExpandShapeOp::create(b, expandedType, flat, allMerged(rank),
                                         sizesOf(like));
  }
  if (flat.getType() != type)
    flat = tensor::CastOp::create(b, type, flat);
  return flat;
}

Value TensorBuilder::unflattenTokens(Value value, Value like) {
  int64_t rank = tensorTypeOf(like).getRank();
  if (rank == 2)
    return value;
  return tensor::ExpandShapeOp::create(b, like.getType(), value,
                                       leadingMerged(rank), sizesOf(like));
}

Value TensorBuilder::sliceLast(Value value, int64_t offset, int64_t size) {
  int64_t rank = tensorTypeOf(value).getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets.back() = b.getIndexAttr(offset);
  SmallVector<OpFoldResult> sizes = sizesOf(value);
  sizes.back() = b.getIndexAttr(size);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, value, offsets, sizes, strides);
}

Value TensorBuilder::broadcastHeads(Value value, int64_t heads) {
  SmallVector<OpFoldResult> sizes = sizesOf(value);
  sizes.insert(sizes.end() - 1, b.getIndexAttr(heads));
  Value init =
      tensor::EmptyOp::create(b, sizes, tensorTypeOf(value).getElementType());
  return linalg::BroadcastOp::create(b, value, init, ArrayRef<int64_t>{2})
      ->getResult(0);
}
