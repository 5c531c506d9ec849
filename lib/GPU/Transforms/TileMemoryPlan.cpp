//===- TileMemoryPlan.cpp - Tile buffers sharing memory by lifetime -------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TileMemoryPlan.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
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

/// Whether `user` is a view or cast of `value` (its results reach the
/// same bytes).
static bool isViewOf(Operation *user, Value value) {
  if (auto view = dyn_cast<ViewLikeOpInterface>(user))
    return view.getViewSource() == value;
  return isa<memref::CastOp, memref::MemorySpaceCastOp>(user);
}

/// Calls `visit(user, value)` for each use of `alloc`'s buffer, through its
/// views and casts (which are visited too, then their own users); stops
/// and returns false as soon as `visit` does.
static bool walkBufferUses(memref::AllocOp alloc,
                           function_ref<bool(Operation *, Value)> visit) {
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (!visit(user, value))
        return false;
      if (isViewOf(user, value))
        llvm::append_range(worklist, user->getResults());
    }
  }
  return true;
}

/// The lifetime of `alloc` in the numbering `first` (an operation's own
/// number) and `last` (the largest number inside it).
static Lifetime lifetimeOf(memref::AllocOp alloc,
                           const DenseMap<Operation *, int64_t> &first,
                           const DenseMap<Operation *, int64_t> &last) {
  Block *home = alloc->getBlock();
  Lifetime life{first.lookup(alloc), first.lookup(alloc)};
  bool followed = walkBufferUses(alloc, [&](Operation *user, Value) {
    // Reaching a terminator or a region's carried values: the buffer
    // outlives what the numbering can follow.
    if (user->hasTrait<OpTrait::IsTerminator>() ||
        isa<RegionBranchOpInterface>(user))
      return false;
    Operation *ancestor = home->findAncestorOpInBlock(*user);
    if (!ancestor)
      return false;
    life.end = std::max(life.end, last.lookup(ancestor));
    return true;
  });
  if (!followed)
    return {0, std::numeric_limits<int64_t>::max()};
  return life;
}

/// Numbers `root`'s operations in pre-order: `first` is an operation's own
/// number, `last` the largest number inside it.
static void numberOperations(Operation *root,
                             DenseMap<Operation *, int64_t> &first,
                             DenseMap<Operation *, int64_t> &last) {
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
}

/// The buffers' lifetimes when they may share bytes, else lifetimes that
/// all overlap.
static SmallVector<Lifetime>
lifetimesOf(Operation *root, ArrayRef<memref::AllocOp> allocs, bool share) {
  SmallVector<Lifetime> lives(allocs.size(),
                              Lifetime{0, std::numeric_limits<int64_t>::max()});
  if (!share)
    return lives;
  DenseMap<Operation *, int64_t> first, last;
  numberOperations(root, first, last);
  for (auto [i, alloc] : llvm::enumerate(allocs))
    lives[i] = lifetimeOf(alloc, first, last);
  return lives;
}

/// Places the buffers `order` lists, in that order, each at the lowest
/// offset clear of those placed before it whose lifetimes overlap its own;
/// one that would end past `capacity` is left out. Returns which were
/// placed.
static SmallVector<bool> placeFirstFit(ArrayRef<int64_t> sizes,
                                       ArrayRef<Lifetime> lives,
                                       ArrayRef<size_t> order, int64_t capacity,
                                       TileMemoryPlan &plan) {
  SmallVector<bool> member(sizes.size(), false);
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
    if (offset + sizes[i] > capacity)
      continue;
    plan.offsets[i] = offset;
    plan.total = std::max(plan.total, offset + sizes[i]);
    placed.push_back(i);
    member[i] = true;
  }
  // A buffer sharing bytes with another, before or after it (in a loop, a
  // later buffer of one iteration precedes an earlier one of the next).
  for (size_t i : placed)
    for (size_t j : placed)
      if (i != j && plan.offsets[j] < plan.offsets[i] + sizes[i] &&
          plan.offsets[i] < plan.offsets[j] + sizes[j])
        plan.reused[i] = true;
  return member;
}

static SmallVector<int64_t>
alignedSizes(ArrayRef<memref::AllocOp> allocs,
             function_ref<int64_t(memref::AllocOp)> bytesOf) {
  SmallVector<int64_t> sizes;
  for (memref::AllocOp alloc : allocs)
    sizes.push_back(llvm::alignTo(bytesOf(alloc), 16));
  return sizes;
}

/// Buffer indices 0 .. count - 1.
static SmallVector<size_t> indices(size_t count) {
  return llvm::to_vector(llvm::seq<size_t>(0, count));
}

/// `order` with the larger buffers first (stable among equal sizes).
static void largestFirst(SmallVectorImpl<size_t> &order,
                         ArrayRef<int64_t> sizes) {
  llvm::stable_sort(order,
                    [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
}

static TileMemoryPlan emptyPlan(size_t buffers) {
  TileMemoryPlan plan;
  plan.offsets.assign(buffers, 0);
  plan.reused.assign(buffers, false);
  return plan;
}

TileMemoryPlan
moe::planTileMemory(Operation *root, ArrayRef<memref::AllocOp> allocs,
                    function_ref<int64_t(memref::AllocOp)> bytesOf,
                    bool share) {
  TileMemoryPlan plan = emptyPlan(allocs.size());
  SmallVector<int64_t> sizes = alignedSizes(allocs, bytesOf);
  SmallVector<Lifetime> lives = lifetimesOf(root, allocs, share);
  // Without sharing, in program order one after the other; with it, the
  // largest first.
  SmallVector<size_t> order = indices(allocs.size());
  if (share)
    largestFirst(order, sizes);
  placeFirstFit(sizes, lives, order, std::numeric_limits<int64_t>::max(), plan);
  return plan;
}

/// Static trip count of `loop`, or 1 when unknown.
static int64_t staticTripCount(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0 || *ub <= *lb)
    return 1;
  return llvm::divideCeil(*ub - *lb, *step);
}

int64_t moe::tileAccessBytes(memref::AllocOp alloc) {
  // Unsigned, so that the sums saturate instead of overflowing.
  uint64_t whole = tileBufferBytes(alloc.getType());
  int64_t element = tileElementBytes(alloc.getType().getElementType());
  Block *home = alloc->getBlock();
  uint64_t total = 0;
  walkBufferUses(alloc, [&](Operation *user, Value value) {
    if (isViewOf(user, value) || isa<memref::DeallocOp>(user))
      return true;
    // A load or store touches one element; any other op, the view it is
    // given.
    uint64_t bytes = element;
    if (!isa<memref::LoadOp, memref::StoreOp>(user)) {
      auto type = dyn_cast<MemRefType>(value.getType());
      int64_t viewed = type ? tileBufferBytes(type) : -1;
      bytes = viewed >= 0 ? viewed : whole;
    }
    for (Operation *parent = user->getParentOp();
         parent && parent->getBlock() && parent != home->getParentOp();
         parent = parent->getParentOp())
      if (auto loop = dyn_cast<scf::ForOp>(parent))
        bytes = llvm::SaturatingMultiply(
            bytes, static_cast<uint64_t>(staticTripCount(loop)));
    total = llvm::SaturatingAdd(total, bytes);
    return true;
  });
  return static_cast<int64_t>(
      std::min<uint64_t>(total, std::numeric_limits<int64_t>::max()));
}

TileMemorySplit
moe::splitTileMemory(Operation *root, ArrayRef<memref::AllocOp> allocs,
                     function_ref<int64_t(memref::AllocOp)> bytesOf,
                     function_ref<int64_t(memref::AllocOp)> accessBytesOf,
                     bool share, int64_t fastCapacity) {
  TileMemorySplit split;
  split.fastPlan = emptyPlan(allocs.size());
  split.slowPlan = emptyPlan(allocs.size());
  SmallVector<int64_t> sizes = alignedSizes(allocs, bytesOf);
  SmallVector<Lifetime> lives = lifetimesOf(root, allocs, share);
  // The fast memory takes the buffers with the most accesses per byte
  // first (then the larger), as long as they fit.
  SmallVector<double> density;
  for (auto [alloc, size] : llvm::zip(allocs, sizes))
    density.push_back(static_cast<double>(accessBytesOf(alloc)) /
                      static_cast<double>(std::max<int64_t>(size, 1)));
  SmallVector<size_t> order = indices(allocs.size());
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    if (density[a] != density[b])
      return density[a] > density[b];
    return sizes[a] > sizes[b];
  });
  split.fast = placeFirstFit(sizes, lives, order, fastCapacity, split.fastPlan);
  SmallVector<size_t> rest;
  for (size_t i : indices(allocs.size()))
    if (!split.fast[i])
      rest.push_back(i);
  if (share)
    largestFirst(rest, sizes);
  placeFirstFit(sizes, lives, rest, std::numeric_limits<int64_t>::max(),
                split.slowPlan);
  return split;
}
