//===- CollectivesToRuntime.cpp - Collectives to distributed-runtime calls ===//
//
// Part of the moe-mlir project.
//
// Implements -moe-collectives-to-runtime: the buffer forms of the
// collectives (moe.all_reduce_in_place, moe.all_gather_into) become calls
// of the distributed runtime (lib/DistRuntime/DistRuntime.h), which runs
// them with Gloo.
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOECOLLECTIVESTORUNTIME
#include "moe/Conversion/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-collectives-to-runtime"

/// The runtime's entry points (all arguments `index`).
static constexpr llvm::StringLiteral kAllReduceName = "moe_dist_all_reduce_sum";
static constexpr llvm::StringLiteral kAllGatherName = "moe_dist_all_gather";
static constexpr llvm::StringLiteral kAllToAllName = "moe_dist_all_to_all";
static constexpr llvm::StringLiteral kAllToAllVName = "moe_dist_all_to_all_v";
static constexpr llvm::StringLiteral kGroupRankName = "moe_dist_group_rank";
/// The runtime's group argument: 1 is this rank's expert-parallel group.
static constexpr int64_t kExpertGroup = 1;

namespace {

/// The runtime's code of an element type (DistRuntime.h).
int64_t dtypeCode(Type type) {
  if (type.isF32())
    return 0;
  if (type.isInteger(64))
    return 1;
  assert(type.isF64() && "the op verifiers allow f32, i64 and f64");
  return 2;
}

/// The `func.func private @name(index x numArgs) [-> index]` declaration,
/// created in `module` the first time.
FailureOr<func::FuncOp> getOrCreateDecl(ModuleOp module, StringRef name,
                                        unsigned numArgs,
                                        bool returnsIndex = false) {
  Builder b(module.getContext());
  SmallVector<Type> inputs(numArgs, b.getIndexType());
  SmallVector<Type> results;
  if (returnsIndex)
    results.push_back(b.getIndexType());
  FunctionType type = b.getFunctionType(inputs, results);
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return existing->emitOpError("uses the symbol @")
             << name
             << ", which -moe-collectives-to-runtime reserves for the "
                "distributed runtime";
    return func;
  }
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(builder, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// The address of the first element of the contiguous `buffer`, as an index.
Value startAddress(RewriterBase &rewriter, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  auto metadata =
      memref::ExtractStridedMetadataOp::create(rewriter, loc, buffer);
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
  Value bytes = arith::ConstantIndexOp::create(
      rewriter, loc, type.getElementTypeBitWidth() / 8);
  Value offset =
      arith::MulIOp::create(rewriter, loc, metadata.getOffset(), bytes);
  return arith::AddIOp::create(rewriter, loc, base, offset);
}

/// The number of elements of `buffer`.
Value elementCount(RewriterBase &rewriter, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value count = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    count = arith::MulIOp::create(
        rewriter, loc, count, memref::DimOp::create(rewriter, loc, buffer, i));
  return count;
}

/// The number of bytes of `buffer`, one op at a time (argument evaluation
/// order is unspecified, and the IR should not depend on the compiler).
Value byteSize(RewriterBase &rewriter, Location loc, Value buffer) {
  Value count = elementCount(rewriter, loc, buffer);
  Value width = arith::ConstantIndexOp::create(
      rewriter, loc,
      cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8);
  return arith::MulIOp::create(rewriter, loc, count, width);
}

/// The bytes of one row (all dimensions but the first) of `buffer`.
Value rowBytes(RewriterBase &rewriter, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value bytes = arith::ConstantIndexOp::create(
      rewriter, loc, type.getElementTypeBitWidth() / 8);
  for (int64_t i = 1; i < type.getRank(); ++i) {
    Value size = memref::DimOp::create(rewriter, loc, buffer, i);
    bytes = arith::MulIOp::create(rewriter, loc, bytes, size);
  }
  return bytes;
}

/// A new stack buffer of the byte counts `rows[q] * bytes`, one per rank.
Value byteCounts(RewriterBase &rewriter, Location loc, Value rows, Value bytes,
                 int64_t ranks) {
  Type i64 = rewriter.getI64Type();
  auto type = MemRefType::get({ranks}, i64);
  Value counts = memref::AllocaOp::create(rewriter, loc, type);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value end = arith::ConstantIndexOp::create(rewriter, loc, ranks);
  Value width = arith::IndexCastOp::create(rewriter, loc, i64, bytes);
  scf::ForOp::create(
      rewriter, loc, zero, end, one, ValueRange{},
      [&](OpBuilder &b, Location l, Value q, ValueRange) {
        Value count = memref::LoadOp::create(b, l, rows, ValueRange{q});
        Value total = arith::MulIOp::create(b, l, count, width);
        memref::StoreOp::create(b, l, total, counts, ValueRange{q});
        scf::YieldOp::create(b, l);
      });
  return counts;
}

struct MoECollectivesToRuntimePass
    : public moe::impl::MoECollectivesToRuntimeBase<
          MoECollectivesToRuntimePass> {
  void runOnOperation() override;
};

} // namespace

void MoECollectivesToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<Operation *> collectives;
  module.walk([&](Operation *op) {
    if (isa<AllReduceInPlaceOp, AllGatherIntoOp, AllToAllIntoOp,
            AllToAllVIntoOp, ExpertRankOp>(op))
      collectives.push_back(op);
  });
  if (collectives.empty())
    return;
  IRRewriter rewriter(&getContext());
  for (Operation *op : collectives) {
    Location loc = op->getLoc();
    rewriter.setInsertionPoint(op);
    if (auto reduce = dyn_cast<AllReduceInPlaceOp>(op)) {
      FailureOr<func::FuncOp> callee =
          getOrCreateDecl(module, kAllReduceName, 3);
      if (failed(callee))
        return signalPassFailure();
      Value buffer = reduce.getBuffer();
      Value dtype = arith::ConstantIndexOp::create(
          rewriter, loc,
          dtypeCode(reduce.getBuffer().getType().getElementType()));
      func::CallOp::create(rewriter, loc, *callee,
                           ValueRange{startAddress(rewriter, loc, buffer),
                                      elementCount(rewriter, loc, buffer),
                                      dtype});
    } else if (auto rank = dyn_cast<ExpertRankOp>(op)) {
      FailureOr<func::FuncOp> callee =
          getOrCreateDecl(module, kGroupRankName, 1, /*returnsIndex=*/true);
      if (failed(callee))
        return signalPassFailure();
      Value group = arith::ConstantIndexOp::create(rewriter, loc, kExpertGroup);
      auto call =
          func::CallOp::create(rewriter, loc, *callee, ValueRange{group});
      rewriter.replaceOp(rank, call.getResults());
      continue;
    } else if (auto exchange = dyn_cast<AllToAllIntoOp>(op)) {
      FailureOr<func::FuncOp> callee =
          getOrCreateDecl(module, kAllToAllName, 4);
      if (failed(callee))
        return signalPassFailure();
      Value input = exchange.getInput();
      Value bytes = byteSize(rewriter, loc, input);
      Value ranks =
          arith::ConstantIndexOp::create(rewriter, loc, exchange.getRanks());
      Value perRank = arith::DivUIOp::create(rewriter, loc, bytes, ranks);
      Value group = arith::ConstantIndexOp::create(rewriter, loc, kExpertGroup);
      func::CallOp::create(
          rewriter, loc, *callee,
          ValueRange{startAddress(rewriter, loc, input),
                     startAddress(rewriter, loc, exchange.getOutput()), perRank,
                     group});
    } else if (auto exchange = dyn_cast<AllToAllVIntoOp>(op)) {
      FailureOr<func::FuncOp> callee =
          getOrCreateDecl(module, kAllToAllVName, 5);
      if (failed(callee))
        return signalPassFailure();
      int64_t ranks = exchange.getRanks();
      Value bytes = rowBytes(rewriter, loc, exchange.getInput());
      Value send =
          byteCounts(rewriter, loc, exchange.getSendRows(), bytes, ranks);
      Value recv =
          byteCounts(rewriter, loc, exchange.getRecvRows(), bytes, ranks);
      Value group = arith::ConstantIndexOp::create(rewriter, loc, kExpertGroup);
      func::CallOp::create(
          rewriter, loc, *callee,
          ValueRange{startAddress(rewriter, loc, exchange.getInput()),
                     startAddress(rewriter, loc, send),
                     startAddress(rewriter, loc, exchange.getOutput()),
                     startAddress(rewriter, loc, recv), group});
    } else {
      auto gather = cast<AllGatherIntoOp>(op);
      FailureOr<func::FuncOp> callee =
          getOrCreateDecl(module, kAllGatherName, 3);
      if (failed(callee))
        return signalPassFailure();
      Value input = gather.getInput();
      Value bytes = byteSize(rewriter, loc, input);
      func::CallOp::create(
          rewriter, loc, *callee,
          ValueRange{startAddress(rewriter, loc, input),
                     startAddress(rewriter, loc, gather.getOutput()), bytes});
    }
    rewriter.eraseOp(op);
  }
}
