//===- InitAll.h - Register every moe dialect and pass ----------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The one place tools register the project's dialects and passes; each
// library exports its own registration function and this header lists them.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_INITALL_H
#define MOE_INITALL_H

#include "moe/Conversion/Passes.h"
#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/Transforms/OutlinedKinds.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/GPU/LaunchMemoryEffects.h"
#include "moe/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir::moe {

inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<MoEDialect>();
  registerGPULaunchMemoryEffects(registry);
  registerOutlinedKindCallModels(registry);
}

inline void registerAllPasses() {
  registerMoEPasses();
  registerMoEConversionPasses();
  registerMoEPipelines();
}

} // namespace mlir::moe

#endif // MOE_INITALL_H
