//===- Npy.h - Read and write NumPy .npy files ------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// A small reader and writer of NumPy's `.npy` format (versions 1.0, 2.0 and
// 3.0), used by moe-run and the test helpers to move tensors in and out of
// compiled code. Only little-endian, C-ordered arrays of the dtypes in `DType`
// are supported. Depends on LLVM Support only (no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_SUPPORT_NPY_H
#define MOE_SUPPORT_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::moe::npy {

/// Element types of an array. The `.npy` descriptors are `<f4`, `<f8`, `<f2`,
/// `<i4` and `<i8` (`|` or `=` instead of `<` is accepted when unambiguous).
enum class DType { F32, F64, F16, I32, I64 };

/// Size of one element in bytes.
size_t getElementSize(DType dtype);
/// Short name: "f32", "f64", "f16", "i32", "i64".
llvm::StringRef getDTypeName(DType dtype);
/// Parses a short name as printed by `getDTypeName`.
std::optional<DType> parseDTypeName(llvm::StringRef name);
/// True for F32, F64 and F16.
bool isFloat(DType dtype);

/// Formats a shape as "[2, 3, 4]" ("[]" for a scalar).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A dense, C-ordered (row-major) array. `bytes` holds `numElements()` elements
/// of `dtype` in little-endian order.
struct Array {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::vector<char> bytes;

  /// Product of the dimensions (1 for a rank-0 array).
  int64_t numElements() const;
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }

  /// The elements converted to float (integers and f64 are rounded).
  std::vector<float> toF32() const;
  /// The elements converted to double.
  std::vector<double> toF64() const;
  /// The elements converted to int64 (floats are truncated toward zero).
  std::vector<int64_t> toI64() const;

  /// Returns this array converted to `dtype` (a copy when it already is).
  Array convertTo(DType dtype) const;

  static Array fromF32(std::vector<int64_t> shape, llvm::ArrayRef<float> data);
  static Array fromF64(std::vector<int64_t> shape, llvm::ArrayRef<double> data);
  static Array fromI32(std::vector<int64_t> shape,
                       llvm::ArrayRef<int32_t> data);
  static Array fromI64(std::vector<int64_t> shape,
                       llvm::ArrayRef<int64_t> data);
};

/// Parses the contents of a `.npy` file; `name` is used in error messages.
llvm::Expected<Array> parse(llvm::StringRef contents, llvm::StringRef name);

/// Reads a `.npy` file. Errors (missing file, bad magic, unsupported version,
/// Fortran order, big-endian or unsupported dtype, malformed header, truncated
/// or oversized data) are one line that starts with the path.
llvm::Expected<Array> readFile(llvm::StringRef path);

/// Serializes an array in `.npy` format (version 1.0 unless the header needs
/// more than 65535 bytes, then 2.0).
std::string serialize(const Array &array);

/// Writes an array as a `.npy` file (overwriting it).
llvm::Error writeFile(llvm::StringRef path, const Array &array);

} // namespace mlir::moe::npy

#endif // MOE_SUPPORT_NPY_H
