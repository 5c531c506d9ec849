//===- Pipelines.h - Named moe-mlir pass pipelines --------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The project's named pass pipelines (`moe-lower-to-cpu`, ...): C++ builders
// that tools such as moe-run call directly, and their registration for
// moe-opt (`moe-opt --moe-lower-to-cpu`).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_PIPELINES_PIPELINES_H
#define MOE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::moe {

/// Options of the `moe-lower-to-cpu` pipeline.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Mark every function `llvm.emit_c_interface` so that a "
                     "host program (moe-run) can call it with memref "
                     "descriptors through `_mlir_ciface_<name>`"),
      llvm::cl::init(true)};
};

/// Adds the passes that lower moe-specific ops to upstream tensor-level IR
/// (func + linalg/tensor/scf/arith/math). This is the hook through which the
/// moe dialect reaches every back end: each pass that turns moe ops into
/// upstream ops (decomposition of layers, moe-to-linalg conversions, tiling of
/// linear attention, ...) is appended here, in the order it must run. Today
/// it holds `convert-moe-to-linalg`; moe ops that no pass lowers yet are
/// rejected by bufferization with "op was not bufferized".
void addMoEToUpstreamPasses(OpPassManager &pm);

/// Builds `moe-lower-to-cpu`: from tensor-level IR (anchored on the builtin
/// module) to the LLVM dialect for the host, ready for mlir::ExecutionEngine
/// or `mlir-translate --mlir-to-llvmir`. In order:
///  1. addMoEToUpstreamPasses (moe ops -> upstream tensor IR);
///  2. `llvm-request-c-wrappers` on every function (emitCInterface);
///  3. one-shot bufferization across function boundaries, with identity
///     layouts on function arguments and results, then the ownership-based
///     buffer deallocation pipeline (returned buffers are owned by the caller,
///     which frees them with `free`);
///  4. linalg to loops, scf.forall to scf.for, vector to scf;
///  5. expand-strided-metadata, lower-affine, scf to cf;
///  6. conversion to LLVM: math (LLVM intrinsics, then libm calls for the
///     rest), vector, memref (malloc/free), arith, index, ub, cf, func, and
///     reconcile-unrealized-casts.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers every named pipeline of the project with the global registry.
void registerMoEPipelines();

} // namespace mlir::moe

#endif // MOE_PIPELINES_PIPELINES_H
