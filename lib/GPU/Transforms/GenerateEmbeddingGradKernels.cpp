//===- GenerateEmbeddingGradKernels.cpp - moe.embedding_grad on the GPU ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-embedding-grad-kernels, the GPU back end's kernel
// for the embedding table's gradient: one block per table row, which walks
// the tokens 256 at a time, finds those of its id by a warp ballot and adds
// their gradient rows in token order. Without it the row sums are a host
// loop with one launch per token (32,768 launches per kimi-tiny step at
// B = 16, T = 2048).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEEMBEDDINGGRADKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Threads of a block, and the tokens it looks at per step.
constexpr int64_t kThreads = 256;
constexpr int64_t kWarps = kThreads / 32;
/// Widths up to this many columns keep a row's sums in registers (at most
/// eight per thread).
constexpr int64_t kMaxWidth = 8 * kThreads;

/// Why `op` stays with the generic lowering, or "" when the kernel takes it.
std::string declineReason(EmbeddingGradOp op) {
  auto grad = cast<RankedTensorType>(op.getGrad().getType());
  auto tokens = cast<RankedTensorType>(op.getTokens().getType());
  auto table = cast<RankedTensorType>(op.getTable().getType());
  int64_t width = table.getDimSize(1);
  if (!grad.getElementType().isF32() || !table.getElementType().isF32())
    return "the gradient or the table is not f32";
  if (tokens.getRank() == 0)
    return "a single token";
  if (ShapedType::isDynamic(width) || width > kMaxWidth)
    return llvm::formatv("the table width is not static and at most {0}",
                         kMaxWidth)
        .str();
  return "";
}

/// The kernel: block v sums the gradient rows of the tokens whose id is v,
/// in token order. Arguments: ids [N], gradient rows [N, width], table
/// gradient [V, width].
gpu::GPUFuncOp buildKernel(gpu::GPUModuleOp module, Location loc,
                           StringRef name, TypeRange argTypes, int64_t width) {
  gpu::GPUFuncOp func = createKernel(module, loc, name, argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Type i32 = b.getI32Type();
  Value ids = func.getArgument(0), rows = func.getArgument(1),
        out = func.getArgument(2);
  Type idType = cast<MemRefType>(ids.getType()).getElementType();

  auto [tid, warp] = e.threadAndWarp();
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value rowId = arith::IndexCastOp::create(b, idType, row);
  Value count = memref::DimOp::create(b, ids, 0);
  Value masks = e.sharedView(e.dynamicSharedMemory(), 0, kWarps, i32);
  Value allLanes = arith::ConstantIntOp::create(b, i32, -1);
  Value noLane = arith::ConstantIntOp::create(b, i32, 0);
  Value oneBit = arith::ConstantIntOp::create(b, i32, 1);

  // Column d = tid + 256 j of the row, j < perThread.
  int64_t perThread = (width + kThreads - 1) / kThreads;
  SmallVector<Value> columns;
  for (int64_t j = 0; j < perThread; ++j)
    columns.push_back(e.add(tid, j * kThreads));
  auto columnInRange = [&](int64_t j) {
    return e.ult(columns[j], e.idx(width));
  };

  SmallVector<Value> zeros(perThread, e.f32(0.0));
  SmallVector<Value> sums = e.forLoop(
      e.idx(0), count, kThreads, zeros, [&](Value n0, ValueRange acc) {
        // Which of the step's 256 tokens have this row's id: a ballot per
        // warp, published in shared memory.
        Value n = e.add(n0, tid);
        Value inRange = e.ult(n, count);
        Value id = e.load(ids, {e.select(inRange, n, e.idx(0))});
        Value match = arith::AndIOp::create(
            b, inRange,
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, id, rowId));
        Value mask = NVVM::VoteSyncOp::create(b, i32, allLanes, match,
                                              NVVM::VoteSyncKind::ballot);
        e.ifThen(e.eq(e.lane, e.idx(0)), [&] { e.store(mask, masks, {warp}); });
        e.barrier();
        // Every thread adds the matching rows, warp by warp and lane by
        // lane: token order.
        SmallVector<Value> next = e.forLoop(
            e.idx(0), e.idx(kWarps), 1, acc, [&](Value w, ValueRange wAcc) {
              SmallVector<Value> carried = {e.load(masks, {w})};
              carried.append(wAcc.begin(), wAcc.end());
              SmallVector<Type> types;
              for (Value v : carried)
                types.push_back(v.getType());
              auto loop = scf::WhileOp::create(b, types, carried);
              Block *before =
                  b.createBlock(&loop.getBefore(), {}, types,
                                SmallVector<Location>(types.size(), loc));
              b.setInsertionPointToEnd(before);
              Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                                before->getArgument(0), noLane);
              scf::ConditionOp::create(b, any, before->getArguments());
              Block *after =
                  b.createBlock(&loop.getAfter(), {}, types,
                                SmallVector<Location>(types.size(), loc));
              b.setInsertionPointToEnd(after);
              Value bits = after->getArgument(0);
              Value lane = LLVM::CountTrailingZerosOp::create(
                  b, i32, bits, /*is_zero_poison=*/true);
              Value rest = arith::AndIOp::create(
                  b, bits, arith::SubIOp::create(b, bits, oneBit));
              Value token = e.add(
                  e.add(n0, e.mul(w, 32)),
                  arith::IndexCastUIOp::create(b, b.getIndexType(), lane));
              SmallVector<Value> yielded = {rest};
              for (int64_t j = 0; j < perThread; ++j) {
                Value sum = after->getArgument(1 + j);
                if (width % kThreads == 0) {
                  yielded.push_back(
                      e.fadd(sum, e.load(rows, {token, columns[j]})));
                  continue;
                }
                Value valid = columnInRange(j);
                Value column = e.select(valid, columns[j], e.idx(0));
                Value term = e.load(rows, {token, column});
                yielded.push_back(e.select(valid, e.fadd(sum, term), sum));
              }
              scf::YieldOp::create(b, yielded);
              b.setInsertionPointAfter(loop);
              return SmallVector<Value>(loop.getResults().drop_front());
            });
        // The masks are read before the next step overwrites them.
        e.barrier();
        return next;
      });
  for (int64_t j = 0; j < perThread; ++j) {
    if (width % kThreads == 0) {
      e.store(sums[j], out, {row, columns[j]});
      continue;
    }
    e.ifThen(columnInRange(j),
             [&] { e.store(sums[j], out, {row, columns[j]}); });
  }
  gpu::ReturnOp::create(b);
  return func;
}

struct MoEGenerateEmbeddingGradKernelsPass
    : public moe::impl::MoEGenerateEmbeddingGradKernelsBase<
          MoEGenerateEmbeddingGradKernelsPass> {
  void runOnOperation() override;
};

} // namespace

void MoEGenerateEmbeddingGradKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<EmbeddingGradOp> ops;
  module.walk([&](EmbeddingGradOp op) {
    std::string reason = declineReason(op);
    if (!reason.empty()) {
      op.emitRemark() << "embedding_grad left to the generic lowering: "
                      << reason;
      return;
    }
    ops.push_back(op);
  });
  if (ops.empty())
    return;
  gpu::GPUModuleOp kernels =
      createKernelModule(module, "moe_embedding_grad_kernels");
  for (auto [n, op] : llvm::enumerate(ops)) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    DeviceEmitter e(b);
    auto gradType = cast<RankedTensorType>(op.getGrad().getType());
    auto tokensType = cast<RankedTensorType>(op.getTokens().getType());
    auto tableType = cast<RankedTensorType>(op.getTable().getType());
    int64_t width = tableType.getDimSize(1);

    // ids -> [N], gradient -> [N, width].
    Value tokens = op.getTokens(), grad = op.getGrad();
    if (tokensType.getRank() != 1) {
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, tokensType.getRank()));
      tokens = tensor::CollapseShapeOp::create(
          b, tokens, SmallVector<ReassociationIndices>{all});
      ReassociationIndices leading =
          llvm::to_vector(llvm::seq<int64_t>(0, gradType.getRank() - 1));
      grad = tensor::CollapseShapeOp::create(
          b, grad,
          SmallVector<ReassociationIndices>{leading, {gradType.getRank() - 1}});
    }
    Value ids = readOnlyBuffer(b, tokens);
    Value rows = readOnlyBuffer(b, grad);
    Value vocab = tensor::DimOp::create(b, op.getTable(), 0);
    Value out = memref::AllocOp::create(
        b, MemRefType::get(tableType.getShape(), b.getF32Type()),
        dynamicSizes(tableType, {vocab, e.idx(width)}));

    SmallVector<Value> args = {ids, rows, out};
    SmallVector<Type> types;
    for (Value v : args)
      types.push_back(v.getType());
    gpu::GPUFuncOp kernel =
        buildKernel(kernels, op.getLoc(),
                    llvm::formatv("embedding_grad{0}", n).str(), types, width);
    auto launch = [&] {
      Value one = e.idx(1);
      gpu::LaunchFuncOp::create(
          b, kernel, gpu::KernelDim3{vocab, one, one},
          gpu::KernelDim3{e.idx(kThreads), one, one},
          arith::ConstantIntOp::create(b, kWarps * 4, 32).getResult(), args);
    };
    // A grid of no blocks is a launch error: an empty table of dynamic size
    // launches nothing.
    if (ShapedType::isDynamic(tableType.getDimSize(0)))
      e.ifThen(e.ult(e.idx(0), vocab), launch);
    else if (tableType.getDimSize(0) > 0)
      launch();
    Value result = bufferization::ToTensorOp::create(
        b, tableType, out, /*restrict=*/true, /*writable=*/true);
    op.getTableGrad().replaceAllUsesWith(result);
    op.erase();
  }
}
