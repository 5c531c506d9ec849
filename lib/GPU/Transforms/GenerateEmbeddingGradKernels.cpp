//===- GenerateEmbeddingGradKernels.cpp - moe.embedding_grad on the GPU ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-embedding-grad-kernels, the GPU back end's kernel
// for the embedding table's gradient: one block per table row and segment
// of the tokens, which walks its segment 256 tokens at a time, finds those
// of its id by a warp ballot and adds their gradient rows in token order;
// with several segments a second kernel adds the segments' sums in segment
// order. Without it the row sums are a host loop with one launch per token
// (32,768 launches per kimi-tiny step at B = 16, T = 2048). With one
// segment, the row of the most frequent id is one long chain of dependent
// additions (a space is about a sixth of kimi-tiny's bytes: 1.9 ms a step).
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
/// Tokens per segment at least, segments at most, and the most bytes of
/// the segments' partial tables.
constexpr int64_t kSegmentTokens = 2048;
constexpr int64_t kMaxSegments = 32;
constexpr int64_t kPartialBytes = int64_t(64) << 20;

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

/// The kernel: block (v, s) sums the gradient rows of the tokens of
/// segment s whose id is v, in token order. Arguments: ids [N], gradient
/// rows [N, width], table gradient [V, width] (written when there is one
/// segment), the segments' sums [S V, width] (written otherwise).
gpu::GPUFuncOp buildKernel(gpu::GPUModuleOp module, Location loc,
                           StringRef name, TypeRange argTypes, int64_t width) {
  gpu::GPUFuncOp func = createKernel(module, loc, name, argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Type i32 = b.getI32Type();
  Value ids = func.getArgument(0), rows = func.getArgument(1),
        out = func.getArgument(2), partial = func.getArgument(3);
  Type idType = cast<MemRefType>(ids.getType()).getElementType();

  auto [tid, warp] = e.threadAndWarp();
  Value row = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value segment = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value vocab = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value segments = gpu::GridDimOp::create(b, gpu::Dimension::y);
  Value rowId = arith::IndexCastOp::create(b, idType, row);
  Value tokens = memref::DimOp::create(b, ids, 0);
  // Segments of whole 256-token steps: [first, end).
  Value perSegment =
      e.mul(e.div(e.add(arith::CeilDivUIOp::create(b, tokens, segments),
                        kThreads - 1),
                  kThreads),
            kThreads);
  Value first = arith::MinUIOp::create(b, e.mul(segment, perSegment), tokens);
  Value end = arith::MinUIOp::create(b, e.add(first, perSegment), tokens);
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
  SmallVector<Value> sums =
      e.forLoop(first, end, kThreads, zeros, [&](Value n0, ValueRange acc) {
        // Which of the step's 256 tokens have this row's id: a ballot per
        // warp, published in shared memory.
        Value n = e.add(n0, tid);
        Value inRange = e.ult(n, end);
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
  auto storeSums = [&](Value target, Value targetRow) {
    for (int64_t j = 0; j < perThread; ++j) {
      if (width % kThreads == 0) {
        e.store(sums[j], target, {targetRow, columns[j]});
        continue;
      }
      e.ifThen(columnInRange(j),
               [&] { e.store(sums[j], target, {targetRow, columns[j]}); });
    }
  };
  Value single = e.eq(segments, e.idx(1));
  e.ifThen(single, [&] { storeSums(out, row); });
  e.ifThen(
      arith::XOrIOp::create(b, single, arith::ConstantIntOp::create(b, 1, 1)),
      [&] { storeSums(partial, e.add(e.mul(segment, vocab), row)); });
  gpu::ReturnOp::create(b);
  return func;
}

/// The second kernel: element i of the table gradient [V, width] is the sum
/// of element i of the S segments' tables [S V, width], in segment order.
/// Arguments: the segments' sums, the table gradient, S.
gpu::GPUFuncOp buildCombineKernel(gpu::GPUModuleOp module, Location loc,
                                  StringRef name, TypeRange argTypes,
                                  int64_t width) {
  gpu::GPUFuncOp func = createKernel(module, loc, name, argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &func.getBody().front());
  DeviceEmitter e(b);
  Value partial = func.getArgument(0), out = func.getArgument(1),
        segments = func.getArgument(2);
  Value vocab = memref::DimOp::create(b, out, 0);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value i = e.add(e.mul(block, kThreads), tid);
  e.ifThen(e.ult(i, e.mul(vocab, width)), [&] {
    Value row = e.div(i, width), column = e.rem(i, width);
    SmallVector<Value> sum = e.forLoop(
        e.idx(0), segments, 1, {e.f32(0.0)}, [&](Value s, ValueRange acc) {
          Value term = e.load(partial, {e.add(e.mul(s, vocab), row), column});
          return SmallVector<Value>{e.fadd(acc[0], term)};
        });
    e.store(sum[0], out, {row, column});
  });
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

    // Segments: at least kSegmentTokens tokens each, at most
    // kMaxSegments, and partial tables of at most kPartialBytes in all.
    Value count = memref::DimOp::create(b, ids, 0);
    Value tableBytes =
        arith::MaxUIOp::create(b, e.mul(vocab, width * 4), e.idx(1));
    Value bySize = arith::DivUIOp::create(b, e.idx(kPartialBytes), tableBytes);
    Value byTokens = e.div(count, kSegmentTokens);
    Value segments = arith::MaxUIOp::create(
        b,
        arith::MinUIOp::create(b, arith::MinUIOp::create(b, bySize, byTokens),
                               e.idx(kMaxSegments)),
        e.idx(1));
    // One row when there is one segment (the kernel writes `out` then).
    Value partialRows =
        e.select(e.eq(segments, e.idx(1)), e.idx(1), e.mul(segments, vocab));
    Value partial = memref::AllocOp::create(
        b, MemRefType::get({ShapedType::kDynamic, width}, b.getF32Type()),
        ValueRange{partialRows});

    SmallVector<Value> args = {ids, rows, out, partial};
    SmallVector<Type> types;
    for (Value v : args)
      types.push_back(v.getType());
    gpu::GPUFuncOp kernel =
        buildKernel(kernels, op.getLoc(),
                    llvm::formatv("embedding_grad{0}", n).str(), types, width);
    SmallVector<Value> combineArgs = {partial, out, segments};
    SmallVector<Type> combineTypes;
    for (Value v : combineArgs)
      combineTypes.push_back(v.getType());
    gpu::GPUFuncOp combine =
        buildCombineKernel(kernels, op.getLoc(),
                           llvm::formatv("embedding_grad_combine{0}", n).str(),
                           combineTypes, width);
    auto launch = [&] {
      Value one = e.idx(1);
      gpu::LaunchFuncOp::create(
          b, kernel, gpu::KernelDim3{vocab, segments, one},
          gpu::KernelDim3{e.idx(kThreads), one, one},
          arith::ConstantIntOp::create(b, kWarps * 4, 32).getResult(), args);
      e.ifThen(e.ult(e.idx(1), segments), [&] {
        Value blocks =
            e.div(e.add(e.mul(vocab, width), kThreads - 1), kThreads);
        gpu::LaunchFuncOp::create(b, combine, gpu::KernelDim3{blocks, one, one},
                                  gpu::KernelDim3{e.idx(kThreads), one, one},
                                  /*dynamicSharedMemorySize=*/Value(),
                                  combineArgs);
      });
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
