//===- GemmEmitter.h - Tensor-core GEMM kernels -----------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The GPU back end's GEMM emitter: kernels C = init + A B on tensor cores
// (mma.sync m16n8k16, bf16 operands, fp32 accumulators) with a cp.async
// pipeline, one kernel per shape, and their launches. -moe-generate-gemm-
// kernels uses it for the dense contractions of the host code.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_GEMMEMITTER_H
#define MOE_GPU_GEMMEMITTER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::moe {

class DeviceEmitter;

/// What shapes a GEMM kernel's body: C [M, n] (f32) = init + A [M, k] B,
/// B stored [k, n] or, `transposed`, [n, k]; `aF32` / `bF32`: the operand
/// is f32 in global memory (else bf16).
struct GemmShape {
  int64_t k, n;
  bool aF32, bF32, transposed;
  double init;
  /// Columns of a block tile: 128 when they divide n, else 64.
  int64_t cols() const { return n % 128 == 0 ? 128 : 64; }
};

/// Builds the GEMM kernels of one gpu.module; contractions of the same
/// shape share one.
class GemmEmitter {
public:
  /// Rows of a block tile (two warps of 64 rows).
  static constexpr int64_t kRows = 128;
  /// Reduction elements per pipeline step (two m16n8k16 steps); k must be a
  /// multiple of it.
  static constexpr int64_t kStep = 32;
  /// Threads of a block (four warps).
  static constexpr int64_t kThreads = 128;

  /// Kernels go to `module`; `stages` (3 to 6) shared-memory stages.
  GemmEmitter(gpu::GPUModuleOp module, int64_t stages)
      : module(module), stages(stages) {}

  /// The kernel C = init + A B over arguments (A [?, k], B, C [?, n], M).
  gpu::GPUFuncOp kernel(Location loc, TypeRange argTypes,
                        const GemmShape &shape);
  /// The dynamic shared memory of `shape`'s kernel, in bytes.
  int64_t sharedBytes(const GemmShape &shape) const;
  /// Launches `func` (from kernel()) on `args` (A, B, C, M): a grid over the
  /// column and row tiles, none when M is 0.
  void launch(DeviceEmitter &e, gpu::GPUFuncOp func, const GemmShape &shape,
              ValueRange args);

private:
  gpu::GPUModuleOp module;
  int64_t stages;
  int64_t counter = 0;
  llvm::StringMap<gpu::GPUFuncOp> built;
};

} // namespace mlir::moe

#endif // MOE_GPU_GEMMEMITTER_H
