//===- ProfileOps.cpp - Bracket moe ops with timer calls ------------------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-profile-ops: every moe op inside a function is bracketed
// by calls of the CPU timer runtime (moe_prof_begin / moe_prof_end in
// lib/CpuRuntime/Profile.cpp), keyed by its op kind, so that a program can
// print where its time went.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/RuntimeCalls.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEPROFILEOPS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

static constexpr llvm::StringLiteral kBeginName = "moe_prof_begin";
static constexpr llvm::StringLiteral kEndName = "moe_prof_end";
static constexpr llvm::StringLiteral kNamePrefix = "__moe_prof_name_";

namespace {

struct MoEProfileOpsPass
    : public moe::impl::MoEProfileOpsBase<MoEProfileOpsPass> {
  void runOnOperation() override;
};

} // namespace

void MoEProfileOpsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  SmallVector<Operation *> ops = getOutermostDialectOpsInFunctions(
      module, context->getLoadedDialect<MoEDialect>());
  if (ops.empty())
    return;

  Builder builder(context);
  auto ptrType = LLVM::LLVMPointerType::get(context);
  Type i64 = builder.getI64Type();
  FailureOr<func::FuncOp> begin = getOrCreateRuntimeDecl(
      module, kBeginName, builder.getFunctionType({i64, ptrType}, {}),
      "-moe-profile-ops");
  FailureOr<func::FuncOp> end = getOrCreateRuntimeDecl(
      module, kEndName, builder.getFunctionType({i64}, {}), "-moe-profile-ops");
  if (failed(begin) || failed(end))
    return signalPassFailure();

  // One id and one name string per op kind, in order of appearance.
  llvm::StringMap<int64_t> kinds;
  RuntimeStrings names(module, kNamePrefix);
  for (Operation *op : ops) {
    StringRef kind = op->getName().getStringRef();
    int64_t id = kinds.try_emplace(kind, kinds.size()).first->second;
    Location loc = op->getLoc();
    OpBuilder b(op);
    Value idValue = arith::ConstantIntOp::create(b, loc, i64, id);
    Value name = names.address(b, loc, kind);
    func::CallOp::create(b, loc, *begin, ValueRange{idValue, name});
    b.setInsertionPointAfter(op);
    func::CallOp::create(b, loc, *end, ValueRange{idValue});
  }
}
