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
#include "mlir/IR/SymbolTable.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"

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

/// The declaration of runtime function `name` of type `type` in `module`,
/// created if missing; an error if the symbol is something else.
FailureOr<func::FuncOp> getOrCreateDecl(ModuleOp module, StringRef name,
                                        FunctionType type) {
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return existing->emitOpError("uses the symbol @")
             << name << ", which -moe-profile-ops reserves for the timer "
             << "runtime";
    return func;
  }
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

} // namespace

void MoEProfileOpsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  Dialect *moeDialect = context->getLoadedDialect<MoEDialect>();

  // The outermost moe ops of every function body.
  SmallVector<Operation *> ops;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (moeDialect && op->getDialect() == moeDialect &&
        op->getParentOfType<FunctionOpInterface>()) {
      ops.push_back(op);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  if (ops.empty())
    return;

  Builder builder(context);
  auto ptrType = LLVM::LLVMPointerType::get(context);
  Type i64 = builder.getI64Type();
  FailureOr<func::FuncOp> begin = getOrCreateDecl(
      module, kBeginName, builder.getFunctionType({i64, ptrType}, {}));
  FailureOr<func::FuncOp> end =
      getOrCreateDecl(module, kEndName, builder.getFunctionType({i64}, {}));
  if (failed(begin) || failed(end))
    return signalPassFailure();

  // One id and one name string per op kind, in order of appearance.
  llvm::StringMap<std::pair<int64_t, LLVM::GlobalOp>> kinds;
  SymbolTable symbols(module);
  OpBuilder globals = OpBuilder::atBlockBegin(module.getBody());
  for (Operation *op : ops) {
    StringRef kind = op->getName().getStringRef();
    auto [it, inserted] = kinds.try_emplace(kind);
    if (inserted) {
      std::string bytes = kind.str();
      bytes.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), bytes.size());
      auto global = LLVM::GlobalOp::create(
          globals, module.getLoc(), type, /*isConstant=*/true,
          LLVM::Linkage::Internal,
          (kNamePrefix + llvm::Twine(kinds.size() - 1)).str(),
          builder.getStringAttr(bytes));
      symbols.insert(global); // renames it if the name is taken
      it->second = {int64_t(kinds.size() - 1), global};
    }
    auto [id, global] = it->second;
    Location loc = op->getLoc();
    OpBuilder b(op);
    Value idValue = arith::ConstantIntOp::create(b, loc, i64, id);
    Value name = LLVM::AddressOfOp::create(b, loc, global);
    func::CallOp::create(b, loc, *begin, ValueRange{idValue, name});
    b.setInsertionPointAfter(op);
    func::CallOp::create(b, loc, *end, ValueRange{idValue});
  }
}
