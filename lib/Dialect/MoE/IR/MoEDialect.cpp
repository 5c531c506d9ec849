//===- MoEDialect.cpp - moe dialect registration --------------------------===//
//
// Part of the moe-mlir project.
//
// Registers the moe dialect's ops and attributes.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::moe;

#include "dialects/MoE/MoEDialect.cpp.inc"
#include "dialects/MoE/MoEInterfaces.cpp.inc"

void MoEDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/MoE/MoEOps.cpp.inc"
      >();
  registerAttributes();
  registerLinearAttentionGradOps();
  registerCommonGradOps();
  registerAttentionGradOps();
  registerRoutingGradOps();
}
