//===- VerifyUtils.cpp - Shared checks of moe op verifiers ----------------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "VerifyUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include <cmath>

using namespace mlir;
using namespace mlir::moe;
using namespace mlir::moe::verification;

int64_t verification::mulDims(int64_t a, int64_t b) {
  if (a == kOverflowDim || b == kOverflowDim)
    return kOverflowDim;
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return kAnyDim;
  std::optional<int64_t> product = llvm::checkedMul(a, b);
  return product ? *product : kOverflowDim;
}

int64_t verification::addDims(int64_t a, int64_t b) {
  if (a == kOverflowDim || b == kOverflowDim)
    return kOverflowDim;
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return kAnyDim;
  std::optional<int64_t> sum = llvm::checkedAdd(a, b);
  return sum ? *sum : kOverflowDim;
}

/// The moe ops take no empty tensors: a static size of 0 would make every
/// tile's slice out of bounds, and no layer has a meaning over nothing.
/// (A size that is dynamic and 0 at run time runs no iteration.)
static LogicalResult verifyNonEmpty(Operation *op, StringRef name,
                                    RankedTensorType tensor) {
  if (!llvm::is_contained(tensor.getShape(), 0))
    return success();
  return op->emitOpError("expects ")
         << name << " to have no dimension of static size 0, got " << tensor;
}

static void printShape(InFlightDiagnostic &diag, ArrayRef<int64_t> shape) {
  diag << "[";
  llvm::interleaveComma(shape, diag, [&](int64_t dim) {
    if (ShapedType::isDynamic(dim))
      diag << "?";
    else
      diag << dim;
  });
  diag << "]";
}

LogicalResult verification::verifyShape(Operation *op, StringRef name,
                                        Type type, ArrayRef<int64_t> expected) {
  if (llvm::is_contained(expected, kOverflowDim))
    return op->emitOpError("expects ")
           << name
           << " to have a shape its attributes define, but a dimension "
              "computed from them overflows 64-bit integers";
  auto tensor = dyn_cast<RankedTensorType>(type);
  bool matches =
      tensor && tensor.getRank() == static_cast<int64_t>(expected.size()) &&
      llvm::all_of(llvm::zip_equal(tensor.getShape(), expected), [](auto p) {
        auto [have, want] = p;
        return ShapedType::isDynamic(have) || ShapedType::isDynamic(want) ||
               have == want;
      });
  if (matches)
    return verifyNonEmpty(op, name, tensor);
  InFlightDiagnostic diag = op->emitOpError("expects ")
                            << name << " to have shape ";
  printShape(diag, expected);
  diag << ", got ";
  if (tensor)
    printShape(diag, tensor.getShape());
  else
    diag << type;
  return diag;
}

LogicalResult verification::verifyMinRank(Operation *op, StringRef name,
                                          Type type, int64_t minRank) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && tensor.getRank() >= minRank)
    return verifyNonEmpty(op, name, tensor);
  return op->emitOpError("expects ")
         << name << " to have rank >= " << minRank << ", got " << type;
}

LogicalResult verification::verifyPositiveFinite(Operation *op, StringRef name,
                                                 double value) {
  if (std::isfinite(value) && value > 0.0)
    return success();
  return op->emitOpError("expects ")
         << name << " to be finite and positive, got " << value;
}

int64_t verification::dimOf(Type type, unsigned i) {
  return cast<RankedTensorType>(type).getDimSize(i);
}

SmallVector<int64_t> verification::leadingDims(Type type) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
  return SmallVector<int64_t>(shape.drop_back());
}

SmallVector<int64_t> verification::concatDims(ArrayRef<int64_t> dims,
                                              ArrayRef<int64_t> tail) {
  SmallVector<int64_t> result(dims);
  result.append(tail.begin(), tail.end());
  return result;
}

FailureOr<SmallVector<int64_t>> verification::verifyKDAOperands(
    Operation *op, Type query, Type key, Type value, Type logDecay, Type beta,
    Type initialState, StringRef outputName, Type output, bool keyMajor) {
  if (failed(verifyShape(op, "query", query,
                         {kAnyDim, kAnyDim, kAnyDim, kAnyDim})))
    return failure();
  ArrayRef<int64_t> qShape = cast<RankedTensorType>(query).getShape();
  int64_t batch = qShape[0], length = qShape[1], heads = qShape[2],
          keyDim = qShape[3];
  if (ShapedType::isDynamic(keyDim))
    return op->emitOpError("expects a static head dimension K");
  if (failed(verifyShape(op, "key", key, qShape)) ||
      failed(verifyShape(op, "value", value, {batch, length, heads, kAnyDim})))
    return failure();
  int64_t valueDim = dimOf(value, 3);
  if (failed(verifyShape(op, "log_decay", logDecay, qShape)) ||
      failed(verifyShape(op, "beta", beta, {batch, length, heads})) ||
      failed(verifyShape(op, outputName, output,
                         {batch, length, heads, valueDim})))
    return failure();
  Type outputElement = cast<ShapedType>(output).getElementType();
  Type valueElement = cast<ShapedType>(value).getElementType();
  if (outputElement != valueElement)
    return op->emitOpError("expects the ")
           << outputName << " element type " << outputElement
           << " to match the value's " << valueElement;

  SmallVector<int64_t> stateShape =
      keyMajor ? SmallVector<int64_t>{batch, heads, keyDim, valueDim}
               : SmallVector<int64_t>{batch, heads, valueDim, keyDim};
  if (initialState &&
      failed(verifyShape(op, "initial_state", initialState, stateShape)))
    return failure();
  return stateShape;
}
