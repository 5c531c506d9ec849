//===- BarrierElision.cpp - Barriers between independent tile ops ---------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "BarrierElision.h"
#include "TileMemoryPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::moe;

namespace {

/// The bytes a memref value may touch: `[begin, end)` past `shift` (an SSA
/// offset, or null for none) in the allocation `base` when `ranged`, else
/// anywhere in `base`.
struct Footprint {
  Value base;
  Value shift;
  int64_t begin = 0, end = 0;
  bool ranged = false;
  /// `base` is a fresh allocation: nothing but views of it reach its bytes.
  bool fresh = false;
  /// `base` comes from an op in the launch that is neither an allocation
  /// nor a view: it may be any buffer, a fresh one's bytes included.
  bool opaque = false;
};

struct Access {
  Footprint bytes;
  bool write;
};

/// What a stretch of ops reads and writes.
struct Accesses {
  SmallVector<Access> list;
  /// Some op's effects are not known: it depends on every other stretch.
  bool unknown = false;
  bool empty() const { return list.empty() && !unknown; }
};

bool isFreshAllocation(Value value) {
  Operation *def = value.getDefiningOp();
  return def && isa<memref::AllocOp, memref::AllocaOp, gpu::AllocOp,
                    gpu::DynamicSharedMemoryOp>(def);
}

/// `shift` as (SSA part, constant part).
std::pair<Value, int64_t> splitShift(Value shift) {
  APInt constant;
  if (matchPattern(shift, m_ConstantInt(&constant)))
    return {Value(), constant.getSExtValue()};
  if (auto add = shift.getDefiningOp<arith::AddIOp>()) {
    auto [lhs, lhsConstant] = splitShift(add.getLhs());
    auto [rhs, rhsConstant] = splitShift(add.getRhs());
    if (!lhs || !rhs)
      return {lhs ? lhs : rhs, lhsConstant + rhsConstant};
  }
  return {shift, 0};
}

Footprint footprintOf(Value memref, Region &body) {
  Footprint result;
  // Subviews and casts stay within their source's bytes; the view nearest
  // the access gives the range when only such ops lie between them, and
  // when its source is the base itself.
  bool within = true, seenView = false;
  Value value = memref;
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      int64_t bytes = tileBufferBytes(view.getType());
      if (!seenView && within && bytes >= 0) {
        auto [shift, constant] = splitShift(view.getByteShift());
        result.shift = shift;
        result.begin = constant;
        result.end = constant + bytes;
        result.ranged = true;
      } else {
        result.ranged = false;
      }
      seenView = true;
      value = view.getSource();
      continue;
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      break;
    if (seenView ||
        !isa<memref::SubViewOp, memref::CastOp, memref::MemorySpaceCastOp>(
            def)) {
      within = false;
      result.ranged = false;
    }
    value = viewLike.getViewSource();
  }
  result.base = value;
  result.fresh = isFreshAllocation(value);
  Operation *def = value.getDefiningOp();
  result.opaque =
      !result.fresh && def && body.isAncestor(def->getParentRegion());
  return result;
}

bool mayOverlap(const Footprint &a, const Footprint &b) {
  if (a.opaque || b.opaque)
    return true;
  if (a.base != b.base)
    // A fresh allocation is reached only through views of itself; two other
    // bases (function arguments, captured buffers) may alias.
    return !a.fresh && !b.fresh;
  if (!a.ranged || !b.ranged || a.shift != b.shift)
    return true;
  return a.begin < b.end && b.begin < a.end;
}

bool dependent(const Accesses &a, const Accesses &b) {
  if (a.empty() || b.empty())
    return false;
  if (a.unknown || b.unknown)
    return true;
  for (const Access &x : a.list)
    for (const Access &y : b.list)
      if ((x.write || y.write) && mayOverlap(x.bytes, y.bytes))
        return true;
  return false;
}

void collect(Operation *root, Region &body, Accesses &accesses) {
  root->walk([&](Operation *op) {
    if (isa<gpu::BarrierOp>(op)) {
      accesses.unknown = true;
      return;
    }
    // Register-only NVVM ops that declare no effects.
    if (isa<NVVM::MmaOp, NVVM::ConvertFloatToTF32Op>(op))
      return;
    // An op's own effects first: linalg ops on memrefs are both recursive
    // (their bodies) and declare their operands' reads and writes, and a
    // tile program leaves some (a one-thread fill or reduction) in place.
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        accesses.unknown = true;
      return; // a recursive op's nested ops are visited
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (MemoryEffects::EffectInstance &instance : instances) {
      if (isa<MemoryEffects::Allocate>(instance.getEffect()))
        continue;
      Value value = instance.getValue();
      if (!value || !isa<MemRefType>(value.getType())) {
        accesses.unknown = true;
        continue;
      }
      accesses.list.push_back(
          {footprintOf(value, body),
           !isa<MemoryEffects::Read>(instance.getEffect())});
    }
  });
}

} // namespace

int64_t moe::elideIndependentBarriers(gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  // The stretches between the barriers of the body.
  SmallVector<gpu::BarrierOp> barriers;
  SmallVector<Accesses> stretches(1);
  for (Operation &op : body) {
    if (auto barrier = dyn_cast<gpu::BarrierOp>(op)) {
      barriers.push_back(barrier);
      stretches.emplace_back();
      continue;
    }
    collect(&op, launch.getBody(), stretches.back());
  }
  int64_t erased = 0;
  Accesses since = stretches.front();
  for (auto [index, barrier] : llvm::enumerate(barriers)) {
    const Accesses &next = stretches[index + 1];
    if (dependent(since, next)) {
      since = next;
      continue;
    }
    since.list.append(next.list.begin(), next.list.end());
    since.unknown |= next.unknown;
    barrier.erase();
    ++erased;
  }
  return erased;
}
