//===- SafeTensors.h - Reading and writing .safetensors files ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of a JSON object that maps each tensor name to
// its dtype, shape and data_offsets (a byte span relative to the data that
// follows the header; an optional "__metadata__" maps strings to strings),
// then the data. The reader trusts nothing in the file: it checks every
// rule below and reports the first violation as a message that names the
// file and the tensor. It never exits, aborts or throws, so that the
// executables report a bad checkpoint as an error and a fuzzer can call it
// on any bytes. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_SAFETENSORS_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moe_driver {

/// The element types of the format, with their names in the header.
enum class DType {
  Bool,
  U8,
  I8,
  F8E4M3,
  F8E5M2,
  U16,
  I16,
  F16,
  BF16,
  U32,
  I32,
  F32,
  U64,
  I64,
  F64
};

/// The dtype's name in the header ("F32", "BF16", ...).
const char *dtypeName(DType dtype);
/// The bytes of one element.
size_t dtypeSize(DType dtype);
/// The dtype named `name`; false if the format has none of that name.
bool parseDType(const std::string &name, DType &dtype);

/// One tensor of a parsed file.
struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  /// The tensor's bytes, [begin, end) from the start of the file.
  uint64_t begin = 0, end = 0;
};

/// What the header of a valid file says.
struct SafeTensorsHeader {
  /// Sorted by name.
  std::vector<TensorEntry> tensors;
  /// "__metadata__", in the order of the header.
  std::vector<std::pair<std::string, std::string>> metadata;
  /// Where the data start (8 + the header length).
  uint64_t dataStart = 0;

  /// The tensor called `name`, or null.
  const TensorEntry *find(const std::string &name) const;
  /// The metadata value of `key`, or null.
  const std::string *findMetadata(const std::string &key) const;
};

/// The largest header the reader accepts (100 MiB, as the reference
/// implementation).
constexpr uint64_t kMaxSafeTensorsHeader = 100ull << 20;

/// Parses and checks the safetensors file `data[0, size)`; `fileName` only
/// names it in messages. Returns an empty string on success (and fills
/// `header`), otherwise the first violation, as `safetensors file '<file>':
/// ...`. The rules:
///  * the file holds the 8-byte header length N, 2 <= N <=
///    kMaxSafeTensorsHeader, and 8 + N <= size;
///  * the header is valid UTF-8 JSON, at most 8 levels deep, with no
///    repeated key in any object; it is an object whose first byte is '{'
///    (only spaces may pad it after the closing brace);
///  * "__metadata__", if present, maps strings to strings;
///  * every other key is a non-empty tensor name whose value is an object
///    with exactly the keys "dtype" (a known dtype), "shape" (an array of
///    integers >= 0) and "data_offsets" (two integers, begin <= end);
///  * the element count times the dtype's size, computed without overflow,
///    equals end - begin;
///  * every span lies inside the data, no two spans overlap, and the spans
///    cover the data without a gap (the format forbids unindexed bytes).
std::string parseSafeTensors(const unsigned char *data, size_t size,
                             const std::string &fileName,
                             SafeTensorsHeader &header);

/// A tensor to write: `data` holds product(shape) elements of `dtype`,
/// little-endian.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<uint64_t> shape;
  const void *data = nullptr;
};

/// Writes `tensors` (in this order) and `metadata` as the safetensors file
/// `path`; the header is padded with spaces to a multiple of 8 bytes, so
/// that the data are aligned. With `sync`, the file is fsync'ed before it
/// is closed. Returns an empty string on success, otherwise what failed.
std::string writeSafeTensors(
    const std::string &path, const std::vector<TensorToWrite> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    bool sync);

/// Reads the whole file `path` into `bytes`; returns an empty string on
/// success, otherwise what failed (a directory, a missing file, ...).
std::string readWholeFile(const std::string &path,
                          std::vector<unsigned char> &bytes);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_SAFETENSORS_H
