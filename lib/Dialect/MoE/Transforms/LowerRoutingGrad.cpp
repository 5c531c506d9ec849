//===- LowerRoutingGrad.cpp - Lower the MoE FFN gradient ops --------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-lower-routing-grad: moe.route_grad, moe.dispatch_grad,
// moe.expert_ffn_grad, moe.glu_ffn_grad and moe.combine_grad become
// tensor-level IR: gathers through the routing indices and the inverse of
// source_slot, grouped GEMMs over the expert-sorted rows (one scf.forall
// over experts, each walking its row tiles and accumulating its own weight
// gradients), and linalg contractions for the dense FFN. ALGORITHMS.md
// sections 4.1, 6 and 7.1.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "RoutedTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOELOWERROUTINGGRAD
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-lower-routing-grad"

namespace {

/// Builds the IR of one gradient op at the builder's insertion point.
class GradLowering {
public:
  GradLowering(ImplicitLocOpBuilder &b, int64_t rowTile, int64_t expertBlocks,
               int64_t partialBytes)
      : b(b), tb(b), rowTile(rowTile), expertBlocks(expertBlocks),
        partialBytes(partialBytes) {}

  SmallVector<Value> lower(RouteGradOp op);
  SmallVector<Value> lower(DispatchGradOp op);
  SmallVector<Value> lower(ExpertFFNGradOp op);
  SmallVector<Value> lower(GLUFFNGradOp op);
  SmallVector<Value> lower(CombineGradOp op);

private:
  Type f32() { return b.getF32Type(); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  AffineMap dimsMap(int64_t n, ArrayRef<int64_t> dims) {
    return moe::dimsMap(b.getContext(), n, dims);
  }
  /// `value` (fp32) converted to the element type of `type`, cast to it.
  Value finish(Value value, Type type) {
    Value converted =
        tb.convert(value, cast<RankedTensorType>(type).getElementType());
    return castTensorTo(b, converted, type);
  }
  /// Element-wise `(h, dh * dh/da, dh * dh/du)` of the gated activation
  /// from fp32 tensors `a`, `u` and `dh` of one shape.
  SmallVector<Value> activationGrads(Value a, Value u, Value dh,
                                     ActivationAttr activation);
  /// `[d, n]` fp32: `out[c, f] = sum over the leading dims of
  /// lhs[..., c] * rhs[..., f]` for each rhs in `rhs` (one generic).
  SmallVector<Value> contractLeading(Value lhs, ValueRange rhs,
                                     ArrayRef<Value> inits);
  /// `[..., d]` fp32: `sum_f da[..., f] Wg[c, f] + du[..., f] Wu[c, f]`.
  Value inputGrad(Value da, Value du, Value wGate, Value wUp);

  /// Splits of each expert's rows: enough that experts x splits reaches
  /// `expertBlocks` parallel iterations, as long as the fp32 partial weight
  /// gradients stay within `partialBytes`.
  int64_t splitsFor(int64_t experts, int64_t width, int64_t hidden) const {
    int64_t wanted = llvm::divideCeil(expertBlocks, experts);
    int64_t perSplit = experts * 3 * width * hidden * 4;
    int64_t affordable = std::max<int64_t>(1, partialBytes / perSplit);
    return std::max<int64_t>(1, std::min(wanted, affordable));
  }

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  int64_t rowTile;
  int64_t expertBlocks;
  int64_t partialBytes;
};

} // namespace

//===----------------------------------------------------------------------===//
// Shared pieces of the FFN gradients
//===----------------------------------------------------------------------===//

SmallVector<Value> GradLowering::activationGrads(Value a, Value u, Value dh,
                                                 ActivationAttr activation) {
  std::optional<double> gateBeta = activation.getGateBetaValue();
  std::optional<double> upBeta = activation.getUpBetaValue();
  SmallVector<OpFoldResult> sizes = tb.sizesOf(a);
  int64_t rank = sizes.size();
  SmallVector<Value> inits;
  for (int i = 0; i < 3; ++i)
    inits.push_back(tensor::EmptyOp::create(b, sizes, f32()));
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  return tb.generic(ValueRange{a, u, dh}, {identity, identity, identity}, inits,
                    {identity, identity, identity}, rank, rank,
                    [&](OpBuilder &nb, Location loc, ValueRange args) {
                      Value h = buildGatedActivation(nb, loc, args[0], args[1],
                                                     gateBeta, upBeta);
                      auto [dA, dU] = buildGatedActivationGrad(
                          nb, loc, args[0], args[1], gateBeta, upBeta);
                      return SmallVector<Value>{
                          h, arith::MulFOp::create(nb, loc, args[2], dA),
                          arith::MulFOp::create(nb, loc, args[2], dU)};
                    });
}

SmallVector<Value> GradLowering::contractLeading(Value lhs, ValueRange rhs,
                                                 ArrayRef<Value> inits) {
  // Loops (c, f, leading...): c and f parallel, the leading dims reduced.
  int64_t rank = tensorTypeOf(lhs).getRank();
  int64_t numLoops = rank + 1;
  SmallVector<int64_t> lhsDims, rhsDims;
  for (int64_t i = 0; i < rank - 1; ++i) {
    lhsDims.push_back(2 + i);
    rhsDims.push_back(2 + i);
  }
  lhsDims.push_back(0);
  rhsDims.push_back(1);
  SmallVector<Value> inputs = {lhs};
  inputs.append(rhs.begin(), rhs.end());
  SmallVector<AffineMap> inputMaps = {dimsMap(numLoops, lhsDims)};
  inputMaps.append(rhs.size(), dimsMap(numLoops, rhsDims));
  SmallVector<AffineMap> outputMaps(inits.size(), dimsMap(numLoops, {0, 1}));
  size_t count = rhs.size();
  return tb.generic(
      inputs, inputMaps, inits, outputMaps, numLoops, 2,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value l = convertScalar(nb, loc, args[0], nb.getF32Type());
        SmallVector<Value> sums;
        for (size_t i = 0; i < count; ++i) {
          Value r = convertScalar(nb, loc, args[1 + i], nb.getF32Type());
          Value product = arith::MulFOp::create(nb, loc, l, r);
          sums.push_back(
              arith::AddFOp::create(nb, loc, args[1 + count + i], product));
        }
        return sums;
      });
}

Value GradLowering::inputGrad(Value da, Value du, Value wGate, Value wUp) {
  // Loops (leading..., c, f): f reduced.
  int64_t rank = tensorTypeOf(da).getRank();
  int64_t numLoops = rank + 1;
  SmallVector<int64_t> rowDims, outDims;
  for (int64_t i = 0; i < rank - 1; ++i) {
    rowDims.push_back(i);
    outDims.push_back(i);
  }
  rowDims.push_back(rank);
  outDims.push_back(rank - 1);
  SmallVector<OpFoldResult> sizes = tb.sizesOf(da);
  sizes.back() = b.getIndexAttr(tensorTypeOf(wGate).getDimSize(0));
  Value init = tb.filled(sizes, f32(), 0.0);
  AffineMap rowMap = dimsMap(numLoops, rowDims);
  AffineMap weightMap = dimsMap(numLoops, {rank - 1, rank});
  return tb
      .generic(ValueRange{da, du, wGate, wUp},
               {rowMap, rowMap, weightMap, weightMap}, init,
               dimsMap(numLoops, outDims), numLoops, rank,
               [&](OpBuilder &nb, Location loc, ValueRange args) {
                 Type f32 = nb.getF32Type();
                 Value g = convertScalar(nb, loc, args[2], f32);
                 Value w = convertScalar(nb, loc, args[3], f32);
                 Value sum = arith::AddFOp::create(
                     nb, loc, arith::MulFOp::create(nb, loc, args[0], g),
                     arith::MulFOp::create(nb, loc, args[1], w));
                 return SmallVector<Value>{
                     arith::AddFOp::create(nb, loc, args[4], sum)};
               })
      .front();
}

//===----------------------------------------------------------------------===//
// moe.route_grad
//===----------------------------------------------------------------------===//

SmallVector<Value> GradLowering::lower(RouteGradOp op) {
  Value x = op.getInput(), router = op.getWRouter();
  Value indices = op.getIndices(), weightsGrad = op.getWeightsGrad();
  int64_t experts = op.getRouting().getNumExperts();
  double scaling = op.getRouting().getScalingValue();
  SmallVector<OpFoldResult> slotSizes = tb.sizesOf(indices);
  SmallVector<OpFoldResult> xSizes = tb.sizesOf(x);

  auto expertOf = [](OpBuilder &nb, Location loc, Value index) {
    return arith::IndexCastOp::create(nb, loc, nb.getIndexType(), index)
        .getResult();
  };

  // The selected logits l[n, i] = x[n] . W[indices[n, i]]: [N, k].
  Value logits =
      tb.generic(
            ValueRange{indices, x}, {dimsMap(3, {0, 1}), dimsMap(3, {0, 2})},
            tb.filled(slotSizes, f32(), 0.0), dimsMap(3, {0, 1}), 3, 2,
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              Value j = expertOf(nb, loc, args[0]);
              Value c = linalg::IndexOp::create(nb, loc, 2);
              Value w =
                  tensor::ExtractOp::create(nb, loc, router, ValueRange{j, c});
              Value product = arith::MulFOp::create(
                  nb, loc, convertScalar(nb, loc, args[1], nb.getF32Type()),
                  convertScalar(nb, loc, w, nb.getF32Type()));
              return SmallVector<Value>{
                  arith::AddFOp::create(nb, loc, args[2], product)};
            })
          .front();

  // Per token S = sum_i s_i, and per slot P_i = sum_j s_j (dw_i - dw_j),
  // the derivative of the renormalisation without cancellation (P = 0
  // exactly when k = 1, where the weight is constant).
  SmallVector<OpFoldResult> tokenSizes = {slotSizes[0]};
  Value total = tb.reduceLast(
      logits, f32(), 0.0, [](OpBuilder &nb, Location loc, ValueRange args) {
        return arith::AddFOp::create(nb, loc, args[1],
                                     buildSigmoid(nb, loc, args[0]));
      });
  Value pairs =
      tb.generic(ValueRange{logits, weightsGrad, weightsGrad},
                 {dimsMap(3, {0, 2}), dimsMap(3, {0, 2}), dimsMap(3, {0, 1})},
                 tb.filled(slotSizes, f32(), 0.0), dimsMap(3, {0, 1}), 3, 2,
                 [&](OpBuilder &nb, Location loc, ValueRange args) {
                   Value s = buildSigmoid(nb, loc, args[0]);
                   Value gap = arith::SubFOp::create(nb, loc, args[2], args[1]);
                   Value term = arith::MulFOp::create(nb, loc, s, gap);
                   return SmallVector<Value>{
                       arith::AddFOp::create(nb, loc, args[3], term)};
                 })
          .front();

  // g[n, i] = scaling (P_i + 1e-20 dw_i) / S'^2 s_i (1 - s_i) with
  // S' = S + 1e-20: d w_i / d s_j = scaling (delta_ij S' - s_i) / S'^2.
  Value logitGrad = tb.mapIndexed(
      slotSizes, ValueRange{logits, weightsGrad, pairs, total},
      {dimsMap(2, {0, 1}), dimsMap(2, {0, 1}), dimsMap(2, {0, 1}),
       dimsMap(2, {0})},
      f32(), [&](OpBuilder &nb, Location loc, ValueRange args) {
        Type type = nb.getF32Type();
        Value eps = floatConstant(nb, loc, type, 1e-20);
        Value s = buildSigmoid(nb, loc, args[0]);
        Value complement =
            buildSigmoid(nb, loc, arith::NegFOp::create(nb, loc, args[0]));
        Value shifted = arith::AddFOp::create(nb, loc, args[3], eps);
        Value numerator = arith::AddFOp::create(
            nb, loc, args[2], arith::MulFOp::create(nb, loc, eps, args[1]));
        Value ds = arith::DivFOp::create(
            nb, loc,
            arith::MulFOp::create(
                nb, loc, floatConstant(nb, loc, type, scaling), numerator),
            arith::MulFOp::create(nb, loc, shifted, shifted));
        return arith::MulFOp::create(
            nb, loc, ds, arith::MulFOp::create(nb, loc, s, complement));
      });

  // input_grad[n, c] = sum_i g[n, i] W[indices[n, i], c].
  SmallVector<OpFoldResult> inputSizes = {slotSizes[0], xSizes[1]};
  Value inputGrad =
      tb.generic(ValueRange{logitGrad, indices},
                 {dimsMap(3, {0, 2}), dimsMap(3, {0, 2})},
                 tb.filled(inputSizes, f32(), 0.0), dimsMap(3, {0, 1}), 3, 2,
                 [&](OpBuilder &nb, Location loc, ValueRange args) {
                   Value j = expertOf(nb, loc, args[1]);
                   Value c = linalg::IndexOp::create(nb, loc, 1);
                   Value w =
                       convertScalar(nb, loc,
                                     tensor::ExtractOp::create(
                                         nb, loc, router, ValueRange{j, c}),
                                     nb.getF32Type());
                   Value product = arith::MulFOp::create(nb, loc, args[0], w);
                   return SmallVector<Value>{
                       arith::AddFOp::create(nb, loc, args[2], product)};
                 })
          .front();

  // The dense logit gradient G[n, e] (zero where e is not selected), then
  // w_router_grad[e, c] = sum_n G[n, e] x[n, c]: no scatter, deterministic.
  SmallVector<OpFoldResult> denseSizes = {slotSizes[0],
                                          b.getIndexAttr(experts)};
  Value dense =
      tb.generic(ValueRange{logitGrad, indices},
                 {dimsMap(3, {0, 2}), dimsMap(3, {0, 2})},
                 tb.filled(denseSizes, f32(), 0.0), dimsMap(3, {0, 1}), 3, 2,
                 [&](OpBuilder &nb, Location loc, ValueRange args) {
                   Value j = expertOf(nb, loc, args[1]);
                   Value e = linalg::IndexOp::create(nb, loc, 1);
                   Value hit = arith::CmpIOp::create(
                       nb, loc, arith::CmpIPredicate::eq, j, e);
                   Value sum = arith::AddFOp::create(nb, loc, args[2], args[0]);
                   return SmallVector<Value>{
                       arith::SelectOp::create(nb, loc, hit, sum, args[2])};
                 })
          .front();
  Value routerGrad = contractLeading(
      dense, ValueRange{x},
      {tb.filled({b.getIndexAttr(experts), xSizes[1]}, f32(), 0.0)})[0];
  return {finish(inputGrad, op.getInputGrad().getType()),
          finish(routerGrad, op.getWRouterGrad().getType())};
}

//===----------------------------------------------------------------------===//
// moe.dispatch_grad and moe.combine_grad
//===----------------------------------------------------------------------===//

SmallVector<Value> GradLowering::lower(DispatchGradOp op) {
  Value slotRow = buildSlotRows(b, op.getSourceSlot());
  Value sum = buildSlotSum(b, op.getPermutedGrad(), slotRow, op.getIndices(),
                           /*weighted=*/false);
  return {finish(sum, op.getType())};
}

SmallVector<Value> GradLowering::lower(CombineGradOp op) {
  Value expertOut = op.getExpertOutput(), sourceSlot = op.getSourceSlot();
  Value weights = op.getWeights(), resultGrad = op.getResultGrad();
  Value slotsPerToken = tensor::DimOp::create(b, weights, 1);
  Type outType = tensorTypeOf(expertOut).getElementType();

  // expert_output_grad[m, c] = w[n, i] dy[n, c], source_slot[m] = n k + i.
  Value outGrad = tb.mapIndexed(
      tb.sizesOf(expertOut), sourceSlot, dimsMap(2, {0}), outType,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value slot =
            arith::IndexCastOp::create(nb, loc, nb.getIndexType(), args[0]);
        Value n = arith::DivUIOp::create(nb, loc, slot, slotsPerToken);
        Value i = arith::RemUIOp::create(nb, loc, slot, slotsPerToken);
        Value c = linalg::IndexOp::create(nb, loc, 1);
        Value w = tensor::ExtractOp::create(nb, loc, weights, ValueRange{n, i});
        Value dy = convertScalar(
            nb, loc,
            tensor::ExtractOp::create(nb, loc, resultGrad, ValueRange{n, c}),
            nb.getF32Type());
        return convertScalar(nb, loc, arith::MulFOp::create(nb, loc, w, dy),
                             outType);
      });

  // weights_grad[n, i] = <expert_output[row(n k + i)], dy[n]>.
  Value slotRow = buildSlotRows(b, sourceSlot);
  Value weightsGrad =
      tb.generic(
            resultGrad, dimsMap(3, {0, 2}),
            tb.filled(tb.sizesOf(weights), f32(), 0.0), dimsMap(3, {0, 1}), 3,
            2,
            [&](OpBuilder &nb, Location loc, ValueRange args) {
              Value n = linalg::IndexOp::create(nb, loc, 0);
              Value i = linalg::IndexOp::create(nb, loc, 1);
              Value c = linalg::IndexOp::create(nb, loc, 2);
              Value m = arith::AddIOp::create(
                  nb, loc, arith::MulIOp::create(nb, loc, n, slotsPerToken), i);
              Value row = arith::IndexCastOp::create(
                  nb, loc, nb.getIndexType(),
                  tensor::ExtractOp::create(nb, loc, slotRow, ValueRange{m}));
              Type f32 = nb.getF32Type();
              Value out =
                  convertScalar(nb, loc,
                                tensor::ExtractOp::create(nb, loc, expertOut,
                                                          ValueRange{row, c}),
                                f32);
              Value dy = convertScalar(nb, loc, args[0], f32);
              Value product = arith::MulFOp::create(nb, loc, out, dy);
              return SmallVector<Value>{
                  arith::AddFOp::create(nb, loc, args[1], product)};
            })
          .front();
  return {castTensorTo(b, outGrad, op.getExpertOutputGrad().getType()),
          castTensorTo(b, weightsGrad, op.getWeightsGrad().getType())};
}

//===----------------------------------------------------------------------===//
// moe.expert_ffn_grad and moe.glu_ffn_grad
//===----------------------------------------------------------------------===//

SmallVector<Value> GradLowering::lower(ExpertFFNGradOp op) {
  ArrayRef<int64_t> gateShape = tensorTypeOf(op.getWGate()).getShape();
  int64_t experts = gateShape[0], width = gateShape[1], hidden = gateShape[2];
  int64_t tile = rowTile;
  int64_t splits = splitsFor(experts, width, hidden);
  Value input = op.getInput(), resultGrad = op.getResultGrad();
  Value offsets = op.getExpertOffsets();
  Type elementType = tensorTypeOf(input).getElementType();
  auto attr = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  auto weightType = [&](Value w) { return tensorTypeOf(w).getElementType(); };
  SmallVector<Value> weights = {op.getWGate(), op.getWUp(), op.getWDown()};

  // With one split, each expert writes its weight gradients in the weights'
  // element type; with several, each (expert, split) writes an fp32 partial
  // that a sum over the splits completes below.
  auto weightGradInit = [&](Value w, int64_t rows, int64_t cols) -> Value {
    if (splits == 1)
      return tensor::EmptyOp::create(b, ArrayRef<int64_t>{experts, rows, cols},
                                     weightType(w));
    return tensor::EmptyOp::create(
        b, ArrayRef<int64_t>{experts, splits, rows, cols}, f32());
  };
  SmallVector<Value> shared = {
      tensor::EmptyOp::create(b, tb.sizesOf(input), elementType),
      weightGradInit(op.getWGate(), width, hidden),
      weightGradInit(op.getWUp(), width, hidden),
      weightGradInit(op.getWDown(), hidden, width)};
  SmallVector<OpFoldResult> space = {attr(experts)};
  if (splits > 1)
    space.push_back(attr(splits));
  auto forall = scf::ForallOp::create(b, space, shared, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value expert = forall.getInductionVar(0);
    Value split = splits > 1 ? forall.getInductionVar(1) : idx(0);
    Value begin =
        toIndex(tensor::ExtractOp::create(b, offsets, ValueRange{expert}));
    Value end = toIndex(tensor::ExtractOp::create(
        b, offsets,
        ValueRange{arith::AddIOp::create(b, expert, idx(1)).getResult()}));
    Value rows = arith::SubIOp::create(b, end, begin);
    // The split's rows: a contiguous run of whole tiles of the expert's.
    Value tilesPerSplit = arith::CeilDivUIOp::create(
        b, arith::CeilDivUIOp::create(b, rows, idx(tile)), idx(splits));
    Value rowsPerSplit = arith::MulIOp::create(b, tilesPerSplit, idx(tile));
    Value splitBegin = arith::MinUIOp::create(
        b, arith::MulIOp::create(b, split, rowsPerSplit), rows);
    Value splitEnd = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, splitBegin, rowsPerSplit), rows);
    Value splitRows = arith::SubIOp::create(b, splitEnd, splitBegin);
    Value splitFirst = arith::AddIOp::create(b, begin, splitBegin);
    Value numTiles = arith::CeilDivUIOp::create(b, splitRows, idx(tile));
    Value wGate = buildExpertSlice(b, op.getWGate(), expert);
    Value wUp = buildExpertSlice(b, op.getWUp(), expert);
    Value wDown = buildExpertSlice(b, op.getWDown(), expert);

    // The split's rows of the input gradient are written in place, into
    // its slice of the shared result: no buffer of a run-time size inside
    // the tile program (the GPU mapping places only static tiles).
    ValueRange outs = forall.getRegionIterArgs();
    Value dxSlice = tensor::ExtractSliceOp::create(
        b, outs[0], ArrayRef<OpFoldResult>{splitFirst, attr(0)},
        ArrayRef<OpFoldResult>{splitRows, attr(width)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    SmallVector<Value> inits = {
        dxSlice, tb.filled({attr(width), attr(hidden)}, f32(), 0.0),
        tb.filled({attr(width), attr(hidden)}, f32(), 0.0),
        tb.filled({attr(hidden), attr(width)}, f32(), 0.0)};
    auto loop = scf::ForOp::create(b, idx(0), numTiles, idx(1), inits);
    {
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> acc(loop.getRegionIterArgs());
      Value start = arith::MulIOp::create(b, loop.getInductionVar(), idx(tile));
      Value count = arith::MinUIOp::create(
          b, arith::SubIOp::create(b, splitRows, start), idx(tile));
      Value first = arith::AddIOp::create(b, splitFirst, start);
      Value zero = floatConstant(b, b.getLoc(), elementType, 0.0);
      // Zero padding rows have a = u = h = 0 and dy = 0: they add nothing.
      Value xTile = buildPaddedRows(b, input, first, count, tile, zero);
      Value dyTile = buildPaddedRows(b, resultGrad, first, count, tile, zero);

      Value a = tb.project(xTile, wGate, f32());
      Value u = tb.project(xTile, wUp, f32());
      Value dh = tb.project(dyTile, wDown, f32(), /*transposed=*/true);
      SmallVector<Value> act = activationGrads(a, u, dh, op.getActivation());
      Value dx = tb.convert(inputGrad(act[1], act[2], wGate, wUp), elementType);
      Value valid = tensor::ExtractSliceOp::create(
          b, dx, ArrayRef<OpFoldResult>{attr(0), attr(0)},
          ArrayRef<OpFoldResult>{count, attr(width)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
      Value dxRows = tensor::InsertSliceOp::create(
          b, valid, acc[0], ArrayRef<OpFoldResult>{start, attr(0)},
          ArrayRef<OpFoldResult>{count, attr(width)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
      SmallVector<Value> gateUp =
          contractLeading(xTile, ValueRange{act[1], act[2]}, {acc[1], acc[2]});
      Value down = contractLeading(act[0], ValueRange{dyTile}, {acc[3]})[0];
      scf::YieldOp::create(b, ValueRange{dxRows, gateUp[0], gateUp[1], down});
    }

    SmallVector<Value> grads = {loop.getResult(0)};
    for (auto [i, w] : llvm::enumerate(weights))
      grads.push_back(splits == 1
                          ? tb.convert(loop.getResult(i + 1), weightType(w))
                          : loop.getResult(i + 1));
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, grads[0], outs[0], ArrayRef<OpFoldResult>{splitFirst, attr(0)},
        ArrayRef<OpFoldResult>{splitRows, attr(width)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    for (int i = 1; i < 4; ++i) {
      ArrayRef<int64_t> shape = tensorTypeOf(grads[i]).getShape();
      SmallVector<OpFoldResult> at = {expert}, sizes = {attr(1)};
      if (splits > 1) {
        at.push_back(split);
        sizes.push_back(attr(1));
      }
      at.append({attr(0), attr(0)});
      sizes.append({attr(shape[0]), attr(shape[1])});
      tensor::ParallelInsertSliceOp::create(
          b, grads[i], outs[i], at, sizes,
          SmallVector<OpFoldResult>(at.size(), attr(1)));
    }
  }
  SmallVector<Value> results = {forall.getResult(0)};
  for (auto [i, w] : llvm::enumerate(weights)) {
    Value grad = forall.getResult(i + 1);
    if (splits > 1) {
      // The splits' partials summed in split order.
      ArrayRef<int64_t> shape = tensorTypeOf(grad).getShape();
      Value sum = tb.filled({attr(experts), attr(shape[2]), attr(shape[3])},
                            f32(), 0.0);
      grad = linalg::ReduceOp::create(
                 b, ValueRange{grad}, ValueRange{sum}, ArrayRef<int64_t>{1},
                 [](OpBuilder &nb, Location loc, ValueRange args) {
                   linalg::YieldOp::create(
                       nb, loc,
                       arith::AddFOp::create(nb, loc, args[1], args[0])
                           .getResult());
                 })
                 ->getResult(0);
      grad = tb.convert(grad, weightType(w));
    }
    results.push_back(grad);
  }
  for (auto [i, result] : llvm::enumerate(op.getResults()))
    results[i] = castTensorTo(b, results[i], result.getType());
  return results;
}

SmallVector<Value> GradLowering::lower(GLUFFNGradOp op) {
  Value x = op.getInput(), dy = op.getResultGrad();
  Value wGate = op.getWGate(), wUp = op.getWUp(), wDown = op.getWDown();
  ArrayRef<int64_t> gateShape = tensorTypeOf(wGate).getShape();
  auto attr = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };

  Value a = tb.project(x, wGate, f32());
  Value u = tb.project(x, wUp, f32());
  Value dh = tb.project(dy, wDown, f32(), /*transposed=*/true);
  SmallVector<Value> act = activationGrads(a, u, dh, op.getActivation());
  // One contraction per product, each a plain projection or weight
  // gradient (the GPU's GEMM generator takes those, not fused pairs).
  Value dxGate = tb.project(act[1], wGate, f32(), /*transposed=*/true);
  Value dxUp = tb.project(act[2], wUp, f32(), /*transposed=*/true);
  Value dx = tb.add(dxGate, dxUp);
  SmallVector<Value> gateUp;
  for (Value da : {act[1], act[2]})
    gateUp.push_back(contractLeading(
        x, ValueRange{da},
        {tb.filled({attr(gateShape[0]), attr(gateShape[1])}, f32(), 0.0)})[0]);
  Value down = contractLeading(
      act[0], ValueRange{dy},
      {tb.filled({attr(gateShape[1]), attr(gateShape[0])}, f32(), 0.0)})[0];
  return {finish(dx, op.getInputGrad().getType()),
          finish(gateUp[0], op.getWGateGrad().getType()),
          finish(gateUp[1], op.getWUpGrad().getType()),
          finish(down, op.getWDownGrad().getType())};
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// Emits an error on `op` and returns false unless every dimension of
/// `value`'s type is static.
static bool requireStatic(Operation *op, Value value, StringRef name) {
  if (tensorTypeOf(value).hasStaticShape())
    return true;
  op->emitOpError("expects a static shape for ")
      << name << ", got " << value.getType();
  return false;
}

namespace {
struct MoELowerRoutingGradPass
    : public moe::impl::MoELowerRoutingGradBase<MoELowerRoutingGradPass> {
  using MoELowerRoutingGradBase::MoELowerRoutingGradBase;
  void runOnOperation() override;
};
} // namespace

void MoELowerRoutingGradPass::runOnOperation() {
  Operation *root = getOperation();
  if (rowTile < 1) {
    root->emitError() << "expects a positive row-tile, got "
                      << static_cast<int64_t>(rowTile);
    return signalPassFailure();
  }
  if (expertBlocks < 1 || expertPartialBytes < 0) {
    root->emitError() << "expects a positive expert-blocks and a "
                         "non-negative expert-partial-bytes, got "
                      << static_cast<int64_t>(expertBlocks) << " and "
                      << static_cast<int64_t>(expertPartialBytes);
    return signalPassFailure();
  }
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<RouteGradOp, DispatchGradOp, ExpertFFNGradOp, GLUFFNGradOp,
            CombineGradOp>(op))
      ops.push_back(op);
  });
  IRRewriter rewriter(&getContext());
  bool failed = false;
  for (Operation *op : ops) {
    if (auto expert = dyn_cast<ExpertFFNGradOp>(op)) {
      if (!requireStatic(op, expert.getWGate(), "w_gate")) {
        failed = true;
        continue;
      }
    }
    if (auto glu = dyn_cast<GLUFFNGradOp>(op)) {
      if (!requireStatic(op, glu.getWGate(), "w_gate")) {
        failed = true;
        continue;
      }
    }
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op->getLoc(), rewriter);
    GradLowering lowering(b, rowTile, expertBlocks, expertPartialBytes);
    SmallVector<Value> results =
        TypeSwitch<Operation *, SmallVector<Value>>(op)
            .Case<RouteGradOp, DispatchGradOp, ExpertFFNGradOp, GLUFFNGradOp,
                  CombineGradOp>(
                [&](auto typed) { return lowering.lower(typed); });
    rewriter.replaceOp(op, results);
    ++numLowered;
  }
  if (failed)
    signalPassFailure();
}
