//===- BufferInsertChains.cpp - Insert chains into one buffer -------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-buffer-insert-chains: a long chain of tensor.insert_slice
// into a fresh tensor (the training step's packed gradient, one link per
// parameter) becomes writes into one memref.alloc, read back by one
// bufferization.to_tensor. One-Shot Bufferize's conflict analysis of the
// chain grows with a high power of its length; the writes need none.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

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

/// Replaces `chain` by writes into one buffer.
static void bufferChain(InsertChain &chain, RewriterBase &rewriter) {
  tensor::InsertSliceOp first = chain.links.front();
  RankedTensorType type = first.getDestType();
  Location loc = first.getLoc();
  Operation *fill =
      chain.root.fillValue ? first.getDest().getDefiningOp() : nullptr;
  rewriter.setInsertionPoint(first);
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  // Aligned as One-Shot Bufferize aligns the buffers it allocates.
  Value buffer = memref::AllocOp::create(rewriter, loc, bufferType,
                                         chain.root.empty.getDynamicSizes(),
                                         rewriter.getI64IntegerAttr(64));
  if (chain.root.fillValue)
    linalg::FillOp::create(rewriter, loc, ValueRange{chain.root.fillValue},
                           ValueRange{buffer});
  for (tensor::InsertSliceOp link : chain.links) {
    rewriter.setInsertionPoint(link);
    Value view = memref::SubViewOp::create(
        rewriter, link.getLoc(), buffer, link.getMixedOffsets(),
        link.getMixedSizes(), link.getMixedStrides());
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
