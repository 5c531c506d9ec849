//===- Decompose.cpp - Rewrite layer ops into primitive ops ---------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-decompose: each layer op (kda_layer, mla_layer, moe_ffn,
// attn_res, lm_head) becomes the primitive moe ops of ALGORITHMS.md plus
// linalg contractions, element-wise linalg.generic ops and tensor reshapes.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Transforms.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEDECOMPOSE
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-decompose"

//===----------------------------------------------------------------------===//
// Tensor building helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The sizes of `value`: static dimensions as attributes, dynamic ones as
/// `tensor.dim` results.
static SmallVector<OpFoldResult> sizesOf(ImplicitLocOpBuilder &b,
                                         Value value) {
  return tensor::getMixedSizes(b, b.getLoc(), value);
}

/// The static shape that `sizes` describes (dynamic where a size is a value).
static SmallVector<int64_t> staticShapeOf(ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    shape.push_back(constant ? *constant : ShapedType::kDynamic);
  }
  return shape;
}

/// Converts a scalar float to `type` (extension or truncation).
static Value convertScalar(OpBuilder &b, Location loc, Value value,
                           Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  if (from.getIntOrFloatBitWidth() < type.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, type, value);
  return arith::TruncFOp::create(b, loc, type, value);
}

/// `1 / (1 + exp(-x))`.
static Value buildSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), 1));
  Value negated = arith::NegFOp::create(b, loc, x);
  Value exp = math::ExpOp::create(b, loc, negated);
  Value denominator = arith::AddFOp::create(b, loc, one, exp);
  return arith::DivFOp::create(b, loc, one, denominator);
}

namespace {
/// Builds the upstream IR a layer op decomposes into, at one location.
class LayerBuilder {
public:
  LayerBuilder(ImplicitLocOpBuilder &b) : b(b) {}

  /// Applies `fn` element-wise to `inputs`, which all have the same shape;
  /// the result has that shape and `resultElementType`.
  Value map(ValueRange inputs, Type resultElementType,
            function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
    Value like = inputs.front();
    int64_t rank = tensorTypeOf(like).getRank();
    Value init = tensor::EmptyOp::create(b, sizesOf(b, like), resultElementType);
    SmallVector<AffineMap> maps(inputs.size() + 1,
                                b.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
        iterators, [&](OpBuilder &nested, Location loc, ValueRange args) {
          Value result = fn(nested, loc, args.drop_back());
          linalg::YieldOp::create(nested, loc, result);
        });
    return generic.getResult(0);
  }

  /// Converts every element of `value` to `elementType`.
  Value convert(Value value, Type elementType) {
    if (tensorTypeOf(value).getElementType() == elementType)
      return value;
    return map(value, elementType,
               [&](OpBuilder &nested, Location loc, ValueRange args) {
                 return convertScalar(nested, loc, args[0], elementType);
               });
  }

  /// Element-wise sigmoid, in the element type of `value`.
  Value sigmoid(Value value) {
    return map(value, tensorTypeOf(value).getElementType(),
               [](OpBuilder &nested, Location loc, ValueRange args) {
                 return buildSigmoid(nested, loc, args[0]);
               });
  }

  /// Element-wise product of two tensors of the same shape.
  Value multiply(Value lhs, Value rhs) {
    return map(ValueRange{lhs, rhs}, tensorTypeOf(lhs).getElementType(),
               [](OpBuilder &nested, Location loc, ValueRange args) {
                 return arith::MulFOp::create(nested, loc, args[0], args[1]);
               });
  }

  /// Element-wise sum of two tensors of the same shape.
  Value add(Value lhs, Value rhs) {
    return map(ValueRange{lhs, rhs}, tensorTypeOf(lhs).getElementType(),
               [](OpBuilder &nested, Location loc, ValueRange args) {
                 return arith::AddFOp::create(nested, loc, args[0], args[1]);
               });
  }

  /// Contracts the last dimension of `input: [..., d]` with `weight`, which
  /// is `[d, n]` (or `[n, d]` when `transposed`). Accumulates in fp32 and
  /// returns `[..., n]` with `resultElementType`.
  Value project(Value input, Value weight, Type resultElementType,
                bool transposed = false) {
    RankedTensorType weightType = tensorTypeOf(weight);
    int64_t width = weightType.getDimSize(transposed ? 0 : 1);
    int64_t rank = tensorTypeOf(input).getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(b, input);
    sizes.back() = b.getIndexAttr(width);

    Type f32 = b.getF32Type();
    Value zero = arith::ConstantOp::create(b, b.getFloatAttr(f32, 0.0));
    Value empty = tensor::EmptyOp::create(b, sizes, f32);
    Value init = linalg::FillOp::create(b, ValueRange{zero}, ValueRange{empty})
                     .getResult(0);

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
    SmallVector<AffineExpr> weightExprs =
        transposed ? SmallVector<AffineExpr>{n, k}
                   : SmallVector<AffineExpr>{k, n};
    SmallVector<AffineMap> maps = {
        AffineMap::get(numLoops, 0, inputExprs, ctx),
        AffineMap::get(numLoops, 0, weightExprs, ctx),
        AffineMap::get(numLoops, 0, outputExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops - 1,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);

    auto contraction = linalg::GenericOp::create(
        b, TypeRange{init.getType()}, ValueRange{input, weight},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &nested, Location loc, ValueRange args) {
          Value lhs = convertScalar(nested, loc, args[0], f32);
          Value rhs = convertScalar(nested, loc, args[1], f32);
          Value product = arith::MulFOp::create(nested, loc, lhs, rhs);
          Value sum = arith::AddFOp::create(nested, loc, args[2], product);
          linalg::YieldOp::create(nested, loc, sum);
        });
    return convert(contraction.getResult(0), resultElementType);
  }

  /// Splits the last dimension of `value` into `[heads, width]`.
  Value splitHeads(Value value, int64_t heads, int64_t width) {
    RankedTensorType type = tensorTypeOf(value);
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(b, value);
    sizes.back() = b.getIndexAttr(heads);
    sizes.push_back(b.getIndexAttr(width));
    SmallVector<ReassociationIndices> reassociation;
    for (int64_t i = 0; i < rank - 1; ++i)
      reassociation.push_back({i});
    reassociation.push_back({rank - 1, rank});
    auto resultType =
        RankedTensorType::get(staticShapeOf(sizes), type.getElementType());
    return tensor::ExpandShapeOp::create(b, resultType, value, reassociation,
                                         sizes);
  }

  /// Merges the last two dimensions of `value`.
  Value mergeHeads(Value value) {
    int64_t rank = tensorTypeOf(value).getRank();
    SmallVector<ReassociationIndices> reassociation;
    for (int64_t i = 0; i < rank - 2; ++i)
      reassociation.push_back({i});
    reassociation.push_back({rank - 2, rank - 1});
    return tensor::CollapseShapeOp::create(b, value, reassociation);
  }

  /// Collapses `[..., d]` into `[N, d]`.
  Value flattenTokens(Value value) {
    int64_t rank = tensorTypeOf(value).getRank();
    if (rank == 2)
      return value;
    ReassociationIndices leading;
    for (int64_t i = 0; i < rank - 1; ++i)
      leading.push_back(i);
    return tensor::CollapseShapeOp::create(
        b, value, ArrayRef<ReassociationIndices>{leading, {rank - 1}});
  }

  /// Expands `[N, d]` back into the shape of `like: [..., d]`.
  Value unflattenTokens(Value value, Value like) {
    int64_t rank = tensorTypeOf(like).getRank();
    if (rank == 2)
      return value;
    ReassociationIndices leading;
    for (int64_t i = 0; i < rank - 1; ++i)
      leading.push_back(i);
    return tensor::ExpandShapeOp::create(
        b, like.getType(), value,
        ArrayRef<ReassociationIndices>{leading, {rank - 1}}, sizesOf(b, like));
  }

  /// Slices `[offset, offset + size)` out of the last dimension of `value`.
  Value sliceLast(Value value, int64_t offset, int64_t size) {
    int64_t rank = tensorTypeOf(value).getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets.back() = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = sizesOf(b, value);
    sizes.back() = b.getIndexAttr(size);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, value, offsets, sizes, strides);
  }

  /// Repeats `value: [B, T, D]` over a new head dimension: `[B, T, H, D]`.
  Value broadcastHeads(Value value, int64_t heads) {
    SmallVector<OpFoldResult> sizes = sizesOf(b, value);
    sizes.insert(sizes.end() - 1, b.getIndexAttr(heads));
    Value init = tensor::EmptyOp::create(
        b, sizes, tensorTypeOf(value).getElementType());
    return linalg::BroadcastOp::create(b, value, init,
                                       ArrayRef<int64_t>{2})
        ->getResult(0);
  }

private:
  ImplicitLocOpBuilder &b;
};
} // namespace

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// kda_layer -> projections, short convs, l2_norm, decay_gate, kda, rms_norm
/// and the sigmoid output gate (ALGORITHMS.md section 1.2).
struct DecomposeKDALayer : public OpRewritePattern<KDALayerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(KDALayerOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LayerBuilder layer(b);
    Value x = op.getInput();
    Type elementType = tensorTypeOf(x).getElementType();
    Type f32 = b.getF32Type();
    int64_t heads = op.getNumHeads(), keyDim = op.getHeadDim(),
            valueDim = op.getValueDim();

    // q, k, v: projection, causal short conv with SiLU, split into heads.
    auto convolved = [&](Value weight, Value convWeight, int64_t width) {
      Value projected = layer.project(x, weight, elementType);
      Value conv = ShortConvOp::create(b, projected.getType(), projected,
                                       convWeight, b.getUnitAttr());
      return layer.splitHeads(conv, heads, width);
    };
    FloatAttr l2Eps = b.getF64FloatAttr(1e-6);
    Value q = convolved(op.getWQ(), op.getConvQ(), keyDim);
    q = L2NormOp::create(b, q.getType(), q, l2Eps);
    Value k = convolved(op.getWK(), op.getConvK(), keyDim);
    k = L2NormOp::create(b, k.getType(), k, l2Eps);
    Value v = convolved(op.getWV(), op.getConvV(), valueDim);

    // g from the low-rank gate projection; beta = sigmoid(x W_beta) in fp32.
    Value gateDown = layer.project(x, op.getWGateDown(), elementType);
    Value raw = layer.splitHeads(
        layer.project(gateDown, op.getWGateUp(), elementType), heads, keyDim);
    auto decayType = RankedTensorType::get(tensorTypeOf(raw).getShape(), f32);
    Value g = DecayGateOp::create(b, decayType, op.getGate(), raw,
                                  op.getDtBias(), op.getALog());
    Value beta = layer.sigmoid(layer.project(x, op.getWBeta(), f32));

    // The core recurrence; its final state is unused here.
    ArrayRef<int64_t> qShape = tensorTypeOf(q).getShape();
    int64_t batch = qShape[0];
    SmallVector<int64_t> stateShape =
        op.getStateLayout() == StateLayout::KeyMajor
            ? SmallVector<int64_t>{batch, heads, keyDim, valueDim}
            : SmallVector<int64_t>{batch, heads, valueDim, keyDim};
    auto kda = KDAOp::create(
        b, v.getType(), RankedTensorType::get(stateShape, f32), q, k, v, g,
        beta, /*initial_state=*/Value(), /*scale=*/FloatAttr(),
        op.getStateLayoutAttr());

    // Per-head RMSNorm over V, the sigmoid output gate, output projection.
    Value normed = RMSNormOp::create(b, v.getType(), kda.getOutput(),
                                     op.getOutNorm(), op.getNormEpsAttr());
    Value outGateDown = layer.project(x, op.getWOutGateDown(), elementType);
    Value outGate = layer.sigmoid(layer.splitHeads(
        layer.project(outGateDown, op.getWOutGateUp(), elementType), heads,
        valueDim));
    Value gated = layer.mergeHeads(layer.multiply(normed, outGate));
    rewriter.replaceOp(op, layer.project(gated, op.getWOut(), elementType));
    return success();
  }
};

/// mla_layer -> q (optionally through q-LoRA), the kv latent and its norm,
/// per-head keys [k_nope ; k_rope], mla_attention with its gate, output
/// projection (ALGORITHMS.md section 3.1, NoPE).
struct DecomposeMLALayer : public OpRewritePattern<MLALayerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MLALayerOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LayerBuilder layer(b);
    Value x = op.getInput();
    Type elementType = tensorTypeOf(x).getElementType();
    int64_t heads = op.getNumHeads(), nope = op.getNopeHeadDim(),
            rope = op.getRopeHeadDim(), valueDim = op.getVHeadDim();

    Value q;
    if (Value wq = op.getWQ()) {
      q = layer.project(x, wq, elementType);
    } else {
      Value latent = layer.project(x, op.getWQDown(), elementType);
      latent = RMSNormOp::create(b, latent.getType(), latent, op.getQNorm(),
                                 op.getNormEpsAttr());
      q = layer.project(latent, op.getWQUp(), elementType);
    }
    q = layer.splitHeads(q, heads, nope + rope);

    Value kvDown = layer.project(x, op.getWKvDown(), elementType);
    int64_t kvRank = tensorTypeOf(kvDown).getShape().back() - rope;
    Value latent = layer.sliceLast(kvDown, 0, kvRank);
    latent = RMSNormOp::create(b, latent.getType(), latent, op.getKvNorm(),
                               op.getNormEpsAttr());
    Value kv = layer.splitHeads(layer.project(latent, op.getWKvUp(),
                                              elementType),
                                heads, nope + valueDim);
    Value k = layer.sliceLast(kv, 0, nope);
    Value v = layer.sliceLast(kv, nope, valueDim);
    if (rope > 0) {
      // NoPE: the shared rope key is concatenated unrotated.
      Value ropeKey =
          layer.broadcastHeads(layer.sliceLast(kvDown, kvRank, rope), heads);
      k = tensor::ConcatOp::create(b, /*dim=*/3, ValueRange{k, ropeKey});
    }

    Value gate;
    if (Value wg = op.getWGate())
      gate = layer.splitHeads(layer.project(x, wg, elementType), heads,
                              valueDim);
    ArrayRef<int64_t> qShape = tensorTypeOf(q).getShape();
    auto lseType = RankedTensorType::get({qShape[0], heads, qShape[1]},
                                         b.getF32Type());
    auto attention = MLAAttentionOp::create(b, v.getType(), lseType, q, k, v,
                                            gate, /*scale=*/FloatAttr());
    Value merged = layer.mergeHeads(attention.getOutput());
    rewriter.replaceOp(op, layer.project(merged, op.getWOut(), elementType));
    return success();
  }
};

/// moe_ffn -> route, dispatch, expert_ffn, combine and the shared glu_ffn
/// (ALGORITHMS.md sections 4.1 and 7.1).
struct DecomposeMoEFFN : public OpRewritePattern<MoEFFNOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MoEFFNOp op,
                                PatternRewriter &rewriter) const override {
    if (tensorTypeOf(op.getInput()).getRank() < 2)
      return rewriter.notifyMatchFailure(op, "expects tokens x width input");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LayerBuilder layer(b);
    Value x = layer.flattenTokens(op.getInput());
    RankedTensorType xType = tensorTypeOf(x);
    int64_t tokens = xType.getDimSize(0), width = xType.getDimSize(1);
    RoutingAttr routing = op.getRouting();
    int64_t experts = routing.getNumExperts(), topK = routing.getTopK();
    int64_t slots = ShapedType::isDynamic(tokens) ? ShapedType::kDynamic
                                                  : tokens * topK;
    Type f32 = b.getF32Type(), i64 = b.getI64Type();

    auto route = RouteOp::create(
        b, RankedTensorType::get({tokens, topK}, f32),
        RankedTensorType::get({tokens, topK}, i64),
        op.getLoad().getType(), op.getNextBias().getType(), x, op.getWRouter(),
        op.getRouterBias(), routing);
    auto dispatch = DispatchOp::create(
        b, RankedTensorType::get({slots, width}, xType.getElementType()),
        RankedTensorType::get({experts + 1}, i64),
        RankedTensorType::get({slots}, i64), x, route.getIndices(),
        b.getI64IntegerAttr(experts));
    Value expertOut = ExpertFFNOp::create(
        b, dispatch.getPermuted().getType(), dispatch.getPermuted(),
        dispatch.getExpertOffsets(), op.getWGate(), op.getWUp(),
        op.getWDown(), op.getActivation());
    Value y = CombineOp::create(b, x.getType(), expertOut,
                                dispatch.getSourceSlot(), route.getWeights());
    if (op.getWSharedGate()) {
      Value shared = GLUFFNOp::create(b, x.getType(), x, op.getWSharedGate(),
                                      op.getWSharedUp(), op.getWSharedDown(),
                                      op.getActivation());
      y = layer.add(y, shared);
    }
    rewriter.replaceOp(op, {layer.unflattenTokens(y, op.getInput()),
                            route.getLoad(), route.getNextBias()});
    return success();
  }
};

/// attn_res -> the key norm folded into the query (`u = w * rho`), then
/// attn_res_mix (ALGORITHMS.md section 5.1).
struct DecomposeAttnRes : public OpRewritePattern<AttnResOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttnResOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LayerBuilder layer(b);
    Value query = layer.multiply(op.getQuery(),
                                 layer.convert(op.getKeyNorm(),
                                               tensorTypeOf(op.getQuery())
                                                   .getElementType()));
    rewriter.replaceOpWithNewOp<AttnResMixOp>(op, op.getType(),
                                              op.getSources(), query,
                                              op.getEpsilonAttr());
    return success();
  }
};

/// lm_head -> fp32 logits `x W^T`, then cross_entropy (section 7.2).
struct DecomposeLMHead : public OpRewritePattern<LMHeadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LMHeadOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LayerBuilder layer(b);
    Value logits = layer.project(op.getInput(), op.getWeight(), b.getF32Type(),
                                 /*transposed=*/true);
    rewriter.replaceOpWithNewOp<CrossEntropyOp>(op, op.getType(), logits,
                                                op.getLabels(),
                                                op.getIgnoreIndexAttr());
    return success();
  }
};

} // namespace

void mlir::moe::populateDecomposeLayerPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeKDALayer, DecomposeMLALayer, DecomposeMoEFFN,
               DecomposeAttnRes, DecomposeLMHead>(patterns.getContext());
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoEDecomposePass
    : public moe::impl::MoEDecomposeBase<MoEDecomposePass> {
  void runOnOperation() override;
};
} // namespace

static bool isLayerOp(Operation *op) {
  return isa<KDALayerOp, MLALayerOp, MoEFFNOp, AttnResOp, LMHeadOp>(op);
}

void MoEDecomposePass::runOnOperation() {
  Operation *root = getOperation();
  int64_t before = 0;
  root->walk([&](Operation *op) { before += isLayerOp(op); });

  RewritePatternSet patterns(&getContext());
  populateDecomposeLayerPatterns(patterns);
  walkAndApplyPatterns(root, std::move(patterns));

  // A layer op left behind means a pattern refused it: report each one.
  bool failed = false;
  int64_t after = 0;
  root->walk([&](Operation *op) {
    if (!isLayerOp(op))
      return;
    ++after;
    op->emitError("could not decompose this layer op");
    failed = true;
  });
  numDecomposed += before - after;
  if (failed)
    signalPassFailure();
}
