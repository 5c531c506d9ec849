//===- MoEToLinalg.cpp - Lower moe primitives to linalg -------------------===//
//
// Part of the moe-mlir project.
//
// Implements -convert-moe-to-linalg: the norms, the decay gate, the short
// convolution, cross-entropy, embedding, the dense gated FFN and the
// attention-residual mix become linalg.generic ops on tensors, with their
// reductions and transcendental math in fp32.
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/MoEToLinalg/MoEToLinalg.h"

#include "moe/Conversion/MoEToLinalg/CommonGradToLinalg.h"

#include "TimeWindowSum.h"
#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_CONVERTMOETOLINALG
#include "moe/Conversion/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "convert-moe-to-linalg"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `sum(x^2)` over the last dimension of `x`, in fp32.
static Value buildSumOfSquares(TensorBuilder &tb, Value x) {
  Type f32 = Float32Type::get(x.getContext());
  return tb.reduceLast(x, f32, 0.0,
                       [&](OpBuilder &b, Location loc, ValueRange args) {
                         Value v = convertScalar(b, loc, args[0], f32);
                         Value square = arith::MulFOp::create(b, loc, v, v);
                         return arith::AddFOp::create(b, loc, args[1], square);
                       });
}

/// The size of the last dimension of `value` as an fp32 scalar (a constant
/// when it is static).
static Value buildLastDimSizeF32(ImplicitLocOpBuilder &b, Value value) {
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

/// `x` normalised row by row: `fn` gets an element of `x` in fp32, the
/// `sumSquares` of its row and the scalars of `extra` (read through
/// `extraMaps`), and returns the fp32 result, which is converted back to the
/// element type of `x`.
static Value buildRowNormalized(
    TensorBuilder &tb, Value x, Value sumSquares, ValueRange extra,
    ArrayRef<AffineMap> extraMaps,
    function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange)> fn) {
  RankedTensorType type = tensorTypeOf(x);
  Type elementType = type.getElementType();
  Type f32 = Float32Type::get(x.getContext());
  int64_t rank = type.getRank();
  SmallVector<Value> inputs = {x, sumSquares};
  inputs.append(extra.begin(), extra.end());
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, x.getContext()),
      leadingDimsMap(x.getContext(), rank)};
  maps.append(extraMaps.begin(), extraMaps.end());
  return tb.mapIndexed(tb.sizesOf(x), inputs, maps, elementType,
                       [&](OpBuilder &nb, Location loc, ValueRange args) {
                         Value v = convertScalar(nb, loc, args[0], f32);
                         Value y = fn(nb, loc, v, args[1], args.drop_front(2));
                         return convertScalar(nb, loc, y, elementType);
                       });
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Replaces an `OpTy` with the value that `lower` builds at its location.
template <typename OpTy>
struct TensorLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;

  virtual Value lower(OpTy op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
                      TensorBuilder &tb) const = 0;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TensorBuilder tb(b);
    rewriter.replaceOp(op, lower(op, adaptor, b, tb));
    return success();
  }
};

/// l2_norm -> `sum(x^2)` over the last dimension, then
/// `x / sqrt(sum + eps)` (ALGORITHMS.md section 1.2).
struct L2NormLowering : public TensorLowering<L2NormOp> {
  using TensorLowering::TensorLowering;

  Value lower(L2NormOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value x = adaptor.getInput();
    Type f32 = b.getF32Type();
    double epsilon = op.getEpsilon().convertToDouble();

    Value sumSquares = buildSumOfSquares(tb, x);
    return buildRowNormalized(
        tb, x, sumSquares, {}, {},
        [&](OpBuilder &nb, Location loc, Value v, Value sum, ValueRange) {
          Value eps = floatConstant(nb, loc, f32, epsilon);
          Value shifted = arith::AddFOp::create(nb, loc, sum, eps);
          Value norm = math::SqrtOp::create(nb, loc, shifted);
          return arith::DivFOp::create(nb, loc, v, norm);
        });
  }
};

/// rms_norm -> `sum(x^2)` over the last dimension, then
/// `x * rsqrt(sum / n + eps) * w` (ALGORITHMS.md section 7.2).
struct RMSNormLowering : public TensorLowering<RMSNormOp> {
  using TensorLowering::TensorLowering;

  Value lower(RMSNormOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value x = adaptor.getInput();
    Type f32 = b.getF32Type();
    int64_t rank = tensorTypeOf(x).getRank();
    double epsilon = op.getEpsilon().convertToDouble();

    Value sumSquares = buildSumOfSquares(tb, x);
    Value width = buildLastDimSizeF32(b, x);
    return buildRowNormalized(
        tb, x, sumSquares, adaptor.getWeight(),
        dimsMap(b.getContext(), rank, {rank - 1}),
        [&](OpBuilder &nb, Location loc, Value v, Value sum, ValueRange extra) {
          Value w = convertScalar(nb, loc, extra[0], f32);
          Value eps = floatConstant(nb, loc, f32, epsilon);
          Value mean = arith::DivFOp::create(nb, loc, sum, width);
          Value shifted = arith::AddFOp::create(nb, loc, mean, eps);
          Value rstd = math::RsqrtOp::create(nb, loc, shifted);
          Value normed = arith::MulFOp::create(nb, loc, v, rstd);
          return arith::MulFOp::create(nb, loc, normed, w);
        });
  }
};

/// decay_gate -> one element-wise generic over `raw: [B, T, H, K]` reading
/// `dt_bias[h, c]` and `A_log[h]` (ALGORITHMS.md section 2.1).
struct DecayGateLowering : public TensorLowering<DecayGateOp> {
  using TensorLowering::TensorLowering;

  Value lower(DecayGateOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value raw = adaptor.getRaw();
    Value aLog = adaptor.getALog();
    DecayGateAttr gate = op.getGate();
    bool bounded = gate.isBounded();
    double gMin = bounded ? gate.getGMinValue() : 0.0;
    Type f32 = b.getF32Type();

    MLIRContext *ctx = b.getContext();
    SmallVector<Value> inputs = {raw, adaptor.getDtBias()};
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4),
                                   dimsMap(ctx, 4, {2, 3})};
    if (aLog) {
      inputs.push_back(aLog);
      maps.push_back(dimsMap(ctx, 4, {2}));
    }
    Value result = tb.mapIndexed(
        tb.sizesOf(raw), inputs, maps, f32,
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value z = convertScalar(nb, loc, args[0], f32);
          Value bias = convertScalar(nb, loc, args[1], f32);
          Value x = arith::AddFOp::create(nb, loc, z, bias);
          Value rate;
          if (aLog)
            rate = math::ExpOp::create(nb, loc,
                                       convertScalar(nb, loc, args[2], f32));
          if (bounded) {
            // g = g_min * sigmoid(exp(A_log) * x), or sigmoid(x).
            Value p = rate ? arith::MulFOp::create(nb, loc, rate, x) : x;
            Value lowerBound = floatConstant(nb, loc, f32, gMin);
            return Value(arith::MulFOp::create(nb, loc, lowerBound,
                                               buildSigmoid(nb, loc, p)));
          }
          // g = -exp(A_log) * softplus(x); the verifier requires A_log.
          Value scaled =
              arith::MulFOp::create(nb, loc, rate, buildSoftplus(nb, loc, x));
          return Value(arith::NegFOp::create(nb, loc, scaled));
        });
    return result;
  }
};

/// short_conv -> `c[b,t,ch] = sum_i w[ch,i] * pad[b,t+i,ch]` (fp32) over a
/// left zero pad of `W - 1` steps along T, then the optional SiLU and the
/// conversion back (ALGORITHMS.md section 1.2). A static window is one
/// element-wise generic (timeWindowSum); a dynamic one pads and contracts.
struct ShortConvLowering : public TensorLowering<ShortConvOp> {
  using TensorLowering::TensorLowering;

  Value lower(ShortConvOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value x = adaptor.getInput();
    Value weight = adaptor.getWeight();
    RankedTensorType type = tensorTypeOf(x);
    Type elementType = type.getElementType();
    bool silu = op.getSilu();
    if (Value fused = timeWindowSum(
            b, tb, x, weight, WindowSide::Past, {}, elementType,
            [&](OpBuilder &nb, Location loc, Value sum, ValueRange) {
              if (silu)
                sum = arith::MulFOp::create(nb, loc, sum,
                                            buildSigmoid(nb, loc, sum));
              return convertScalar(nb, loc, sum, elementType);
            }))
      return fused;

    // Left padding W - 1 along T.
    OpFoldResult window = tb.sizesOf(weight)[1];
    OpFoldResult padding;
    if (std::optional<int64_t> w = getConstantIntValue(window)) {
      padding = b.getIndexAttr(*w - 1);
    } else {
      Value one = arith::ConstantIndexOp::create(b, 1);
      padding = Value(arith::SubIOp::create(b, cast<Value>(window), one));
    }
    SmallVector<OpFoldResult> low = {b.getIndexAttr(0), padding,
                                     b.getIndexAttr(0)};
    SmallVector<OpFoldResult> high(3, b.getIndexAttr(0));
    SmallVector<int64_t> paddedShape(type.getShape());
    std::optional<int64_t> staticPadding = getConstantIntValue(padding);
    if (!type.isDynamicDim(1) && staticPadding)
      paddedShape[1] += *staticPadding;
    else
      paddedShape[1] = ShapedType::kDynamic;
    Value zero = floatConstant(b, b.getLoc(), elementType, 0.0);
    Value padded = tensor::PadOp::create(
        b, RankedTensorType::get(paddedShape, elementType), x, low, high, zero);

    // Loops (b, t, ch, i); i is the window position.
    SmallVector<OpFoldResult> sizes = tb.sizesOf(x);
    MLIRContext *ctx = b.getContext();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {d0, d1 + d3, d2}, ctx),
                                   AffineMap::get(4, 0, {d2, d3}, ctx),
                                   AffineMap::get(4, 0, {d0, d1, d2}, ctx)};
    Value result = tb.contract(padded, weight, sizes, maps);

    if (op.getSilu()) {
      result = tb.map(result, elementType,
                      [&](OpBuilder &nb, Location loc, ValueRange args) {
                        Value gate = buildSigmoid(nb, loc, args[0]);
                        Value y = arith::MulFOp::create(nb, loc, args[0], gate);
                        return convertScalar(nb, loc, y, elementType);
                      });
    } else {
      result = tb.convert(result, elementType);
    }
    return result;
  }
};

/// cross_entropy -> per token the max logit, then `sum exp(z - max)` and the
/// label's logit in one pass over the vocabulary, then the sum of
/// `max + log(sumexp) - z[label]` and the count over the valid tokens, and
/// their quotient (ALGORITHMS.md section 7.2). All in fp32.
struct CrossEntropyLowering : public TensorLowering<CrossEntropyOp> {
  using TensorLowering::TensorLowering;

  Value lower(CrossEntropyOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value logits = adaptor.getLogits();
    Value labels = adaptor.getLabels();
    int64_t rank = tensorTypeOf(logits).getRank();
    Type f32 = b.getF32Type();
    Type labelType = tensorTypeOf(labels).getElementType();
    int64_t ignoreIndex = op.getIgnoreIndex();
    MLIRContext *ctx = b.getContext();

    // Max over the vocabulary, so that every exponent below is <= 0.
    Value maxLogit =
        tb.reduceLast(logits, f32, -std::numeric_limits<double>::infinity(),
                      [&](OpBuilder &nb, Location loc, ValueRange args) {
                        Value z = convertScalar(nb, loc, args[0], f32);
                        return arith::MaximumFOp::create(nb, loc, z, args[1]);
                      });

    // sum(exp(z - max)) and z[label], both [...].
    SmallVector<OpFoldResult> tokenSizes = tb.sizesOf(logits);
    tokenSizes.pop_back();
    Value sumInit = tb.filled(tokenSizes, f32, 0.0);
    Value pickedInit = tb.filled(tokenSizes, f32, 0.0);
    AffineMap tokenMap = leadingDimsMap(ctx, rank);
    SmallVector<Value> perToken = tb.generic(
        {logits, maxLogit, labels},
        {b.getMultiDimIdentityMap(rank), tokenMap, tokenMap},
        {sumInit, pickedInit}, {tokenMap, tokenMap}, rank, rank - 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value z = convertScalar(nb, loc, args[0], f32);
          Value shifted = arith::SubFOp::create(nb, loc, z, args[1]);
          Value exp = math::ExpOp::create(nb, loc, shifted);
          Value sum = arith::AddFOp::create(nb, loc, args[3], exp);
          Value column = linalg::IndexOp::create(nb, loc, rank - 1);
          Value label =
              arith::IndexCastOp::create(nb, loc, nb.getIndexType(), args[2]);
          Value isLabel = arith::CmpIOp::create(
              nb, loc, arith::CmpIPredicate::eq, column, label);
          Value picked = arith::SelectOp::create(nb, loc, isLabel, z, args[4]);
          return {sum, picked};
        });
    Value sumExp = perToken[0];
    Value picked = perToken[1];

    // Sum of the valid tokens' losses and their count, as 0-d tensors. A
    // select (not a multiply by 0) keeps an ignored token's NaN out.
    int64_t tokenRank = rank - 1;
    Value lossInit = tb.filled({}, f32, 0.0);
    Value countInit = tb.filled({}, f32, 0.0);
    AffineMap identity = b.getMultiDimIdentityMap(tokenRank);
    AffineMap scalarMap = AffineMap::get(tokenRank, 0, {}, ctx);
    SmallVector<Value> total = tb.generic(
        {maxLogit, sumExp, picked, labels},
        {identity, identity, identity, identity}, {lossInit, countInit},
        {scalarMap, scalarMap}, tokenRank, 0,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          Value log = math::LogOp::create(nb, loc, args[1]);
          Value lse = arith::AddFOp::create(nb, loc, args[0], log);
          Value loss = arith::SubFOp::create(nb, loc, lse, args[2]);
          Value ignore = arith::ConstantOp::create(
              nb, loc, nb.getIntegerAttr(labelType, ignoreIndex));
          Value valid = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne,
                                              args[3], ignore);
          Value zero = floatConstant(nb, loc, f32, 0.0);
          Value one = floatConstant(nb, loc, f32, 1.0);
          Value term = arith::SelectOp::create(nb, loc, valid, loss, zero);
          Value counted = arith::SelectOp::create(nb, loc, valid, one, zero);
          Value lossSum = arith::AddFOp::create(nb, loc, args[4], term);
          Value count = arith::AddFOp::create(nb, loc, args[5], counted);
          return {lossSum, count};
        });

    // The mean; with no valid token it is 0 / 0 = NaN.
    Value mean = tb.mapIndexed(
        {}, total, {b.getMultiDimIdentityMap(0), b.getMultiDimIdentityMap(0)},
        f32, [](OpBuilder &nb, Location loc, ValueRange args) {
          return arith::DivFOp::create(nb, loc, args[0], args[1]);
        });
    return mean;
  }
};

/// embedding -> `result[..., d] = table[tokens[...], d]`, one
/// `tensor.extract` per element (ALGORITHMS.md section 7.2).
struct EmbeddingLowering : public TensorLowering<EmbeddingOp> {
  using TensorLowering::TensorLowering;

  Value lower(EmbeddingOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value tokens = adaptor.getTokens();
    Value table = adaptor.getTable();
    int64_t rank = tensorTypeOf(tokens).getRank() + 1;

    SmallVector<OpFoldResult> sizes = tb.sizesOf(tokens);
    sizes.push_back(tb.sizesOf(table)[1]);
    Value result = tb.mapIndexed(
        sizes, tokens, leadingDimsMap(b.getContext(), rank),
        tensorTypeOf(table).getElementType(),
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value row =
              arith::IndexCastOp::create(nb, loc, nb.getIndexType(), args[0]);
          Value column = linalg::IndexOp::create(nb, loc, rank - 1);
          return tensor::ExtractOp::create(nb, loc, table,
                                           ValueRange{row, column});
        });
    return result;
  }
};

/// glu_ffn -> `a = x Wg`, `u = x Wu` (fp32), `h = act(a, u)`, `h Wd`
/// (ALGORITHMS.md sections 6 and 7.1).
struct GLUFFNLowering : public TensorLowering<GLUFFNOp> {
  using TensorLowering::TensorLowering;

  Value lower(GLUFFNOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    Value x = adaptor.getInput();
    Type f32 = b.getF32Type();
    ActivationAttr activation = op.getActivation();
    Value gate = tb.project(x, adaptor.getWGate(), f32);
    Value up = tb.project(x, adaptor.getWUp(), f32);
    Value hidden = tb.gatedActivation(gate, up, activation.getGateBetaValue(),
                                      activation.getUpBetaValue());
    Value y = tb.project(hidden, adaptor.getWDown(),
                         tensorTypeOf(x).getElementType());
    if (y.getType() != op.getType())
      y = tensor::CastOp::create(b, op.getType(), y);
    return y;
  }
};

/// attn_res_mix -> per source `rstd_i = (mean(v_i^2) + eps)^-1/2` and
/// `v_i . u` in one pass over the last dimension, the scores
/// `s_i = rstd_i (v_i . u)`, their softmax over the sources (shifted by the
/// max, so every exponent is <= 0), then `sum_i p_i v_i` (ALGORITHMS.md
/// sections 5.1 and 5.5). Scores and weights are fp32.
struct AttnResMixLowering : public TensorLowering<AttnResMixOp> {
  using TensorLowering::TensorLowering;

  Value lower(AttnResMixOp op, OpAdaptor adaptor, ImplicitLocOpBuilder &b,
              TensorBuilder &tb) const override {
    ValueRange sources = adaptor.getSources();
    Value query = adaptor.getQuery();
    Value first = sources.front();
    RankedTensorType type = tensorTypeOf(first);
    int64_t rank = type.getRank();
    int64_t numSources = sources.size();
    Type f32 = b.getF32Type();
    double epsilon = op.getEpsilon().convertToDouble();
    MLIRContext *ctx = b.getContext();
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    AffineMap tokenMap = leadingDimsMap(ctx, rank);
    AffineMap queryMap = dimsMap(ctx, rank, {rank - 1});
    SmallVector<OpFoldResult> tokenSizes = tb.sizesOf(first);
    tokenSizes.pop_back();
    Value width = buildLastDimSizeF32(b, first);

    // s_i = rstd_i * (v_i . u), one [...] fp32 tensor per source.
    SmallVector<Value> scores;
    for (Value source : sources) {
      SmallVector<Value> sums = tb.generic(
          {source, query}, {identity, queryMap},
          {tb.filled(tokenSizes, f32, 0.0), tb.filled(tokenSizes, f32, 0.0)},
          {tokenMap, tokenMap}, rank, rank - 1,
          [&](OpBuilder &nb, Location loc,
              ValueRange args) -> SmallVector<Value> {
            Value v = convertScalar(nb, loc, args[0], f32);
            Value u = convertScalar(nb, loc, args[1], f32);
            Value square = arith::MulFOp::create(nb, loc, v, v);
            Value product = arith::MulFOp::create(nb, loc, v, u);
            return {arith::AddFOp::create(nb, loc, args[2], square),
                    arith::AddFOp::create(nb, loc, args[3], product)};
          });
      scores.push_back(
          tb.map(sums, f32, [&](OpBuilder &nb, Location loc, ValueRange args) {
            Value eps = floatConstant(nb, loc, f32, epsilon);
            Value mean = arith::DivFOp::create(nb, loc, args[0], width);
            Value shifted = arith::AddFOp::create(nb, loc, mean, eps);
            Value rstd = math::RsqrtOp::create(nb, loc, shifted);
            return arith::MulFOp::create(nb, loc, rstd, args[1]);
          }));
    }

    // p = softmax over the sources, per token.
    SmallVector<AffineMap> tokenMaps(2 * numSources,
                                     b.getMultiDimIdentityMap(rank - 1));
    SmallVector<Value> inits;
    for (int64_t i = 0; i < numSources; ++i)
      inits.push_back(tb.filled(tokenSizes, f32, 0.0));
    SmallVector<Value> weights = tb.generic(
        scores, ArrayRef(tokenMaps).take_front(numSources), inits,
        ArrayRef(tokenMaps).take_front(numSources), rank - 1, rank - 1,
        [&](OpBuilder &nb, Location loc,
            ValueRange args) -> SmallVector<Value> {
          ValueRange s = args.take_front(numSources);
          Value max = s.front();
          for (Value score : s.drop_front())
            max = arith::MaximumFOp::create(nb, loc, max, score);
          SmallVector<Value> exps;
          Value total = floatConstant(nb, loc, f32, 0.0);
          for (Value score : s) {
            Value shifted = arith::SubFOp::create(nb, loc, score, max);
            exps.push_back(math::ExpOp::create(nb, loc, shifted));
            total = arith::AddFOp::create(nb, loc, total, exps.back());
          }
          SmallVector<Value> probabilities;
          for (Value exp : exps)
            probabilities.push_back(arith::DivFOp::create(nb, loc, exp, total));
          return probabilities;
        });

    // result = sum_i p_i v_i, accumulated in fp32.
    SmallVector<Value> inputs(sources.begin(), sources.end());
    inputs.append(weights.begin(), weights.end());
    SmallVector<AffineMap> maps(numSources, identity);
    maps.append(numSources, tokenMap);
    Type elementType = type.getElementType();
    Value result =
        tb.mapIndexed(tb.sizesOf(first), inputs, maps, elementType,
                      [&](OpBuilder &nb, Location loc, ValueRange args) {
                        Value sum = floatConstant(nb, loc, f32, 0.0);
                        for (int64_t i = 0; i < numSources; ++i) {
                          Value v = convertScalar(nb, loc, args[i], f32);
                          Value term = arith::MulFOp::create(
                              nb, loc, args[numSources + i], v);
                          sum = arith::AddFOp::create(nb, loc, sum, term);
                        }
                        return convertScalar(nb, loc, sum, elementType);
                      });
    if (result.getType() != op.getType())
      result = tensor::CastOp::create(b, op.getType(), result);
    return result;
  }
};

} // namespace

void mlir::moe::populateMoEToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<L2NormLowering, RMSNormLowering, DecayGateLowering,
               ShortConvLowering, CrossEntropyLowering, EmbeddingLowering,
               GLUFFNLowering, AttnResMixLowering>(patterns.getContext());
}

void mlir::moe::configureMoEToLinalgTarget(ConversionTarget &target) {
  target.addIllegalOp<L2NormOp, RMSNormOp, DecayGateOp, ShortConvOp,
                      CrossEntropyOp, EmbeddingOp, GLUFFNOp, AttnResMixOp>();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct ConvertMoEToLinalgPass
    : public moe::impl::ConvertMoEToLinalgBase<ConvertMoEToLinalgPass> {
  void runOnOperation() override;
};
} // namespace

void ConvertMoEToLinalgPass::runOnOperation() {
  MLIRContext *ctx = &getContext();
  // Partial conversion: only the ops the patterns lower are illegal. What
  // they produce (linalg, arith, math, tensor) and every other op, moe ops
  // included, stays legal, so moe.kda and the routing ops pass through.
  ConversionTarget target(*ctx);
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  configureMoEToLinalgTarget(target);
  configureCommonGradToLinalgTarget(target);

  RewritePatternSet patterns(ctx);
  populateMoEToLinalgPatterns(patterns);
  populateCommonGradToLinalgPatterns(patterns);
  if (failed(
          applyPartialConversion(getOperation(), target, std::move(patterns))))
    signalPassFailure();
}
