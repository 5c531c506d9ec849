//===- BufferInsertChains.cpp - Insert chains into one buffer -------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-buffer-insert-chains: a long chain of tensor.insert_slice
// into a fresh tensor (the training step's packed gradient, one link per
// parameter) becomes writes into one memref.alloc, read back by one
// bufferization.to_tensor. One-Shot Bufferize's conflict analysis of the
// chain grows with a high power of its length; the writes need none. A
// buffer of static shape is allocated as bytes, so that each link writing
// one contiguous run gets a plain (identity-layout) memref.view: a copy
// into it is then one memcpy, on the GPU too (upstream's gpu.memcpy
// lowering drops a destination's offset, but a view's shift is in its
// pointer).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEBUFFERINSERTCHAINS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-buffer-insert-chains"

namespace {
struct MoEBufferInsertChainsPass
    : public moe::impl::MoEBufferInsertChainsBase<MoEBufferInsertChainsPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// A fresh tensor a chain can start from: its tensor.empty and, for a fill
/// of one, the fill value.
struct ChainRoot {
  tensor::EmptyOp empty;
  Value fillValue;
};

/// A chain: its root and its links in order.
struct InsertChain {
  ChainRoot root;
  SmallVector<tensor::InsertSliceOp> links;
};
} // namespace

/// The root `value` is, when it is a fresh tensor.
static std::optional<ChainRoot> freshRoot(Value value) {
  if (auto empty = value.getDefiningOp<tensor::EmptyOp>())
    return ChainRoot{empty, Value()};
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics())
    return std::nullopt;
  auto empty = fill.getOutputs().front().getDefiningOp<tensor::EmptyOp>();
  if (!empty)
    return std::nullopt;
  return ChainRoot{empty, fill.getInputs().front()};
}

/// Whether `insert` can be a link: it writes a box of its destination's
/// rank (no rank reduction, which a plain subview cannot take) into a
/// tensor without an encoding.
static bool canLink(tensor::InsertSliceOp insert) {
  RankedTensorType destType = insert.getDestType();
  return !destType.getEncoding() &&
         insert.getSourceType().getRank() == destType.getRank();
}

/// The chain that starts at `first`, whose destination is a fresh root:
/// `first` and each following insert that is the only user of the one
/// before it, in the same block.
static InsertChain collectChain(tensor::InsertSliceOp first, ChainRoot root) {
  InsertChain chain{root, {first}};
  while (true) {
    Value current = chain.links.back().getResult();
    if (!current.hasOneUse())
      break;
    auto next = dyn_cast<tensor::InsertSliceOp>(*current.getUsers().begin());
    if (!next || next.getDest() != current ||
        next->getBlock() != first->getBlock() || !canLink(next))
      break;
    chain.links.push_back(next);
  }
  return chain;
}

/// The first element `link` writes, in row-major order of `type`, when it
/// writes one contiguous run of it: static offsets and sizes, unit
/// strides, a box that spans whole rows of every dimension after its first
/// one of more than one element.
static std::optional<int64_t> contiguousRunStart(tensor::InsertSliceOp link,
                                                 RankedTensorType type) {
  ArrayRef<int64_t> offsets = link.getStaticOffsets();
  ArrayRef<int64_t> sizes = link.getStaticSizes();
  if (!link.hasUnitStride() || ShapedType::isDynamicShape(sizes) ||
      llvm::any_of(offsets, ShapedType::isDynamic) ||
      !link.getSourceType().hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  bool spanning = false;
  int64_t start = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (spanning && (offsets[i] != 0 || sizes[i] != shape[i]))
      return std::nullopt;
    if (sizes[i] != 1)
      spanning = true;
    start = start * shape[i] + offsets[i];
  }
  return start;
}

/// Replaces `chain` by writes into one buffer.
static void bufferChain(InsertChain &chain, RewriterBase &rewriter) {
  tensor::InsertSliceOp first = chain.links.front();
  RankedTensorType type = first.getDestType();
  Location loc = first.getLoc();
  Operation *fill =
      chain.root.fillValue ? first.getDest().getDefiningOp() : nullptr;
  rewriter.setInsertionPoint(first);
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  // Aligned as One-Shot Bufferize aligns the buffers it allocates. A static
  // buffer of whole bytes is allocated as bytes and seen through views.
  // (Index elements have no width until lowering: they keep the subviews.)
  Type elementType = type.getElementType();
  unsigned bits =
      elementType.isIntOrFloat() ? elementType.getIntOrFloatBitWidth() : 0;
  bool asBytes = type.hasStaticShape() && bits % 8 == 0 && bits > 0;
  int64_t elementBytes = bits / 8;
  Value bytes;
  auto viewOfBytes = [&](Location at, int64_t shift,
                         MemRefType viewType) -> Value {
    Value offset = arith::ConstantIndexOp::create(rewriter, at, shift);
    return memref::ViewOp::create(rewriter, at, viewType, bytes, offset,
                                  ValueRange{});
  };
  Value buffer;
  if (asBytes) {
    auto byteType = MemRefType::get({type.getNumElements() * elementBytes},
                                    rewriter.getI8Type());
    bytes = memref::AllocOp::create(rewriter, loc, byteType,
                                    rewriter.getI64IntegerAttr(64));
    buffer = viewOfBytes(loc, 0, bufferType);
  } else {
    buffer = memref::AllocOp::create(rewriter, loc, bufferType,
                                     chain.root.empty.getDynamicSizes(),
                                     rewriter.getI64IntegerAttr(64));
  }
  if (chain.root.fillValue)
    linalg::FillOp::create(rewriter, loc, ValueRange{chain.root.fillValue},
                           ValueRange{buffer});
  for (tensor::InsertSliceOp link : chain.links) {
    rewriter.setInsertionPoint(link);
    std::optional<int64_t> run =
        asBytes ? contiguousRunStart(link, type) : std::nullopt;
    Value view =
        run ? viewOfBytes(link.getLoc(), *run * elementBytes,
                          MemRefType::get(link.getSourceType().getShape(),
                                          type.getElementType()))
            : memref::SubViewOp::create(
                  rewriter, link.getLoc(), buffer, link.getMixedOffsets(),
                  link.getMixedSizes(), link.getMixedStrides())
                  .getResult();
    auto write = bufferization::MaterializeInDestinationOp::create(
        rewriter, link.getLoc(), link.getSource(), view);
    write.setWritable(true);
  }
  tensor::InsertSliceOp last = chain.links.back();
  rewriter.setInsertionPoint(last);
  Value whole = bufferization::ToTensorOp::create(rewriter, last.getLoc(), type,
                                                  buffer, /*restrict=*/true,
                                                  /*writable=*/true);
  rewriter.replaceAllUsesWith(last.getResult(), whole);
  // Each link's only user is the next one: erase from the end. A root
  // nothing else reads goes too, or it would still be allocated and filled.
  for (tensor::InsertSliceOp link : llvm::reverse(chain.links))
    rewriter.eraseOp(link);
  if (fill && fill->use_empty())
    rewriter.eraseOp(fill);
  if (chain.root.empty->use_empty())
    rewriter.eraseOp(chain.root.empty);
}

void MoEBufferInsertChainsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  SmallVector<InsertChain> chains;
  for (Operation &op : func.getBody().front()) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(op);
    if (!insert || !canLink(insert))
      continue;
    std::optional<ChainRoot> root = freshRoot(insert.getDest());
    if (!root)
      continue;
    InsertChain chain = collectChain(insert, *root);
    if (static_cast<int64_t>(chain.links.size()) >= minLinks)
      chains.push_back(std::move(chain));
  }
  IRRewriter rewriter(&getContext());
  for (InsertChain &chain : chains)
    bufferChain(chain, rewriter);
}
