//===- FuseRouting.cpp - Fused routing kernel and grouped experts ---------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-fuse-routing: moe.route and the moe.dispatch ops that read
// its indices become one routing kernel over token tiles (router GEMM,
// sigmoid, biased top-k, weights, load counts, the QB statistics and the
// per-tile half of the dispatch permutation), a small scan over the
// per-group counts, and a scatter of the token rows into expert order;
// then the balancer's bias update. moe.expert_ffn becomes a grouped GEMM
// over tiles of expert-sorted rows, and moe.combine a weighted gather.
// ALGORITHMS.md sections 4.1-4.5 and 7.1.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/Sharding.h"
#include "moe/Dialect/MoE/Transforms/Transforms.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "RoutedTiles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEFUSEROUTING
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-fuse-routing"

namespace {

/// How one `moe.route` computes its next bias.
enum class Balance { Exact, Histogram, Sign };

/// The token schedule of the routing kernel: `groups` groups (thread blocks
/// on a GPU), each walking `tilesPerGroup` consecutive tiles of `tile` units
/// (tokens, or token-slots for a stand-alone dispatch). Per-unit buffers are
/// padded to `paddedUnits = groups * unitsPerGroup`.
struct GroupSchedule {
  Value units, groups, tilesPerGroup, unitsPerGroup, paddedUnits;
};

/// What the routing kernel leaves for the scan, the scatter and the bias
/// update.
struct RoutingKernel {
  Value weights, indices; ///< [N, k] with the op's result types
  Value slotExpert;       ///< [P * k] i64: the expert of each token-slot
  Value slotPosition;     ///< [P * k] i64: its rank in its group's run
  Value groupCounts;      ///< [groups, E] i64: token-slots per group, expert
  Value load;             ///< [E] i64
  Value needed;           ///< exact QB: [E, P] f32, r = cut - s
  Value histogram;        ///< histogram QB: [E, bins] i64 counts of r
  Value histogramLow, histogramWidth; ///< histogram QB: f32 bin geometry
  GroupSchedule schedule;
};

/// The results of a dispatch, plus the map from token-slot to row.
struct DispatchResult {
  Value permuted, expertOffsets, sourceSlot;
  Value slotRow; ///< [N * k] i64: the row of token-slot n * k + i
};

/// Builds the tile IR of one op at the builder's insertion point.
class RoutedLowering {
public:
  RoutedLowering(ImplicitLocOpBuilder &b, const RoutingTileSizes &tiles)
      : b(b), tb(b), tiles(tiles) {}

  /// The routing kernel of `op`: an scf.forall over token-tile groups.
  RoutingKernel buildRoutingKernel(RouteOp op, Balance balance);
  /// The balancer's next bias from the kernel's statistics.
  Value buildNextBias(RouteOp op, Balance balance, const RoutingKernel &kernel);
  /// Data parallel (-moe-shard): the kernel's statistics summed over the
  /// `ranks` (loads, token count, histograms) or gathered from them (the
  /// exact balancer's `r` values), for the load result and the next bias.
  RoutingKernel globalStatistics(const RoutingKernel &local, Balance balance,
                                 int64_t ranks);
  /// The scan and scatter of a dispatch of the kernel's indices.
  DispatchResult buildFusedDispatch(DispatchOp op, const RoutingKernel &kernel,
                                    int64_t topK);
  /// A counting sort of the token-slots of `op`'s indices, then the scatter.
  DispatchResult buildStandaloneDispatch(DispatchOp op);
  /// The grouped GEMM over a flat list of row tiles.
  Value buildGroupedFFN(ExpertFFNOp op);
  /// The weighted gather; `slotRow` may be null (then source_slot is
  /// inverted first).
  Value buildCombine(CombineOp op, Value slotRow);

private:
  Type f32() { return b.getF32Type(); }
  Type i64() { return b.getI64Type(); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value i64c(int64_t v) { return arith::ConstantIntOp::create(b, i64(), v); }
  Value f32c(double v) { return floatConstant(b, b.getLoc(), f32(), v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  }
  Value toI64(Value v) { return arith::IndexCastOp::create(b, i64(), v); }
  Value dim(Value v, int64_t i) { return tensor::DimOp::create(b, v, i); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, l, r); }
  Value sub(Value l, Value r) { return arith::SubIOp::create(b, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, l, r); }
  Value minU(Value l, Value r) { return arith::MinUIOp::create(b, l, r); }

  AffineMap dimsMap(int64_t n, ArrayRef<int64_t> dims) {
    return moe::dimsMap(b.getContext(), n, dims);
  }
  /// A tensor of `sizes` filled with the integer `value` of `type`.
  Value filledInt(ArrayRef<OpFoldResult> sizes, Type type, int64_t value);
  SmallVector<Value> generic(ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                             ValueRange inits, ArrayRef<AffineMap> outputMaps,
                             int64_t numLoops, int64_t numParallel,
                             ScalarsFn body) {
    return tb.generic(inputs, inputMaps, inits, outputMaps, numLoops,
                      numParallel, body);
  }
  /// Rows `[offset, offset + rows)` of the 1-D or 2-D `source`, padded
  /// below with `padValue` to a static `size` rows.
  Value paddedRows(Value source, Value offset, Value rows, int64_t size,
                   Value padValue);
  Value castTo(Value value, Type type) { return castTensorTo(b, value, type); }

  GroupSchedule scheduleUnits(Value units);
  /// One tile of the per-group count: `position[t, j] = counts[j] +
  /// |{t' < t : selected[t', j]}|` and the counts after the tile.
  std::pair<Value, Value> countTile(Value selected, Value counts);
  /// `[sum_g counts[g, j]]_j`.
  Value sumGroups(Value groupCounts);
  /// `out[j] = sum_{j' < j} v[j']` for `j` in `[0, n]`: `[n + 1]`.
  Value exclusiveCumsum(Value v);
  /// Scans the counts and scatters rows and slot ids into expert order.
  DispatchResult scatter(Value input, Value slotExpert, Value slotPosition,
                         Value groupCounts, Value load, Value unitsPerGroup,
                         Value slotsPerUnit, Value slotsPerToken, Value slots);
  /// The `rank`-th smallest (1-based) of `needed[expert, 0 .. tokens)` by an
  /// MSD radix select over the order-preserving integer keys of the floats.
  Value radixSelect(Value needed, Value expert, Value tokens, Value rank);
  /// `value - mean(value)` over a 1-D f32 tensor.
  Value centre(Value value);

  ImplicitLocOpBuilder &b;
  TensorBuilder tb;
  const RoutingTileSizes &tiles;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value RoutedLowering::filledInt(ArrayRef<OpFoldResult> sizes, Type type,
                                int64_t value) {
  Value scalar =
      arith::ConstantOp::create(b, b.getIntegerAttr(type, value)).getResult();
  Value empty = tensor::EmptyOp::create(b, sizes, type);
  return linalg::FillOp::create(b, ValueRange{scalar}, ValueRange{empty})
      .getResult(0);
}

Value RoutedLowering::paddedRows(Value source, Value offset, Value rows,
                                 int64_t size, Value padValue) {
  return buildPaddedRows(b, source, offset, rows, size, padValue);
}

GroupSchedule RoutedLowering::scheduleUnits(Value units) {
  GroupSchedule s;
  s.units = units;
  Value numTiles = arith::CeilDivUIOp::create(b, units, idx(tiles.tokenTile));
  s.groups =
      arith::MaxUIOp::create(b, minU(idx(tiles.tokenGroups), numTiles), idx(1));
  s.tilesPerGroup = arith::CeilDivUIOp::create(b, numTiles, s.groups);
  s.unitsPerGroup = mul(s.tilesPerGroup, idx(tiles.tokenTile));
  s.paddedUnits = mul(s.groups, s.unitsPerGroup);
  return s;
}

std::pair<Value, Value> RoutedLowering::countTile(Value selected,
                                                  Value counts) {
  int64_t tile = tensorTypeOf(selected).getDimSize(0);
  int64_t experts = tensorTypeOf(selected).getDimSize(1);
  // Start from the counts before the tile, then add the earlier rows.
  Value start = tb.mapIndexed(
      {attr(tile), attr(experts)}, counts, dimsMap(2, {1}), i64(),
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
  Value position =
      generic(selected, dimsMap(3, {2, 1}), start, dimsMap(3, {0, 1}), 3, 2,
              [](OpBuilder &nb, Location loc, ValueRange args) {
                Value t = linalg::IndexOp::create(nb, loc, 0);
                Value earlier = linalg::IndexOp::create(nb, loc, 2);
                Value before = arith::CmpIOp::create(
                    nb, loc, arith::CmpIPredicate::ult, earlier, t);
                Value zero =
                    arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(0));
                Value term =
                    arith::SelectOp::create(nb, loc, before, args[0], zero);
                return SmallVector<Value>{
                    arith::AddIOp::create(nb, loc, args[1], term)};
              })
          .front();
  Value next =
      generic(selected, dimsMap(2, {1, 0}), counts, dimsMap(2, {0}), 2, 1,
              [](OpBuilder &nb, Location loc, ValueRange args) {
                return SmallVector<Value>{
                    arith::AddIOp::create(nb, loc, args[1], args[0])};
              })
          .front();
  return {position, next};
}

Value RoutedLowering::sumGroups(Value groupCounts) {
  int64_t experts = tensorTypeOf(groupCounts).getDimSize(1);
  Value zeros = filledInt({attr(experts)}, i64(), 0);
  return generic(groupCounts, dimsMap(2, {1, 0}), zeros, dimsMap(2, {0}), 2, 1,
                 [](OpBuilder &nb, Location loc, ValueRange args) {
                   return SmallVector<Value>{
                       arith::AddIOp::create(nb, loc, args[1], args[0])};
                 })
      .front();
}

Value RoutedLowering::exclusiveCumsum(Value v) {
  int64_t n = tensorTypeOf(v).getDimSize(0);
  Value zeros = filledInt({attr(n + 1)}, i64(), 0);
  return generic(v, dimsMap(2, {1}), zeros, dimsMap(2, {0}), 2, 1,
                 [](OpBuilder &nb, Location loc, ValueRange args) {
                   Value j = linalg::IndexOp::create(nb, loc, 0);
                   Value earlier = linalg::IndexOp::create(nb, loc, 1);
                   Value before = arith::CmpIOp::create(
                       nb, loc, arith::CmpIPredicate::ult, earlier, j);
                   Value sum = arith::AddIOp::create(nb, loc, args[1], args[0]);
                   return SmallVector<Value>{
                       arith::SelectOp::create(nb, loc, before, sum, args[1])};
                 })
      .front();
}

Value RoutedLowering::centre(Value value) {
  int64_t n = tensorTypeOf(value).getDimSize(0);
  Value sum = tb.reduceLast(
      value, f32(), 0.0, [](OpBuilder &nb, Location loc, ValueRange args) {
        return arith::AddFOp::create(nb, loc, args[1], args[0]);
      });
  Value mean = arith::DivFOp::create(
      b, tensor::ExtractOp::create(b, sum, ValueRange{}), f32c(n));
  return tb.map(value, f32(),
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  return arith::SubFOp::create(nb, loc, args[0], mean);
                });
}

//===----------------------------------------------------------------------===//
// Routing kernel
//===----------------------------------------------------------------------===//

RoutingKernel RoutedLowering::buildRoutingKernel(RouteOp op, Balance balance) {
  RoutingAttr routing = op.getRouting();
  int64_t experts = routing.getNumExperts(), topK = routing.getTopK();
  int64_t tile = tiles.tokenTile;
  Value x = op.getInput();
  Type elementType = tensorTypeOf(x).getElementType();
  Value bias = op.getBias();
  double scaling = routing.getScalingValue();
  int64_t bins = 0;
  if (balance == Balance::Histogram)
    bins = *cast<QuantileBalanceAttr>(routing.getBalance()).getBins();

  RoutingKernel kernel;
  Value tokens = dim(x, 0);
  GroupSchedule s = scheduleUnits(tokens);
  kernel.schedule = s;

  // The histogram spans [min b - 1, max b + 1] (r = cut - s lies there).
  if (balance == Balance::Histogram) {
    auto extremum = [&](bool max) {
      double init = max ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      Value t = tb.reduceLast(
          bias, f32(), init, [&](OpBuilder &nb, Location loc, ValueRange args) {
            if (max)
              return Value(
                  arith::MaximumFOp::create(nb, loc, args[0], args[1]));
            return Value(arith::MinimumFOp::create(nb, loc, args[0], args[1]));
          });
      return Value(tensor::ExtractOp::create(b, t, ValueRange{}));
    };
    kernel.histogramLow = arith::SubFOp::create(b, extremum(false), f32c(1.0));
    Value high = arith::AddFOp::create(b, extremum(true), f32c(1.0));
    kernel.histogramWidth = arith::DivFOp::create(
        b, arith::SubFOp::create(b, high, kernel.histogramLow),
        f32c(static_cast<double>(bins)));
  }

  // Shared outputs of the kernel: per-token results padded to P tokens, and
  // per-group statistics.
  OpFoldResult padded = s.paddedUnits;
  SmallVector<Value> outs = {
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{padded, attr(topK)},
                              f32()),
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{padded, attr(topK)},
                              i64()),
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{padded, attr(topK)},
                              i64()),
      tensor::EmptyOp::create(
          b, ArrayRef<OpFoldResult>{s.groups, attr(experts)}, i64())};
  if (balance == Balance::Exact)
    outs.push_back(tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{attr(experts), padded}, f32()));
  if (balance == Balance::Histogram)
    outs.push_back(tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{s.groups, attr(experts), attr(bins)}, i64()));

  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{s.groups}, outs,
                                      std::nullopt);
  Value group = forall.getInductionVar(0);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    OpFoldResult perGroup = s.unitsPerGroup;
    SmallVector<Value> inits = {
        tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{perGroup, attr(topK)},
                                f32()),
        tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{perGroup, attr(topK)},
                                i64()),
        tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{perGroup, attr(topK)},
                                i64()),
        filledInt({attr(experts)}, i64(), 0)};
    if (balance == Balance::Exact)
      inits.push_back(tensor::EmptyOp::create(
          b, ArrayRef<OpFoldResult>{attr(experts), perGroup}, f32()));
    if (balance == Balance::Histogram)
      inits.push_back(filledInt({attr(experts), attr(bins)}, i64(), 0));

    auto loop = scf::ForOp::create(b, idx(0), s.tilesPerGroup, idx(1), inits);
    {
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      SmallVector<Value> acc(loop.getRegionIterArgs());
      Value tileStart = mul(add(mul(group, s.tilesPerGroup), step), idx(tile));
      Value start = minU(tileStart, tokens);
      Value rows = minU(sub(tokens, start), idx(tile));
      Value zero = floatConstant(b, b.getLoc(), elementType, 0.0);
      Value xTile = paddedRows(x, start, rows, tile, zero);

      // Router GEMM and sigmoid, then the biased scores z = s + b: [T, E].
      Value scores = tb.sigmoid(
          tb.project(xTile, op.getWRouter(), f32(), /*transposed=*/true));
      Value biased = tb.mapIndexed(
          {attr(tile), attr(experts)}, ValueRange{scores, bias},
          {dimsMap(2, {0, 1}), dimsMap(2, {1})}, f32(),
          [](OpBuilder &nb, Location loc, ValueRange args) {
            return arith::AddFOp::create(nb, loc, args[0], args[1]);
          });
      // A NaN ranks as -inf, so that the ranks of a token always form a
      // permutation and no token selects more than k experts.
      Value ranked = tb.map(
          biased, f32(), [](OpBuilder &nb, Location loc, ValueRange args) {
            Value isNaN = arith::CmpFOp::create(
                nb, loc, arith::CmpFPredicate::UNO, args[0], args[0]);
            Value lowest =
                floatConstant(nb, loc, nb.getF32Type(),
                              -std::numeric_limits<double>::infinity());
            return arith::SelectOp::create(nb, loc, isNaN, lowest, args[0]);
          });

      // rank[t, j]: how many experts beat j (a larger z, or an equal z and
      // a lower index). The top-k are the ranks below k, in rank order.
      Value rankInit = filledInt({attr(tile), attr(experts)}, i64(), 0);
      Value rank =
          generic({ranked, ranked}, {dimsMap(3, {0, 1}), dimsMap(3, {0, 2})},
                  rankInit, dimsMap(3, {0, 1}), 3, 2,
                  [](OpBuilder &nb, Location loc, ValueRange args) {
                    Value j = linalg::IndexOp::create(nb, loc, 1);
                    Value other = linalg::IndexOp::create(nb, loc, 2);
                    Value larger = arith::CmpFOp::create(
                        nb, loc, arith::CmpFPredicate::OGT, args[1], args[0]);
                    Value equal = arith::CmpFOp::create(
                        nb, loc, arith::CmpFPredicate::OEQ, args[1], args[0]);
                    Value lower = arith::CmpIOp::create(
                        nb, loc, arith::CmpIPredicate::ult, other, j);
                    Value beats = arith::OrIOp::create(
                        nb, loc, larger,
                        arith::AndIOp::create(nb, loc, equal, lower));
                    Value one =
                        arith::ExtUIOp::create(nb, loc, nb.getI64Type(), beats);
                    return SmallVector<Value>{
                        arith::AddIOp::create(nb, loc, args[2], one)};
                  })
              .front();

      // One-hot selection of the real tokens, and its running count.
      Value topKValue = i64c(topK);
      Value selected = tb.map(
          rank, i64(), [&](OpBuilder &nb, Location loc, ValueRange args) {
            Value t = linalg::IndexOp::create(nb, loc, 0);
            Value real = arith::CmpIOp::create(
                nb, loc, arith::CmpIPredicate::ult, t, rows);
            Value chosen = arith::CmpIOp::create(
                nb, loc, arith::CmpIPredicate::ult, args[0], topKValue);
            Value both = arith::AndIOp::create(nb, loc, real, chosen);
            return arith::ExtUIOp::create(nb, loc, nb.getI64Type(), both);
          });
      auto [position, counts] = countTile(selected, acc[3]);

      // Per slot i < k: the expert of rank i, its score and its position.
      SmallVector<Value> slotInits = {
          filledInt({attr(tile), attr(topK)}, i64(), 0),
          tb.filled({attr(tile), attr(topK)}, f32(), 0.0),
          filledInt({attr(tile), attr(topK)}, i64(), 0)};
      AffineMap tokenExpert = dimsMap(3, {0, 2});
      AffineMap tokenSlot = dimsMap(3, {0, 1});
      SmallVector<Value> slot = generic(
          {rank, scores, position}, {tokenExpert, tokenExpert, tokenExpert},
          slotInits, {tokenSlot, tokenSlot, tokenSlot}, 3, 2,
          [](OpBuilder &nb, Location loc, ValueRange args) {
            Value i = arith::IndexCastOp::create(
                nb, loc, nb.getI64Type(), linalg::IndexOp::create(nb, loc, 1));
            Value j = arith::IndexCastOp::create(
                nb, loc, nb.getI64Type(), linalg::IndexOp::create(nb, loc, 2));
            Value hit = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                                              args[0], i);
            return SmallVector<Value>{
                arith::SelectOp::create(nb, loc, hit, j, args[3]),
                arith::SelectOp::create(nb, loc, hit, args[1], args[4]),
                arith::SelectOp::create(nb, loc, hit, args[2], args[5])};
          });

      // w = s / (sum s + 1e-20) * scaling over the k selected experts.
      Value sum = tb.reduceLast(
          slot[1], f32(), 0.0,
          [](OpBuilder &nb, Location loc, ValueRange args) {
            return arith::AddFOp::create(nb, loc, args[1], args[0]);
          });
      Value weights = tb.mapIndexed(
          {attr(tile), attr(topK)}, ValueRange{slot[1], sum},
          {dimsMap(2, {0, 1}), dimsMap(2, {0})}, f32(),
          [&](OpBuilder &nb, Location loc, ValueRange args) {
            Value eps = floatConstant(nb, loc, nb.getF32Type(), 1e-20);
            Value denominator = arith::AddFOp::create(nb, loc, args[1], eps);
            Value ratio = arith::DivFOp::create(nb, loc, args[0], denominator);
            return arith::MulFOp::create(
                nb, loc, ratio,
                floatConstant(nb, loc, nb.getF32Type(), scaling));
          });

      Value localRow = mul(step, idx(tile));
      auto insertRows = [&](Value tileValue, Value into) {
        return tensor::InsertSliceOp::create(
                   b, tileValue, into,
                   ArrayRef<OpFoldResult>{localRow, attr(0)},
                   ArrayRef<OpFoldResult>{attr(tile), attr(topK)},
                   ArrayRef<OpFoldResult>{attr(1), attr(1)})
            .getResult();
      };
      SmallVector<Value> yields = {insertRows(weights, acc[0]),
                                   insertRows(slot[0], acc[1]),
                                   insertRows(slot[2], acc[2]), counts};

      if (balance != Balance::Sign) {
        // cut[t]: the (k+1)-th largest z, the score of rank k.
        Value cutInit = tb.filled({attr(tile)}, f32(), 0.0);
        Value cut =
            generic(
                {rank, biased}, {dimsMap(2, {0, 1}), dimsMap(2, {0, 1})},
                cutInit, dimsMap(2, {0}), 2, 1,
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  Value hit = arith::CmpIOp::create(
                      nb, loc, arith::CmpIPredicate::eq, args[0], topKValue);
                  return SmallVector<Value>{
                      arith::SelectOp::create(nb, loc, hit, args[1], args[2])};
                })
                .front();
        if (balance == Balance::Exact) {
          // r[j, t] = cut[t] - s[t, j], expert-major for the selection.
          Value needed = tb.mapIndexed(
              {attr(experts), attr(tile)}, ValueRange{scores, cut},
              {dimsMap(2, {1, 0}), dimsMap(2, {1})}, f32(),
              [](OpBuilder &nb, Location loc, ValueRange args) {
                return arith::SubFOp::create(nb, loc, args[1], args[0]);
              });
          yields.push_back(tensor::InsertSliceOp::create(
              b, needed, acc[4], ArrayRef<OpFoldResult>{attr(0), localRow},
              ArrayRef<OpFoldResult>{attr(experts), attr(tile)},
              ArrayRef<OpFoldResult>{attr(1), attr(1)}));
        } else {
          // hist[j, bin(r)] += 1 for every real token t and expert j.
          auto tokenLoop =
              scf::ForOp::create(b, idx(0), rows, idx(1), ValueRange{acc[4]});
          {
            OpBuilder::InsertionGuard tokenGuard(b);
            b.setInsertionPointToStart(tokenLoop.getBody());
            Value t = tokenLoop.getInductionVar();
            Value cutT = tensor::ExtractOp::create(b, cut, ValueRange{t});
            auto expertLoop = scf::ForOp::create(
                b, idx(0), idx(experts), idx(1),
                ValueRange{tokenLoop.getRegionIterArgs()[0]});
            {
              OpBuilder::InsertionGuard expertGuard(b);
              b.setInsertionPointToStart(expertLoop.getBody());
              Value j = expertLoop.getInductionVar();
              Value hist = expertLoop.getRegionIterArgs()[0];
              Value score =
                  tensor::ExtractOp::create(b, scores, ValueRange{t, j});
              Value r = arith::SubFOp::create(b, cutT, score);
              Value offset = arith::SubFOp::create(b, r, kernel.histogramLow);
              Value position = math::FloorOp::create(
                  b, arith::DivFOp::create(b, offset, kernel.histogramWidth));
              // Clamped as a float (maxnumf/minnumf also map NaN into the
              // range), so the conversion never overflows.
              // (One statement per op: C++ leaves the order of argument
              // evaluation open, and the IR must not depend on the host
              // compiler.)
              Value last = f32c(static_cast<double>(bins - 1));
              Value zero = f32c(0.0);
              Value floored = arith::MaxNumFOp::create(b, position, zero);
              position = arith::MinNumFOp::create(b, floored, last);
              Value binIndex =
                  toIndex(arith::FPToSIOp::create(b, i64(), position));
              Value count =
                  tensor::ExtractOp::create(b, hist, ValueRange{j, binIndex});
              Value updated = tensor::InsertOp::create(
                  b, add(count, i64c(1)), hist, ValueRange{j, binIndex});
              scf::YieldOp::create(b, ValueRange{updated});
            }
            scf::YieldOp::create(b, expertLoop.getResults());
          }
          yields.push_back(tokenLoop.getResult(0));
        }
      }
      scf::YieldOp::create(b, yields);
    }

    // Each group writes its run of tokens and its statistics.
    Value firstToken = mul(group, s.unitsPerGroup);
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    ValueRange shared = forall.getRegionIterArgs();
    for (int i = 0; i < 3; ++i)
      tensor::ParallelInsertSliceOp::create(
          b, loop.getResult(i), shared[i],
          ArrayRef<OpFoldResult>{firstToken, attr(0)},
          ArrayRef<OpFoldResult>{perGroup, attr(topK)},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, loop.getResult(3), shared[3], ArrayRef<OpFoldResult>{group, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(experts)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    if (balance == Balance::Exact)
      tensor::ParallelInsertSliceOp::create(
          b, loop.getResult(4), shared[4],
          ArrayRef<OpFoldResult>{attr(0), firstToken},
          ArrayRef<OpFoldResult>{attr(experts), perGroup},
          ArrayRef<OpFoldResult>{attr(1), attr(1)});
    if (balance == Balance::Histogram)
      tensor::ParallelInsertSliceOp::create(
          b, loop.getResult(4), shared[4],
          ArrayRef<OpFoldResult>{group, attr(0), attr(0)},
          ArrayRef<OpFoldResult>{attr(1), attr(experts), attr(bins)},
          ArrayRef<OpFoldResult>{attr(1), attr(1), attr(1)});
  }

  // Results for the op: the first N tokens.
  auto firstTokens = [&](Value padded) {
    return tensor::ExtractSliceOp::create(
               b, padded, ArrayRef<OpFoldResult>{attr(0), attr(0)},
               ArrayRef<OpFoldResult>{tokens, attr(topK)},
               ArrayRef<OpFoldResult>{attr(1), attr(1)})
        .getResult();
  };
  kernel.weights =
      castTo(firstTokens(forall.getResult(0)), op.getWeights().getType());
  Value indices = firstTokens(forall.getResult(1));
  Type indexType = tensorTypeOf(op.getIndices()).getElementType();
  if (indexType != i64())
    indices = tb.map(
        indices, indexType, [&](OpBuilder &nb, Location loc, ValueRange args) {
          return arith::TruncIOp::create(nb, loc, indexType, args[0]);
        });
  kernel.indices = castTo(indices, op.getIndices().getType());

  auto flatten = [&](Value v) {
    return tensor::CollapseShapeOp::create(
               b, v, ArrayRef<ReassociationIndices>{{0, 1}})
        .getResult();
  };
  kernel.slotExpert = flatten(forall.getResult(1));
  kernel.slotPosition = flatten(forall.getResult(2));
  kernel.groupCounts = forall.getResult(3);
  kernel.load = sumGroups(kernel.groupCounts);
  if (balance == Balance::Exact)
    kernel.needed = forall.getResult(4);
  if (balance == Balance::Histogram) {
    Value zeros = filledInt({attr(experts), attr(bins)}, i64(), 0);
    kernel.histogram =
        generic(forall.getResult(4), dimsMap(3, {2, 0, 1}), zeros,
                dimsMap(3, {0, 1}), 3, 2,
                [](OpBuilder &nb, Location loc, ValueRange args) {
                  return SmallVector<Value>{
                      arith::AddIOp::create(nb, loc, args[1], args[0])};
                })
            .front();
  }
  return kernel;
}

//===----------------------------------------------------------------------===//
// Bias update
//===----------------------------------------------------------------------===//

Value RoutedLowering::radixSelect(Value needed, Value expert, Value tokens,
                                  Value rank) {
  Type i32 = b.getI32Type();
  Value signBit =
      arith::ConstantIntOp::create(b, i32, std::numeric_limits<int32_t>::min());
  // Four passes of 8 bits, most significant first: each histograms the keys
  // that share the digits found so far and keeps the digit whose bucket
  // holds the wanted rank.
  auto passes = scf::ForOp::create(b, idx(0), idx(4), idx(1),
                                   ValueRange{i64c(0), toI64(rank)});
  {
    OpBuilder::InsertionGuard passGuard(b);
    b.setInsertionPointToStart(passes.getBody());
    Value prefix = passes.getRegionIterArgs()[0];
    Value remaining = passes.getRegionIterArgs()[1];
    Value shift = sub(i64c(24), mul(toI64(passes.getInductionVar()), i64c(8)));
    Value high = add(shift, i64c(8));
    auto histLoop =
        scf::ForOp::create(b, idx(0), tokens, idx(1),
                           ValueRange{filledInt({attr(256)}, i64(), 0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(histLoop.getBody());
      Value hist = histLoop.getRegionIterArgs()[0];
      Value value = tensor::ExtractOp::create(
          b, needed, ValueRange{expert, histLoop.getInductionVar()});
      // Order-preserving key: flip every bit of a negative float, only the
      // sign bit of a positive one.
      Value bits = arith::BitcastOp::create(b, i32, value);
      Value negative = arith::ShRSIOp::create(
          b, bits, arith::ConstantIntOp::create(b, i32, 31));
      Value mask = arith::OrIOp::create(b, negative, signBit);
      Value key = arith::ExtUIOp::create(b, i64(),
                                         arith::XOrIOp::create(b, bits, mask));
      // Keys and prefix are below 2^32, so the first pass matches all.
      Value inBucket = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, arith::ShRUIOp::create(b, key, high),
          arith::ShRUIOp::create(b, prefix, high));
      Value digit = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, key, shift), i64c(255));
      Value digitIndex = toIndex(digit);
      Value count = tensor::ExtractOp::create(b, hist, ValueRange{digitIndex});
      Value increment = arith::ExtUIOp::create(b, i64(), inBucket);
      Value updated = tensor::InsertOp::create(b, add(count, increment), hist,
                                               ValueRange{digitIndex});
      scf::YieldOp::create(b, ValueRange{updated});
    }
    Value hist = histLoop.getResult(0);
    Value falseValue = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
    auto scan =
        scf::ForOp::create(b, idx(0), idx(256), idx(1),
                           ValueRange{i64c(0), falseValue, i64c(0), i64c(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scan.getBody());
      ValueRange it = scan.getRegionIterArgs();
      Value d = scan.getInductionVar();
      Value count = tensor::ExtractOp::create(b, hist, ValueRange{d});
      Value total = add(it[0], count);
      Value reached =
          arith::CmpIOp::create(b, arith::CmpIPredicate::sge, total, remaining);
      Value notFound = arith::XOrIOp::create(
          b, it[1], arith::ConstantIntOp::create(b, b.getI1Type(), 1));
      Value hit = arith::AndIOp::create(b, notFound, reached);
      scf::YieldOp::create(
          b, ValueRange{total, arith::OrIOp::create(b, it[1], hit),
                        arith::SelectOp::create(b, hit, toI64(d), it[2]),
                        arith::SelectOp::create(b, hit, it[0], it[3])});
    }
    scf::YieldOp::create(
        b, ValueRange{arith::OrIOp::create(
                          b, prefix,
                          arith::ShLIOp::create(b, scan.getResult(2), shift)),
                      sub(remaining, scan.getResult(3))});
  }
  // Back from the key to the float.
  Value key = arith::TruncIOp::create(b, i32, passes.getResult(0));
  Value positive =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, key,
                            arith::ConstantIntOp::create(b, i32, 0));
  Value bits = arith::SelectOp::create(
      b, positive, arith::XOrIOp::create(b, key, signBit),
      arith::XOrIOp::create(b, key, arith::ConstantIntOp::create(b, i32, -1)));
  return arith::BitcastOp::create(b, f32(), bits);
}

Value RoutedLowering::buildNextBias(RouteOp op, Balance balance,
                                    const RoutingKernel &kernel) {
  RoutingAttr routing = op.getRouting();
  int64_t experts = routing.getNumExperts(), topK = routing.getTopK();
  Value bias = op.getBias();
  Value tokens = kernel.schedule.units;
  Value tokensF32 = arith::UIToFPOp::create(b, f32(), toI64(tokens));
  // The mean load N k / E.
  Value target = arith::DivFOp::create(
      b, arith::MulFOp::create(b, tokensF32, f32c(topK)), f32c(experts));

  if (balance == Balance::Sign) {
    double rate = cast<SignBiasBalanceAttr>(routing.getBalance())
                      .getRate()
                      .convertToDouble();
    return tb.map(
        ValueRange{bias, kernel.load}, f32(),
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          Value load =
              arith::SIToFPOp::create(nb, loc, nb.getF32Type(), args[1]);
          Value gap = arith::SubFOp::create(nb, loc, target, load);
          Value zero = floatConstant(nb, loc, nb.getF32Type(), 0.0);
          Value one = floatConstant(nb, loc, nb.getF32Type(), 1.0);
          Value minusOne = floatConstant(nb, loc, nb.getF32Type(), -1.0);
          Value above = arith::CmpFOp::create(
              nb, loc, arith::CmpFPredicate::OGT, gap, zero);
          Value below = arith::CmpFOp::create(
              nb, loc, arith::CmpFPredicate::OLT, gap, zero);
          Value sign = arith::SelectOp::create(
              nb, loc, above, one,
              arith::SelectOp::create(nb, loc, below, minusOne, zero));
          Value step = arith::MulFOp::create(
              nb, loc, sign, floatConstant(nb, loc, nb.getF32Type(), rate));
          return arith::AddFOp::create(nb, loc, args[0], step);
        });
  }

  // One quantile per expert, each in its own iteration.
  Value quantiles =
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{attr(experts)}, f32());
  Value lowRank, highRank;
  if (balance == Balance::Exact) {
    // q = round(N k / E), half up; the midpoint of the q-th and (q+1)-th
    // smallest r, clamped to ranks [1, N].
    Value q = arith::DivUIOp::create(
        b, add(mul(tokens, idx(2 * topK)), idx(experts)), idx(2 * experts));
    lowRank = arith::MaxUIOp::create(b, q, idx(1));
    highRank = minU(add(q, idx(1)), tokens);
  }
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{attr(experts)},
                                      ValueRange{quantiles}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value expert = forall.getInductionVar(0);
    Value quantile;
    if (balance == Balance::Exact) {
      Value low = radixSelect(kernel.needed, expert, tokens, lowRank);
      Value high = radixSelect(kernel.needed, expert, tokens, highRank);
      quantile = arith::MulFOp::create(b, arith::AddFOp::create(b, low, high),
                                       f32c(0.5));
    } else {
      // The first bin whose running count reaches N k / E (the last bin at
      // the latest), interpolated linearly inside it.
      int64_t bins = tensorTypeOf(kernel.histogram).getDimSize(1);
      Value falseValue = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
      auto scan =
          scf::ForOp::create(b, idx(0), idx(bins), idx(1),
                             ValueRange{i64c(0), falseValue, idx(0), i64c(0)});
      {
        OpBuilder::InsertionGuard scanGuard(b);
        b.setInsertionPointToStart(scan.getBody());
        ValueRange it = scan.getRegionIterArgs();
        Value m = scan.getInductionVar();
        Value count = tensor::ExtractOp::create(b, kernel.histogram,
                                                ValueRange{expert, m});
        Value total = add(it[0], count);
        Value reached = arith::CmpFOp::create(
            b, arith::CmpFPredicate::OGE,
            arith::SIToFPOp::create(b, f32(), total), target);
        Value last = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, m,
                                           idx(bins - 1));
        Value notFound = arith::XOrIOp::create(
            b, it[1], arith::ConstantIntOp::create(b, b.getI1Type(), 1));
        Value hit = arith::AndIOp::create(
            b, notFound, arith::OrIOp::create(b, reached, last));
        scf::YieldOp::create(
            b, ValueRange{total, arith::OrIOp::create(b, it[1], hit),
                          arith::SelectOp::create(b, hit, m, it[2]),
                          arith::SelectOp::create(b, hit, it[0], it[3])});
      }
      Value bin = scan.getResult(2);
      Value count = tensor::ExtractOp::create(b, kernel.histogram,
                                              ValueRange{expert, bin});
      Value below = arith::SIToFPOp::create(b, f32(), scan.getResult(3));
      Value fraction =
          arith::DivFOp::create(b, arith::SubFOp::create(b, target, below),
                                arith::SIToFPOp::create(b, f32(), count));
      Value position = arith::AddFOp::create(
          b, arith::UIToFPOp::create(b, f32(), toI64(bin)), fraction);
      quantile = arith::AddFOp::create(
          b, kernel.histogramLow,
          arith::MulFOp::create(b, position, kernel.histogramWidth));
    }
    Value element = tensor::FromElementsOp::create(
        b, RankedTensorType::get({1}, f32()), ValueRange{quantile});
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, element, forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{expert}, ArrayRef<OpFoldResult>{attr(1)},
        ArrayRef<OpFoldResult>{attr(1)});
  }

  // Centre; an empty batch keeps the centred current bias.
  Value next = centre(forall.getResult(0));
  Value kept = centre(bias);
  Value empty =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tokens, idx(0));
  return tb.map(ValueRange{next, kept}, f32(),
                [&](OpBuilder &nb, Location loc, ValueRange args) {
                  return arith::SelectOp::create(nb, loc, empty, args[1],
                                                 args[0]);
                });
}

RoutingKernel RoutedLowering::globalStatistics(const RoutingKernel &local,
                                               Balance balance, int64_t ranks) {
  IntegerAttr ranksAttr = b.getI64IntegerAttr(ranks);
  RoutingKernel global = local;
  global.load = AllReduceOp::create(b, local.load, ranksAttr);
  Value count =
      tensor::FromElementsOp::create(b, RankedTensorType::get({1}, i64()),
                                     ValueRange{toI64(local.schedule.units)});
  Value total = AllReduceOp::create(b, count, ranksAttr);
  global.schedule.units =
      toIndex(tensor::ExtractOp::create(b, total, ValueRange{idx(0)}));
  if (balance == Balance::Histogram)
    global.histogram = AllReduceOp::create(b, local.histogram, ranksAttr);
  if (balance == Balance::Exact) {
    // The valid columns [E, N] of every rank, stacked [D, E, N], then laid
    // out as [E, D * N]: the quantile is selected among all D * N tokens
    // (the runtime stops every rank if their N differ).
    int64_t experts = tensorTypeOf(local.needed).getDimSize(0);
    Value tokens = local.schedule.units;
    Value valid = tensor::ExtractSliceOp::create(
        b, local.needed, ArrayRef<OpFoldResult>{attr(0), attr(0)},
        ArrayRef<OpFoldResult>{attr(experts), tokens},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    auto stackedType =
        RankedTensorType::get({ranks, experts, ShapedType::kDynamic}, f32());
    Value stacked = AllGatherOp::create(b, stackedType, valid, ranksAttr);
    Value moved = tensor::EmptyOp::create(
        b, ArrayRef<OpFoldResult>{attr(experts), attr(ranks), tokens}, f32());
    moved = linalg::TransposeOp::create(b, stacked, moved,
                                        ArrayRef<int64_t>{1, 0, 2})
                ->getResult(0);
    global.needed = tensor::CollapseShapeOp::create(
        b, moved, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  }
  return global;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

DispatchResult RoutedLowering::scatter(Value input, Value slotExpert,
                                       Value slotPosition, Value groupCounts,
                                       Value load, Value unitsPerGroup,
                                       Value slotsPerUnit, Value slotsPerToken,
                                       Value slots) {
  int64_t experts = tensorTypeOf(load).getDimSize(0);
  RankedTensorType inputType = tensorTypeOf(input);
  OpFoldResult width = tb.sizesOf(input)[1];

  // expert_offsets, then the first row of each (group, expert) run:
  // base[g, j] = offsets[j] + sum_{g' < g} counts[g', j].
  Value offsets = exclusiveCumsum(load);
  Value starts = tensor::ExtractSliceOp::create(
      b, offsets, ArrayRef<OpFoldResult>{attr(0)},
      ArrayRef<OpFoldResult>{attr(experts)}, ArrayRef<OpFoldResult>{attr(1)});
  Value groups = dim(groupCounts, 0);
  Value baseInit = tb.mapIndexed(
      {groups, attr(experts)}, starts, dimsMap(2, {1}), i64(),
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
  Value base =
      generic(groupCounts, dimsMap(3, {2, 1}), baseInit, dimsMap(3, {0, 1}), 3,
              2,
              [](OpBuilder &nb, Location loc, ValueRange args) {
                Value g = linalg::IndexOp::create(nb, loc, 0);
                Value earlier = linalg::IndexOp::create(nb, loc, 2);
                Value before = arith::CmpIOp::create(
                    nb, loc, arith::CmpIPredicate::ult, earlier, g);
                Value sum = arith::AddIOp::create(nb, loc, args[1], args[0]);
                return SmallVector<Value>{
                    arith::SelectOp::create(nb, loc, before, sum, args[1])};
              })
          .front();

  // One iteration per token-slot: its row goes to base + position.
  SmallVector<Value> outs = {
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{slots, width},
                              inputType.getElementType()),
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{slots}, i64()),
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{slots}, i64())};
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{slots}, outs,
                                      std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value m = forall.getInductionVar(0);
    Value expert =
        toIndex(tensor::ExtractOp::create(b, slotExpert, ValueRange{m}));
    Value position = tensor::ExtractOp::create(b, slotPosition, ValueRange{m});
    Value group = arith::DivUIOp::create(
        b, arith::DivUIOp::create(b, m, slotsPerUnit), unitsPerGroup);
    Value row =
        add(tensor::ExtractOp::create(b, base, ValueRange{group, expert}),
            position);
    Value rowIndex = toIndex(row);
    Value token = arith::DivUIOp::create(b, m, slotsPerToken);
    Value source = tensor::ExtractSliceOp::create(
        b, input, ArrayRef<OpFoldResult>{token, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), width},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    auto scalar = RankedTensorType::get({1}, i64());
    Value slotId =
        tensor::FromElementsOp::create(b, scalar, ValueRange{toI64(m)});
    Value rowId = tensor::FromElementsOp::create(b, scalar, ValueRange{row});
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    ValueRange shared = forall.getRegionIterArgs();
    tensor::ParallelInsertSliceOp::create(
        b, source, shared[0], ArrayRef<OpFoldResult>{rowIndex, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), width},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, slotId, shared[1], ArrayRef<OpFoldResult>{rowIndex},
        ArrayRef<OpFoldResult>{attr(1)}, ArrayRef<OpFoldResult>{attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, rowId, shared[2], ArrayRef<OpFoldResult>{m},
        ArrayRef<OpFoldResult>{attr(1)}, ArrayRef<OpFoldResult>{attr(1)});
  }
  return {forall.getResult(0), offsets, forall.getResult(1),
          forall.getResult(2)};
}

DispatchResult RoutedLowering::buildFusedDispatch(DispatchOp op,
                                                  const RoutingKernel &kernel,
                                                  int64_t topK) {
  Value tokens = kernel.schedule.units;
  Value k = idx(topK);
  DispatchResult r = scatter(
      op.getInput(), kernel.slotExpert, kernel.slotPosition, kernel.groupCounts,
      kernel.load, kernel.schedule.unitsPerGroup, k, k, mul(tokens, k));
  r.permuted = castTo(r.permuted, op.getPermuted().getType());
  r.sourceSlot = castTo(r.sourceSlot, op.getSourceSlot().getType());
  return r;
}

DispatchResult RoutedLowering::buildStandaloneDispatch(DispatchOp op) {
  int64_t experts = op.getNumExperts();
  int64_t tile = tiles.tokenTile;
  // The token-slots in order, as i64 expert ids.
  Value flat = tensor::CollapseShapeOp::create(
      b, op.getIndices(), ArrayRef<ReassociationIndices>{{0, 1}});
  if (tensorTypeOf(flat).getElementType() != i64())
    flat =
        tb.map(flat, i64(), [](OpBuilder &nb, Location loc, ValueRange args) {
          return arith::ExtSIOp::create(nb, loc, nb.getI64Type(), args[0]);
        });
  Value slots = dim(flat, 0);
  GroupSchedule s = scheduleUnits(slots);

  SmallVector<Value> outs = {
      tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{s.paddedUnits}, i64()),
      tensor::EmptyOp::create(
          b, ArrayRef<OpFoldResult>{s.groups, attr(experts)}, i64())};
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{s.groups}, outs,
                                      std::nullopt);
  Value group = forall.getInductionVar(0);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    SmallVector<Value> inits = {
        tensor::EmptyOp::create(b, ArrayRef<OpFoldResult>{s.unitsPerGroup},
                                i64()),
        filledInt({attr(experts)}, i64(), 0)};
    auto loop = scf::ForOp::create(b, idx(0), s.tilesPerGroup, idx(1), inits);
    {
      OpBuilder::InsertionGuard loopGuard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value step = loop.getInductionVar();
      ValueRange acc = loop.getRegionIterArgs();
      Value tileStart = mul(add(mul(group, s.tilesPerGroup), step), idx(tile));
      Value start = minU(tileStart, slots);
      Value rows = minU(sub(slots, start), idx(tile));
      // Padding slots have expert -1 and select nothing.
      Value expertOf = paddedRows(flat, start, rows, tile, i64c(-1));
      Value selected = tb.mapIndexed(
          {attr(tile), attr(experts)}, expertOf, dimsMap(2, {0}), i64(),
          [](OpBuilder &nb, Location loc, ValueRange args) {
            Value j = arith::IndexCastOp::create(
                nb, loc, nb.getI64Type(), linalg::IndexOp::create(nb, loc, 1));
            Value hit = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                                              args[0], j);
            return arith::ExtUIOp::create(nb, loc, nb.getI64Type(), hit);
          });
      auto [position, counts] = countTile(selected, acc[1]);
      Value mine =
          generic(
              {selected, position}, {dimsMap(2, {0, 1}), dimsMap(2, {0, 1})},
              filledInt({attr(tile)}, i64(), 0), dimsMap(2, {0}), 2, 1,
              [](OpBuilder &nb, Location loc, ValueRange args) {
                Value term = arith::MulIOp::create(nb, loc, args[0], args[1]);
                return SmallVector<Value>{
                    arith::AddIOp::create(nb, loc, args[2], term)};
              })
              .front();
      Value updated = tensor::InsertSliceOp::create(
          b, mine, acc[0], ArrayRef<OpFoldResult>{mul(step, idx(tile))},
          ArrayRef<OpFoldResult>{attr(tile)}, ArrayRef<OpFoldResult>{attr(1)});
      scf::YieldOp::create(b, ValueRange{updated, counts});
    }
    Value firstSlot = mul(group, s.unitsPerGroup);
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    ValueRange shared = forall.getRegionIterArgs();
    tensor::ParallelInsertSliceOp::create(
        b, loop.getResult(0), shared[0], ArrayRef<OpFoldResult>{firstSlot},
        ArrayRef<OpFoldResult>{s.unitsPerGroup},
        ArrayRef<OpFoldResult>{attr(1)});
    tensor::ParallelInsertSliceOp::create(
        b, loop.getResult(1), shared[1], ArrayRef<OpFoldResult>{group, attr(0)},
        ArrayRef<OpFoldResult>{attr(1), attr(experts)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
  }
  Value groupCounts = forall.getResult(1);
  Value slotsPerToken = dim(op.getIndices(), 1);
  DispatchResult r = scatter(op.getInput(), flat, forall.getResult(0),
                             groupCounts, sumGroups(groupCounts),
                             s.unitsPerGroup, idx(1), slotsPerToken, slots);
  r.permuted = castTo(r.permuted, op.getPermuted().getType());
  r.sourceSlot = castTo(r.sourceSlot, op.getSourceSlot().getType());
  return r;
}

//===----------------------------------------------------------------------===//
// Grouped experts and combine
//===----------------------------------------------------------------------===//

Value RoutedLowering::buildGroupedFFN(ExpertFFNOp op) {
  ArrayRef<int64_t> gateShape = tensorTypeOf(op.getWGate()).getShape();
  int64_t experts = gateShape[0], width = gateShape[1];
  int64_t tile = tiles.rowTile;
  Value input = op.getInput();
  Type elementType = tensorTypeOf(input).getElementType();
  ActivationAttr activation = op.getActivation();

  // Tiles per expert and the first tile of each: a flat tile list.
  Value offsets = op.getExpertOffsets();
  auto part = [&](int64_t first) {
    return tensor::ExtractSliceOp::create(b, offsets,
                                          ArrayRef<OpFoldResult>{attr(first)},
                                          ArrayRef<OpFoldResult>{attr(experts)},
                                          ArrayRef<OpFoldResult>{attr(1)})
        .getResult();
  };
  Value tileCounts = tb.map(
      ValueRange{part(0), part(1)}, i64(),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value rows = arith::SubIOp::create(nb, loc, args[1], args[0]);
        return arith::CeilDivSIOp::create(
            nb, loc, rows,
            arith::ConstantOp::create(nb, loc, nb.getI64IntegerAttr(tile)));
      });
  Value firstTile = exclusiveCumsum(tileCounts);
  Value numTiles = toIndex(
      tensor::ExtractOp::create(b, firstTile, ValueRange{idx(experts)}));

  Value init = tensor::EmptyOp::create(b, tb.sizesOf(input), elementType);
  auto forall = scf::ForallOp::create(b, ArrayRef<OpFoldResult>{numTiles},
                                      ValueRange{init}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    Value tileId = toI64(forall.getInductionVar(0));
    // The tile's expert: how many experts end at or before it.
    auto search =
        scf::ForOp::create(b, idx(0), idx(experts), idx(1), ValueRange{idx(0)});
    {
      OpBuilder::InsertionGuard searchGuard(b);
      b.setInsertionPointToStart(search.getBody());
      Value end = tensor::ExtractOp::create(
          b, firstTile, ValueRange{add(search.getInductionVar(), idx(1))});
      Value done =
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle, end, tileId);
      Value count =
          add(search.getRegionIterArgs()[0],
              arith::IndexCastOp::create(
                  b, b.getIndexType(), arith::ExtUIOp::create(b, i64(), done)));
      scf::YieldOp::create(b, ValueRange{count});
    }
    Value expert = search.getResult(0);
    Value local = sub(
        tileId, tensor::ExtractOp::create(b, firstTile, ValueRange{expert}));
    Value begin = tensor::ExtractOp::create(b, offsets, ValueRange{expert});
    Value end =
        tensor::ExtractOp::create(b, offsets, ValueRange{add(expert, idx(1))});
    Value row = add(begin, mul(local, i64c(tile)));
    Value rows = arith::MinSIOp::create(b, sub(end, row), i64c(tile));
    Value rowIndex = toIndex(row), rowCount = toIndex(rows);

    Value zero = floatConstant(b, b.getLoc(), elementType, 0.0);
    Value xTile = paddedRows(input, rowIndex, rowCount, tile, zero);
    Value gate =
        tb.project(xTile, buildExpertSlice(b, op.getWGate(), expert), f32());
    Value up =
        tb.project(xTile, buildExpertSlice(b, op.getWUp(), expert), f32());
    Value activated = tb.gatedActivation(
        gate, up, activation.getGateBetaValue(), activation.getUpBetaValue());
    Value out = tb.project(
        activated, buildExpertSlice(b, op.getWDown(), expert), elementType);
    Value valid = tensor::ExtractSliceOp::create(
        b, out, ArrayRef<OpFoldResult>{attr(0), attr(0)},
        ArrayRef<OpFoldResult>{rowCount, attr(width)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, valid, forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{rowIndex, attr(0)},
        ArrayRef<OpFoldResult>{rowCount, attr(width)},
        ArrayRef<OpFoldResult>{attr(1), attr(1)});
  }
  return castTo(forall.getResult(0), op.getType());
}

Value RoutedLowering::buildCombine(CombineOp op, Value slotRow) {
  if (!slotRow)
    slotRow = buildSlotRows(b, op.getSourceSlot());
  // result[n, c] = sum_i w[n, i] * out[row(n * k + i), c], in fp32.
  Value sum = buildSlotSum(b, op.getExpertOutput(), slotRow, op.getWeights(),
                           /*weighted=*/true);
  Value result = tb.convert(sum, op.getType().getElementType());
  return castTo(result, op.getType());
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// The balancer of `routing`.
static Balance balanceOf(RoutingAttr routing) {
  if (auto quantile = dyn_cast<QuantileBalanceAttr>(routing.getBalance()))
    return quantile.getMethod() == QuantileMethod::Exact ? Balance::Exact
                                                         : Balance::Histogram;
  return Balance::Sign;
}

LogicalResult mlir::moe::fuseRouting(RewriterBase &rewriter, Operation *root,
                                     const RoutingTileSizes &tiles,
                                     RoutingLoweringCounts *counts) {
  RoutingLoweringCounts local;
  RoutingLoweringCounts &done = counts ? *counts : local;
  bool failed = false;
  auto staticDim = [&](Operation *op, Value value, int64_t dimension,
                       StringRef name) {
    if (!tensorTypeOf(value).isDynamicDim(dimension))
      return true;
    op->emitOpError("expects a static ") << name << " (dimension " << dimension
                                         << " of " << value.getType() << ")";
    failed = true;
    return false;
  };

  // Token-slot -> row maps of the dispatches lowered here, by source_slot.
  DenseMap<Value, Value> slotRows;

  SmallVector<RouteOp> routes;
  root->walk([&](RouteOp op) { routes.push_back(op); });
  for (RouteOp op : routes) {
    if (!staticDim(op, op.getInput(), 1, "hidden size"))
      continue;
    RoutingAttr routing = op.getRouting();
    Balance balance = balanceOf(routing);
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    RoutedLowering lowering(b, tiles);
    RoutingKernel kernel = lowering.buildRoutingKernel(op, balance);
    // The dispatch below works on this rank's tokens; the load result and
    // the balancer on the global batch.
    RoutingKernel statistics = kernel;
    if (int64_t ranks = getDataParallel(op); ranks > 1)
      statistics = lowering.globalStatistics(kernel, balance, ranks);
    Value nextBias = lowering.buildNextBias(op, balance, statistics);

    // Dispatches of the same tokens by these indices reuse the kernel's
    // counts and positions: only the scan and the scatter remain.
    SmallVector<DispatchOp> dispatches;
    for (Operation *user : op.getIndices().getUsers())
      if (auto dispatch = dyn_cast<DispatchOp>(user))
        if (dispatch.getIndices() == op.getIndices() &&
            static_cast<int64_t>(dispatch.getNumExperts()) ==
                routing.getNumExperts() &&
            !llvm::is_contained(dispatches, dispatch))
          dispatches.push_back(dispatch);
    for (DispatchOp dispatch : dispatches) {
      rewriter.setInsertionPoint(dispatch);
      ImplicitLocOpBuilder db(dispatch.getLoc(), rewriter);
      RoutedLowering dispatchLowering(db, tiles);
      DispatchResult r = dispatchLowering.buildFusedDispatch(dispatch, kernel,
                                                             routing.getTopK());
      slotRows[r.sourceSlot] = r.slotRow;
      rewriter.replaceOp(dispatch, {r.permuted, r.expertOffsets, r.sourceSlot});
      ++done.fusedDispatches;
    }
    rewriter.replaceOp(
        op, {kernel.weights, kernel.indices,
             castTensorTo(b, statistics.load, op.getLoad().getType()),
             castTensorTo(b, nextBias, op.getNextBias().getType())});
    ++done.routes;
  }

  SmallVector<DispatchOp> dispatches;
  root->walk([&](DispatchOp op) { dispatches.push_back(op); });
  for (DispatchOp op : dispatches) {
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    DispatchResult r = RoutedLowering(b, tiles).buildStandaloneDispatch(op);
    slotRows[r.sourceSlot] = r.slotRow;
    rewriter.replaceOp(op, {r.permuted, r.expertOffsets, r.sourceSlot});
    ++done.dispatches;
  }

  SmallVector<ExpertFFNOp> experts;
  root->walk([&](ExpertFFNOp op) { experts.push_back(op); });
  for (ExpertFFNOp op : experts) {
    if (!staticDim(op, op.getWGate(), 0, "expert count") ||
        !staticDim(op, op.getWGate(), 1, "hidden size") ||
        !staticDim(op, op.getWGate(), 2, "expert width"))
      continue;
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, RoutedLowering(b, tiles).buildGroupedFFN(op));
    ++done.expertFFNs;
  }

  SmallVector<CombineOp> combines;
  root->walk([&](CombineOp op) { combines.push_back(op); });
  for (CombineOp op : combines) {
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value slotRow = slotRows.lookup(op.getSourceSlot());
    rewriter.replaceOp(op, RoutedLowering(b, tiles).buildCombine(op, slotRow));
    ++done.combines;
  }
  return failure(failed);
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoEFuseRoutingPass
    : public moe::impl::MoEFuseRoutingBase<MoEFuseRoutingPass> {
  using MoEFuseRoutingBase::MoEFuseRoutingBase;
  void runOnOperation() override;
};
} // namespace

void MoEFuseRoutingPass::runOnOperation() {
  Operation *root = getOperation();
  if (tokenTile < 1 || tokenGroups < 1 || rowTile < 1) {
    root->emitError() << "expects positive token-tile ("
                      << static_cast<int64_t>(tokenTile) << "), token-groups ("
                      << static_cast<int64_t>(tokenGroups) << ") and row-tile ("
                      << static_cast<int64_t>(rowTile) << ")";
    return signalPassFailure();
  }
  RoutingTileSizes tiles;
  tiles.tokenTile = tokenTile;
  tiles.tokenGroups = tokenGroups;
  tiles.rowTile = rowTile;
  RoutingLoweringCounts counts;
  IRRewriter rewriter(&getContext());
  LogicalResult result = fuseRouting(rewriter, root, tiles, &counts);
  numRoutes += counts.routes;
  numFusedDispatches += counts.fusedDispatches;
  numDispatches += counts.dispatches;
  numExpertFFNs += counts.expertFFNs;
  numCombines += counts.combines;
  if (failed(result))
    signalPassFailure();
}
