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
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

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
    TensorBuilder layer(b);
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
    auto kda =
        KDAOp::create(b, v.getType(), RankedTensorType::get(stateShape, f32), q,
                      k, v, g, beta, /*initial_state=*/Value(),
                      /*scale=*/FloatAttr(), op.getStateLayoutAttr());

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
    TensorBuilder layer(b);
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
    Value kv =
        layer.splitHeads(layer.project(latent, op.getWKvUp(), elementType),
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
      gate =
          layer.splitHeads(layer.project(x, wg, elementType), heads, valueDim);
    ArrayRef<int64_t> qShape = tensorTypeOf(q).getShape();
    auto lseType =
        RankedTensorType::get({qShape[0], heads, qShape[1]}, b.getF32Type());
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
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TensorBuilder layer(b);
    Value x = layer.flattenTokens(op.getInput());
    RankedTensorType xType = tensorTypeOf(x);
    int64_t tokens = xType.getDimSize(0), width = xType.getDimSize(1);
    RoutingAttr routing = op.getRouting();
    int64_t experts = routing.getNumExperts(), topK = routing.getTopK();
    int64_t slots =
        ShapedType::isDynamic(tokens) ? ShapedType::kDynamic : tokens * topK;
    Type f32 = b.getF32Type(), i64 = b.getI64Type();

    auto route =
        RouteOp::create(b, RankedTensorType::get({tokens, topK}, f32),
                        RankedTensorType::get({tokens, topK}, i64),
                        op.getLoad().getType(), op.getNextBias().getType(), x,
                        op.getWRouter(), op.getRouterBias(), routing);
    auto dispatch = DispatchOp::create(
        b, RankedTensorType::get({slots, width}, xType.getElementType()),
        RankedTensorType::get({experts + 1}, i64),
        RankedTensorType::get({slots}, i64), x, route.getIndices(),
        b.getI64IntegerAttr(experts));
    Value expertOut = ExpertFFNOp::create(
        b, dispatch.getPermuted().getType(), dispatch.getPermuted(),
        dispatch.getExpertOffsets(), op.getWGate(), op.getWUp(), op.getWDown(),
        op.getActivation());
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
    TensorBuilder layer(b);
    Value query = layer.multiply(
        op.getQuery(),
        layer.convert(op.getKeyNorm(),
                      tensorTypeOf(op.getQuery()).getElementType()));
    rewriter.replaceOpWithNewOp<AttnResMixOp>(op, op.getType(), op.getSources(),
                                              query, op.getEpsilonAttr());
    return success();
  }
};

/// lm_head -> linear_cross_entropy, the projection `x W^T` fused with the
/// cross-entropy, whose lowering never materialises the [tokens, vocab]
/// logits (section 7.2). A single position (`x: [d]`, whose logits are one
/// vocabulary row) keeps the fp32 logits and cross_entropy.
struct DecomposeLMHead : public OpRewritePattern<LMHeadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LMHeadOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TensorBuilder layer(b);
    auto inputType = tensorTypeOf(op.getInput());
    if (inputType.getRank() >= 2) {
      auto lseType = RankedTensorType::get(inputType.getShape().drop_back(),
                                           b.getF32Type());
      auto fused = LinearCrossEntropyOp::create(
          b, op.getType(), lseType, op.getInput(), op.getWeight(),
          op.getLabels(), op.getIgnoreIndexAttr());
      rewriter.replaceOp(op, fused.getLoss());
      return success();
    }
    Value logits = layer.project(op.getInput(), op.getWeight(), b.getF32Type(),
                                 /*transposed=*/true);
    rewriter.replaceOpWithNewOp<CrossEntropyOp>(
        op, op.getType(), logits, op.getLabels(), op.getIgnoreIndexAttr());
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
struct MoEDecomposePass : public moe::impl::MoEDecomposeBase<MoEDecomposePass> {
  void runOnOperation() override;
};
} // namespace

void MoEDecomposePass::runOnOperation() {
  // Every pattern applies to every op of its kind (the verifiers guarantee
  // what the rewrites rely on), so one walk decomposes all layer ops.
  RewritePatternSet patterns(&getContext());
  populateDecomposeLayerPatterns(patterns);
  walkAndApplyPatterns(getOperation(), std::move(patterns));
}
