//===- ChunkLoss.cpp - The lm_head loss as chunk projections and reductions
//===//
//
// Part of the moe-mlir project.
//
// Implements -moe-chunk-loss: moe.linear_cross_entropy becomes, for each
// vocabulary chunk, a projection of all the tokens onto the chunk's rows of
// W and row reductions that update an online log-sum-exp, so that the GPU
// runs each as one well-mapped kernel (a GEMM, a warp per row) instead of
// one tile program per token tile; moe.linear_cross_entropy_grad becomes,
// for each chunk, the chunk's logits again (a GEMM), their adjoint G (one
// element-wise kernel) and the two products G W_c and G^T x (GEMMs).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/LossAdjoint.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_MOECHUNKLOSS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

struct MoEChunkLossPass : public moe::impl::MoEChunkLossBase<MoEChunkLossPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// Rows [start, start + size) of the lm_head weight `weight` ([V, d]).
Value weightRows(ImplicitLocOpBuilder &b, Value weight, int64_t start,
                 int64_t size) {
  int64_t width = tensorTypeOf(weight).getDimSize(1);
  return tensor::ExtractSliceOp::create(
      b, weight,
      ArrayRef<OpFoldResult>{b.getIndexAttr(start), b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(size), b.getIndexAttr(width)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// The loss and the per-token log-sum-exp of `op` (see the pass).
std::pair<Value, Value> lowerInChunks(ImplicitLocOpBuilder &b,
                                      LinearCrossEntropyOp op, int64_t chunk) {
  TensorBuilder tb(b);
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  Value x = tb.flattenTokens(op.getInput());
  Value labels = tb.flattenAll(op.getLabels());
  Value weight = op.getWeight();
  int64_t vocab = tensorTypeOf(weight).getDimSize(0);
  Type labelType = tensorTypeOf(labels).getElementType();
  SmallVector<OpFoldResult> tokens = {tb.sizesOf(x)[0]};
  double negInf = -std::numeric_limits<double>::infinity();

  AffineMap rows = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  AffineMap identity2 = b.getMultiDimIdentityMap(2);
  AffineMap identity1 = b.getMultiDimIdentityMap(1);

  Value runMax = tb.filled(tokens, f32, negInf);
  Value runSum = tb.filled(tokens, f32, 0.0);
  Value picked = tb.filled(tokens, f32, 0.0);
  for (int64_t start = 0; start < vocab; start += chunk) {
    int64_t size = std::min(chunk, vocab - start);
    Value rowsOfW = weightRows(b, weight, start, size);
    Value logits = tb.project(x, rowsOfW, f32, /*transposed=*/true);
    Value chunkMax = tb.reduceLast(
        logits, f32, negInf, [](OpBuilder &nb, Location loc, ValueRange a) {
          return arith::MaxNumFOp::create(nb, loc, a[1], a[0]).getResult();
        });
    Value newMax = tb.map(
        ValueRange{runMax, chunkMax}, f32,
        [](OpBuilder &nb, Location loc, ValueRange a) {
          return arith::MaxNumFOp::create(nb, loc, a[0], a[1]).getResult();
        });
    Value chunkSum =
        tb.generic(ValueRange{logits, newMax}, {identity2, rows},
                   tb.filled(tokens, f32, 0.0), {rows}, 2, 1,
                   [](OpBuilder &nb, Location loc, ValueRange a) {
                     Value shifted = arith::SubFOp::create(nb, loc, a[0], a[1]);
                     Value e = math::ExpOp::create(nb, loc, shifted);
                     return SmallVector<Value>{
                         arith::AddFOp::create(nb, loc, a[2], e)};
                   })
            .front();
    // l' = l exp(m - m') + sum exp(z - m'); m = -inf at the start gives 0.
    runSum =
        tb.map(ValueRange{runSum, runMax, newMax, chunkSum}, f32,
               [](OpBuilder &nb, Location loc, ValueRange a) {
                 Value scale = math::ExpOp::create(
                     nb, loc, arith::SubFOp::create(nb, loc, a[1], a[2]));
                 Value kept = arith::MulFOp::create(nb, loc, a[0], scale);
                 return arith::AddFOp::create(nb, loc, kept, a[3]).getResult();
               });
    runMax = newMax;
    // The label's logit, from the chunk that holds it.
    picked = tb.mapIndexed(
        tokens, ValueRange{picked, labels}, {identity1, identity1}, f32,
        [&](OpBuilder &nb, Location loc, ValueRange a) {
          Value label = a[1];
          if (!label.getType().isIndex())
            label =
                arith::IndexCastOp::create(nb, loc, nb.getIndexType(), label);
          Value column = arith::SubIOp::create(
              nb, loc, label, arith::ConstantIndexOp::create(nb, loc, start));
          Value zero = arith::ConstantIndexOp::create(nb, loc, 0);
          Value inChunk = arith::AndIOp::create(
              nb, loc,
              arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sge, column,
                                    zero),
              arith::CmpIOp::create(
                  nb, loc, arith::CmpIPredicate::slt, column,
                  arith::ConstantIndexOp::create(nb, loc, size)));
          // Clamped so that the read stays inside the chunk either way.
          Value safe = arith::SelectOp::create(nb, loc, inChunk, column, zero);
          Value row = linalg::IndexOp::create(nb, loc, 0);
          Value z =
              tensor::ExtractOp::create(nb, loc, logits, ValueRange{row, safe});
          return arith::SelectOp::create(nb, loc, inChunk, z, a[0]).getResult();
        });
  }
  Value lse =
      tb.map(ValueRange{runMax, runSum}, f32,
             [](OpBuilder &nb, Location loc, ValueRange a) {
               Value log = math::LogOp::create(nb, loc, a[1]);
               return arith::AddFOp::create(nb, loc, a[0], log).getResult();
             });

  // The mean over the valid labels: a sum and a count, one 0-d reduction.
  int64_t ignore = op.getIgnoreIndex();
  AffineMap toScalar = AffineMap::get(1, 0, {}, ctx);
  Value zeroScalar = tb.filled({}, f32, 0.0);
  SmallVector<Value> sums = tb.generic(
      ValueRange{lse, picked, labels}, {identity1, identity1, identity1},
      ValueRange{zeroScalar, zeroScalar}, {toScalar, toScalar}, 1, 0,
      [&](OpBuilder &nb, Location loc, ValueRange a) {
        Value ignored = arith::ConstantOp::create(
            nb, loc, IntegerAttr::get(labelType, ignore));
        Value valid = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ne,
                                            a[2], ignored);
        Value zero = arith::ConstantFloatOp::create(
            nb, loc, cast<FloatType>(nb.getF32Type()), APFloat(0.0f));
        Value one = arith::ConstantFloatOp::create(
            nb, loc, cast<FloatType>(nb.getF32Type()), APFloat(1.0f));
        Value term = arith::SelectOp::create(
            nb, loc, valid, arith::SubFOp::create(nb, loc, a[0], a[1]), zero);
        Value count = arith::SelectOp::create(nb, loc, valid, one, zero);
        return SmallVector<Value>{arith::AddFOp::create(nb, loc, a[3], term),
                                  arith::AddFOp::create(nb, loc, a[4], count)};
      });
  Value loss = tb.map(sums, f32, [](OpBuilder &nb, Location loc, ValueRange a) {
    return arith::DivFOp::create(nb, loc, a[0], a[1]).getResult();
  });

  // lse in the labels' shape.
  lse = tb.unflattenAll(lse, op.getLabels(), op.getLse().getType());
  if (loss.getType() != op.getLoss().getType())
    loss = tensor::CastOp::create(b, op.getLoss().getType(), loss);
  return {loss, lse};
}

/// (d_input, d_weight) of `op` (see the pass), with its result types.
std::pair<Value, Value> lowerGradInChunks(ImplicitLocOpBuilder &b,
                                          LinearCrossEntropyGradOp op,
                                          int64_t chunk) {
  TensorBuilder tb(b);
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  Value x = tb.flattenTokens(op.getInput());
  Value labels = tb.flattenAll(op.getLabels());
  Value lse = tb.flattenAll(op.getLse());
  Value coefficients = tb.flattenAll(buildTokenCoefficients(
      b, tb, op.getLabels(), op.getDLoss(), op.getIgnoreIndex()));
  Value weight = op.getWeight();
  int64_t vocab = tensorTypeOf(weight).getDimSize(0);
  AffineMap identity2 = b.getMultiDimIdentityMap(2);
  AffineMap rows = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);

  Value dx;
  SmallVector<Value> dwChunks;
  for (int64_t start = 0; start < vocab; start += chunk) {
    int64_t size = std::min(chunk, vocab - start);
    Value rowsOfW = weightRows(b, weight, start, size);
    Value logits = tb.project(x, rowsOfW, f32, /*transposed=*/true);
    Value g = tb.mapIndexed(
        tb.sizesOf(logits), ValueRange{logits, lse, coefficients, labels},
        {identity2, rows, rows, rows}, f32,
        [&](OpBuilder &nb, Location loc, ValueRange a) {
          Value column = linalg::IndexOp::create(nb, loc, 1);
          Value offset = arith::ConstantIndexOp::create(nb, loc, start);
          return buildLogitAdjoint(nb, loc, a[0], a[1], a[2], a[3], column,
                                   offset);
        });
    // d_input += G_c W_c; d_weight's rows of the chunk = G_c^T x.
    Value partial = tb.project(g, rowsOfW, f32, /*transposed=*/false);
    dx = dx ? tb.add(dx, partial) : partial;
    dwChunks.push_back(tb.matmul(g, x, /*transposeLhs=*/true));
  }
  Value dw = dwChunks.front();
  if (dwChunks.size() > 1)
    dw = tensor::ConcatOp::create(b, /*dim=*/0, dwChunks);
  dx = tb.convert(dx, tensorTypeOf(op.getInput()).getElementType());
  dx = tb.unflattenTokens(dx, op.getInput());
  if (dx.getType() != op.getDInput().getType())
    dx = tensor::CastOp::create(b, op.getDInput().getType(), dx);
  dw = tb.convert(dw, tensorTypeOf(weight).getElementType());
  if (dw.getType() != op.getDWeight().getType())
    dw = tensor::CastOp::create(b, op.getDWeight().getType(), dw);
  return {dx, dw};
}

} // namespace

void MoEChunkLossPass::runOnOperation() {
  if (vocabChunk <= 0) {
    getOperation().emitError("-moe-chunk-loss: vocab-chunk must be positive, "
                             "got ")
        << static_cast<int64_t>(vocabChunk);
    return signalPassFailure();
  }
  SmallVector<Operation *> ops;
  getOperation().walk([&](Operation *op) {
    if (isa<LinearCrossEntropyOp, LinearCrossEntropyGradOp>(op))
      ops.push_back(op);
  });
  IRRewriter rewriter(&getContext());
  bool failed = false;
  for (Operation *op : ops) {
    Value weight = op->getOperand(1), input = op->getOperand(0);
    auto weightType = tensorTypeOf(weight);
    auto inputType = tensorTypeOf(input);
    if (!weightType.hasStaticShape() ||
        ShapedType::isDynamic(inputType.getShape().back())) {
      op->emitOpError("-moe-chunk-loss needs a static vocabulary and width, "
                      "got weight ")
          << weightType;
      failed = true;
      continue;
    }
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op->getLoc(), rewriter);
    if (auto forward = dyn_cast<LinearCrossEntropyOp>(op)) {
      auto [loss, lse] = lowerInChunks(b, forward, vocabChunk);
      rewriter.replaceOp(op, ValueRange{loss, lse});
    } else {
      auto [dx, dw] =
          lowerGradInChunks(b, cast<LinearCrossEntropyGradOp>(op), vocabChunk);
      rewriter.replaceOp(op, ValueRange{dx, dw});
    }
    ++numLowered;
  }
  if (failed)
    signalPassFailure();
}
