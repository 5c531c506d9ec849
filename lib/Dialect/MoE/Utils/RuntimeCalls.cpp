//===- RuntimeCalls.cpp - Calls of run-time functions from the IR ---------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Utils/RuntimeCalls.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::moe;

FailureOr<func::FuncOp> moe::getOrCreateRuntimeDecl(ModuleOp module,
                                                    StringRef name,
                                                    FunctionType type,
                                                    StringRef passName) {
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return existing->emitOpError("uses the symbol @")
             << name << ", which " << passName
             << " reserves for a run-time function of type " << type;
    return func;
  }
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

SmallVector<Operation *>
moe::getOutermostDialectOpsInFunctions(ModuleOp module, Dialect *dialect) {
  SmallVector<Operation *> ops;
  if (!dialect)
    return ops;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->getDialect() == dialect &&
        op->getParentOfType<FunctionOpInterface>()) {
      ops.push_back(op);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  return ops;
}

RuntimeStrings::RuntimeStrings(ModuleOp module, StringRef prefix)
    : prefix(prefix.str()),
      globalsBuilder(OpBuilder::atBlockBegin(module.getBody())),
      symbols(module) {}

LLVM::GlobalOp RuntimeStrings::get(StringRef text) {
  auto [it, inserted] = globals.try_emplace(text);
  if (!inserted)
    return it->second;
  std::string bytes = text.str();
  bytes.push_back('\0');
  OpBuilder &b = globalsBuilder;
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  auto global = LLVM::GlobalOp::create(
      b, b.getInsertionBlock()->getParentOp()->getLoc(), type,
      /*isConstant=*/true, LLVM::Linkage::Internal,
      prefix + std::to_string(globals.size() - 1), b.getStringAttr(bytes));
  symbols.insert(global); // renames it if the name is taken
  it->second = global;
  return global;
}

Value RuntimeStrings::address(OpBuilder &b, Location loc, StringRef text) {
  return LLVM::AddressOfOp::create(b, loc, get(text));
}
