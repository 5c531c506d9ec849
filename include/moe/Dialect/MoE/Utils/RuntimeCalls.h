//===- RuntimeCalls.h - Calls of run-time functions from the IR -*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What passes that insert calls of the C run-time functions share: the
// private declaration of a function, and constant C strings to pass them.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_UTILS_RUNTIMECALLS_H
#define MOE_DIALECT_MOE_UTILS_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::moe {

/// The private declaration of run-time function `name` of type `type` in
/// `module`, created if missing; an error naming `passName` if the symbol
/// is something else.
FailureOr<func::FuncOp> getOrCreateRuntimeDecl(ModuleOp module, StringRef name,
                                               FunctionType type,
                                               StringRef passName);

/// The ops of `dialect` inside function bodies of `module` that no other op
/// of `dialect` encloses, in walk order (empty when `dialect` is null): what
/// a pass bracketing ops with run-time calls instruments.
SmallVector<Operation *> getOutermostDialectOpsInFunctions(ModuleOp module,
                                                           Dialect *dialect);

/// NUL-terminated constant strings of a module as internal LLVM globals
/// named `<prefix><n>`, one per distinct text.
class RuntimeStrings {
public:
  RuntimeStrings(ModuleOp module, StringRef prefix);
  /// The global holding `text`, created on first use.
  LLVM::GlobalOp get(StringRef text);
  /// `llvm.mlir.addressof` of the global holding `text`, built at `b`.
  Value address(OpBuilder &b, Location loc, StringRef text);

private:
  std::string prefix;
  /// Inserts the globals at the top of the module, in order of creation.
  OpBuilder globalsBuilder;
  SymbolTable symbols;
  llvm::StringMap<LLVM::GlobalOp> globals;
};

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_UTILS_RUNTIMECALLS_H
