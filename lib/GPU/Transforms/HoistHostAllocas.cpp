//===- HoistHostAllocas.cpp - Fixed-size host stack slots at entry --------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-hoist-host-allocas: llvm.alloca ops of a constant count
// outside a function's entry block move to its start, so that a launch in a
// host loop reuses one argument slot instead of growing the stack on every
// iteration.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEHOISTHOSTALLOCAS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

struct MoEHoistHostAllocasPass
    : public moe::impl::MoEHoistHostAllocasBase<MoEHoistHostAllocasPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (func.isExternal())
        continue;
      Block &entry = func.getBody().front();
      SmallVector<LLVM::AllocaOp> allocas;
      func.walk([&](LLVM::AllocaOp alloca) {
        if (alloca->getBlock() != &entry &&
            matchPattern(alloca.getArraySize(), m_Constant()))
          allocas.push_back(alloca);
      });
      for (LLVM::AllocaOp alloca : allocas) {
        // The count's constant is copied: it may have other users where it
        // stands.
        Operation *count = alloca.getArraySize().getDefiningOp();
        Operation *hoistedCount = count->clone();
        entry.getOperations().push_front(hoistedCount);
        alloca->moveAfter(hoistedCount);
        alloca.getArraySizeMutable().assign(hoistedCount->getResult(0));
        ++numHoisted;
      }
    }
  }
};

} // namespace
