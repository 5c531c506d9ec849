//===- GemmEmitter.h - Tensor-core GEMM kernels -----------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The GPU back end's GEMM emitter: kernels C = init + A B on tensor cores
// (mma.sync m16n8k16, bf16 operands, fp32 accumulators) with a cp.async
// pipeline, one kernel per shape, and their launches. -moe-generate-gemm-
// kernels uses it for the dense contractions of the host code: the
// projections (a dynamic number of rows times a static weight) and their
// weight gradients (a static [m, n] summed over a dynamic number of rows,
// split over blocks and combined in a fixed order).
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
/// is f32 in global memory (else bf16). With `rowSum` (a weight gradient),
/// C [m, n] = init + A^T B instead, A [R, m] and B [R, n] row-major with a
/// dynamic R: `k` is unused and `transposed` false.
struct GemmShape {
  int64_t k, n;
  bool aF32, bF32, transposed;
  double init;
  bool rowSum = false;
  int64_t m = 0;
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
  /// multiple of 8 (the last step zero-filled past k).
  static constexpr int64_t kStep = 32;
  /// Threads of a block (four warps).
  static constexpr int64_t kThreads = 128;
  /// Blocks a `rowSum` GEMM aims for (two per SM of an H100 or H200): its
  /// [m, n] tiles times its row splits.
  static constexpr int64_t kRowSumBlocks = 264;

  /// Kernels go to `module`; `stages` (3 to 6) shared-memory stages.
  GemmEmitter(gpu::GPUModuleOp module, int64_t stages)
      : module(module), stages(stages) {}

  /// The kernel C = init + A B over arguments (A [?, k], B, C [?, n], M).
  /// For `rowSum` shapes, the kernel of one row split's partial sums over
  /// (A [?, m], B [?, n], P [splits * m * n], R, rows per split): block
  /// (x, y, z) sums rows [z s, min(z s + s, R)) of its tile into slice z
  /// of P (zeros where the slice has no rows).
  gpu::GPUFuncOp kernel(Location loc, TypeRange argTypes,
                        const GemmShape &shape);
  /// `rowSum` shapes: the kernel C = init + the sum of P's slices in slice
  /// order, over arguments (P, C [m, n], splits).
  gpu::GPUFuncOp combineKernel(Location loc, TypeRange argTypes,
                               const GemmShape &shape);
  /// The dynamic shared memory of `shape`'s kernel, in bytes.
  int64_t sharedBytes(const GemmShape &shape) const;
  /// Launches `func` (from kernel()) on `args` (A, B, C, M): a grid over the
  /// column and row tiles, none when M is 0.
  void launch(DeviceEmitter &e, gpu::GPUFuncOp func, const GemmShape &shape,
              ValueRange args);
  /// `rowSum` shapes: C [m, n] = init + A^T B on (A [?, m], B [?, n], C),
  /// the rows split so that the tiles times the splits fill the GPU: the
  /// partial kernel into a device buffer, then the combining kernel.
  void launchRowSum(DeviceEmitter &e, const GemmShape &shape, Value a, Value b,
                    Value c);

private:
  gpu::GPUModuleOp module;
  int64_t stages;
  int64_t counter = 0;
  llvm::StringMap<gpu::GPUFuncOp> built;
};

} // namespace mlir::moe

#endif // MOE_GPU_GEMMEMITTER_H
