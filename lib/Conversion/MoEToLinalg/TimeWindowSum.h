//===- TimeWindowSum.h - A short convolution without a padded copy -*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_CONVERSION_MOETOLINALG_TIMEWINDOWSUM_H
#define MOE_LIB_CONVERSION_MOETOLINALG_TIMEWINDOWSUM_H

#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

namespace mlir::moe {

/// Which steps of the time axis a window of `W` taps reads.
enum class WindowSide {
  /// sum_i w[c, i] * x[b, t - (W - 1) + i, c]: the causal convolution.
  Past,
  /// sum_j w[c, W - 1 - j] * x[b, t + j, c]: its transpose (the input
  /// gradient from the output gradient).
  Future,
};

/// For every (b, t, c) of `input: [B, T, C]`, the fp32 sum over the taps of
/// the static window `weight: [C, W]` (taps outside [0, T) read zero), in
/// tap order from a zero start, exactly as the contraction over a
/// zero-padded copy sums it; then `epilogue(sum, extras at (b, t, c))` of
/// `resultElementType`. One parallel linalg.generic that reads `input` and
/// `weight` with tensor.extract: no padded copy, no separate fill or
/// element-wise pass. Null when the window is not static.
using WindowEpilogue =
    function_ref<Value(OpBuilder &, Location, Value sum, ValueRange extras)>;
Value timeWindowSum(ImplicitLocOpBuilder &b, TensorBuilder &tb, Value input,
                    Value weight, WindowSide side, ValueRange extras,
                    Type resultElementType, WindowEpilogue epilogue);

} // namespace mlir::moe

#endif // MOE_LIB_CONVERSION_MOETOLINALG_TIMEWINDOWSUM_H
