//===- ReverseMode.cpp - Reverse-mode differentiation of a block ----------===//
//
// Part of the moe-mlir project.
//
// Walks the ops of a block backwards and builds the adjoint of every active
// value (one that depends on the values differentiated against). moe ops
// build their adjoints through DifferentiableOpInterface; upstream ops by
// the rules below. A linalg structured op gets, for each active float
// operand, one linalg.generic over the same loops that multiplies each
// result's adjoint by the partial derivative of the scalar body (built by
// forward-mode differentiation of a copy of the body) and sums over the
// loops the operand does not index.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/ReverseMode.h"

#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-reverse-mode"

static bool isFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

//===----------------------------------------------------------------------===//
// Forward-mode derivatives of scalar ops (linalg bodies)
//===----------------------------------------------------------------------===//

namespace {
/// Builds tangents of the scalar ops of a linalg body: `tangents` maps a
/// value to its tangent (absent = zero).
class ScalarTangents {
public:
  ScalarTangents(OpBuilder &b, DenseMap<Value, Value> &tangents)
      : b(b), tangents(tangents) {}

  /// Builds the tangent of `op`'s float result from the tangents of its
  /// operands and records it. Fails when some operand has a tangent but
  /// `op` has no derivative rule.
  LogicalResult visit(Operation *op);

private:
  Value t(Value v) { return tangents.lookup(v); }
  Value cst(Location loc, Type type, double value) {
    return floatConstant(b, loc, type, value);
  }
  Value mul(Location loc, Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value add(Location loc, Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value neg(Location loc, Value x) { return arith::NegFOp::create(b, loc, x); }
  Value div(Location loc, Value x, Value y) {
    return arith::DivFOp::create(b, loc, x, y);
  }
  /// `tangent * factor`, or zero when there is no tangent.
  Value scaled(Location loc, Value tangent, Value factor) {
    return tangent ? mul(loc, tangent, factor) : Value();
  }
  /// `tangent / divisor`, or zero.
  Value divided(Location loc, Value tangent, Value divisor) {
    return tangent ? div(loc, tangent, divisor) : Value();
  }
  FailureOr<Value> rule(Operation *op);

  OpBuilder &b;
  DenseMap<Value, Value> &tangents;
};
} // namespace

FailureOr<Value> ScalarTangents::rule(Operation *op) {
  Location loc = op->getLoc();
  auto operand = [&](unsigned i) { return op->getOperand(i); };
  auto tan = [&](unsigned i) { return t(op->getOperand(i)); };
  Value y = op->getResult(0);
  Type type = y.getType();
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case<arith::AddFOp>([&](auto) { return add(loc, tan(0), tan(1)); })
      .Case<arith::SubFOp>([&](auto) -> Value {
        Value rhs = tan(1) ? neg(loc, tan(1)) : Value();
        return add(loc, tan(0), rhs);
      })
      .Case<arith::MulFOp>([&](auto) {
        return add(loc, scaled(loc, tan(0), operand(1)),
                   scaled(loc, tan(1), operand(0)));
      })
      .Case<arith::DivFOp>([&](auto) -> Value {
        // d(a / b) = (da - y db) / b.
        Value num =
            add(loc, tan(0), tan(1) ? neg(loc, mul(loc, y, tan(1))) : Value());
        return divided(loc, num, operand(1));
      })
      .Case<arith::NegFOp>(
          [&](auto) { return tan(0) ? neg(loc, tan(0)) : Value(); })
      .Case<arith::ExtFOp>([&](auto) -> Value {
        return tan(0) ? arith::ExtFOp::create(b, loc, type, tan(0)) : Value();
      })
      .Case<arith::TruncFOp>([&](auto) -> Value {
        return tan(0) ? arith::TruncFOp::create(b, loc, type, tan(0)) : Value();
      })
      .Case<arith::SelectOp>([&](arith::SelectOp select) -> Value {
        if (!tan(1) && !tan(2))
          return Value();
        Value lhs = tan(1) ? tan(1) : cst(loc, type, 0.0);
        Value rhs = tan(2) ? tan(2) : cst(loc, type, 0.0);
        return arith::SelectOp::create(b, loc, select.getCondition(), lhs, rhs);
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>([&](Operation *) -> Value {
        if (!tan(0) && !tan(1))
          return Value();
        // The derivative follows the operand that is selected (the first
        // one on ties).
        bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
        Value first = arith::CmpFOp::create(b, loc,
                                            isMax ? arith::CmpFPredicate::OGE
                                                  : arith::CmpFPredicate::OLE,
                                            operand(0), operand(1));
        Value lhs = tan(0) ? tan(0) : cst(loc, type, 0.0);
        Value rhs = tan(1) ? tan(1) : cst(loc, type, 0.0);
        return arith::SelectOp::create(b, loc, first, lhs, rhs);
      })
      .Case<math::ExpOp>([&](auto) { return scaled(loc, tan(0), y); })
      .Case<math::Exp2Op>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        return mul(loc, scaled(loc, tan(0), y),
                   cst(loc, type, llvm::numbers::ln2));
      })
      .Case<math::ExpM1Op>([&](auto) -> Value {
        return scaled(loc, tan(0), add(loc, y, cst(loc, type, 1.0)));
      })
      .Case<math::LogOp>([&](auto) { return divided(loc, tan(0), operand(0)); })
      .Case<math::Log2Op>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        return div(loc, tan(0),
                   mul(loc, operand(0), cst(loc, type, llvm::numbers::ln2)));
      })
      .Case<math::Log1pOp>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        return div(loc, tan(0), add(loc, operand(0), cst(loc, type, 1.0)));
      })
      .Case<math::TanhOp>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        Value oneMinus =
            arith::SubFOp::create(b, loc, cst(loc, type, 1.0), mul(loc, y, y));
        return mul(loc, tan(0), oneMinus);
      })
      .Case<math::SqrtOp>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        return div(loc, mul(loc, tan(0), cst(loc, type, 0.5)), y);
      })
      .Case<math::RsqrtOp>([&](auto) -> Value {
        // d(x^-1/2) = -1/2 y / x dx.
        if (!tan(0))
          return Value();
        Value factor = div(loc, mul(loc, y, cst(loc, type, -0.5)), operand(0));
        return mul(loc, tan(0), factor);
      })
      .Case<math::PowFOp>([&](auto) -> Value {
        // d(a^b) = b y / a da + y log(a) db.
        Value da, db;
        if (tan(0))
          da = mul(loc, tan(0), div(loc, mul(loc, operand(1), y), operand(0)));
        if (tan(1))
          db = mul(loc, tan(1),
                   mul(loc, y, math::LogOp::create(b, loc, operand(0))));
        return add(loc, da, db);
      })
      .Case<math::AbsFOp>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        Value nonNegative = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGE, operand(0), cst(loc, type, 0.0));
        return arith::SelectOp::create(b, loc, nonNegative, tan(0),
                                       neg(loc, tan(0)));
      })
      .Case<math::ErfOp>([&](auto) -> Value {
        // d erf(x) = 2 / sqrt(pi) exp(-x^2) dx.
        if (!tan(0))
          return Value();
        Value x = operand(0);
        Value gauss = math::ExpOp::create(b, loc, neg(loc, mul(loc, x, x)));
        return mul(
            loc, tan(0),
            mul(loc, gauss, cst(loc, type, 2.0 * llvm::numbers::inv_sqrtpi)));
      })
      .Case<math::SinOp>([&](auto) {
        return scaled(loc, tan(0), math::CosOp::create(b, loc, operand(0)));
      })
      .Case<math::CosOp>([&](auto) -> Value {
        if (!tan(0))
          return Value();
        return neg(loc,
                   mul(loc, tan(0), math::SinOp::create(b, loc, operand(0))));
      })
      .Case<math::FmaOp>([&](auto) {
        return add(loc,
                   add(loc, scaled(loc, tan(0), operand(1)),
                       scaled(loc, tan(1), operand(0))),
                   tan(2));
      })
      .Default([&](Operation *) -> FailureOr<Value> { return failure(); });
}

LogicalResult ScalarTangents::visit(Operation *op) {
  bool anyTangent =
      llvm::any_of(op->getOperands(), [&](Value v) { return t(v); });
  if (!anyTangent)
    return success();
  bool floatResult =
      llvm::any_of(op->getResultTypes(), llvm::IsaPred<FloatType>);
  if (!floatResult)
    return success(); // Comparisons and the like carry no derivative.
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return failure();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(op);
  FailureOr<Value> tangent = rule(op);
  if (failed(tangent))
    return failure();
  if (*tangent)
    tangents[op->getResult(0)] = *tangent;
  return success();
}

//===----------------------------------------------------------------------===//
// Reverse mode
//===----------------------------------------------------------------------===//

namespace {
/// A static box `[lo, hi)` of a tensor.
struct Box {
  SmallVector<int64_t> lo, hi;

  bool overlaps(const Box &other) const {
    for (auto [l0, h0, l1, h1] : llvm::zip(lo, hi, other.lo, other.hi))
      if (h0 <= l1 || h1 <= l0)
        return false;
    return true;
  }
};

class ReverseMode {
public:
  explicit ReverseMode(OpBuilder &builder)
      : b(builder.getUnknownLoc(), builder), tb(b) {}

  FailureOr<SmallVector<Value>> run(Block &block,
                                    const ReverseModeRequest &request);

private:
  bool isActive(Value v) const { return active.contains(v); }
  void accumulate(Value value, Value adjoint);
  void accumulateSlice(Value source, Value adjoint,
                       OffsetSizeAndStrideOpInterface slice);
  LogicalResult visit(Operation *op, ArrayRef<Value> resultAdjoints);
  LogicalResult visitLinalg(linalg::LinalgOp op,
                            ArrayRef<Value> resultAdjoints);
  FailureOr<Value> buildOperandAdjoint(linalg::LinalgOp op, OpOperand &operand,
                                       ArrayRef<Value> resultAdjoints);
  LogicalResult visitConcat(tensor::ConcatOp op, Value adjoint);
  LogicalResult visitElementwise(Operation *op, Value adjoint);

  ImplicitLocOpBuilder b;
  TensorBuilder tb;
  DenseSet<Value> active;
  DenseMap<Value, Value> adjoints;
  /// Values whose adjoint is zeros plus disjoint inserts of these boxes.
  DenseMap<Value, SmallVector<Box>> slicedAdjoints;
};
} // namespace

void ReverseMode::accumulate(Value value, Value adjoint) {
  slicedAdjoints.erase(value);
  Value &slot = adjoints[value];
  slot = slot ? tb.add(slot, adjoint) : adjoint;
}

/// The static box of `slice` (unit strides), if it has one.
static std::optional<Box> staticBox(OffsetSizeAndStrideOpInterface slice) {
  if (!slice.getOffsets().empty() || !slice.getSizes().empty() ||
      !slice.getStrides().empty())
    return std::nullopt;
  if (!llvm::all_of(slice.getStaticStrides(), [](int64_t s) { return s == 1; }))
    return std::nullopt;
  Box box;
  for (auto [offset, size] :
       llvm::zip(slice.getStaticOffsets(), slice.getStaticSizes())) {
    box.lo.push_back(offset);
    box.hi.push_back(offset + size);
  }
  return box;
}

void ReverseMode::accumulateSlice(Value source, Value adjoint,
                                  OffsetSizeAndStrideOpInterface slice) {
  std::optional<Box> box = staticBox(slice);
  auto it = adjoints.find(source);
  if (it == adjoints.end()) {
    adjoints[source] = tb.filled(tb.sizesOf(source),
                                 tensorTypeOf(source).getElementType(), 0.0);
    slicedAdjoints[source] = {};
  }
  Value current = adjoints[source];
  auto tracked = slicedAdjoints.find(source);
  bool zeroThere = box && tracked != slicedAdjoints.end() &&
                   llvm::none_of(tracked->second, [&](const Box &other) {
                     return other.overlaps(*box);
                   });
  Value piece = adjoint;
  if (!zeroThere) {
    Value old = tensor::ExtractSliceOp::create(
        b, cast<RankedTensorType>(adjoint.getType()), current,
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
    piece = tb.add(old, adjoint);
  }
  if (tracked != slicedAdjoints.end()) {
    if (box)
      tracked->second.push_back(*box);
    else
      slicedAdjoints.erase(tracked);
  }
  adjoints[source] = tensor::InsertSliceOp::create(
      b, piece, current, slice.getMixedOffsets(), slice.getMixedSizes(),
      slice.getMixedStrides());
}

FailureOr<SmallVector<Value>>
ReverseMode::run(Block &block, const ReverseModeRequest &request) {
  // The ops to differentiate: those before the insertion point.
  Block::iterator end = b.getInsertionPoint();
  if (b.getInsertionBlock() != &block)
    return block.getParentOp()->emitError(
        "reverse mode: the insertion point is not in the block");

  // Forward activity: values computed from `wrt`.
  DenseSet<Value> constants(request.constants.begin(), request.constants.end());
  for (Value v : request.wrt)
    active.insert(v);
  for (Operation &op : llvm::make_range(block.begin(), end)) {
    bool anyActive =
        llvm::any_of(op.getOperands(), [&](Value v) { return isActive(v); });
    if (!anyActive && op.getNumRegions() != 0) {
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(op.getRegions(), captured);
      anyActive = llvm::any_of(captured, [&](Value v) { return isActive(v); });
    }
    if (!anyActive)
      continue;
    for (Value result : op.getResults()) {
      Type type = getElementTypeOrSelf(result.getType());
      if (isa<FloatType>(type) && !constants.contains(result))
        active.insert(result);
    }
  }

  for (auto [value, adjoint] : request.seeds) {
    if (!isFloatTensor(value) || adjoint.getType() != value.getType())
      return emitError(value.getLoc(),
                       "reverse mode: a seed must be a float tensor with an "
                       "adjoint of its type");
    if (isActive(value))
      accumulate(value, adjoint);
  }

  // Walk backwards. New ops go to the insertion point, after `end`'s
  // predecessors, so the range walked does not change.
  SmallVector<Operation *> ops;
  for (Operation &op : llvm::make_range(block.begin(), end))
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultAdjoints;
    bool any = false;
    for (Value result : op->getResults()) {
      Value adjoint = isActive(result) ? adjoints.lookup(result) : Value();
      any |= static_cast<bool>(adjoint);
      resultAdjoints.push_back(adjoint);
    }
    if (!any)
      continue;
    // Gradients flow through tensors only.
    SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    if (op->getNumRegions() != 0)
      getUsedValuesDefinedAbove(op->getRegions(), used);
    for (Value v : used)
      if (isActive(v) && !isa<RankedTensorType>(v.getType()))
        return op->emitError("cannot differentiate through the scalar ")
               << v.getType() << " that it reads";
    b.setLoc(op->getLoc());
    if (failed(visit(op, resultAdjoints)))
      return failure();
  }

  SmallVector<Value> result;
  for (Value v : request.wrt)
    result.push_back(adjoints.lookup(v));
  return result;
}

LogicalResult ReverseMode::visit(Operation *op,
                                 ArrayRef<Value> resultAdjoints) {
  if (auto differentiable = dyn_cast<DifferentiableOpInterface>(op)) {
    SmallVector<Value> operandAdjoints;
    if (failed(
            differentiable.buildAdjoints(b, resultAdjoints, operandAdjoints)))
      return failure();
    if (operandAdjoints.size() != op->getNumOperands())
      return op->emitError("built ")
             << operandAdjoints.size() << " operand adjoints for "
             << op->getNumOperands() << " operands";
    for (auto [operand, adjoint] :
         llvm::zip(op->getOperands(), operandAdjoints)) {
      if (!adjoint || !isActive(operand))
        continue;
      if (adjoint.getType() != operand.getType())
        return op->emitError("built an adjoint of type ")
               << adjoint.getType() << " for an operand of type "
               << operand.getType();
      accumulate(operand, adjoint);
    }
    return success();
  }
  Value adjoint = resultAdjoints.front();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<linalg::LinalgOp>([&](linalg::LinalgOp linalgOp) {
        return visitLinalg(linalgOp, resultAdjoints);
      })
      .Case<tensor::ExpandShapeOp>([&](tensor::ExpandShapeOp expand) {
        if (isActive(expand.getSrc()))
          accumulate(expand.getSrc(), tensor::CollapseShapeOp::create(
                                          b, expand.getSrcType(), adjoint,
                                          expand.getReassociationIndices()));
        return success();
      })
      .Case<tensor::CollapseShapeOp>([&](tensor::CollapseShapeOp collapse) {
        Value src = collapse.getSrc();
        if (isActive(src))
          accumulate(src,
                     tensor::ExpandShapeOp::create(
                         b, collapse.getSrcType(), adjoint,
                         collapse.getReassociationIndices(), tb.sizesOf(src)));
        return success();
      })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp slice) {
        if (isActive(slice.getSource()))
          accumulateSlice(slice.getSource(), adjoint, slice);
        return success();
      })
      .Case<tensor::InsertSliceOp>([&](tensor::InsertSliceOp insert) {
        if (isActive(insert.getSource()))
          accumulate(insert.getSource(),
                     tensor::ExtractSliceOp::create(
                         b, insert.getSourceType(), adjoint,
                         insert.getMixedOffsets(), insert.getMixedSizes(),
                         insert.getMixedStrides()));
        if (isActive(insert.getDest())) {
          Value zeros = tb.filled(tb.sizesOf(insert.getSource()),
                                  insert.getSourceType().getElementType(), 0.0);
          accumulate(insert.getDest(),
                     tensor::InsertSliceOp::create(
                         b, zeros, adjoint, insert.getMixedOffsets(),
                         insert.getMixedSizes(), insert.getMixedStrides()));
        }
        return success();
      })
      .Case<tensor::ConcatOp>(
          [&](tensor::ConcatOp concat) { return visitConcat(concat, adjoint); })
      .Case<tensor::CastOp>([&](tensor::CastOp cast) {
        if (isActive(cast.getSource()))
          accumulate(
              cast.getSource(),
              tensor::CastOp::create(b, cast.getSource().getType(), adjoint));
        return success();
      })
      .Case<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
            arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(
          [&](Operation *elementwise) {
            return visitElementwise(elementwise, adjoint);
          })
      .Default([&](Operation *) {
        return op->emitError("cannot differentiate '")
               << op->getName() << "': no adjoint rule";
      });
}

LogicalResult ReverseMode::visitConcat(tensor::ConcatOp op, Value adjoint) {
  int64_t dim = op.getDim();
  int64_t rank = op.getResultType().getRank();
  OpFoldResult offset = b.getIndexAttr(0);
  for (Value input : op.getInputs()) {
    SmallVector<OpFoldResult> sizes = tb.sizesOf(input);
    if (isActive(input)) {
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
      offsets[dim] = offset;
      SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
      accumulate(input, tensor::ExtractSliceOp::create(
                            b, cast<RankedTensorType>(input.getType()), adjoint,
                            offsets, sizes, strides));
    }
    std::optional<int64_t> lhs = getConstantIntValue(offset),
                           rhs = getConstantIntValue(sizes[dim]);
    if (lhs && rhs)
      offset = b.getIndexAttr(*lhs + *rhs);
    else
      offset = arith::AddIOp::create(
                   b, getValueOrCreateConstantIndexOp(b, b.getLoc(), offset),
                   getValueOrCreateConstantIndexOp(b, b.getLoc(), sizes[dim]))
                   .getResult();
  }
  return success();
}

LogicalResult ReverseMode::visitElementwise(Operation *op, Value adjoint) {
  if (!isa<RankedTensorType>(op->getResult(0).getType()))
    return op->emitError("cannot differentiate a scalar '")
           << op->getName() << "' outside a linalg body";
  Type elementType = tensorTypeOf(adjoint).getElementType();
  auto lhsActive = [&] { return isActive(op->getOperand(0)); };
  auto rhsActive = [&] {
    return op->getNumOperands() > 1 && isActive(op->getOperand(1));
  };
  auto negated = [&](Value v) {
    return tb.map(v, elementType,
                  [](OpBuilder &nb, Location loc, ValueRange args) -> Value {
                    return arith::NegFOp::create(nb, loc, args[0]);
                  });
  };
  if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
    Value src = op->getOperand(0);
    if (lhsActive())
      accumulate(src, tb.convert(adjoint, tensorTypeOf(src).getElementType()));
    return success();
  }
  if (isa<arith::NegFOp>(op)) {
    if (lhsActive())
      accumulate(op->getOperand(0), negated(adjoint));
    return success();
  }
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (isa<arith::AddFOp>(op)) {
    if (lhsActive())
      accumulate(lhs, adjoint);
    if (rhsActive())
      accumulate(rhs, adjoint);
  } else if (isa<arith::SubFOp>(op)) {
    if (lhsActive())
      accumulate(lhs, adjoint);
    if (rhsActive())
      accumulate(rhs, negated(adjoint));
  } else if (isa<arith::MulFOp>(op)) {
    if (lhsActive())
      accumulate(lhs, tb.multiply(adjoint, rhs));
    if (rhsActive())
      accumulate(rhs, tb.multiply(adjoint, lhs));
  } else {
    // y = a / b: da = dy / b, db = -dy y / b.
    Value y = op->getResult(0);
    if (lhsActive())
      accumulate(lhs, tb.map(ValueRange{adjoint, rhs}, elementType,
                             [](OpBuilder &nb, Location loc, ValueRange args) {
                               return arith::DivFOp::create(nb, loc, args[0],
                                                            args[1])
                                   .getResult();
                             }));
    if (rhsActive())
      accumulate(rhs,
                 tb.map(ValueRange{adjoint, y, rhs}, elementType,
                        [](OpBuilder &nb, Location loc, ValueRange args) {
                          Value p =
                              arith::MulFOp::create(nb, loc, args[0], args[1]);
                          Value q = arith::DivFOp::create(nb, loc, p, args[2]);
                          return arith::NegFOp::create(nb, loc, q).getResult();
                        }));
  }
  return success();
}

LogicalResult ReverseMode::visitLinalg(linalg::LinalgOp op,
                                       ArrayRef<Value> resultAdjoints) {
  Block *body = op.getBlock();
  if (!body || !op.hasPureTensorSemantics())
    return op->emitError("cannot differentiate a linalg op without a body "
                         "on tensors");
  bool hasReduction =
      llvm::any_of(op.getIteratorTypesArray(), [](utils::IteratorType type) {
        return type == utils::IteratorType::reduction;
      });
  auto yield = cast<linalg::YieldOp>(body->getTerminator());

  if (hasReduction) {
    // Each differentiated result must be `out + g(inputs)`.
    DenseSet<Value> readsOutputs;
    for (OpOperand &init : op.getDpsInitsMutable())
      readsOutputs.insert(op.getMatchingBlockArgument(&init));
    for (Operation &inner : body->without_terminator())
      if (llvm::any_of(inner.getOperands(),
                       [&](Value v) { return readsOutputs.contains(v); }))
        for (Value r : inner.getResults())
          readsOutputs.insert(r);
    for (auto [j, adjoint] : llvm::enumerate(resultAdjoints)) {
      if (!adjoint)
        continue;
      Value out = op.getMatchingBlockArgument(op.getDpsInitOperand(j));
      auto addf = yield.getOperand(j).getDefiningOp<arith::AddFOp>();
      bool additive =
          addf &&
          ((addf.getLhs() == out && !readsOutputs.contains(addf.getRhs())) ||
           (addf.getRhs() == out && !readsOutputs.contains(addf.getLhs())));
      if (!additive)
        return op->emitError("cannot differentiate a reduction whose result #")
               << j
               << " is not an additive accumulation (arith.addf of its "
                  "output and a function of the inputs)";
    }
  }

  for (OpOperand &operand : op->getOpOperands()) {
    Value value = operand.get();
    if (!isActive(value) || !isFloatTensor(value))
      continue;
    if (op.isDpsInit(&operand) && hasReduction) {
      // out + g: the initial value's adjoint is the result's.
      if (Value adjoint =
              resultAdjoints[op.getTiedOpResult(&operand).getResultNumber()])
        accumulate(value, adjoint);
      continue;
    }
    if (op.getMatchingBlockArgument(&operand).use_empty())
      continue;
    FailureOr<Value> adjoint = buildOperandAdjoint(op, operand, resultAdjoints);
    if (failed(adjoint))
      return failure();
    if (*adjoint)
      accumulate(value, *adjoint);
  }
  return success();
}

FailureOr<Value>
ReverseMode::buildOperandAdjoint(linalg::LinalgOp op, OpOperand &operand,
                                 ArrayRef<Value> resultAdjoints) {
  AffineMap operandMap = op.getMatchingIndexingMap(&operand);
  if (!operandMap.isProjectedPermutation())
    return op->emitError("cannot differentiate operand #")
           << operand.getOperandNumber()
           << ": its indexing map is not a projected permutation";
  Value value = operand.get();
  auto type = cast<RankedTensorType>(value.getType());
  Type elementType = type.getElementType();
  Type accType =
      elementType.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elementType;

  // Inputs: the op's tensors (for the body's values and the loop bounds),
  // then the adjoints of its results.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!isa<ShapedType>(input->get().getType()))
      continue;
    inputs.push_back(input->get());
    maps.push_back(op.getMatchingIndexingMap(input));
  }
  for (OpOperand &init : op.getDpsInitsMutable()) {
    inputs.push_back(init.get());
    maps.push_back(op.getMatchingIndexingMap(&init));
  }
  SmallVector<unsigned> adjointResults;
  for (auto [j, adjoint] : llvm::enumerate(resultAdjoints)) {
    if (!adjoint)
      continue;
    adjointResults.push_back(j);
    inputs.push_back(adjoint);
    maps.push_back(op.getMatchingIndexingMap(op.getDpsInitOperand(j)));
  }
  maps.push_back(operandMap);
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0, e = op.getNumLoops(); d < e; ++d)
    iterators.push_back(operandMap.isFunctionOfDim(d)
                            ? utils::IteratorType::parallel
                            : utils::IteratorType::reduction);
  Value init = tb.filled(tb.sizesOf(value), accType, 0.0);
  auto generic = linalg::GenericOp::create(
      b, TypeRange{RankedTensorType::get(type.getShape(), accType)}, inputs,
      ValueRange{init}, maps, iterators);

  SmallVector<Type> argTypes;
  for (Value input : inputs)
    argTypes.push_back(getElementTypeOrSelf(input.getType()));
  argTypes.push_back(accType);
  SmallVector<Location> argLocs(argTypes.size(), b.getLoc());
  OpBuilder nb(b.getContext());
  Block *block = nb.createBlock(&generic.getRegion(), {}, argTypes, argLocs);

  IRMapping mapping;
  unsigned next = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (isa<ShapedType>(input->get().getType()))
      mapping.map(arg, block->getArgument(next++));
    else
      mapping.map(arg, input->get());
  }
  for (OpOperand &initOperand : op.getDpsInitsMutable())
    mapping.map(op.getMatchingBlockArgument(&initOperand),
                block->getArgument(next++));
  SmallVector<Value> adjointArgs;
  for (size_t i = 0; i < adjointResults.size(); ++i)
    adjointArgs.push_back(block->getArgument(next++));
  Value acc = block->getArgument(next);

  for (Operation &inner : op.getBlock()->without_terminator())
    nb.clone(inner, mapping);

  // Forward mode from the operand's scalar.
  DenseMap<Value, Value> tangents;
  Value seed = mapping.lookup(op.getMatchingBlockArgument(&operand));
  {
    OpBuilder::InsertionGuard guard(nb);
    nb.setInsertionPointToStart(block);
    tangents[seed] = floatConstant(nb, b.getLoc(), seed.getType(), 1.0);
  }
  ScalarTangents forward(nb, tangents);
  SmallVector<Operation *> cloned;
  for (Operation &inner : *block)
    cloned.push_back(&inner);
  for (Operation *inner : cloned) {
    if (failed(forward.visit(inner))) {
      // `inner` lives in the generic's body: name it before erasing both.
      OperationName name = inner->getName();
      generic->erase();
      return op->emitError("cannot differentiate '") << name << "' in its body";
    }
  }

  nb.setInsertionPointToEnd(block);
  Value sum;
  for (auto [j, adjointArg] : llvm::zip(adjointResults, adjointArgs)) {
    Value tangent = tangents.lookup(
        mapping.lookupOrDefault(op.getBlock()->getTerminator()->getOperand(j)));
    if (!tangent)
      continue;
    Value term = arith::MulFOp::create(nb, b.getLoc(), adjointArg, tangent);
    term = convertScalar(nb, b.getLoc(), term, accType);
    sum = sum ? arith::AddFOp::create(nb, b.getLoc(), sum, term) : term;
  }
  if (!sum) {
    generic->erase();
    return Value();
  }
  linalg::YieldOp::create(
      nb, b.getLoc(),
      ValueRange{arith::AddFOp::create(nb, b.getLoc(), acc, sum).getResult()});
  return tb.convert(generic.getResult(0), elementType);
}

FailureOr<SmallVector<Value>>
mlir::moe::buildReverseMode(OpBuilder &builder, Block &block,
                            const ReverseModeRequest &request) {
  ReverseMode reverse(builder);
  return reverse.run(block, request);
}
