//===- DynamicExpandShape.cpp - Dynamic memref.expand_shape to a cast -----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-lower-dynamic-expand-shape: a memref.expand_shape that
// splits one dimension into several dynamic ones becomes the equivalent
// memref.reinterpret_cast. MLIR 22's -expand-strided-metadata crashes on
// such an op (it builds the cast from a non-integer size), and a model
// whose batch and sequence are both dynamic has one wherever [B*T, d]
// tokens are unflattened back into [B, T, d].
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOELOWERDYNAMICEXPANDSHAPE
#include "moe/Conversion/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-lower-dynamic-expand-shape"

/// `lhs * rhs` as a constant when both are, else as an `arith.muli`.
static OpFoldResult multiply(OpBuilder &b, Location loc, OpFoldResult lhs,
                             OpFoldResult rhs) {
  std::optional<int64_t> l = getConstantIntValue(lhs),
                         r = getConstantIntValue(rhs);
  if (l && r)
    return b.getIndexAttr(*l * *r);
  if (l == 1)
    return rhs;
  if (r == 1)
    return lhs;
  Value lv = getValueOrCreateConstantIndexOp(b, loc, lhs);
  Value rv = getValueOrCreateConstantIndexOp(b, loc, rhs);
  return arith::MulIOp::create(b, loc, lv, rv).getResult();
}

namespace {

/// expand_shape with a group of several dynamic sizes -> reinterpret_cast of
/// the source's base buffer: same offset, the output sizes, and in each
/// group the strides `stride[j] = stride[j + 1] * size[j + 1]` starting from
/// the source dimension's stride.
struct DynamicExpandShapeLowering
    : public OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType resultType = op.getResultType();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    bool severalDynamic = llvm::any_of(groups, [&](const auto &group) {
      return llvm::count_if(group, [&](int64_t dim) {
               return resultType.isDynamicDim(dim);
             }) > 1;
    });
    if (!severalDynamic)
      return rewriter.notifyMatchFailure(
          op, "no group has more than one dynamic size");

    Location loc = op.getLoc();
    MemRefType sourceType = op.getSrcType();
    auto [staticStrides, staticOffset] = sourceType.getStridesAndOffset();
    auto metadata =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    auto mixed = [&](int64_t value, Value dynamic) -> OpFoldResult {
      if (ShapedType::isDynamic(value))
        return dynamic;
      return rewriter.getIndexAttr(value);
    };

    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(resultType.getRank());
    for (auto [sourceDim, group] : llvm::enumerate(groups)) {
      OpFoldResult stride =
          mixed(staticStrides[sourceDim], metadata.getStrides()[sourceDim]);
      for (int64_t dim : llvm::reverse(group)) {
        strides[dim] = stride;
        stride = multiply(rewriter, loc, stride, sizes[dim]);
      }
    }
    OpFoldResult offset = mixed(staticOffset, metadata.getOffset());
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, resultType, metadata.getBaseBuffer(), offset, sizes, strides);
    return success();
  }
};

struct MoELowerDynamicExpandShapePass
    : public moe::impl::MoELowerDynamicExpandShapeBase<
          MoELowerDynamicExpandShapePass> {
  void runOnOperation() override;
};

} // namespace

void mlir::moe::populateLowerDynamicExpandShapePatterns(
    RewritePatternSet &patterns) {
  patterns.add<DynamicExpandShapeLowering>(patterns.getContext());
}

void MoELowerDynamicExpandShapePass::runOnOperation() {
  RewritePatternSet patterns(&getContext());
  populateLowerDynamicExpandShapePatterns(patterns);
  walkAndApplyPatterns(getOperation(), std::move(patterns));
}
