//===- OutlinedKinds.h - Calls of -moe-outline-kinds functions --*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What the later passes know about the functions of -moe-outline-kinds:
// they only read their arguments and return fresh buffers (after
// bufferization, the ownership-based deallocation's ABI clones a returned
// argument), so a call's results never alias its operands.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_OUTLINEDKINDS_H
#define MOE_DIALECT_MOE_TRANSFORMS_OUTLINEDKINDS_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class DialectRegistry;
class Operation;
} // namespace mlir

namespace mlir::moe {

/// The unit attribute on every function of -moe-outline-kinds and on every
/// call of one that the pass creates.
inline constexpr llvm::StringLiteral kOutlinedKindAttrName =
    "moe.outlined_kind";

/// Whether `op` is a `func.call` of a function of -moe-outline-kinds (one
/// that carries the pass's mark).
bool isOutlinedKindCall(Operation *op);

/// Attaches the buffer view flow model of `func.call` (results of a call of
/// an outlined kind depend on no operand; any other call's results may be
/// any of its memref operands), so that the deallocation pipeline frees a
/// buffer passed to an outlined kind after its last use, not at the end of
/// the function behind a run-time alias check.
void registerOutlinedKindCallModels(DialectRegistry &registry);

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_OUTLINEDKINDS_H
