//===- BF16Conversion.h - f32 -> bf16 rounding on the GPU -------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The rounding of f32 GEMM operands to bf16 (round to nearest even) that the
// precision policy `matmul-precision=bf16` asks of the kernel generators:
// one conversion kernel per gpu.module and its launches into device
// buffers.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_BF16CONVERSION_H
#define MOE_GPU_BF16CONVERSION_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <functional>
#include <string>

namespace mlir::moe {

/// Builds and launches the conversion kernel of one gpu.module.
class BF16Converter {
public:
  /// Threads of the kernel (eight elements each).
  static constexpr int64_t kThreads = 256;

  /// Kernels go to `module`, named by `uniqueName("..._to_bf16")`-style
  /// calls of `uniqueName` with `stem`.
  BF16Converter(gpu::GPUModuleOp module, std::string stem,
                std::function<std::string(StringRef)> uniqueName)
      : module(module), stem(std::move(stem)),
        uniqueName(std::move(uniqueName)) {}

  /// Launches `elements` (a multiple of 8) f32 of the identity-layout `src`
  /// rounded to bf16 into the flat device buffer `dst`.
  void launch(ImplicitLocOpBuilder &b, Value src, Value dst, Value elements);
  /// The tensor `tensor` (static shape) as a bf16 buffer of its shape: in
  /// place when bf16, else rounded into a device buffer (launched here).
  Value staticAsBF16(ImplicitLocOpBuilder &b, Value tensor);

private:
  gpu::GPUFuncOp kernel(Location loc, TypeRange argTypes);

  gpu::GPUModuleOp module;
  std::string stem;
  std::function<std::string(StringRef)> uniqueName;
  gpu::GPUFuncOp built;
};

} // namespace mlir::moe

#endif // MOE_GPU_BF16CONVERSION_H
