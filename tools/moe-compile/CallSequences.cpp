//===- CallSequences.cpp - Host call sequences left unoptimised -----------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "CallSequences.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

using namespace llvm;

/// Moves each outermost loop of `function` that CodeExtractor accepts into a
/// function of its own; returns how many moved.
static unsigned extractOutermostLoops(Function &function) {
  DominatorTree dominators(function);
  LoopInfo loops(dominators);
  // The regions are taken before any extraction: they are disjoint, and an
  // extraction rewrites only its own blocks (and keeps `dominators` current).
  SmallVector<SmallVector<BasicBlock *>> regions;
  for (Loop *loop : loops)
    regions.emplace_back(loop->getBlocks().begin(), loop->getBlocks().end());
  CodeExtractorAnalysisCache cache(function);
  unsigned extracted = 0;
  for (SmallVector<BasicBlock *> &blocks : regions) {
    CodeExtractor extractor(blocks, &dominators, /*AggregateArgs=*/false,
                            /*BFI=*/nullptr, /*BPI=*/nullptr, /*AC=*/nullptr,
                            /*AllowVarArgs=*/false, /*AllowAlloca=*/false,
                            /*AllocationBlock=*/nullptr, "moe_loop");
    if (extractor.isEligible() && extractor.extractCodeRegion(cache))
      ++extracted;
  }
  return extracted;
}

/// Whether `function` computes in floating point (arithmetic, comparisons,
/// conversions, math intrinsics): then the optimiser may matter. Loads,
/// stores and calls that only pass floating-point values on do not count.
static bool hasFloatingPointArithmetic(Function &function) {
  for (Instruction &inst : instructions(function)) {
    bool floating = inst.getType()->isFPOrFPVectorTy();
    if (isa<BinaryOperator, UnaryOperator>(inst) && floating)
      return true;
    if (isa<FCmpInst>(inst))
      return true;
    if (auto *cast = dyn_cast<CastInst>(&inst))
      if (floating || cast->getSrcTy()->isFPOrFPVectorTy())
        return true;
    if (isa<IntrinsicInst>(inst) && floating)
      return true;
    if (isa<SelectInst, PHINode>(inst) && floating)
      return true;
  }
  return false;
}

mlir::moe::CallSequenceCounts
mlir::moe::leaveCallSequencesUnoptimised(Module &module, unsigned limit,
                                         bool extractLoops) {
  CallSequenceCounts counts;
  if (limit == 0)
    return counts;
  SmallVector<Function *> large;
  for (Function &function : module)
    if (!function.isDeclaration() && function.getInstructionCount() > limit)
      large.push_back(&function);
  for (Function *function : large) {
    if (extractLoops) {
      counts.loopsExtracted += extractOutermostLoops(*function);
      if (hasFloatingPointArithmetic(*function))
        continue;
    }
    function->removeFnAttr(Attribute::AlwaysInline);
    function->addFnAttr(Attribute::NoInline);
    function->addFnAttr(Attribute::OptimizeNone);
    ++counts.unoptimised;
  }
  return counts;
}
