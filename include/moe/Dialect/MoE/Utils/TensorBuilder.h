//===- TensorBuilder.h - Build linalg-on-tensors IR -------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Helpers that build element-wise maps, reductions over the last dimension,
// contractions and reshapes as linalg/tensor ops on (possibly dynamically
// shaped) tensors. Shared by the moe passes and conversions (-moe-decompose,
// -moe-tile-linear-attention, -moe-tile-attention, -convert-moe-to-linalg).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_UTILS_TENSORBUILDER_H
#define MOE_DIALECT_MOE_UTILS_TENSORBUILDER_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::moe {

/// The ranked tensor type of `value`.
RankedTensorType tensorTypeOf(Value value);

/// The static shape that `sizes` describes (dynamic where a size is a value).
SmallVector<int64_t> staticShapeOf(ArrayRef<OpFoldResult> sizes);

/// Converts a scalar float to the float `type` (extension or truncation).
Value convertScalar(OpBuilder &b, Location loc, Value value, Type type);

/// A float constant of the scalar float `type`.
Value floatConstant(OpBuilder &b, Location loc, Type type, double value);

/// `1 / (1 + exp(-x))`.
Value buildSigmoid(OpBuilder &b, Location loc, Value x);

/// `log(1 + exp(x))` as `max(x, 0) + log1p(exp(-|x|))`: the exponent is
/// never positive, so it neither overflows for large `x` nor rounds to zero
/// for very negative `x`.
Value buildSoftplus(OpBuilder &b, Location loc, Value x);

/// The gated FFN activation `h(a, u)` on scalars `a = x Wg`, `u = x Wu`
/// (ALGORITHMS.md sections 6 and 7.1): SwiGLU `a sigmoid(a) u` without
/// `gateBeta`; SiTU-GLU `gateBeta tanh(a / gateBeta) sigmoid(a) cap(u)` with
/// it, where `cap(u) = upBeta tanh(u / upBeta)` (`u` without `upBeta`).
Value buildGatedActivation(OpBuilder &b, Location loc, Value a, Value u,
                           std::optional<double> gateBeta,
                           std::optional<double> upBeta);

/// The partial derivatives `(dh/da, dh/du)` of buildGatedActivation at the
/// scalars `a`, `u` (ALGORITHMS.md section 6). `sech^2(v) = 4e / (1 + e)^2`
/// with `e = exp(-2|v|)` and `sigmoid(a) sigmoid(-a)` keep every term finite
/// for inputs of any magnitude.
std::pair<Value, Value> buildGatedActivationGrad(OpBuilder &b, Location loc,
                                                 Value a, Value u,
                                                 std::optional<double> gateBeta,
                                                 std::optional<double> upBeta);

/// `(d0, ..., d{numDims-1}) -> (d{dims[0]}, d{dims[1]}, ...)`.
AffineMap dimsMap(MLIRContext *ctx, int64_t numDims, ArrayRef<int64_t> dims);

/// `(d0, ..., d{numDims-1}) -> (d0, ..., d{numDims-2})`: reads a tensor that
/// lacks the last (reduced) dimension.
AffineMap leadingDimsMap(MLIRContext *ctx, int64_t numDims);

/// Body of an element-wise or reduction generic: gets the scalar block
/// arguments (without the output for `map`) and returns the value to yield.
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Body of a generic with any number of results: gets the scalars of the
/// inputs, then of the outputs, and returns the values to yield.
using ScalarsFn =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// Builds linalg-on-tensors IR at one location.
class TensorBuilder {
public:
  explicit TensorBuilder(ImplicitLocOpBuilder &b) : b(b) {}

  /// The sizes of `value`: static dimensions as attributes, dynamic ones as
  /// `tensor.dim` results.
  SmallVector<OpFoldResult> sizesOf(Value value);

  /// A `tensor.empty` of `sizes` filled with `value` (of `elementType`).
  Value filled(ArrayRef<OpFoldResult> sizes, Type elementType, double value);

  /// One `linalg.generic` over `numLoops` loops whose first `numParallel`
  /// loops are parallel and the rest reductions: input `i` is read through
  /// `inputMaps[i]`, output `j` starts from `inits[j]` and is indexed by
  /// `outputMaps[j]`. Returns its results.
  SmallVector<Value> generic(ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                             ValueRange inits, ArrayRef<AffineMap> outputMaps,
                             int64_t numLoops, int64_t numParallel,
                             ScalarsFn body);

  /// A parallel `linalg.generic` over `sizes`: input `i` is read through
  /// `inputMaps[i]`, the result (of `resultElementType`) is indexed by the
  /// identity. `fn` gets one scalar per input.
  Value mapIndexed(ArrayRef<OpFoldResult> sizes, ValueRange inputs,
                   ArrayRef<AffineMap> inputMaps, Type resultElementType,
                   ScalarFn fn);

  /// Applies `fn` element-wise to `inputs`, which all have the same shape;
  /// the result has that shape and `resultElementType`.
  Value map(ValueRange inputs, Type resultElementType, ScalarFn fn);

  /// Reduces the last dimension of `input: [..., n]` into `[...]` of
  /// `accType`, starting from `init`. `fn` gets (element, accumulator) and
  /// returns the new accumulator.
  Value reduceLast(Value input, Type accType, double init, ScalarFn fn);

  /// `value` converted to `elementType` and extended with zeros along
  /// dimension `dim` to `size` (at least the current size).
  Value zeroPadded(Value value, unsigned dim, OpFoldResult size,
                   Type elementType);

  /// Converts every element of `value` to `elementType`.
  Value convert(Value value, Type elementType);

  /// Element-wise sigmoid, in the element type of `value`.
  Value sigmoid(Value value);

  /// Element-wise product of two tensors of the same shape.
  Value multiply(Value lhs, Value rhs);

  /// Element-wise sum of two tensors of the same shape.
  Value add(Value lhs, Value rhs);

  /// An fp32 contraction into zeros of `sizes`: `maps` index `lhs`, `rhs`
  /// and the result, the last loop is the (only) reduction, and the body
  /// accumulates `lhs * rhs`, both converted to fp32.
  Value contract(Value lhs, Value rhs, ArrayRef<OpFoldResult> sizes,
                 ArrayRef<AffineMap> maps);

  /// Contracts the last dimension of `input: [..., d]` with `weight`, which
  /// is `[d, n]` (or `[n, d]` when `transposed`). Accumulates in fp32 and
  /// returns `[..., n]` with `resultElementType`.
  Value project(Value input, Value weight, Type resultElementType,
                bool transposed = false);

  /// The fp32 product of two 2-D fp32 tensors, `op(lhs) . op(rhs)`, where
  /// `op` transposes when `transposeLhs` / `transposeRhs` is set: one
  /// `linalg.generic` with (parallel, parallel, reduction) loops. Used for
  /// the static tile contractions of the tiling passes.
  Value matmul(Value lhs, Value rhs, bool transposeLhs = false,
               bool transposeRhs = false);

  /// The gated FFN activation (see buildGatedActivation) applied element-wise
  /// to `gate` and `up`, in their element type.
  Value gatedActivation(Value gate, Value up, std::optional<double> gateBeta,
                        std::optional<double> upBeta);

  /// Splits the last dimension of `value` into `[heads, width]`.
  Value splitHeads(Value value, int64_t heads, int64_t width);

  /// Merges the last two dimensions of `value`.
  Value mergeHeads(Value value);

  /// Collapses `[..., d]` into `[N, d]`.
  Value flattenTokens(Value value);

  /// Collapses `value: [...]` into one dimension (unchanged when of rank 1).
  Value flattenAll(Value value);

  /// Expands `flat: [N]` into the shape of `like: [...]`, then casts it to
  /// `type` when that differs.
  Value unflattenAll(Value flat, Value like, Type type);

  /// Expands `[N, d]` back into the shape of `like: [..., d]`.
  Value unflattenTokens(Value value, Value like);

  /// Slices `[offset, offset + size)` out of the last dimension of `value`.
  Value sliceLast(Value value, int64_t offset, int64_t size);

  /// Repeats `value: [B, T, D]` over a new head dimension: `[B, T, H, D]`.
  Value broadcastHeads(Value value, int64_t heads);

private:
  ImplicitLocOpBuilder &b;
};

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_UTILS_TENSORBUILDER_H
