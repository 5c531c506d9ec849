//===- LaunchMemoryEffects.h - Memory effects of GPU launches ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The GPU back end's model of what `gpu.launch_func` and `gpu.wait` do to
// memory, attached to the upstream ops as an external interface.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_LAUNCHMEMORYEFFECTS_H
#define MOE_GPU_LAUNCHMEMORYEFFECTS_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::moe {

/// Declares that `gpu.launch_func` and `gpu.wait` read and write memory, so
/// that buffer deallocation accepts the launches that the kernel generators
/// (-moe-generate-kda-kernels and the others) emit before bufferization.
void registerGPULaunchMemoryEffects(DialectRegistry &registry);

} // namespace mlir::moe

#endif // MOE_GPU_LAUNCHMEMORYEFFECTS_H
