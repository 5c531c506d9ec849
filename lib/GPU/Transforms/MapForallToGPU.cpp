//===- MapForallToGPU.cpp - scf.forall -> gpu.launch, threads included ----===//
//
// Part of the moe-mlir project.
//
// Implements -moe-map-forall-to-gpu: each outermost scf.forall of bufferized
// tiled IR becomes a gpu.launch. A tile program (a body with structured
// ops) runs one block per iteration with every structured op spread over
// the block's threads and its tiles in shared memory; an element program (a
// scalar body) runs one thread per iteration.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "BarrierElision.h"
#include "ColumnReduction.h"
#include "TileContraction.h"
#include "TileMemoryPlan.h"
#include "UnrolledElementLoop.h"
#include "WarpReduction.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEMAPFORALLTOGPU
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

/// Elements per thread and trip of an element-wise host op's kernel.
constexpr int64_t kElementsPerThread = 4;

/// Replaces `par` (no reductions) by `scf.for %l = start to N step step`
/// over its linearized iteration space: with the thread index and the block
/// size, the block's threads share the iterations; with 0 and 1, one thread
/// runs them all.
LogicalResult parallelToStridedLoop(RewriterBase &rewriter, scf::ParallelOp par,
                                    Value start, Value step) {
  if (!par.getInitVals().empty())
    return par.emitOpError("with reductions cannot be spread over threads");
  Location loc = par.getLoc();
  rewriter.setInsertionPoint(par);
  SmallVector<Value> counts;
  for (auto [lb, ub, s] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep()))
    counts.push_back(tripCount(rewriter, loc, lb, ub, s));
  Value total = product(rewriter, loc, counts);
  auto loop = scf::ForOp::create(rewriter, loc, start, total, step);
  rewriter.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> lbs(par.getLowerBound()), steps(par.getStep());
  SmallVector<Value> ivs =
      delinearize(rewriter, loc, loop.getInductionVar(), counts, lbs, steps);
  Block *body = par.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, loop.getBody()->getTerminator(), ivs);
  rewriter.eraseOp(par);
  return success();
}

/// In a reduction loop that reads and writes one element of a buffer
/// (`acc[i, j] += ...` of a lowered contraction), keeps that element in a
/// register: one load before the loop, one store after it. Applies while
/// such a pair exists: the element's indices are loop-invariant, the load
/// comes first, nothing else in the loop touches that buffer value, and the
/// loop's other writes are such stores too.
scf::ForOp promoteAccumulators(RewriterBase &rewriter, scf::ForOp loop) {
  while (true) {
    memref::LoadOp load;
    memref::StoreOp store;
    // Every write of the loop must be such a store, one per buffer value
    // (several accumulators: a loss's running sum and its picked logit).
    bool otherWrites = false;
    loop.getBody()->walk([&](Operation *op) {
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (effects && effects.hasEffect<MemoryEffects::Write>() &&
          !(isa<memref::StoreOp>(op) && op->getBlock() == loop.getBody()))
        otherWrites = true;
    });
    if (otherWrites)
      return loop;
    for (Operation &op : loop.getBody()->without_terminator()) {
      auto candidate = dyn_cast<memref::StoreOp>(&op);
      if (!candidate)
        continue;
      Value mem = candidate.getMemRef();
      if (!llvm::all_of(candidate.getIndices(), [&](Value v) {
            return loop.isDefinedOutsideOfLoop(v);
          }))
        continue;
      memref::LoadOp reader;
      int64_t uses = 0;
      loop.getBody()->walk([&](Operation *user) {
        if (!llvm::is_contained(user->getOperands(), mem))
          return;
        ++uses;
        if (auto l = dyn_cast<memref::LoadOp>(user))
          if (l->getBlock() == loop.getBody() &&
              l.getIndices() == candidate.getIndices() &&
              l->isBeforeInBlock(candidate))
            reader = l;
      });
      if (reader && uses == 2 && loop.isDefinedOutsideOfLoop(mem)) {
        load = reader;
        store = candidate;
        break;
      }
    }
    if (!store)
      return loop;

    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);
    Value init = memref::LoadOp::create(rewriter, loc, store.getMemRef(),
                                        store.getIndices());
    SmallVector<Value> inits(loop.getInitArgs());
    inits.push_back(init);
    auto promoted =
        scf::ForOp::create(rewriter, loc, loop.getLowerBound(),
                           loop.getUpperBound(), loop.getStep(), inits);
    Block *body = promoted.getBody();
    SmallVector<Value> args(body->getArguments().drop_back());
    Value accumulator = body->getArguments().back();
    if (!body->empty())
      rewriter.eraseOp(body->getTerminator());
    rewriter.mergeBlocks(loop.getBody(), body, args);
    rewriter.replaceOp(load, accumulator);
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    SmallVector<Value> yielded(yield.getOperands());
    yielded.push_back(store.getValueToStore());
    rewriter.setInsertionPoint(yield);
    scf::YieldOp::create(rewriter, yield.getLoc(), yielded);
    rewriter.eraseOp(yield);
    rewriter.setInsertionPointAfter(promoted);
    memref::StoreOp::create(rewriter, loc, promoted.getResults().back(),
                            store.getMemRef(), store.getIndices());
    rewriter.eraseOp(store);
    rewriter.replaceOp(loop, promoted.getResults().drop_back());
    loop = promoted;
  }
}

/// Moves `op` under `if (tid == 0)` and puts a barrier after it, so that
/// the block sees what it wrote.
void runOnThreadZero(RewriterBase &rewriter, Operation *op, Value tid) {
  Location loc = op->getLoc();
  rewriter.setInsertionPoint(op);
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      tid, indexConstant(rewriter, loc, 0));
  auto guard = scf::IfOp::create(rewriter, loc, first, /*withElse=*/false);
  rewriter.moveOpBefore(op, guard.thenBlock()->getTerminator());
  rewriter.setInsertionPointAfter(guard);
  gpu::BarrierOp::create(rewriter, loc);
}

/// How many of a tile program op's iterations each thread issues together
/// (loads first): up to `most`, as many as the block needs for a static
/// element-wise op (a 64 x 64 tile: 16 per thread of 256), else 1. The
/// program waits on its tiles' memory; several loads in flight per thread
/// instead of one hide more of that wait.
int64_t tileUnroll(linalg::LinalgOp op, int64_t most, int64_t blockSize) {
  if (most <= 1 || op.getNumReductionLoops() != 0)
    return 1;
  int64_t count = 1;
  for (int64_t size : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(size))
      return 1;
    count *= size;
  }
  // Only a count that every trip fills: its copies then need no guards,
  // which is most of what they cost the PTX compile.
  for (int64_t unroll = std::min(most, count / blockSize); unroll > 1; --unroll)
    if (count % (blockSize * unroll) == 0)
      return unroll;
  return 1;
}

/// The scf.parallel loops left in `launch` (nested in a spread op's loops)
/// run sequentially on their thread.
LogicalResult sequentializeParallelLoops(RewriterBase &rewriter,
                                         gpu::LaunchOp launch) {
  SmallVector<scf::ParallelOp> inner;
  launch.getBody().walk([&](scf::ParallelOp par) { inner.push_back(par); });
  for (scf::ParallelOp par : inner) {
    rewriter.setInsertionPoint(par);
    Location loc = par.getLoc();
    if (failed(parallelToStridedLoop(rewriter, par,
                                     indexConstant(rewriter, loc, 0),
                                     indexConstant(rewriter, loc, 1))))
      return failure();
  }
  return success();
}

/// The first source line among `loc`'s parts, or 0.
unsigned sourceLine(Location loc) {
  unsigned line = 0;
  loc->walk([&](Location part) {
    if (auto file = dyn_cast<FileLineColLoc>(part)) {
      line = file.getLine();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return line;
}

/// Whether the buffer `alloc` makes (or a view of it) leaves the loop
/// iteration that made it: yielded by an enclosing scf.for or scf.while,
/// directly or through scf.if results. Such a buffer cannot have one fixed
/// place: the next iteration's buffer of the same op would overwrite the
/// one it reads.
bool escapesIteration(memref::AllocOp alloc) {
  SmallVector<Value> worklist = {alloc.getResult()};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ViewLikeOpInterface, memref::CastOp>(user)) {
        worklist.append(user->result_begin(), user->result_end());
        continue;
      }
      if (!isa<scf::YieldOp>(user))
        continue;
      Operation *parent = user->getParentOp();
      if (isa<scf::ForOp, scf::WhileOp>(parent))
        return true;
      if (isa<scf::IfOp, scf::IndexSwitchOp>(parent))
        worklist.push_back(parent->getResult(use.getOperandNumber()));
    }
  }
  return false;
}

/// In a tile program whose buffers all have fixed places, the deallocation
/// pipeline's frees (of the buffers and of their base buffers, under
/// run-time ownership flags) and its `dealloc_helper` calls have nothing
/// to do: nothing in the kernel is on the heap. Erased, so that no kernel
/// frees a view.
void eraseDeallocations(IRRewriter &rewriter, gpu::LaunchOp launch) {
  SmallVector<Operation *> erased;
  launch.getBody().walk([&](Operation *op) {
    if (isa<memref::DeallocOp>(op))
      erased.push_back(op);
    if (auto call = dyn_cast<func::CallOp>(op))
      if (call.getCallee() == "dealloc_helper")
        erased.push_back(op);
  });
  for (Operation *op : erased)
    rewriter.eraseOp(op);
}

struct MoEMapForallToGPUPass
    : public moe::impl::MoEMapForallToGPUBase<MoEMapForallToGPUPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Names the kernel that `launch` becomes: `<function>_<what>_l<line>_<n>`,
  /// so that a profile by kernel name says what each one computes.
  void nameKernel(gpu::LaunchOp launch, StringRef what, Location loc);
  LogicalResult mapHostOp(IRRewriter &rewriter, linalg::LinalgOp op);
  LogicalResult mapHostReduction(IRRewriter &rewriter, linalg::LinalgOp op);
  LogicalResult mapHostColumnReduction(IRRewriter &rewriter,
                                       linalg::LinalgOp op);
  /// A kernel with one warp per output, holding `op`.
  struct WarpLaunch {
    gpu::LaunchOp launch;
    Value warp, warps, lane;
  };
  WarpLaunch moveIntoWarpLaunch(IRRewriter &rewriter, linalg::LinalgOp op,
                                Value outputs, StringRef suffix);
  int64_t kernels = 0;
  /// The values that host reductions' outputs start from, where a fill
  /// that only initialised them was dropped (fillsOfReductionOutputs).
  DenseMap<Operation *, SmallVector<Value>> reductionStarts;

  LogicalResult mapForall(IRRewriter &rewriter, scf::ForallOp forall);
  LogicalResult placeTiles(IRRewriter &rewriter, gpu::LaunchOp launch,
                           Value gridSize);
  LogicalResult placeDynamicTiles(IRRewriter &rewriter, gpu::LaunchOp launch,
                                  Value gridSize,
                                  ArrayRef<memref::AllocOp> allocs);
  LogicalResult guardScalarWrites(IRRewriter &rewriter, gpu::LaunchOp launch);
  LogicalResult spreadOverThreads(IRRewriter &rewriter, linalg::LinalgOp op,
                                  Value tid, Value threads, bool barrier = true,
                                  int64_t unroll = 1);
};

} // namespace

/// Shared memory of an SM of sm_90 (H100, H200) and what the driver keeps
/// of it per resident block.
constexpr int64_t kSharedMemoryPerSM = 233472;
constexpr int64_t kSharedMemoryReservedPerBlock = 1024;

/// The body's static tile buffers -> views of the block's dynamic shared
/// memory (or of a global scratch buffer with one slice per block); those
/// of a run-time size -> placeDynamicTiles.
LogicalResult MoEMapForallToGPUPass::placeTiles(IRRewriter &rewriter,
                                                gpu::LaunchOp launch,
                                                Value gridSize) {
  SmallVector<memref::AllocOp> allocs, dynamicAllocs;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    (alloc.getType().hasStaticShape() ? allocs : dynamicAllocs)
        .push_back(alloc);
  });
  if (failed(placeDynamicTiles(rewriter, launch, gridSize, dynamicAllocs)))
    return failure();
  if (allocs.empty())
    return success();
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !tileElementBytes(type.getElementType()))
      return alloc.emitOpError("in a GPU tile program needs a static shape, "
                               "an identity layout and a scalar element "
                               "type, got ")
             << type;
  }
  auto bytesOf = [](memref::AllocOp alloc) {
    return tileBufferBytes(alloc.getType());
  };
  // Buffers whose lifetimes do not overlap share bytes; those of a program
  // that does not fit otherwise do with share-spilled-tiles.
  bool share = shareTileMemory;
  TileMemoryPlan plan = planTileMemory(launch, allocs, bytesOf, share);
  if (plan.total > sharedMemoryBytes && !share && shareSpilledTiles) {
    share = true;
    plan = planTileMemory(launch, allocs, bytesOf, share);
  }

  Location loc = launch.getLoc();
  Block &body = launch.getBody().front();
  Type i8 = rewriter.getI8Type();
  // Where each buffer goes: its memory's base, the block's offset in it,
  // and its own offset and reuse.
  SmallVector<Value> bases(allocs.size()), blockOffsets(allocs.size());
  SmallVector<int64_t> offsets(plan.offsets);
  SmallVector<bool> reuses(plan.reused);

  auto sharedBase = [&](int64_t bytes) {
    rewriter.setInsertionPointToStart(&body);
    auto space = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                            gpu::AddressSpace::Workgroup);
    Value base = gpu::DynamicSharedMemoryOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, i8, MemRefLayoutAttrInterface(),
                        space));
    rewriter.setInsertionPoint(launch);
    launch.getDynamicSharedMemorySizeMutable().assign(
        arith::ConstantIntOp::create(rewriter, loc, bytes, 32).getResult());
    return base;
  };
  // One slice of `bytes` per block, in device memory; returns the base and
  // the block's offset.
  auto scratchBase = [&](int64_t bytes) -> std::pair<Value, Value> {
    rewriter.setInsertionPoint(launch);
    Value size = arith::MulIOp::create(rewriter, loc, gridSize,
                                       indexConstant(rewriter, loc, bytes));
    // Allocated and freed in stream order once -moe-async-gpu-stream makes
    // these asynchronous.
    auto scratch = gpu::AllocOp::create(
        rewriter, loc, MemRefType::get({ShapedType::kDynamic}, i8),
        /*asyncToken=*/Type(), ValueRange(), ValueRange{size}, ValueRange(),
        /*hostShared=*/false);
    Value base = scratch.getMemref();
    rewriter.setInsertionPointAfter(launch);
    gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange(),
                           base);
    rewriter.setInsertionPointToStart(&body);
    Value blockOffset =
        arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x,
                              indexConstant(rewriter, loc, bytes));
    return {base, blockOffset};
  };

  int64_t sharedBytes = plan.total;
  if (plan.total <= sharedMemoryBytes) {
    Value base = sharedBase(plan.total);
    rewriter.setInsertionPointToStart(&body);
    Value zero = indexConstant(rewriter, loc, 0);
    bases.assign(allocs.size(), base);
    blockOffsets.assign(allocs.size(), zero);
  } else {
    // The buffers accessed most per byte in shared memory, as many as
    // `partial-shared-memory-bytes` holds; the rest in global scratch.
    TileMemorySplit split =
        splitTileMemory(launch, allocs, bytesOf, tileAccessBytes, share,
                        partialSharedMemoryBytes);
    // No scratch when the shared memory took every buffer (an empty one
    // would still cost an allocation per launch).
    Value scratch, scratchOffset;
    if (split.slowPlan.total > 0)
      std::tie(scratch, scratchOffset) = scratchBase(split.slowPlan.total);
    Value shared, zero;
    if (split.fastPlan.total > 0) {
      shared = sharedBase(split.fastPlan.total);
      rewriter.setInsertionPointToStart(&body);
      zero = indexConstant(rewriter, loc, 0);
    }
    for (size_t i = 0; i < allocs.size(); ++i) {
      const TileMemoryPlan &home =
          split.fast[i] ? split.fastPlan : split.slowPlan;
      bases[i] = split.fast[i] ? shared : scratch;
      blockOffsets[i] = split.fast[i] ? zero : scratchOffset;
      offsets[i] = home.offsets[i];
      reuses[i] = home.reused[i];
    }
    sharedBytes = split.fastPlan.total;
  }
  // No more blocks per SM than their shared memory allows: a register
  // budget for more would only spill.
  int64_t fitting = std::max<int64_t>(
      1, kSharedMemoryPerSM / (sharedBytes + kSharedMemoryReservedPerBlock));
  if (auto minBlocks = launch->getAttrOfType<IntegerAttr>(
          NVVM::NVVMDialect::getMinctasmAttrName());
      minBlocks && minBlocks.getInt() > fitting)
    launch->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    rewriter.getI32IntegerAttr(fitting));

  for (auto [alloc, base, blockOffset, offset, reused] :
       llvm::zip(allocs, bases, blockOffsets, offsets, reuses)) {
    rewriter.setInsertionPoint(alloc);
    Location allocLoc = alloc.getLoc();
    // Every thread is done with the bytes' other buffer before any writes.
    if (reused)
      gpu::BarrierOp::create(rewriter, allocLoc);
    MemRefType type = alloc.getType();
    auto baseType = cast<MemRefType>(base.getType());
    Value shift =
        arith::AddIOp::create(rewriter, allocLoc, blockOffset,
                              indexConstant(rewriter, allocLoc, offset));
    Value view = memref::ViewOp::create(
        rewriter, allocLoc,
        MemRefType::get(type.getShape(), type.getElementType(),
                        MemRefLayoutAttrInterface(), baseType.getMemorySpace()),
        base, shift, ValueRange());
    if (baseType.getMemorySpace())
      view = memref::MemorySpaceCastOp::create(rewriter, allocLoc, type, view);
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        rewriter.eraseOp(user);
    rewriter.replaceOp(alloc, view);
  }
  return success();
}

/// The body's tile buffers whose sizes are known before the launch -> views
/// of one device scratch buffer, a slice per block, sized on the host.
LogicalResult
MoEMapForallToGPUPass::placeDynamicTiles(IRRewriter &rewriter,
                                         gpu::LaunchOp launch, Value gridSize,
                                         ArrayRef<memref::AllocOp> allocs) {
  if (allocs.empty())
    return success();
  Location loc = launch.getLoc();
  rewriter.setInsertionPoint(launch);
  // Each buffer's offset in the block's slice, 16-byte aligned.
  Value total = indexConstant(rewriter, loc, 0);
  SmallVector<Value> offsets;
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    int64_t bytes = tileElementBytes(type.getElementType());
    if (!type.getLayout().isIdentity() || !bytes)
      return alloc.emitOpError("in a GPU tile program needs an identity "
                               "layout and a scalar element type, got ")
             << type;
    for (Value size : alloc.getDynamicSizes())
      if (launch.getBody().isAncestor(size.getParentRegion()))
        return alloc.emitOpError("has a size that is not known before the "
                                 "GPU launch");
    int64_t staticElements = 1;
    for (int64_t d : type.getShape())
      if (!ShapedType::isDynamic(d))
        staticElements *= d;
    Value size = indexConstant(rewriter, loc, staticElements * bytes);
    for (Value d : alloc.getDynamicSizes())
      size = arith::MulIOp::create(rewriter, loc, size, d);
    offsets.push_back(total);
    Value end = arith::AddIOp::create(rewriter, loc, total, size);
    Value sixteen = indexConstant(rewriter, loc, 16);
    total = arith::MulIOp::create(
        rewriter, loc, arith::CeilDivUIOp::create(rewriter, loc, end, sixteen),
        sixteen);
  }
  Value bytes = arith::MulIOp::create(rewriter, loc, gridSize, total);
  Type i8 = rewriter.getI8Type();
  auto scratch = gpu::AllocOp::create(
      rewriter, loc, MemRefType::get({ShapedType::kDynamic}, i8),
      /*asyncToken=*/Type(), ValueRange(), ValueRange{bytes}, ValueRange(),
      /*hostShared=*/false);
  Value base = scratch.getMemref();
  rewriter.setInsertionPointAfter(launch);
  gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange(),
                         base);
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  Value blockOffset =
      arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x, total);
  for (auto [i, offset] : llvm::enumerate(offsets)) {
    memref::AllocOp alloc = allocs[i];
    rewriter.setInsertionPoint(alloc);
    Location allocLoc = alloc.getLoc();
    Value shift =
        arith::AddIOp::create(rewriter, allocLoc, blockOffset, offset);
    Value view = memref::ViewOp::create(rewriter, allocLoc, alloc.getType(),
                                        base, shift, alloc.getDynamicSizes());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        rewriter.eraseOp(user);
    rewriter.replaceOp(alloc, view);
  }
  return success();
}

/// Scalar writes of the tile program (outside structured ops) run on thread
/// 0; a barrier after each makes them visible to the block.
LogicalResult MoEMapForallToGPUPass::guardScalarWrites(IRRewriter &rewriter,
                                                       gpu::LaunchOp launch) {
  SmallVector<Operation *> writes;
  WalkResult result = launch.getBody().walk([&](Operation *op) {
    if (isa<linalg::LinalgOp>(op))
      return WalkResult::skip();
    if (isa<memref::StoreOp, vector::StoreOp, vector::TransferWriteOp>(op)) {
      writes.push_back(op);
      return WalkResult::advance();
    }
    if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
            gpu::BarrierOp>(op))
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if ((effects && effects.hasEffect<MemoryEffects::Write>()) ||
        (!effects && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
         op->getNumRegions() == 0 && !isPure(op))) {
      op->emitOpError("writes memory in a GPU tile program in a way that "
                      "cannot be given to one thread");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  for (Operation *op : writes)
    runOnThreadZero(rewriter, op, launch.getThreadIds().x);
  return success();
}

/// One structured op of a tile program -> a loop over its parallel
/// iterations that the block's threads share, then a barrier.
LogicalResult MoEMapForallToGPUPass::spreadOverThreads(IRRewriter &rewriter,
                                                       linalg::LinalgOp op,
                                                       Value tid, Value threads,
                                                       bool barrier,
                                                       int64_t unroll) {
  Location loc = op.getLoc();
  if (op.getNumParallelLoops() == 0) {
    runOnThreadZero(rewriter, op, tid);
    return success();
  }
  // Parallel dimensions first, so that one scf.parallel holds them all and
  // the reductions are sequential loops inside it.
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (!std::is_partitioned(iterators.begin(), iterators.end(),
                           linalg::isParallelIterator)) {
    rewriter.setInsertionPoint(op);
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generalized))
        return op.emitOpError("cannot be generalized for the GPU");
      generic = *generalized;
    }
    SmallVector<unsigned> order;
    for (auto [i, it] : llvm::enumerate(iterators))
      if (linalg::isParallelIterator(it))
        order.push_back(i);
    for (auto [i, it] : llvm::enumerate(iterators))
      if (!linalg::isParallelIterator(it))
        order.push_back(i);
    FailureOr<linalg::GenericOp> interchanged =
        linalg::interchangeGenericOp(rewriter, generic, order);
    if (failed(interchanged))
      return generic.emitOpError("cannot be interchanged for the GPU");
    op = cast<linalg::LinalgOp>(interchanged->getOperation());
  }
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::LinalgLoops> loops =
      linalg::linalgOpToParallelLoops(rewriter, op);
  if (failed(loops) || loops->empty())
    return op.emitOpError("cannot be lowered to parallel loops for the GPU");
  auto outer = dyn_cast<scf::ParallelOp>(loops->front());
  if (!outer)
    return op.emitOpError("has no outer parallel loop to spread over threads");
  rewriter.eraseOp(op);
  // The loops index through `affine.apply (d0) -> (d0)`: use the index
  // itself, so that a load and a store of one element have equal indices.
  SmallVector<affine::AffineApplyOp> applies;
  outer->walk([&](affine::AffineApplyOp apply) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumResults() == 1 && map.getNumInputs() == 1 &&
        (map.getResult(0) == rewriter.getAffineDimExpr(0) ||
         map.getResult(0) == rewriter.getAffineSymbolExpr(0)))
      applies.push_back(apply);
  });
  for (affine::AffineApplyOp apply : applies)
    rewriter.replaceOp(apply, apply.getMapOperands().front());
  // Reduction loops, innermost first, accumulate in registers.
  SmallVector<scf::ForOp> reductions;
  outer->walk([&](scf::ForOp loop) { reductions.push_back(loop); });
  for (scf::ForOp loop : reductions)
    promoteAccumulators(rewriter, loop);
  Operation *after = outer->getNextNode();
  if ((!reductions.empty() || failed(emitUnrolledStridedLoop(
                                  rewriter, outer, tid, threads, unroll))) &&
      failed(parallelToStridedLoop(rewriter, outer, tid, threads)))
    return failure();
  if (barrier) {
    rewriter.setInsertionPoint(after);
    gpu::BarrierOp::create(rewriter, loc);
  }
  return success();
}

void MoEMapForallToGPUPass::nameKernel(gpu::LaunchOp launch, StringRef what,
                                       Location loc) {
  std::string name = (getOperation().getSymName() + "_" + what + "_l" +
                      Twine(sourceLine(loc)) + "_" + Twine(kernels++))
                         .str();
  MLIRContext *ctx = launch.getContext();
  launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, name));
  launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
}

/// A structured op of the host code -> a kernel whose threads share its
/// parallel iterations (a grid-stride loop), or one thread for an op
/// without parallel dimensions (a whole-tensor sum).
LogicalResult MoEMapForallToGPUPass::mapHostOp(IRRewriter &rewriter,
                                               linalg::LinalgOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value one = indexConstant(rewriter, loc, 1);
  Value threads = one, grid = one;
  if (isWarpReduction(op))
    return mapHostReduction(rewriter, op);
  if (isColumnReduction(op))
    return mapHostColumnReduction(rewriter, op);
  // An element-wise op: each thread takes several elements per trip of its
  // grid-stride loop, their loads issued together.
  int64_t unroll = op.getNumReductionLoops() == 0 ? kElementsPerThread : 1;
  if (op.getNumParallelLoops() > 0) {
    // Enough blocks for `unroll` iterations per thread, at most 2^20.
    SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
    SmallVector<Value> counts;
    for (auto [range, it] : llvm::zip(ranges, op.getIteratorTypesArray()))
      if (linalg::isParallelIterator(it))
        counts.push_back(tripCount(
            rewriter, loc,
            getValueOrCreateConstantIndexOp(rewriter, loc, range.offset),
            getValueOrCreateConstantIndexOp(rewriter, loc, range.size),
            getValueOrCreateConstantIndexOp(rewriter, loc, range.stride)));
    threads = indexConstant(rewriter, loc, blockSize);
    Value blocks = arith::CeilDivUIOp::create(
        rewriter, loc, product(rewriter, loc, counts),
        indexConstant(rewriter, loc, blockSize * unroll));
    blocks = arith::MinUIOp::create(rewriter, loc, blocks,
                                    indexConstant(rewriter, loc, 1 << 20));
    grid = arith::MaxUIOp::create(rewriter, loc, blocks, one);
  }
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, grid, one, one, threads, one, one);
  nameKernel(launch, op->getName().stripDialect().str(), loc);
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.moveOpBefore(op, terminator);
  if (op.getNumParallelLoops() == 0)
    return success(); // one thread: lowered to loops later
  rewriter.setInsertionPoint(op);
  Value start = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x,
                            launch.getBlockSize().x),
      launch.getThreadIds().x);
  Value step = arith::MulIOp::create(rewriter, loc, launch.getGridSize().x,
                                     launch.getBlockSize().x);
  if (failed(spreadOverThreads(rewriter, op, start, step,
                               /*barrier=*/false, unroll)))
    return failure();
  return sequentializeParallelLoops(rewriter, launch);
}

/// A kernel at `op` with one warp per output of `outputs`, enough 256-thread
/// blocks for one warp each, at most 2^20 of them; `op` moves into it.
/// Returns it with the thread's warp, the number of warps and its lane.
MoEMapForallToGPUPass::WarpLaunch
MoEMapForallToGPUPass::moveIntoWarpLaunch(IRRewriter &rewriter,
                                          linalg::LinalgOp op, Value outputs,
                                          StringRef suffix) {
  Location loc = op.getLoc();
  Value one = indexConstant(rewriter, loc, 1);
  Value threads = indexConstant(rewriter, loc, blockSize);
  Value warpsPerBlock = indexConstant(rewriter, loc, blockSize / 32);
  Value blocks =
      arith::CeilDivUIOp::create(rewriter, loc, outputs, warpsPerBlock);
  blocks = arith::MinUIOp::create(rewriter, loc, blocks,
                                  indexConstant(rewriter, loc, 1 << 20));
  Value grid = arith::MaxUIOp::create(rewriter, loc, blocks, one);
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, grid, one, one, threads, one, one);
  nameKernel(launch, (op->getName().stripDialect() + suffix).str(), loc);
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.moveOpBefore(op, terminator);
  rewriter.setInsertionPoint(op);
  Value warpSize = indexConstant(rewriter, loc, 32);
  Value tid = launch.getThreadIds().x;
  Value warp = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x,
                            warpsPerBlock),
      arith::DivUIOp::create(rewriter, loc, tid, warpSize));
  Value warps = arith::MulIOp::create(rewriter, loc, launch.getGridSize().x,
                                      warpsPerBlock);
  Value lane = arith::RemUIOp::create(rewriter, loc, tid, warpSize);
  return {launch, warp, warps, lane};
}

/// A reduction of the host code -> a kernel with one warp per output
/// element (see WarpReduction.h), enough 256-thread blocks for one warp per
/// output, at most 2^20 of them.
LogicalResult MoEMapForallToGPUPass::mapHostReduction(IRRewriter &rewriter,
                                                      linalg::LinalgOp op) {
  rewriter.setInsertionPoint(op);
  Value outputs = loopSpaceOf(rewriter, op).outputs;
  WarpLaunch kernel = moveIntoWarpLaunch(rewriter, op, outputs, "_warps");
  emitWarpReduction(rewriter, op, kernel.warp, kernel.warps, kernel.lane,
                    reductionStarts.lookup(op));
  return success();
}

/// A long reduction onto few outputs that its inputs do not store
/// contiguously (a weight gradient's sum over the tokens) -> two kernels
/// (see ColumnReduction.h): runs of the reduction folded into partials by
/// a thread per (output, run), about 2^19 threads in all; then one warp per
/// output combining its partials into the output.
LogicalResult
MoEMapForallToGPUPass::mapHostColumnReduction(IRRewriter &rewriter,
                                              linalg::LinalgOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value one = indexConstant(rewriter, loc, 1);
  Value threads = indexConstant(rewriter, loc, blockSize);
  LoopSpace space = loopSpaceOf(rewriter, op);
  ColumnSplit split = planColumnSplit(rewriter, op, space, blockSize,
                                      /*targetThreads=*/int64_t(1) << 19);

  auto partials = gpu::LaunchOp::create(rewriter, loc, split.columnBlocks,
                                        split.runs, one, threads, one, one);
  nameKernel(partials, (op->getName().stripDialect() + "_columns").str(), loc);
  {
    Block &body = partials.getBody().front();
    rewriter.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(rewriter, loc);
    rewriter.setInsertionPoint(terminator);
    Value column = arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, partials.getBlockIds().x,
                              partials.getBlockSize().x),
        partials.getThreadIds().x);
    emitColumnPartials(rewriter, op, space, split, column,
                       partials.getBlockIds().y);
  }

  rewriter.setInsertionPoint(op);
  WarpLaunch combine =
      moveIntoWarpLaunch(rewriter, op, space.outputs, "_columns_sum");
  emitColumnCombine(rewriter, op, space, split, combine.warp, combine.warps,
                    combine.lane, reductionStarts.lookup(op));

  rewriter.setInsertionPointAfter(combine.launch);
  for (Value buffer : split.partials)
    gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange(),
                           buffer);
  return success();
}

LogicalResult MoEMapForallToGPUPass::mapForall(IRRewriter &rewriter,
                                               scf::ForallOp forall) {
  Location loc = forall.getLoc();
  if (forall.getNumResults() != 0)
    return forall.emitOpError("must be bufferized before GPU mapping");
  bool nested = false, tileProgram = false;
  forall.getBody()->walk([&](Operation *op) {
    nested |= isa<scf::ForallOp>(op);
    tileProgram |= isa<linalg::LinalgOp>(op);
  });
  if (nested)
    return forall.emitOpError(
        "holds another scf.forall, which the GPU mapping does not take");
  // A tile buffer whose size is only known at run time can be placed when
  // that size is known before the launch (a KDA gradient's chunk-state
  // history): one slice per block of a device scratch buffer. One whose
  // size the iteration computes cannot: such a program keeps one thread per
  // block and its buffers on the device heap (correct, slow; the fused
  // routing of an f32 model with a dynamic expert count); so does one
  // whose loop carries a fresh buffer from one iteration to the next
  // (-moe-in-place-loop-carries rewrites tile programs to avoid that).
  bool placeable = true;
  forall.getBody()->walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    placeable &= type.getLayout().isIdentity() &&
                 tileElementBytes(type.getElementType()) != 0 &&
                 llvm::all_of(alloc.getDynamicSizes(),
                              [&](Value size) {
                                return forall.isDefinedOutsideOfLoop(size);
                              }) &&
                 !escapesIteration(alloc);
  });
  bool oneThread = tileProgram && !placeable;

  rewriter.setInsertionPoint(forall);
  SmallVector<Value> lbs, ubs, steps, counts;
  for (OpFoldResult ofr : forall.getMixedLowerBound())
    lbs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, ofr));
  for (OpFoldResult ofr : forall.getMixedUpperBound())
    ubs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, ofr));
  for (OpFoldResult ofr : forall.getMixedStep())
    steps.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, ofr));
  for (auto [lb, ub, step] : llvm::zip(lbs, ubs, steps))
    counts.push_back(tripCount(rewriter, loc, lb, ub, step));
  Value total = product(rewriter, loc, counts);
  Value one = indexConstant(rewriter, loc, 1);
  Value threads = indexConstant(rewriter, loc, oneThread ? 1 : blockSize);
  Value grid = tileProgram
                   ? total
                   : arith::CeilDivUIOp::create(rewriter, loc, total, threads)
                         .getResult();
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, grid, one, one, threads, one, one);
  nameKernel(launch, tileProgram ? "tiles" : "elements", loc);
  // A tile program waits on its block's memory after every op: more blocks
  // per SM hide that latency better than more registers per thread (the
  // KDA gradient's 248 registers left one block per SM).
  if (tileProgram && tileBlocksPerSM > 0)
    launch->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    rewriter.getI32IntegerAttr(tileBlocksPerSM));
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(terminator);
  Value bid = launch.getBlockIds().x;
  Value tid = launch.getThreadIds().x;
  Value blockDim = launch.getBlockSize().x;

  Block *forallBody = forall.getBody();
  rewriter.eraseOp(forallBody->getTerminator());
  if (tileProgram) {
    SmallVector<Value> ivs =
        delinearize(rewriter, loc, bid, counts, lbs, steps);
    rewriter.inlineBlockBefore(forallBody, terminator, ivs);
  } else {
    Value linear = arith::AddIOp::create(
        rewriter, loc, arith::MulIOp::create(rewriter, loc, bid, blockDim),
        tid);
    Value inRange = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, linear, total);
    auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
    rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
    SmallVector<Value> ivs =
        delinearize(rewriter, loc, linear, counts, lbs, steps);
    rewriter.inlineBlockBefore(forallBody, guard.thenBlock()->getTerminator(),
                               ivs);
  }
  rewriter.eraseOp(forall);

  if (!tileProgram) {
    // Each thread is one iteration: its tiles are its own.
    SmallVector<memref::AllocOp> allocs;
    launch.getBody().walk(
        [&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    for (memref::AllocOp alloc : allocs) {
      if (!alloc.getType().hasStaticShape())
        return alloc.emitOpError("in a GPU element program needs a static "
                                 "shape, got ")
               << alloc.getType();
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType());
    }
    return success();
  }

  if (oneThread)
    return success();
  eraseDeallocations(rewriter, launch);
  if (failed(placeTiles(rewriter, launch, grid)) ||
      failed(guardScalarWrites(rewriter, launch)))
    return failure();
  SmallVector<linalg::LinalgOp> ops;
  launch.getBody().walk([&](linalg::LinalgOp op) {
    ops.push_back(op);
    return WalkResult::skip();
  });
  // The block size as a constant rather than the launch's argument: the
  // threads' loops then have constant strides, which the index arithmetic
  // of static tiles folds with.
  rewriter.setInsertionPointToStart(&body);
  Value threadsInBlock = indexConstant(rewriter, loc, blockSize);
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    std::optional<TileContraction> contraction;
    if (generic && tileContractions == "tf32")
      contraction = matchTileContraction(generic);
    if (contraction)
      emitTensorCoreContraction(rewriter, generic, *contraction, tid,
                                blockSize);
    else if (failed(spreadOverThreads(
                 rewriter, op, tid, threadsInBlock,
                 /*barrier=*/true,
                 tileUnroll(op, tileElementsPerThread, blockSize))))
      return failure();
  }
  if (failed(sequentializeParallelLoops(rewriter, launch)))
    return failure();
  if (elideBarriers)
    numElidedBarriers += elideIndependentBarriers(launch);
  return success();
}

void MoEMapForallToGPUPass::runOnOperation() {
  // Numbered per function: the pass manager runs a copy of this pass on
  // each thread, and which functions a copy sees varies from run to run.
  kernels = 0;
  if (blockSize < 32 || blockSize > 1024 || blockSize % 32) {
    getOperation().emitError("-moe-map-forall-to-gpu: block-size must be a "
                             "multiple of 32 in [32, 1024], got ")
        << blockSize;
    return signalPassFailure();
  }
  if (tileContractions != "fp32" && tileContractions != "tf32") {
    getOperation().emitError("-moe-map-forall-to-gpu: tile-contractions must "
                             "be fp32 or tf32, got '")
        << tileContractions << "'";
    return signalPassFailure();
  }
  if (tileBlocksPerSM < 0 || tileElementsPerThread < 1) {
    getOperation().emitError("-moe-map-forall-to-gpu: tile-blocks-per-sm "
                             "must be at least 0 and "
                             "tile-elements-per-thread at least 1, got ")
        << static_cast<int64_t>(tileBlocksPerSM) << " and "
        << static_cast<int64_t>(tileElementsPerThread);
    return signalPassFailure();
  }
  if (partialSharedMemoryBytes < 0 ||
      partialSharedMemoryBytes > sharedMemoryBytes) {
    getOperation().emitError("-moe-map-forall-to-gpu: "
                             "partial-shared-memory-bytes must be between 0 "
                             "and shared-memory-bytes (")
        << static_cast<int64_t>(sharedMemoryBytes) << "), got "
        << static_cast<int64_t>(partialSharedMemoryBytes);
    return signalPassFailure();
  }
  SmallVector<scf::ForallOp> foralls;
  getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (auto forall = dyn_cast<scf::ForallOp>(op)) {
      foralls.push_back(forall);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  IRRewriter rewriter(&getContext());
  for (scf::ForallOp forall : foralls)
    if (failed(mapForall(rewriter, forall)))
      return signalPassFailure();
  // Copies between the program's buffers (concatenations, slices of the
  // packed parameters) run on the GPU too: on the host they would pull
  // host-shared pages back and forth. A copy from a function argument (the
  // caller's memory, which the GPU may not read) stays on the host, unless
  // the function is an outlined kind, which only the program calls.
  SmallVector<memref::CopyOp> copies;
  getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      auto arg = dyn_cast<BlockArgument>(copy.getSource());
      Operation *owner = arg ? arg.getOwner()->getParentOp() : nullptr;
      bool fromCaller = arg && arg.getOwner()->isEntryBlock() &&
                        isa<FunctionOpInterface>(owner) &&
                        !owner->hasAttr(kOutlinedKindAttrName);
      if (!fromCaller)
        copies.push_back(copy);
    }
    return WalkResult::advance();
  });
  // Between two identity layouts of one type the copy is one contiguous
  // run: a memcpy on the stream (upstream's lowering reads both aligned
  // pointers and no offsets, which such layouts do not have).
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    auto sourceType = cast<MemRefType>(copy.getSource().getType());
    auto targetType = cast<MemRefType>(copy.getTarget().getType());
    if (sourceType == targetType && sourceType.getLayout().isIdentity()) {
      gpu::MemcpyOp::create(rewriter, copy.getLoc(), /*asyncToken=*/Type(),
                            /*asyncDependencies=*/ValueRange(),
                            copy.getTarget(), copy.getSource());
      rewriter.eraseOp(copy);
      continue;
    }
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  }
  // The structured ops left on the host (projections, norms, ...).
  SmallVector<linalg::LinalgOp> hostOps;
  getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (linalgOp.hasPureBufferSemantics())
        hostOps.push_back(linalgOp);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  // A fill that only initialises a warp or column reduction's outputs goes:
  // the reduction's kernel starts from the fill's value.
  DenseSet<Operation *> dropped;
  for (linalg::LinalgOp op : hostOps) {
    if (dropped.contains(op) || !(isWarpReduction(op) || isColumnReduction(op)))
      continue;
    SmallVector<Value> starts;
    SmallVector<linalg::FillOp> fills = fillsOfReductionOutputs(op, starts);
    if (fills.empty())
      continue;
    reductionStarts[op] = starts;
    for (linalg::FillOp fill : fills)
      dropped.insert(fill);
  }
  for (linalg::LinalgOp op : hostOps) {
    if (dropped.contains(op)) {
      rewriter.eraseOp(op);
      continue;
    }
    if (failed(mapHostOp(rewriter, op)))
      return signalPassFailure();
  }
}
