//===- TileMemoryPlan.cpp - Tile buffers sharing memory by lifetime -------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TileMemoryPlan.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::moe;

namespace {

/// An interval of the pre-order numbering of `root`'s operations.
struct Lifetime {
  int64_t begin, end;
  bool overlaps(const Lifetime &other) const {
    return begin <= other.end && other.begin <= end;
  }
};

} // namespace

int64_t mlir::moe::tileElementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return 0;
}

int64_t mlir::moe::tileBufferBytes(MemRefType type) {
  int64_t bytes = tileElementBytes(type.getElementType());
  if (!type.hasStaticShape() || !bytes)
    return -1;
  return bytes * type.getNumElements();
}

/// The lifetime of `alloc` in the numbering `first` (an operation's own
/// number) and `last` (the largest number inside it).
static Lifetime lifetimeOf(memref::AllocOp alloc,
                           const DenseMap<Operation *, int64_t> &first,
                           const DenseMap<Operation *, int64_t> &last) {
  constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
  Block *home = alloc->getBlock();
  Lifetime life{first.lookup(alloc), first.lookup(alloc)};
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      // Reaching a terminator or a region's carried values: the buffer
      // outlives what the numbering can follow.
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          isa<RegionBranchOpInterface>(user))
        return {0, kForever};
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == value) {
        for (Value result : user->getResults())
          worklist.push_back(result);
      } else if (isa<memref::CastOp, memref::MemorySpaceCastOp>(user)) {
        worklist.push_back(user->getResult(0));
      }
      Operation *ancestor = home->findAncestorOpInBlock(*user);
      if (!ancestor)
        return {0, kForever};
      life.end = std::max(life.end, last.lookup(ancestor));
    }
  }
  return life;
}

TileMemoryPlan
moe::planTileMemory(Operation *root, ArrayRef<memref::AllocOp> allocs,
                    function_ref<int64_t(memref::AllocOp)> bytesOf,
                    bool share) {
  TileMemoryPlan plan;
  plan.offsets.assign(allocs.size(), 0);
  plan.reused.assign(allocs.size(), false);
  SmallVector<int64_t> sizes;
  for (memref::AllocOp alloc : allocs)
    sizes.push_back(llvm::alignTo(bytesOf(alloc), 16));
  if (!share) {
    for (auto [i, size] : llvm::enumerate(sizes)) {
      plan.offsets[i] = plan.total;
      plan.total += size;
    }
    return plan;
  }

  DenseMap<Operation *, int64_t> first, last;
  int64_t counter = 0;
  std::function<void(Operation *)> number = [&](Operation *op) {
    first[op] = counter++;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block)
          number(&inner);
    last[op] = counter - 1;
  };
  number(root);
  SmallVector<Lifetime> lives;
  for (memref::AllocOp alloc : allocs)
    lives.push_back(lifetimeOf(alloc, first, last));

  // Largest first, each at the lowest offset clear of the buffers placed so
  // far whose lifetimes overlap its own.
  SmallVector<size_t> order(allocs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order,
                    [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  SmallVector<size_t> placed;
  for (size_t i : order) {
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (lives[i].overlaps(lives[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + sizes[j]});
    llvm::sort(taken);
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + sizes[i] <= begin)
        break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + sizes[i]);
    placed.push_back(i);
  }
  // A buffer sharing bytes with another, before or after it (in a loop, a
  // later buffer of one iteration precedes an earlier one of the next).
  for (size_t i = 0; i < allocs.size(); ++i)
    for (size_t j = 0; j < allocs.size(); ++j)
      if (i != j && plan.offsets[j] < plan.offsets[i] + sizes[i] &&
          plan.offsets[i] < plan.offsets[j] + sizes[j])
        plan.reused[i] = true;
  return plan;
}
