//===- HoistAllocas.cpp - Fixed-size stack slots at function entry --------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "moe/Pipelines/HoistAllocas.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

unsigned mlir::moe::hoistConstantAllocasToEntry(llvm::Module &module) {
  unsigned moved = 0;
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    llvm::BasicBlock &entry = function.getEntryBlock();
    llvm::SmallVector<llvm::AllocaInst *> allocas;
    for (llvm::BasicBlock &block : function) {
      if (&block == &entry)
        continue;
      for (llvm::Instruction &inst : block)
        if (auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
          if (llvm::isa<llvm::Constant>(alloca->getArraySize()))
            allocas.push_back(alloca);
    }
    llvm::BasicBlock::iterator at = entry.getFirstInsertionPt();
    for (llvm::AllocaInst *alloca : allocas) {
      alloca->moveBefore(at);
      ++moved;
    }
  }
  return moved;
}
