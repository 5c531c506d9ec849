//===- CommonGradToLinalg.cpp - Lower the common gradient ops -------------===//
//
// Part of the moe-mlir project.
//
// The part of -convert-moe-to-linalg that lowers the backward ops of
// MoECommonGradOps.td for the CPU: element-wise generics for the operand
// gradients, and reductions over the tokens (in fp32, in a fixed order) for
// the weight gradients. The embedding's scatter-add is a sequential loop
// over the tokens, so that each row sums its terms in token order.
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/MoEToLinalg/CommonGradToLinalg.h"

#include "TimeWindowSum.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::moe;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The size of the last dimension of `value` as an fp32 scalar.
static Value lastDimSizeF32(ImplicitLocOpBuilder &b, Value value) {
  RankedTensorType type = tensorTypeOf(value);
  int64_t last = type.getRank() - 1;
  Type f32 = b.getF32Type();
  if (!type.isDynamicDim(last))
    return floatConstant(b, b.getLoc(), f32,
                         static_cast<double>(type.getDimSize(last)));
  Value size = tensor::DimOp::create(b, value, last);
  Value asInt = arith::IndexCastOp::create(b, b.getI64Type(), size);
  return arith::SIToFPOp::create(b, f32, asInt);
}

/// `(d0, ..., d{rank-1}) -> (d1, ..., d{rank-1}, d0)`: reads a `[..., d]`
/// tensor from loops that put the feature dimension `d` first, so that a
/// weight gradient over `d` can reduce the leading (token) loops.
static AffineMap featureFirstMap(MLIRContext *ctx, int64_t rank) {
  SmallVector<int64_t> dims;
  for (int64_t i = 1; i < rank; ++i)
    dims.push_back(i);
  dims.push_back(0);
  return dimsMap(ctx, rank, dims);
}

/// `(d0, ..., d{rank-1}) -> (d1, ..., d{rank-1})`: reads a per-token `[...]`
/// tensor from the loops of featureFirstMap.
static AffineMap featureFirstTokenMap(MLIRContext *ctx, int64_t rank) {
  return dimsMap(ctx, rank, llvm::to_vector(llvm::seq<int64_t>(1, rank)));
}

/// `sigmoid(x) * sigmoid(-x)`, the derivative of the sigmoid, without the
/// cancellation of `1 - sigmoid(x)` when the sigmoid saturates.
static Value buildSigmoidDerivative(OpBuilder &b, Location loc, Value x) {
  Value negated = arith::NegFOp::create(b, loc, x);
  return arith::MulFOp::create(b, loc, buildSigmoid(b, loc, x),
                               buildSigmoid(b, loc, negated));
}

/// `value` padded with `W - 1` zeros before (`before`) or after the time
/// dimension 1 of `[B, T, C]`, `W` being `window`.
static Value padTime(ImplicitLocOpBuilder &b, Value value, OpFoldResult window,
                     bool before) {
  RankedTensorType type = tensorTypeOf(value);
  OpFoldResult padding;
  if (std::optional<int64_t> w = getConstantIntValue(window)) {
    padding = b.getIndexAttr(*w - 1);
  } else {
    Value one = arith::ConstantIndexOp::create(b, 1);
    padding = Value(arith::SubIOp::create(b, cast<Value>(window), one));
  }
  SmallVector<OpFoldResult> zeros(3, b.getIndexAttr(0));
  SmallVector<OpFoldResult> low(zeros), high(zeros);
  (before ? low : high)[1] = padding;
  SmallVector<int64_t> paddedShape(type.getShape());
  std::optional<int64_t> staticPadding = getConstantIntValue(padding);
  if (!type.isDynamicDim(1) && staticPadding)
    paddedShape[1] += *staticPadding;
  else
    paddedShape[1] = ShapedType::kDynamic;
  Value zero = floatConstant(b, b.getLoc(), type.getElementType(), 0.0);
  return tensor::PadOp::create(
      b, RankedTensorType::get(paddedShape, type.getElementType()), value, low,
      high, zero);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Replaces an `OpTy` with the values that `lower` builds at its location,
/// cast to the op's result types where only their static sizes differ.
template <typename OpTy>
struct GradLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;

  virtual SmallVector<Value> lower(OpTy op, OpAdaptor adaptor,
                                   ImplicitLocOpBuilder &b,
                                   TensorBuilder &tb) const = 0;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TensorBuilder tb(b);
    SmallVector<Value> values = lower(op, adaptor, b, tb);
    for (auto [value, result] : llvm::zip_equal(values, op->getResults()))
      if (value.getType() != result.getType())
        value = tensor::CastOp::create(b, result.getType(), value);
    rewriter.replaceOp(op, values);
    return success();
  }
};

/// decay_gate_grad -> one element-wise generic for `raw_grad`, one generic
/// over `(h, c, b, t)` that sums `raw_grad` (for `dt_bias`) and the `A_log`
/// terms over the tokens, and a sum of the latter over `c` (ALGORITHMS.md
/// section 2.1). The reductions recompute the gate in fp32 rather than read
/// the converted `raw_grad`, so they keep fp32 terms whatever `raw`'s type.
struct DecayGateGradLowering : public GradLowering<DecayGateGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(DecayGateGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), raw = adaptor.getRaw(),
          dtBias = adaptor.getDtBias(), aLog = adaptor.getALog();
    DecayGateAttr gate = op.getGate();
    bool bounded = gate.isBounded();
    double gMin = bounded ? gate.getGMinValue() : 0.0;
    Type f32 = b.getF32Type();
    MLIRContext *ctx = b.getContext();

    // (raw_grad, A_log term) of one element, in fp32, from
    // (grad, raw, dt_bias[, A_log]).
    auto terms = [&](OpBuilder &nb, Location loc,
                     ValueRange args) -> std::pair<Value, Value> {
      Value dy = args[0];
      Value z = convertScalar(nb, loc, args[1], f32);
      Value bias = convertScalar(nb, loc, args[2], f32);
      Value x = arith::AddFOp::create(nb, loc, z, bias);
      Value rate;
      if (aLog)
        rate =
            math::ExpOp::create(nb, loc, convertScalar(nb, loc, args[3], f32));
      if (bounded) {
        // dz = dy g_min s (1 - s) [exp(A)], p = [exp(A)] x; dA += dz x.
        Value p = rate ? arith::MulFOp::create(nb, loc, rate, x) : x;
        Value slope =
            arith::MulFOp::create(nb, loc, floatConstant(nb, loc, f32, gMin),
                                  buildSigmoidDerivative(nb, loc, p));
        if (rate)
          slope = arith::MulFOp::create(nb, loc, slope, rate);
        Value dz = arith::MulFOp::create(nb, loc, dy, slope);
        Value da = rate ? arith::MulFOp::create(nb, loc, dz, x) : Value();
        return {dz, da};
      }
      // g = -exp(A) softplus(x): dz = -dy exp(A) sigmoid(x); dA += dy g.
      Value slope =
          arith::MulFOp::create(nb, loc, rate, buildSigmoid(nb, loc, x));
      Value dz = arith::NegFOp::create(
          nb, loc, arith::MulFOp::create(nb, loc, dy, slope));
      Value g = arith::NegFOp::create(
          nb, loc,
          arith::MulFOp::create(nb, loc, rate, buildSoftplus(nb, loc, x)));
      return {dz, arith::MulFOp::create(nb, loc, dy, g)};
    };

    // raw_grad, element-wise over [B, T, H, K].
    SmallVector<Value> inputs = {grad, raw, dtBias};
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4),
                                   b.getMultiDimIdentityMap(4),
                                   dimsMap(ctx, 4, {2, 3})};
    if (aLog) {
      inputs.push_back(aLog);
      maps.push_back(dimsMap(ctx, 4, {2}));
    }
    Type rawType = tensorTypeOf(raw).getElementType();
    Value rawGrad = tb.mapIndexed(
        tb.sizesOf(raw), inputs, maps, rawType,
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          return convertScalar(nb, loc, terms(nb, loc, args).first, rawType);
        });

    // Sums over (b, t) per (h, c): loops (h, c, b, t).
    SmallVector<AffineMap> sumMaps = {dimsMap(ctx, 4, {2, 3, 0, 1}),
                                      dimsMap(ctx, 4, {2, 3, 0, 1}),
                                      dimsMap(ctx, 4, {0, 1})};
    if (aLog)
      sumMaps.push_back(dimsMap(ctx, 4, {0}));
    SmallVector<OpFoldResult> biasSizes = tb.sizesOf(dtBias);
    SmallVector<Value> inits = {tb.filled(biasSizes, f32, 0.0)};
    if (aLog)
      inits.push_back(tb.filled(biasSizes, f32, 0.0));
    SmallVector<AffineMap> outMaps(inits.size(), dimsMap(ctx, 4, {0, 1}));
    SmallVector<Value> sums =
        tb.generic(inputs, sumMaps, inits, outMaps, 4, 2,
                   [&](OpBuilder &nb, Location loc,
                       ValueRange args) -> SmallVector<Value> {
                     size_t numInputs = inputs.size();
                     auto [dz, da] = terms(nb, loc, args.take_front(numInputs));
                     SmallVector<Value> next = {
                         arith::AddFOp::create(nb, loc, args[numInputs], dz)};
                     if (aLog)
                       next.push_back(arith::AddFOp::create(
                           nb, loc, args[numInputs + 1], da));
                     return next;
                   });

    SmallVector<Value> results = {
        rawGrad, tb.convert(sums[0], tensorTypeOf(dtBias).getElementType())};
    if (aLog) {
      Value perHead = tb.reduceLast(
          sums[1], f32, 0.0, [](OpBuilder &nb, Location loc, ValueRange args) {
            return arith::AddFOp::create(nb, loc, args[1], args[0]);
          });
      results.push_back(
          tb.convert(perHead, tensorTypeOf(aLog).getElementType()));
    }
    return results;
  }
};

/// l2_norm_grad -> per row `sum(x^2)` and `x . dy`, then
/// `dx = r dy - x r^3 (x . dy)`, `r = (sum(x^2) + eps)^-1/2`, which is
/// `r (dy - y (y . dy))` of ALGORITHMS.md section 1.2.
struct L2NormGradLowering : public GradLowering<L2NormGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(L2NormGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), x = adaptor.getInput();
    RankedTensorType type = tensorTypeOf(x);
    int64_t rank = type.getRank();
    Type elementType = type.getElementType();
    Type f32 = b.getF32Type();
    double epsilon = op.getEpsilon().convertToDouble();
    MLIRContext *ctx = b.getContext();
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    AffineMap rowMap = leadingDimsMap(ctx, rank);

    SmallVector<OpFoldResult> rowSizes = tb.sizesOf(x);
    rowSizes.pop_back();
    SmallVector<Value> sums = tb.generic(
        {x, grad}, {identity, identity},
        {tb.filled(rowSizes, f32, 0.0), tb.filled(rowSizes, f32, 0.0)},
        {rowMap, rowMap}, rank, rank - 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value v = convertScalar(nb, loc, args[0], f32);
          Value dy = convertScalar(nb, loc, args[1], f32);
          return {arith::AddFOp::create(nb, loc, args[2],
                                        arith::MulFOp::create(nb, loc, v, v)),
                  arith::AddFOp::create(nb, loc, args[3],
                                        arith::MulFOp::create(nb, loc, v, dy))};
        });

    Value inputGrad = tb.mapIndexed(
        tb.sizesOf(x), {x, grad, sums[0], sums[1]},
        {identity, identity, rowMap, rowMap}, elementType,
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value v = convertScalar(nb, loc, args[0], f32);
          Value dy = convertScalar(nb, loc, args[1], f32);
          Value shifted = arith::AddFOp::create(
              nb, loc, args[2], floatConstant(nb, loc, f32, epsilon));
          Value r = math::RsqrtOp::create(nb, loc, shifted);
          Value r2 = arith::MulFOp::create(nb, loc, r, r);
          // dy - x r^2 (x . dy), times r.
          Value along = arith::MulFOp::create(
              nb, loc, v, arith::MulFOp::create(nb, loc, r2, args[3]));
          Value dx = arith::MulFOp::create(
              nb, loc, r, arith::SubFOp::create(nb, loc, dy, along));
          return convertScalar(nb, loc, dx, elementType);
        });
    return {inputGrad};
  }
};

/// rms_norm_grad -> per row `sum(x^2)` and `sum(x w dy)`, the row's `rstd`,
/// then `dx = rstd w dy - x rstd^3 sum(x w dy) / n` and
/// `dw = sum over the tokens of dy x rstd` (ALGORITHMS.md section 7.2).
struct RMSNormGradLowering : public GradLowering<RMSNormGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(RMSNormGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), x = adaptor.getInput(),
          weight = adaptor.getWeight();
    RankedTensorType type = tensorTypeOf(x);
    int64_t rank = type.getRank();
    Type elementType = type.getElementType();
    Type f32 = b.getF32Type();
    double epsilon = op.getEpsilon().convertToDouble();
    MLIRContext *ctx = b.getContext();
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    AffineMap rowMap = leadingDimsMap(ctx, rank);
    AffineMap weightMap = dimsMap(ctx, rank, {rank - 1});
    Value width = lastDimSizeF32(b, x);

    SmallVector<OpFoldResult> rowSizes = tb.sizesOf(x);
    rowSizes.pop_back();
    SmallVector<Value> sums = tb.generic(
        {x, grad, weight}, {identity, identity, weightMap},
        {tb.filled(rowSizes, f32, 0.0), tb.filled(rowSizes, f32, 0.0)},
        {rowMap, rowMap}, rank, rank - 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value v = convertScalar(nb, loc, args[0], f32);
          Value dy = convertScalar(nb, loc, args[1], f32);
          Value w = convertScalar(nb, loc, args[2], f32);
          Value wdy = arith::MulFOp::create(nb, loc, w, dy);
          return {
              arith::AddFOp::create(nb, loc, args[3],
                                    arith::MulFOp::create(nb, loc, v, v)),
              arith::AddFOp::create(nb, loc, args[4],
                                    arith::MulFOp::create(nb, loc, v, wdy))};
        });
    Value rstd =
        tb.map(sums[0], f32, [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value mean = arith::DivFOp::create(nb, loc, args[0], width);
          Value shifted = arith::AddFOp::create(
              nb, loc, mean, floatConstant(nb, loc, f32, epsilon));
          return math::RsqrtOp::create(nb, loc, shifted);
        });

    Value inputGrad = tb.mapIndexed(
        tb.sizesOf(x), {x, grad, weight, rstd, sums[1]},
        {identity, identity, weightMap, rowMap, rowMap}, elementType,
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value v = convertScalar(nb, loc, args[0], f32);
          Value dy = convertScalar(nb, loc, args[1], f32);
          Value w = convertScalar(nb, loc, args[2], f32);
          Value r = args[3];
          Value r3 = arith::MulFOp::create(
              nb, loc, r, arith::MulFOp::create(nb, loc, r, r));
          Value mean = arith::DivFOp::create(nb, loc, args[4], width);
          Value along = arith::MulFOp::create(
              nb, loc, v, arith::MulFOp::create(nb, loc, r3, mean));
          Value direct = arith::MulFOp::create(
              nb, loc, r, arith::MulFOp::create(nb, loc, w, dy));
          Value dx = arith::SubFOp::create(nb, loc, direct, along);
          return convertScalar(nb, loc, dx, elementType);
        });

    // dw[d] = sum over the leading loops of dy x rstd: loops (d, ...).
    SmallVector<Value> weightGrad = tb.generic(
        {grad, x, rstd},
        {featureFirstMap(ctx, rank), featureFirstMap(ctx, rank),
         featureFirstTokenMap(ctx, rank)},
        {tb.filled(tb.sizesOf(weight), f32, 0.0)}, {dimsMap(ctx, rank, {0})},
        rank, 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value dy = convertScalar(nb, loc, args[0], f32);
          Value v = convertScalar(nb, loc, args[1], f32);
          Value term = arith::MulFOp::create(
              nb, loc, dy, arith::MulFOp::create(nb, loc, v, args[2]));
          return {arith::AddFOp::create(nb, loc, args[3], term)};
        });
    return {inputGrad, tb.convert(weightGrad.front(),
                                  tensorTypeOf(weight).getElementType())};
  }
};

/// short_conv_grad -> with `dc` the gradient of the convolution (`grad`,
/// or `grad * silu'(c)` with `c` recomputed as the forward does):
/// the transposed convolution `dx[b,s,ch] = sum_j w[ch, W-1-j] dc[b,s+j,ch]`
/// over `dc` padded after the sequence, and
/// `dw[ch,i] = sum_{b,t} dc[b,t,ch] x[b,t-W+1+i,ch]` over `x` padded before
/// it (ALGORITHMS.md section 1.2). All in fp32.
struct ShortConvGradLowering : public GradLowering<ShortConvGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(ShortConvGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), x = adaptor.getInput(),
          weight = adaptor.getWeight();
    Type elementType = tensorTypeOf(x).getElementType();
    Type f32 = b.getF32Type();
    MLIRContext *ctx = b.getContext();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
    OpFoldResult window = tb.sizesOf(weight)[1];
    SmallVector<OpFoldResult> sizes = tb.sizesOf(x);
    Value padded = padTime(b, x, window, /*before=*/true);

    // silu'(c) = s (1 + c (1 - s)), s = sigmoid(c), times dy.
    auto siluGrad = [&](OpBuilder &nb, Location loc, Value dyIn,
                        Value pre) -> Value {
      Value dy = convertScalar(nb, loc, dyIn, f32);
      Value s = buildSigmoid(nb, loc, pre);
      Value rest = buildSigmoid(nb, loc, arith::NegFOp::create(nb, loc, pre));
      Value slope = arith::MulFOp::create(
          nb, loc, s,
          arith::AddFOp::create(nb, loc, floatConstant(nb, loc, f32, 1.0),
                                arith::MulFOp::create(nb, loc, pre, rest)));
      return arith::MulFOp::create(nb, loc, dy, slope);
    };
    // A static window: dc and dx are one element-wise generic each
    // (timeWindowSum), the forward's convolution recomputed inside dc's.
    Value dc, inputGrad;
    if (op.getSilu())
      dc = timeWindowSum(
          b, tb, x, weight, WindowSide::Past, {grad}, f32,
          [&](OpBuilder &nb, Location loc, Value sum, ValueRange extras) {
            return siluGrad(nb, loc, extras[0], sum);
          });
    else
      dc = tb.convert(grad, f32);
    if (dc)
      inputGrad = timeWindowSum(
          b, tb, dc, weight, WindowSide::Future, {}, elementType,
          [&](OpBuilder &nb, Location loc, Value sum, ValueRange) {
            return convertScalar(nb, loc, sum, elementType);
          });
    if (!inputGrad && op.getSilu()) {
      // The forward's convolution: loops (b, t, ch, i).
      Value c = tb.contract(padded, weight, sizes,
                            {AffineMap::get(4, 0, {d0, d1 + d3, d2}, ctx),
                             AffineMap::get(4, 0, {d2, d3}, ctx),
                             AffineMap::get(4, 0, {d0, d1, d2}, ctx)});
      dc = tb.map({grad, c}, f32,
                  [&](OpBuilder &nb, Location loc, ValueRange args) {
                    return siluGrad(nb, loc, args[0], args[1]);
                  });
    }
    if (!inputGrad) {
      // A dynamic window: over zero-padded copies.

      // The weight reversed along the window: reversed[ch, j] = w[ch, W-1-j].
      Value lastTap = arith::SubIOp::create(
          b, getValueOrCreateConstantIndexOp(b, b.getLoc(), window),
          arith::ConstantIndexOp::create(b, 1));
      Value reversed = tb.mapIndexed(
          tb.sizesOf(weight), {}, {}, f32,
          [&](OpBuilder &nb, Location loc, ValueRange) {
            Value ch = linalg::IndexOp::create(nb, loc, 0);
            Value j = linalg::IndexOp::create(nb, loc, 1);
            Value tap = arith::SubIOp::create(nb, loc, lastTap, j);
            Value w =
                tensor::ExtractOp::create(nb, loc, weight, ValueRange{ch, tap});
            return convertScalar(nb, loc, w, f32);
          });

      // dx: loops (b, s, ch, j) over dc padded after T.
      Value dcPadded = padTime(b, dc, window, /*before=*/false);
      inputGrad =
          tb.convert(tb.contract(dcPadded, reversed, sizes,
                                 {AffineMap::get(4, 0, {d0, d1 + d3, d2}, ctx),
                                  AffineMap::get(4, 0, {d2, d3}, ctx),
                                  AffineMap::get(4, 0, {d0, d1, d2}, ctx)}),
                     elementType);
    }

    // dw: loops (ch, i, b, t), reducing the tokens.
    SmallVector<Value> weightGrad =
        tb.generic({dc, padded},
                   {AffineMap::get(4, 0, {d2, d3, d0}, ctx),
                    AffineMap::get(4, 0, {d2, d3 + d1, d0}, ctx)},
                   {tb.filled(tb.sizesOf(weight), f32, 0.0)},
                   {AffineMap::get(4, 0, {d0, d1}, ctx)}, 4, 2,
                   [&](OpBuilder &nb, Location loc,
                       ValueRange args) -> SmallVector<Value> {
                     Value v = convertScalar(nb, loc, args[1], f32);
                     Value term = arith::MulFOp::create(nb, loc, args[0], v);
                     return {arith::AddFOp::create(nb, loc, args[2], term)};
                   });
    return {inputGrad, tb.convert(weightGrad.front(),
                                  tensorTypeOf(weight).getElementType())};
  }
};

/// embedding_grad -> a zero fp32 table, then one `scf.for` over the tokens
/// in order that adds each token's gradient row to its id's row (ids outside
/// `[0, vocab)` are skipped), then the conversion to the table's type. Each
/// row thus sums its terms in token order: the order of a stable sort by id
/// followed by a segment sum (ALGORITHMS.md section 7.2), independent of any
/// parallel schedule.
struct EmbeddingGradLowering : public GradLowering<EmbeddingGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(EmbeddingGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), tokens = adaptor.getTokens(),
          table = adaptor.getTable();
    Type f32 = b.getF32Type();
    int64_t tokenRank = tensorTypeOf(tokens).getRank();

    // tokens -> [N], grad -> [N, D].
    Value ids, rows;
    if (tokenRank == 0) {
      ids = tensor::FromElementsOp::create(
          b, ValueRange{tensor::ExtractOp::create(b, tokens, ValueRange{})});
      rows = tensor::ExpandShapeOp::create(
          b,
          RankedTensorType::get({1, tensorTypeOf(grad).getDimSize(0)},
                                tensorTypeOf(grad).getElementType()),
          grad, SmallVector<ReassociationIndices>{{0, 1}},
          SmallVector<OpFoldResult>{b.getIndexAttr(1), tb.sizesOf(grad)[0]});
    } else {
      ids = tokens;
      if (tokenRank > 1)
        ids = tensor::CollapseShapeOp::create(
            b, tokens,
            SmallVector<ReassociationIndices>{
                llvm::to_vector(llvm::seq<int64_t>(0, tokenRank))});
      rows = tb.flattenTokens(grad);
    }

    SmallVector<OpFoldResult> tableSizes = tb.sizesOf(table);
    Value vocab = getValueOrCreateConstantIndexOp(b, b.getLoc(), tableSizes[0]);
    OpFoldResult width = tableSizes[1];
    Value zero = arith::ConstantIndexOp::create(b, 0);
    Value one = arith::ConstantIndexOp::create(b, 1);
    Value count = tensor::DimOp::create(b, ids, 0);
    Value acc = tb.filled(tableSizes, f32, 0.0);
    RankedTensorType rowType = RankedTensorType::get(
        {getConstantIntValue(width).value_or(ShapedType::kDynamic)}, f32);

    auto loop = scf::ForOp::create(
        b, zero, count, one, ValueRange{acc},
        [&](OpBuilder &nb, Location loc, Value n, ValueRange iterArgs) {
          ImplicitLocOpBuilder lb(loc, nb);
          Value current = iterArgs[0];
          Value id = arith::IndexCastOp::create(
              lb, lb.getIndexType(),
              tensor::ExtractOp::create(lb, ids, ValueRange{n}));
          Value notNegative =
              arith::CmpIOp::create(lb, arith::CmpIPredicate::sge, id, zero);
          Value belowVocab =
              arith::CmpIOp::create(lb, arith::CmpIPredicate::slt, id, vocab);
          Value inRange = arith::AndIOp::create(lb, notNegative, belowVocab);
          auto ifOp = scf::IfOp::create(
              lb, inRange,
              [&](OpBuilder &thenBuilder, Location thenLoc) {
                ImplicitLocOpBuilder ib(thenLoc, thenBuilder);
                TensorBuilder itb(ib);
                SmallVector<OpFoldResult> offsets = {id, ib.getIndexAttr(0)};
                SmallVector<OpFoldResult> gradOffsets = {n, ib.getIndexAttr(0)};
                SmallVector<OpFoldResult> sliceSizes = {ib.getIndexAttr(1),
                                                        width};
                SmallVector<OpFoldResult> strides(2, ib.getIndexAttr(1));
                Value tableRow = tensor::ExtractSliceOp::create(
                    ib, rowType, current, offsets, sliceSizes, strides);
                Value gradRow = tensor::ExtractSliceOp::create(
                    ib,
                    RankedTensorType::get(rowType.getShape(),
                                          tensorTypeOf(rows).getElementType()),
                    rows, gradOffsets, sliceSizes, strides);
                // The id's row accumulates in place: it is the generic's
                // output.
                AffineMap rowMap = ib.getMultiDimIdentityMap(1);
                Value sum =
                    itb.generic(gradRow, rowMap, tableRow, rowMap, 1, 1,
                                [&](OpBuilder &sb, Location sloc,
                                    ValueRange args) -> SmallVector<Value> {
                                  Value g =
                                      convertScalar(sb, sloc, args[0], f32);
                                  return {arith::AddFOp::create(sb, sloc,
                                                                args[1], g)};
                                })
                        .front();
                Value updated = tensor::InsertSliceOp::create(
                    ib, sum, current, offsets, sliceSizes, strides);
                scf::YieldOp::create(ib, updated);
              },
              [&](OpBuilder &elseBuilder, Location elseLoc) {
                scf::YieldOp::create(elseBuilder, elseLoc, current);
              });
          scf::YieldOp::create(lb, ifOp.getResult(0));
        });
    return {
        tb.convert(loop.getResult(0), tensorTypeOf(table).getElementType())};
  }
};

/// attn_res_mix_grad -> per source `sum(v^2)`, `v . u` and `v . dh` in one
/// pass over the last dimension; per token the scores, the softmax `p`
/// (shifted by the max score) and the coefficients `p_i`,
/// `beta_i = ds_i rstd_i` and `gamma_i = -beta_i rstd_i s_i / d`; then
/// `dv_i = p_i dh + beta_i u + gamma_i v_i` and
/// `du = sum_tokens sum_i beta_i v_i` (ALGORITHMS.md section 5.3). fp32.
struct AttnResMixGradLowering : public GradLowering<AttnResMixGradOp> {
  using GradLowering::GradLowering;

  SmallVector<Value> lower(AttnResMixGradOp op, OpAdaptor adaptor,
                           ImplicitLocOpBuilder &b,
                           TensorBuilder &tb) const override {
    Value grad = adaptor.getGrad(), query = adaptor.getQuery();
    ValueRange sources = adaptor.getSources();
    RankedTensorType type = tensorTypeOf(grad);
    int64_t rank = type.getRank();
    int64_t numSources = sources.size();
    Type elementType = type.getElementType();
    Type f32 = b.getF32Type();
    double epsilon = op.getEpsilon().convertToDouble();
    MLIRContext *ctx = b.getContext();
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    AffineMap tokenMap = leadingDimsMap(ctx, rank);
    AffineMap queryMap = dimsMap(ctx, rank, {rank - 1});
    AffineMap tokenIdentity = b.getMultiDimIdentityMap(rank - 1);
    SmallVector<OpFoldResult> tokenSizes = tb.sizesOf(grad);
    tokenSizes.pop_back();
    Value width = lastDimSizeF32(b, grad);

    // Per source: sum(v^2), v . u, v . dh.
    SmallVector<Value> rowSums;
    for (Value source : sources) {
      SmallVector<Value> sums = tb.generic(
          {source, query, grad}, {identity, queryMap, identity},
          {tb.filled(tokenSizes, f32, 0.0), tb.filled(tokenSizes, f32, 0.0),
           tb.filled(tokenSizes, f32, 0.0)},
          {tokenMap, tokenMap, tokenMap}, rank, rank - 1,
          [&](OpBuilder &nb, Location loc,
              ValueRange args) -> SmallVector<Value> {
            Value v = convertScalar(nb, loc, args[0], f32);
            Value u = convertScalar(nb, loc, args[1], f32);
            Value dh = convertScalar(nb, loc, args[2], f32);
            auto accumulate = [&](Value acc, Value lhs, Value rhs) -> Value {
              return arith::AddFOp::create(
                  nb, loc, acc, arith::MulFOp::create(nb, loc, lhs, rhs));
            };
            return {accumulate(args[3], v, v), accumulate(args[4], v, u),
                    accumulate(args[5], v, dh)};
          });
      rowSums.append(sums.begin(), sums.end());
    }

    // Per token: (p_i, beta_i, gamma_i) for every source.
    SmallVector<Value> inits;
    for (int64_t i = 0; i < 3 * numSources; ++i)
      inits.push_back(tb.filled(tokenSizes, f32, 0.0));
    SmallVector<AffineMap> inMaps(rowSums.size(), tokenIdentity);
    SmallVector<AffineMap> outMaps(inits.size(), tokenIdentity);
    SmallVector<Value> coefficients = tb.generic(
        rowSums, inMaps, inits, outMaps, rank - 1, rank - 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value eps = floatConstant(nb, loc, f32, epsilon);
          SmallVector<Value> rstd, score, along;
          Value max;
          for (int64_t i = 0; i < numSources; ++i) {
            Value mean = arith::DivFOp::create(nb, loc, args[3 * i], width);
            Value r = math::RsqrtOp::create(
                nb, loc, arith::AddFOp::create(nb, loc, mean, eps));
            Value s = arith::MulFOp::create(nb, loc, r, args[3 * i + 1]);
            max = max ? arith::MaximumFOp::create(nb, loc, max, s).getResult()
                      : s;
            rstd.push_back(r);
            score.push_back(s);
            along.push_back(args[3 * i + 2]);
          }
          SmallVector<Value> exps;
          Value total = floatConstant(nb, loc, f32, 0.0);
          for (Value s : score) {
            exps.push_back(math::ExpOp::create(
                nb, loc, arith::SubFOp::create(nb, loc, s, max)));
            total = arith::AddFOp::create(nb, loc, total, exps.back());
          }
          SmallVector<Value> p;
          Value mixed = floatConstant(nb, loc, f32, 0.0);
          for (int64_t i = 0; i < numSources; ++i) {
            p.push_back(arith::DivFOp::create(nb, loc, exps[i], total));
            mixed = arith::AddFOp::create(
                nb, loc, mixed, arith::MulFOp::create(nb, loc, p[i], along[i]));
          }
          SmallVector<Value> out;
          for (int64_t i = 0; i < numSources; ++i) {
            Value ds = arith::MulFOp::create(
                nb, loc, p[i], arith::SubFOp::create(nb, loc, along[i], mixed));
            Value beta = arith::MulFOp::create(nb, loc, ds, rstd[i]);
            Value gamma = arith::DivFOp::create(
                nb, loc,
                arith::MulFOp::create(
                    nb, loc, beta,
                    arith::MulFOp::create(nb, loc, rstd[i], score[i])),
                width);
            out.push_back(p[i]);
            out.push_back(beta);
            out.push_back(arith::NegFOp::create(nb, loc, gamma));
          }
          return out;
        });

    // dv_i = p_i dh + beta_i u + gamma_i v_i.
    SmallVector<Value> results;
    for (auto [i, source] : llvm::enumerate(sources)) {
      results.push_back(tb.mapIndexed(
          tb.sizesOf(grad),
          {grad, source, query, coefficients[3 * i], coefficients[3 * i + 1],
           coefficients[3 * i + 2]},
          {identity, identity, queryMap, tokenMap, tokenMap, tokenMap},
          elementType, [&](OpBuilder &nb, Location loc, ValueRange args) {
            Value dh = convertScalar(nb, loc, args[0], f32);
            Value v = convertScalar(nb, loc, args[1], f32);
            Value u = convertScalar(nb, loc, args[2], f32);
            Value dv = arith::MulFOp::create(nb, loc, args[3], dh);
            dv = arith::AddFOp::create(
                nb, loc, dv, arith::MulFOp::create(nb, loc, args[4], u));
            dv = arith::AddFOp::create(
                nb, loc, dv, arith::MulFOp::create(nb, loc, args[5], v));
            return convertScalar(nb, loc, dv, elementType);
          }));
    }

    // du[d] = sum over the tokens of sum_i beta_i v_i[d]: loops (d, ...).
    SmallVector<Value> inputs(sources.begin(), sources.end());
    SmallVector<AffineMap> maps(numSources, featureFirstMap(ctx, rank));
    for (int64_t i = 0; i < numSources; ++i) {
      inputs.push_back(coefficients[3 * i + 1]);
      maps.push_back(featureFirstTokenMap(ctx, rank));
    }
    SmallVector<Value> queryGrad = tb.generic(
        inputs, maps, {tb.filled(tb.sizesOf(query), f32, 0.0)},
        {dimsMap(ctx, rank, {0})}, rank, 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value acc = args[2 * numSources];
          for (int64_t i = 0; i < numSources; ++i) {
            Value v = convertScalar(nb, loc, args[i], f32);
            acc = arith::AddFOp::create(
                nb, loc, acc,
                arith::MulFOp::create(nb, loc, args[numSources + i], v));
          }
          return {acc};
        });
    results.push_back(
        tb.convert(queryGrad.front(), tensorTypeOf(query).getElementType()));
    return results;
  }
};

} // namespace

void mlir::moe::populateCommonGradToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecayGateGradLowering, L2NormGradLowering, RMSNormGradLowering,
               ShortConvGradLowering, EmbeddingGradLowering,
               AttnResMixGradLowering>(patterns.getContext());
}

void mlir::moe::configureCommonGradToLinalgTarget(ConversionTarget &target) {
  target.addIllegalOp<DecayGateGradOp, L2NormGradOp, RMSNormGradOp,
                      ShortConvGradOp, EmbeddingGradOp, AttnResMixGradOp>();
}
