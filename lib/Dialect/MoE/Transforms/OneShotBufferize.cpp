//===- OneShotBufferize.cpp - Bufferize with views into outlined kinds ----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-one-shot-bufferize: upstream's One-Shot Module Bufferize,
// with the functions of -moe-outline-kinds taking memrefs of a dynamic
// offset, so that a parameter view into the packed buffer is passed as it
// is instead of being copied at every call.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEONESHOTBUFFERIZE
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {
struct MoEOneShotBufferizePass
    : public moe::impl::MoEOneShotBufferizeBase<MoEOneShotBufferizePass> {
  void runOnOperation() override;
};

/// `type`'s buffer with the strides of the identity layout and a dynamic
/// offset: what any contiguous view of it casts to.
MemRefType contiguousViewType(RankedTensorType type, Attribute memorySpace) {
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> strides(shape.size(), ShapedType::kDynamic);
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0; --dim) {
    strides[dim] = stride;
    if (stride == ShapedType::kDynamic || ShapedType::isDynamic(shape[dim]))
      stride = ShapedType::kDynamic;
    else
      stride *= shape[dim];
  }
  auto layout =
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(shape, type.getElementType(), layout, memorySpace);
}
} // namespace

void MoEOneShotBufferizePass::runOnOperation() {
  // An outlined kind only reads its arguments. Where a kind would update an
  // argument in place, a caller that still reads that value had to copy it
  // first (a full activation, at every call); the kind now writes a fresh
  // buffer, which costs no copy (its ops overwrite what they do not read).
  MLIRContext *ctx = &getContext();
  getOperation().walk([&](func::FuncOp func) {
    if (!func->hasAttr(kOutlinedKindAttrName))
      return;
    for (BlockArgument arg : func.getArguments())
      if (isa<TensorType>(arg.getType()) &&
          !func.getArgAttr(
              arg.getArgNumber(),
              bufferization::BufferizationDialect::kWritableAttrName))
        func.setArgAttr(arg.getArgNumber(),
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));
  });

  // Argument types a kind collapses across its outer dimensions ([B, T, n]
  // to [B T, n]) or reads through an identity-layout buffer (what the kernel
  // generators ask for): a contiguous view's outer stride is dynamic, so the
  // kind would copy the argument at every call; with the identity layout it
  // is a view, and only a caller whose value is not contiguous copies.
  DenseSet<std::pair<Operation *, Type>> identityArgs;
  getOperation().walk([&](func::FuncOp func) {
    if (!func->hasAttr(kOutlinedKindAttrName))
      return;
    for (BlockArgument arg : func.getArguments()) {
      auto ranked = dyn_cast<RankedTensorType>(arg.getType());
      if (!ranked || ranked.hasStaticShape())
        continue;
      for (Operation *user : arg.getUsers()) {
        auto collapse = dyn_cast<tensor::CollapseShapeOp>(user);
        auto toBuffer = dyn_cast<bufferization::ToBufferOp>(user);
        if ((collapse && collapse.getReassociationIndices()[0].size() > 1) ||
            (toBuffer &&
             cast<MemRefType>(toBuffer.getType()).getLayout().isIdentity()))
          identityArgs.insert({func.getOperation(), arg.getType()});
      }
    }
  });

  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.allowReturnAllocsFromLoops = true;
  // Arguments: identity, or for an outlined kind the contiguous view (but
  // for identityArgs).
  // Results: what the body returns, so a kind's fresh buffer comes back
  // with the identity layout. The contiguous view of a [?, ?, n] result has
  // a dynamic outer stride, and a caller that collapses it ([B, T, n] to
  // [B T, n], as every projection does) had to copy it first.
  options.inferFunctionResultLayout = true;
  options.functionArgTypeConverterFn =
      [&identityArgs](bufferization::TensorLikeType type, Attribute memorySpace,
                      func::FuncOp func,
                      const bufferization::BufferizationOptions &)
      -> bufferization::BufferLikeType {
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (ranked && func->hasAttr(kOutlinedKindAttrName) &&
        !identityArgs.contains({func.getOperation(), Type(type)}))
      return cast<bufferization::BufferLikeType>(
          contiguousViewType(ranked, memorySpace));
    return cast<bufferization::BufferLikeType>(
        bufferization::getMemRefTypeWithStaticIdentityLayout(
            cast<TensorType>(type), memorySpace));
  };
  // A view that is not contiguous is copied into a buffer of the
  // argument's type at the call, which upstream allocates with that type:
  // allocate the identity layout and cast it (an alloc takes no offset).
  options.allocationFn = [](OpBuilder &builder, Location loc, MemRefType type,
                            ValueRange dynamicSizes,
                            unsigned alignment) -> FailureOr<Value> {
    MemRefType allocType = type;
    if (!type.getLayout().isIdentity() &&
        type == contiguousViewType(RankedTensorType::get(type.getShape(),
                                                         type.getElementType()),
                                   type.getMemorySpace()))
      allocType =
          MemRefType::get(type.getShape(), type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
    IntegerAttr alignmentAttr =
        alignment ? builder.getI64IntegerAttr(alignment) : IntegerAttr();
    Value alloc = memref::AllocOp::create(builder, loc, allocType, dynamicSizes,
                                          alignmentAttr);
    if (allocType == type)
      return alloc;
    return memref::CastOp::create(builder, loc, type, alloc).getResult();
  };
  bufferization::BufferizationState state;
  if (failed(bufferization::runOneShotModuleBufferize(getOperation(), options,
                                                      state)))
    signalPassFailure();
}
