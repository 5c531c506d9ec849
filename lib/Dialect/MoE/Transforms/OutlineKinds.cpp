//===- OutlineKinds.cpp - One private function per kind of moe op group ---===//
//
// Part of the moe-mlir project.
//
// Implements -moe-outline-kinds: every group of moe ops tied by their
// operands becomes a call of a private function, shared by every group of
// the same kind, so that the back end lowers and optimises each kind once
// (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "moe/Analysis/DecayBound.h"
#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEOUTLINEKINDS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-outline-kinds"

namespace {

struct MoEOutlineKindsPass
    : public moe::impl::MoEOutlineKindsBase<MoEOutlineKindsPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// Outlines the groups of `block`.
  void outlineBlock(Block &block);
  /// Replaces the ops of `group` (in block order) by one call; false when
  /// a result is used, outside the group, before the group's last op.
  bool outlineGroup(ArrayRef<Operation *> group);
  /// The function that holds `group`: an existing one of the same kind, or
  /// a new one; `inputs` and `outputs` are its arguments and results.
  func::FuncOp functionFor(ArrayRef<Operation *> group, ArrayRef<Value> inputs,
                           ArrayRef<Value> outputs);

  SymbolTable *symbols = nullptr;
  /// The proven decay bound of every value that has one, taken before any
  /// change and carried over to the calls' results: two groups whose
  /// arguments have different bounds are different kinds, so that the
  /// calls of one function agree and the analysis, which joins them, still
  /// proves what it proved inline.
  DenseMap<Value, double> decayBounds;
  /// Printed function (with a placeholder name) -> the function.
  llvm::StringMap<func::FuncOp> kinds;
  int64_t numGroups = 0;
};

/// A pure moe op without regions whose results are all tensors: what may
/// move into a function. (Collectives declare no memory effects, so they are
/// not effect-free and stay.)
bool isOutlinable(Operation *op) {
  if (!isa_and_nonnull<MoEDialect>(op->getDialect()) ||
      op->getNumRegions() != 0 || op->getNumResults() == 0 ||
      op->hasTrait<OpTrait::IsTerminator>())
    return false;
  if (!isMemoryEffectFree(op))
    return false;
  return llvm::all_of(op->getResultTypes(),
                      [](Type type) { return isa<RankedTensorType>(type); });
}

/// A producer whose op the functions copy instead of taking its value as an
/// argument: a constant, a fresh tensor (its contents are undefined, so a
/// copy is the same tensor) or a fill of one.
bool isCopiedIn(Operation *producer) {
  if (!producer)
    return false;
  if (producer->hasTrait<OpTrait::ConstantLike>() ||
      isa<tensor::EmptyOp>(producer))
    return true;
  auto fill = dyn_cast<linalg::FillOp>(producer);
  return fill && fill.hasPureTensorSemantics() &&
         fill.getOutputs().front().getDefiningOp<tensor::EmptyOp>();
}

/// An op of the glue between the layer ops that is outlined alone (with
/// the `glue` option): a linalg.generic on tensors whose outputs are fresh
/// (so that its function writes nothing it is given), or an element-wise
/// arith or math op on whole tensors.
bool isOutlinableGlue(Operation *op) {
  auto isTensor = [](Type type) { return isa<RankedTensorType>(type); };
  if (op->getNumResults() == 0 || !llvm::all_of(op->getResultTypes(), isTensor))
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return generic.hasPureTensorSemantics() &&
           llvm::all_of(generic.getOutputs(), [](Value output) {
             return isCopiedIn(output.getDefiningOp());
           });
  if (!isa_and_nonnull<arith::ArithDialect, math::MathDialect>(
          op->getDialect()))
    return false;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
         !op->hasTrait<OpTrait::ConstantLike>() &&
         llvm::all_of(op->getOperandTypes(), isTensor);
}

/// What `op` reads: its operands, then the values its regions use from
/// above.
SmallVector<Value> readValues(Operation *op) {
  SmallVector<Value> values(op->getOperands());
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  values.append(above.begin(), above.end());
  return values;
}
} // namespace

void MoEOutlineKindsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable table(module);
  symbols = &table;
  {
    DecayBounds bounds(module);
    module.walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (std::optional<double> bound = bounds.getLowerBound(result))
          decayBounds[result] = *bound;
    });
  }
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs) {
    if (func.isExternal() || func->hasAttr(kOutlinedKindAttrName))
      continue;
    SmallVector<Block *> blocks;
    func.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      outlineBlock(*block);
  }
  LLVM_DEBUG(llvm::dbgs() << numGroups << " groups, " << kinds.size()
                          << " kinds\n");
}

void MoEOutlineKindsPass::outlineBlock(Block &block) {
  // Groups, in block order: an outlinable op joins the groups of its
  // outlinable producers when that keeps each of them one call, that is,
  // when nothing outside it uses their results before the op. (A forward
  // op and the gradient op that reads it stay apart: the forward goes on
  // between them.)
  SmallVector<SmallVector<Operation *>> groups;
  DenseMap<Operation *, int64_t> groupOf;
  auto usedOnlyAfter = [&](int64_t group, Operation *op) {
    for (Operation *member : groups[group])
      for (Operation *user : member->getUsers()) {
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        if (!ancestor)
          return false;
        if (ancestor == op || groupOf.lookup(ancestor) == group + 1)
          continue;
        if (ancestor->isBeforeInBlock(op))
          return false;
      }
    return true;
  };
  for (Operation &op : block) {
    if (!isOutlinable(&op))
      continue;
    llvm::SetVector<int64_t> joined;
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      int64_t group = producer ? groupOf.lookup(producer) - 1 : -1;
      if (group >= 0 && !joined.contains(group) && usedOnlyAfter(group, &op))
        joined.insert(group);
    }
    if (joined.empty()) {
      groups.push_back({&op});
      groupOf[&op] = groups.size();
      continue;
    }
    // Merge into the first; the others empty out. Members stay in block
    // order.
    int64_t target = joined.front();
    for (int64_t other : llvm::drop_begin(joined)) {
      for (Operation *member : groups[other])
        groupOf[member] = target + 1;
      groups[target].append(groups[other]);
      groups[other].clear();
    }
    groups[target].push_back(&op);
    groupOf[&op] = target + 1;
    llvm::sort(groups[target], [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
  }
  for (SmallVector<Operation *> &group : groups) {
    if (group.empty() || outlineGroup(group))
      continue;
    // Not reached for groups built above; op by op is always legal.
    for (Operation *op : group)
      (void)outlineGroup({op});
  }
  if (!glue)
    return;
  SmallVector<Operation *> glueOps;
  for (Operation &op : block)
    if (isOutlinableGlue(&op))
      glueOps.push_back(&op);
  for (Operation *op : glueOps)
    (void)outlineGroup({op});
}

bool MoEOutlineKindsPass::outlineGroup(ArrayRef<Operation *> group) {
  llvm::SmallPtrSet<Operation *, 8> members(group.begin(), group.end());
  Operation *last = group.back();
  Block *block = last->getBlock();
  llvm::SetVector<Value> inputs;
  SmallVector<Value> outputs;
  // Constants and fresh tensors are copied into the function (the analyses
  // and the lowering see them as before), with what they read; everything
  // else is an argument.
  std::function<void(Value)> addInput = [&](Value value) {
    Operation *producer = value.getDefiningOp();
    if (producer && members.contains(producer))
      return;
    if (!isCopiedIn(producer)) {
      inputs.insert(value);
      return;
    }
    for (Value read : readValues(producer))
      addInput(read);
  };
  for (Operation *op : group) {
    for (Value read : readValues(op))
      addInput(read);
    for (Value result : op->getResults()) {
      bool usedOutside = false;
      for (Operation *user : result.getUsers()) {
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        if (ancestor && members.contains(ancestor))
          continue;
        // The call stands where the last op stands.
        if (!ancestor || ancestor == last || ancestor->isBeforeInBlock(last))
          return false;
        usedOutside = true;
      }
      if (usedOutside)
        outputs.push_back(result);
    }
  }
  func::FuncOp callee = functionFor(group, inputs.getArrayRef(), outputs);
  OpBuilder builder(last);
  builder.setInsertionPointAfter(last);
  auto call = func::CallOp::create(builder, group.front()->getLoc(), callee,
                                   inputs.getArrayRef());
  call->setAttr(kOutlinedKindAttrName, builder.getUnitAttr());
  for (auto [output, replacement] : llvm::zip(outputs, call.getResults())) {
    output.replaceAllUsesWith(replacement);
    auto bound = decayBounds.find(output);
    if (bound != decayBounds.end())
      decayBounds[replacement] = bound->second;
  }
  for (Operation *op : llvm::reverse(group))
    op->erase();
  ++numGroups;
  return true;
}

func::FuncOp MoEOutlineKindsPass::functionFor(ArrayRef<Operation *> group,
                                              ArrayRef<Value> inputs,
                                              ArrayRef<Value> outputs) {
  MLIRContext *ctx = &getContext();
  Operation *first = group.front();
  SmallVector<Type> inputTypes, outputTypes;
  for (Value input : inputs)
    inputTypes.push_back(input.getType());
  for (Value output : outputs)
    outputTypes.push_back(output.getType());
  OpBuilder builder(ctx);
  auto func =
      func::FuncOp::create(builder, first->getLoc(), "kind",
                           builder.getFunctionType(inputTypes, outputTypes));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [input, argument] : llvm::zip(inputs, entry->getArguments()))
    mapping.map(input, argument);
  std::function<void(Value)> copyIn = [&](Value value) {
    Operation *producer = value.getDefiningOp();
    if (mapping.contains(value) || !isCopiedIn(producer))
      return;
    for (Value read : readValues(producer))
      copyIn(read);
    builder.clone(*producer, mapping);
  };
  for (Operation *op : group) {
    for (Value read : readValues(op))
      copyIn(read);
    builder.clone(*op, mapping);
  }
  SmallVector<Value> returned;
  for (Value output : outputs)
    returned.push_back(mapping.lookup(output));
  func::ReturnOp::create(builder, first->getLoc(), returned);
  func.setPrivate();
  func->setAttr(kOutlinedKindAttrName, UnitAttr::get(ctx));

  // The kind: the function's text (locations are not printed).
  std::string text;
  llvm::raw_string_ostream os(text);
  func->print(os, OpPrintingFlags().printGenericOpForm());
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto bound = decayBounds.find(input);
    if (bound != decayBounds.end())
      os << "\nargument " << index << " decay bound " << bound->second;
  }
  auto [it, inserted] = kinds.try_emplace(text, func);
  if (!inserted) {
    func->erase();
    return it->second;
  }
  // Named after its kinds of ops, in order: @__moe_kind_l2_norm_decay_gate_
  // kda_rms_norm, ... (a suffix tells kinds of the same ops apart).
  std::string name = "__moe_kind";
  llvm::SmallSetVector<StringRef, 4> opNames;
  for (Operation *op : group)
    opNames.insert(op->getName().stripDialect());
  for (StringRef opName : opNames)
    name += ("_" + opName).str();
  func.setSymName(name);
  symbols->insert(func);
  return func;
}
