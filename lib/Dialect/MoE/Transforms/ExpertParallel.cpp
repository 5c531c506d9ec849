//===- ExpertParallel.cpp - Experts placed on the ranks of a group --------===//
//
// Part of the moe-mlir project.
//
// Expert parallelism for -moe-build-training-step (Sharding.h,
// docs/Distributed.md): in the gradient and the training step, each
// moe.expert_ffn and moe.expert_ffn_grad runs only the E / P experts this
// rank owns in its expert-parallel group of P ranks. The expert-sorted rows
// of every rank go to the ranks that own their experts (counts first, then
// the rows: moe.all_to_all, moe.all_to_all_v), are regrouped by expert,
// computed, regrouped by source rank and sent back, so that the dispatch
// and the combine around them keep this rank's tokens in their order. The
// weight gradients of the other ranks' experts are zero here; the data-
// parallel mean over the ranks then gives every rank the full gradient.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Sharding.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

/// How the expert-sorted rows of one (rows, offsets) pair travel.
struct ExchangePlan {
  Value sendRows, recvRows; ///< [P] i64: rows to / from each group rank
  Value sendTotal;          ///< index: rows of this rank (M)
  Value recvTotal;          ///< index: rows received (R)
  Value recvCounts;         ///< [P, El] i64: rows from rank p for expert e
  Value localOffsets;       ///< [El + 1] i64: the received rows by expert
  Value sourceStart;        ///< [P, El] i64: block (p, e), source-major
  Value expertStart;        ///< [P, El] i64: block (p, e), expert-major
  Value rank;               ///< index: this rank in its group
  Value localRows;          ///< [R, d]: the received rows, expert-major
  int64_t localExperts = 0; ///< El = E / P
};

/// The local side of one expert op: its plan, the received rows and this
/// rank's slices of the gate, up and down weights.
struct LocalExperts {
  ExchangePlan *plan;
  Type rowType;
  Value rows;
  SmallVector<Value, 3> weights;
};

class ExpertSharder {
public:
  ExpertSharder(RewriterBase &rewriter, int64_t ranks)
      : rewriter(rewriter), ranks(ranks) {}

  LogicalResult shard(ExpertFFNOp op);
  LogicalResult shard(ExpertFFNGradOp op);

private:
  /// The plan of `op`'s rows and offsets, the rows as `op` takes them and
  /// the local weights, at `op`.
  FailureOr<LocalExperts> localExpertsOf(Operation *op, Value input,
                                         Value offsets, ValueRange weights);
  /// The plan of `rows` and `offsets`, built once, right after both exist.
  FailureOr<ExchangePlan *> planFor(Operation *user, Value rows, Value offsets,
                                    int64_t experts);
  /// `rows` ([M, d], blocks for group ranks 0, 1, ...) exchanged, then
  /// regrouped by expert.
  Value exchangeIn(ImplicitLocOpBuilder &b, const ExchangePlan &plan,
                   Value rows);
  /// The inverse: rows of the local experts regrouped by source rank and
  /// sent back, in the order `rows` had on this rank.
  Value exchangeOut(ImplicitLocOpBuilder &b, const ExchangePlan &plan,
                    Value localResult, Type type);
  /// Copies the P * El blocks of `source` into a new [rows, d] tensor: block
  /// (p, e) of `counts` from `from[p, e]` to `to[p, e]`.
  Value moveBlocks(ImplicitLocOpBuilder &b, const ExchangePlan &plan,
                   Value source, Value from, Value to, Value rows);
  /// This rank's El experts of a weight [E, ...].
  Value localWeights(ImplicitLocOpBuilder &b, const ExchangePlan &plan,
                     Value weight);

  RewriterBase &rewriter;
  int64_t ranks;
  DenseMap<std::pair<Value, Value>, std::unique_ptr<ExchangePlan>> plans;
  SmallVector<std::unique_ptr<ExchangePlan>> unshared;
};

} // namespace

/// The first expert this rank owns: rank * El.
static Value firstExpert(ImplicitLocOpBuilder &b, const ExchangePlan &plan) {
  return arith::MulIOp::create(
      b, plan.rank, arith::ConstantIndexOp::create(b, plan.localExperts));
}

/// `tensor[indices]` as an index.
static Value extractIndex(OpBuilder &b, Location loc, Value tensor,
                          ValueRange indices) {
  Value value = tensor::ExtractOp::create(b, loc, tensor, indices);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
}

/// A [sizes] i64 tensor whose element at the index vector is `fn(indices)`.
static Value
generateI64(ImplicitLocOpBuilder &b, ArrayRef<int64_t> sizes,
            function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  auto type = RankedTensorType::get(sizes, b.getI64Type());
  return tensor::GenerateOp::create(
      b, type, ValueRange{},
      [&](OpBuilder &nb, Location loc, ValueRange indices) {
        Value value = fn(nb, loc, indices);
        Value cast =
            arith::IndexCastOp::create(nb, loc, nb.getI64Type(), value);
        tensor::YieldOp::create(nb, loc, cast);
      });
}

/// `sum_{i in [0, end)} term(i)` as an index, by an scf.for.
static Value sumOver(OpBuilder &b, Location loc, Value end,
                     function_ref<Value(OpBuilder &, Location, Value)> term) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zero, end, one, ValueRange{zero},
      [&](OpBuilder &nb, Location l, Value i, ValueRange acc) {
        Value next = arith::AddIOp::create(nb, l, acc[0], term(nb, l, i));
        scf::YieldOp::create(nb, l, next);
      });
  return loop.getResult(0);
}

FailureOr<ExchangePlan *> ExpertSharder::planFor(Operation *user, Value rows,
                                                 Value offsets,
                                                 int64_t experts) {
  auto key = std::make_pair(rows, offsets);
  if (auto it = plans.find(key); it != plans.end())
    return it->second.get();
  if (experts % ranks != 0)
    return user->emitOpError("has ")
           << experts << " experts, which the " << ranks
           << " expert-parallel ranks cannot share equally";
  int64_t p = ranks, el = experts / ranks;

  // Right after the later of the two values, so that the forward op and its
  // gradient op share the plan; before `user` when they live elsewhere.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(user);
  Operation *rowsDef = rows.getDefiningOp(),
            *offsetsDef = offsets.getDefiningOp();
  bool shared = rowsDef && offsetsDef &&
                rowsDef->getBlock() == user->getBlock() &&
                offsetsDef->getBlock() == user->getBlock();
  if (shared)
    rewriter.setInsertionPointAfter(
        rowsDef->isBeforeInBlock(offsetsDef) ? offsetsDef : rowsDef);
  ImplicitLocOpBuilder b(user->getLoc(), rewriter);
  IntegerAttr ranksAttr = b.getI64IntegerAttr(ranks);
  auto index = [&](OpBuilder &nb, Location loc, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };

  auto plan = std::make_unique<ExchangePlan>();
  plan->localExperts = el;
  plan->rank = ExpertRankOp::create(b, ranksAttr);
  // Rows of this rank for expert e of group rank q, and per rank.
  Value sendCounts =
      generateI64(b, {p, el}, [&](OpBuilder &nb, Location loc, ValueRange qe) {
        Value expert = arith::AddIOp::create(
            nb, loc, arith::MulIOp::create(nb, loc, qe[0], index(nb, loc, el)),
            qe[1]);
        Value next = arith::AddIOp::create(nb, loc, expert, index(nb, loc, 1));
        return arith::SubIOp::create(nb, loc,
                                     extractIndex(nb, loc, offsets, next),
                                     extractIndex(nb, loc, offsets, expert));
      });
  plan->sendRows =
      generateI64(b, {p}, [&](OpBuilder &nb, Location loc, ValueRange q) {
        Value first = arith::MulIOp::create(nb, loc, q[0], index(nb, loc, el));
        Value last = arith::AddIOp::create(nb, loc, first, index(nb, loc, el));
        return arith::SubIOp::create(nb, loc,
                                     extractIndex(nb, loc, offsets, last),
                                     extractIndex(nb, loc, offsets, first));
      });
  plan->sendTotal = tensor::DimOp::create(b, rows, 0);
  // Counts first: rows from rank p for each local expert.
  Value recvCounts = AllToAllOp::create(b, sendCounts, ranksAttr);
  plan->recvCounts = recvCounts;
  Value localCount = index(b, b.getLoc(), el);
  plan->recvRows =
      generateI64(b, {p}, [&](OpBuilder &nb, Location loc, ValueRange pv) {
        return sumOver(
            nb, loc, localCount, [&](OpBuilder &ib, Location l, Value e) {
              return extractIndex(ib, l, recvCounts, ValueRange{pv[0], e});
            });
      });
  Value recvRows = plan->recvRows;
  plan->recvTotal = sumOver(b, b.getLoc(), index(b, b.getLoc(), p),
                            [&](OpBuilder &ib, Location l, Value q) {
                              return extractIndex(ib, l, recvRows, q);
                            });
  // Rows received for experts before e (all sources).
  auto rowsBefore = [&](OpBuilder &nb, Location loc, Value e) {
    return sumOver(nb, loc, e, [&](OpBuilder &ib, Location l, Value e2) {
      return sumOver(
          ib, l, index(ib, l, p), [&](OpBuilder &jb, Location l2, Value q) {
            return extractIndex(jb, l2, recvCounts, ValueRange{q, e2});
          });
    });
  };
  plan->localOffsets =
      generateI64(b, {el + 1}, [&](OpBuilder &nb, Location loc, ValueRange e) {
        return rowsBefore(nb, loc, e[0]);
      });
  // Block (p, e) as received: after the blocks of earlier sources, then
  // after p's blocks of earlier experts.
  plan->sourceStart =
      generateI64(b, {p, el}, [&](OpBuilder &nb, Location loc, ValueRange pe) {
        Value before =
            sumOver(nb, loc, pe[0], [&](OpBuilder &ib, Location l, Value q) {
              return extractIndex(ib, l, recvRows, q);
            });
        Value within =
            sumOver(nb, loc, pe[1], [&](OpBuilder &ib, Location l, Value e) {
              return extractIndex(ib, l, recvCounts, ValueRange{pe[0], e});
            });
        return arith::AddIOp::create(nb, loc, before, within);
      });
  // Block (p, e) grouped by expert: after all rows of earlier experts, then
  // after the blocks of earlier sources for e.
  plan->expertStart =
      generateI64(b, {p, el}, [&](OpBuilder &nb, Location loc, ValueRange pe) {
        Value before = rowsBefore(nb, loc, pe[1]);
        Value within =
            sumOver(nb, loc, pe[0], [&](OpBuilder &ib, Location l, Value q) {
              return extractIndex(ib, l, recvCounts, ValueRange{q, pe[1]});
            });
        return arith::AddIOp::create(nb, loc, before, within);
      });
  plan->localRows = exchangeIn(b, *plan, rows);
  ExchangePlan *result = plan.get();
  // A plan built before `user` only may not dominate other users.
  if (shared)
    plans[key] = std::move(plan);
  else
    unshared.push_back(std::move(plan));
  return result;
}

Value ExpertSharder::moveBlocks(ImplicitLocOpBuilder &b,
                                const ExchangePlan &plan, Value source,
                                Value from, Value to, Value rows) {
  auto type = cast<RankedTensorType>(source.getType());
  TensorBuilder tb(b);
  SmallVector<OpFoldResult> sizes = tb.sizesOf(source);
  sizes[0] = rows;
  Value init = tensor::EmptyOp::create(b, sizes, type.getElementType());
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value numRanks = arith::ConstantIndexOp::create(b, ranks);
  Value numExperts = arith::ConstantIndexOp::create(b, plan.localExperts);
  auto outer = scf::ForOp::create(
      b, zero, numRanks, one, ValueRange{init},
      [&](OpBuilder &ob, Location loc, Value q, ValueRange outerAcc) {
        auto inner = scf::ForOp::create(
            ob, loc, zero, numExperts, one, ValueRange{outerAcc[0]},
            [&](OpBuilder &ib, Location l, Value e, ValueRange acc) {
              Value count =
                  extractIndex(ib, l, plan.recvCounts, ValueRange{q, e});
              Value src = extractIndex(ib, l, from, ValueRange{q, e});
              Value dst = extractIndex(ib, l, to, ValueRange{q, e});
              SmallVector<OpFoldResult> offsets(type.getRank(),
                                                ib.getIndexAttr(0));
              SmallVector<OpFoldResult> blockSizes = sizes;
              SmallVector<OpFoldResult> strides(type.getRank(),
                                                ib.getIndexAttr(1));
              blockSizes[0] = count;
              offsets[0] = src;
              Value block = tensor::ExtractSliceOp::create(
                  ib, l, source, offsets, blockSizes, strides);
              offsets[0] = dst;
              Value moved = tensor::InsertSliceOp::create(
                  ib, l, block, acc[0], offsets, blockSizes, strides);
              scf::YieldOp::create(ib, l, moved);
            });
        scf::YieldOp::create(ob, loc, inner.getResult(0));
      });
  return outer.getResult(0);
}

Value ExpertSharder::exchangeIn(ImplicitLocOpBuilder &b,
                                const ExchangePlan &plan, Value rows) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  auto received = AllToAllVOp::create(
      b, RankedTensorType::get(shape, type.getElementType()), rows,
      plan.sendRows, plan.recvRows, plan.recvTotal, b.getI64IntegerAttr(ranks));
  return moveBlocks(b, plan, received, plan.sourceStart, plan.expertStart,
                    plan.recvTotal);
}

Value ExpertSharder::exchangeOut(ImplicitLocOpBuilder &b,
                                 const ExchangePlan &plan, Value localResult,
                                 Type type) {
  Value bySource = moveBlocks(b, plan, localResult, plan.expertStart,
                              plan.sourceStart, plan.recvTotal);
  auto rowsType = cast<RankedTensorType>(bySource.getType());
  Value back =
      AllToAllVOp::create(b, rowsType, bySource, plan.recvRows, plan.sendRows,
                          plan.sendTotal, b.getI64IntegerAttr(ranks));
  return tensor::CastOp::create(b, type, back);
}

Value ExpertSharder::localWeights(ImplicitLocOpBuilder &b,
                                  const ExchangePlan &plan, Value weight) {
  auto type = cast<RankedTensorType>(weight.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t size : type.getShape())
    sizes.push_back(b.getIndexAttr(size));
  sizes[0] = b.getIndexAttr(plan.localExperts);
  offsets[0] = firstExpert(b, plan);
  return tensor::ExtractSliceOp::create(b, weight, offsets, sizes, strides);
}

/// Rows as the expert op wants them: dynamic row count, the input's type.
static Value asRows(ImplicitLocOpBuilder &b, Value rows, Type like) {
  auto likeType = cast<RankedTensorType>(like);
  SmallVector<int64_t> shape(likeType.getShape());
  shape[0] = ShapedType::kDynamic;
  auto type = RankedTensorType::get(shape, likeType.getElementType());
  return rows.getType() == type ? rows : tensor::CastOp::create(b, type, rows);
}

/// The expert-op type of the local rows: the input's with a dynamic count.
static Type localRowType(Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, type.getElementType());
}

FailureOr<LocalExperts> ExpertSharder::localExpertsOf(Operation *op,
                                                      Value input,
                                                      Value offsets,
                                                      ValueRange weights) {
  int64_t experts = cast<RankedTensorType>(weights[0].getType()).getDimSize(0);
  FailureOr<ExchangePlan *> plan = planFor(op, input, offsets, experts);
  if (failed(plan))
    return failure();
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op->getLoc(), rewriter);
  LocalExperts local;
  local.plan = *plan;
  local.rowType = localRowType(input);
  local.rows = asRows(b, local.plan->localRows, local.rowType);
  for (Value weight : weights)
    local.weights.push_back(localWeights(b, *local.plan, weight));
  return local;
}

LogicalResult ExpertSharder::shard(ExpertFFNOp op) {
  FailureOr<LocalExperts> local =
      localExpertsOf(op, op.getInput(), op.getExpertOffsets(),
                     {op.getWGate(), op.getWUp(), op.getWDown()});
  if (failed(local))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  const ExchangePlan &plan = *local->plan;
  Value result = ExpertFFNOp::create(
      b, local->rowType, local->rows, plan.localOffsets, local->weights[0],
      local->weights[1], local->weights[2], op.getActivationAttr());
  rewriter.replaceOp(op, exchangeOut(b, plan, result, op.getType()));
  return success();
}

LogicalResult ExpertSharder::shard(ExpertFFNGradOp op) {
  FailureOr<LocalExperts> localExperts =
      localExpertsOf(op, op.getInput(), op.getExpertOffsets(),
                     {op.getWGate(), op.getWUp(), op.getWDown()});
  if (failed(localExperts))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  const ExchangePlan &exchange = *localExperts->plan;
  ArrayRef<Value> weights = localExperts->weights;
  Type rowType = localExperts->rowType;
  Value localGrad =
      asRows(b, exchangeIn(b, exchange, op.getResultGrad()), rowType);
  auto local = ExpertFFNGradOp::create(
      b,
      TypeRange{rowType, weights[0].getType(), weights[1].getType(),
                weights[2].getType()},
      localExperts->rows, exchange.localOffsets, weights[0], weights[1],
      weights[2], localGrad, op.getActivationAttr());
  SmallVector<Value> results = {exchangeOut(b, exchange, local.getInputGrad(),
                                            op.getInputGrad().getType())};
  // Zero for the experts of the other ranks.
  TensorBuilder tb(b);
  // Named vectors: a braced ValueRange would outlive its elements.
  SmallVector<Value> localGrads = {local.getWGateGrad(), local.getWUpGrad(),
                                   local.getWDownGrad()};
  SmallVector<Value> fullGrads = {op.getWGateGrad(), op.getWUpGrad(),
                                  op.getWDownGrad()};
  for (auto [localWeightGrad, full] : llvm::zip(localGrads, fullGrads)) {
    auto type = cast<RankedTensorType>(full.getType());
    Value zeros = tb.filled(tb.sizesOf(full), type.getElementType(), 0.0);
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    offsets[0] = firstExpert(b, exchange);
    results.push_back(
        tensor::InsertSliceOp::create(b, localWeightGrad, zeros, offsets,
                                      tb.sizesOf(localWeightGrad), strides));
  }
  rewriter.replaceOp(op, results);
  return success();
}

LogicalResult mlir::moe::shardExperts(Operation *func, int64_t ranks,
                                      RewriterBase &rewriter) {
  SmallVector<Operation *> ops;
  func->walk([&](Operation *op) {
    if (isa<ExpertFFNOp, ExpertFFNGradOp>(op))
      ops.push_back(op);
  });
  ExpertSharder sharder(rewriter, ranks);
  for (Operation *op : ops) {
    LogicalResult done = isa<ExpertFFNOp>(op)
                             ? sharder.shard(cast<ExpertFFNOp>(op))
                             : sharder.shard(cast<ExpertFFNGradOp>(op));
    if (failed(done))
      return failure();
  }
  return success();
}
