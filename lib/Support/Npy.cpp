//===- Npy.cpp - Read and write NumPy .npy files --------------------------===//
//
// Part of the moe-mlir project.
//
// Implements the `.npy` reader and writer declared in moe/Support/Npy.h: the
// magic string, the version-dependent header length, the Python-literal
// header dictionary and the raw little-endian data that follows it.
//
//===----------------------------------------------------------------------===//

#include "moe/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::moe::npy;
using llvm::StringRef;

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;

//===----------------------------------------------------------------------===//
// dtype helpers
//===----------------------------------------------------------------------===//

size_t mlir::moe::npy::getElementSize(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  llvm_unreachable("unknown dtype");
}

StringRef mlir::moe::npy::getDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  llvm_unreachable("unknown dtype");
}

std::optional<DType> mlir::moe::npy::parseDTypeName(StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f16", DType::F16)
      .Case("f32", DType::F32)
      .Case("f64", DType::F64)
      .Case("i32", DType::I32)
      .Case("i64", DType::I64)
      .Default(std::nullopt);
}

bool mlir::moe::npy::isFloat(DType dtype) {
  return dtype == DType::F16 || dtype == DType::F32 || dtype == DType::F64;
}

/// The `.npy` descriptor of a dtype.
static StringRef getDescr(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "<f2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  llvm_unreachable("unknown dtype");
}

std::string mlir::moe::npy::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, ", ");
  os << "]";
  return s;
}

//===----------------------------------------------------------------------===//
// f16 <-> f32 (IEEE binary16, round to nearest even)
//===----------------------------------------------------------------------===//

static float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); // inf or nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13); // normal
  } else if (mant == 0) {
    bits = sign; // signed zero
  } else {
    // Subnormal half: normalize into a float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits =
        sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) // inf or nan (keep nan quiet)
    return sign | 0x7c00 | (absBits > 0x7f800000u ? 0x200 : 0);
  if (absBits >= 0x477ff000u) // rounds to a value beyond the largest half
    return sign | 0x7c00;
  if (absBits < 0x38800000u) { // subnormal half or zero
    if (absBits < 0x33000000u)
      return sign;
    uint32_t e = absBits >> 23;
    uint32_t mant = (absBits & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e; // 14..24
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((absBits >> 13) - (112u << 10));
  uint32_t rem = absBits & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half;
  return sign | static_cast<uint16_t>(half);
}

//===----------------------------------------------------------------------===//
// Array
//===----------------------------------------------------------------------===//

int64_t Array::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Element `i` of the array as a double.
static double loadAsDouble(const Array &a, int64_t i) {
  const char *p = a.bytes.data() + i * getElementSize(a.dtype);
  using namespace llvm::support;
  switch (a.dtype) {
  case DType::F16:
    return halfToFloat(endian::read16le(p));
  case DType::F32: {
    uint32_t bits = endian::read32le(p);
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  case DType::F64: {
    uint64_t bits = endian::read64le(p);
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }
  case DType::I32:
    return static_cast<int32_t>(endian::read32le(p));
  case DType::I64:
    return static_cast<double>(static_cast<int64_t>(endian::read64le(p)));
  }
  llvm_unreachable("unknown dtype");
}

/// Converts a double to int64, saturating and mapping nan to 0.
static int64_t saturatingToI64(double d) {
  if (std::isnan(d))
    return 0;
  if (d >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (d <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

std::vector<float> Array::toF32() const {
  int64_t n = numElements();
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(loadAsDouble(*this, i));
  return out;
}

std::vector<double> Array::toF64() const {
  int64_t n = numElements();
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = loadAsDouble(*this, i);
  return out;
}

std::vector<int64_t> Array::toI64() const {
  int64_t n = numElements();
  std::vector<int64_t> out(n);
  using namespace llvm::support;
  for (int64_t i = 0; i < n; ++i) {
    const char *p = bytes.data() + i * getElementSize(dtype);
    // Integers are read exactly; going through double would lose bits.
    if (dtype == DType::I64)
      out[i] = static_cast<int64_t>(endian::read64le(p));
    else if (dtype == DType::I32)
      out[i] = static_cast<int32_t>(endian::read32le(p));
    else
      out[i] = saturatingToI64(loadAsDouble(*this, i));
  }
  return out;
}

template <typename T, typename StoreFn>
static Array makeArray(std::vector<int64_t> shape, DType dtype,
                       llvm::ArrayRef<T> data, StoreFn store) {
  Array a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  assert(static_cast<int64_t>(data.size()) == a.numElements() &&
         "data size does not match the shape");
  size_t elt = getElementSize(dtype);
  a.bytes.resize(data.size() * elt);
  for (size_t i = 0, e = data.size(); i < e; ++i)
    store(a.bytes.data() + i * elt, data[i]);
  return a;
}

Array Array::fromF32(std::vector<int64_t> shape, llvm::ArrayRef<float> data) {
  return makeArray(std::move(shape), DType::F32, data, [](char *p, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    llvm::support::endian::write32le(p, bits);
  });
}

Array Array::fromF64(std::vector<int64_t> shape, llvm::ArrayRef<double> data) {
  return makeArray(std::move(shape), DType::F64, data, [](char *p, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    llvm::support::endian::write64le(p, bits);
  });
}

Array Array::fromI32(std::vector<int64_t> shape, llvm::ArrayRef<int32_t> data) {
  return makeArray(std::move(shape), DType::I32, data, [](char *p, int32_t v) {
    llvm::support::endian::write32le(p, static_cast<uint32_t>(v));
  });
}

Array Array::fromI64(std::vector<int64_t> shape, llvm::ArrayRef<int64_t> data) {
  return makeArray(std::move(shape), DType::I64, data, [](char *p, int64_t v) {
    llvm::support::endian::write64le(p, static_cast<uint64_t>(v));
  });
}

Array Array::convertTo(DType to) const {
  if (to == dtype)
    return *this;
  switch (to) {
  case DType::F32:
    return fromF32(shape, toF32());
  case DType::F64:
    return fromF64(shape, toF64());
  case DType::I64:
    return fromI64(shape, toI64());
  case DType::I32: {
    std::vector<int64_t> wide = toI64();
    std::vector<int32_t> narrow(wide.size());
    for (size_t i = 0; i < wide.size(); ++i)
      narrow[i] = static_cast<int32_t>(
          std::clamp<int64_t>(wide[i], std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max()));
    return fromI32(shape, narrow);
  }
  case DType::F16: {
    std::vector<float> f = toF32();
    Array a;
    a.shape = shape;
    a.dtype = DType::F16;
    a.bytes.resize(f.size() * 2);
    for (size_t i = 0; i < f.size(); ++i)
      llvm::support::endian::write16le(a.bytes.data() + 2 * i,
                                       floatToHalf(f[i]));
    return a;
  }
  }
  llvm_unreachable("unknown dtype");
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

namespace {
/// A cursor over the header dictionary, a Python literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
class HeaderParser {
public:
  explicit HeaderParser(StringRef text) : rest(text) {}

  void skipSpace() { rest = rest.ltrim(" \t\r\n"); }
  bool consume(StringRef token) {
    skipSpace();
    return rest.consume_front(token);
  }
  bool atEnd() {
    skipSpace();
    return rest.empty();
  }

  /// Parses a quoted string ('...' or "...").
  std::optional<std::string> parseString() {
    skipSpace();
    if (rest.empty() || (rest.front() != '\'' && rest.front() != '"'))
      return std::nullopt;
    char quote = rest.front();
    size_t end = rest.find(quote, 1);
    if (end == StringRef::npos)
      return std::nullopt;
    std::string s = rest.substr(1, end - 1).str();
    rest = rest.drop_front(end + 1);
    return s;
  }

  std::optional<bool> parseBool() {
    if (consume("True"))
      return true;
    if (consume("False"))
      return false;
    return std::nullopt;
  }

  /// Parses a tuple of non-negative integers: `()`, `(5,)`, `(2, 3)`.
  std::optional<std::vector<int64_t>> parseShape() {
    if (!consume("("))
      return std::nullopt;
    std::vector<int64_t> dims;
    while (!consume(")")) {
      skipSpace();
      size_t len = 0;
      while (len < rest.size() && llvm::isDigit(rest[len]))
        ++len;
      // Python 2 wrote long integers with an `L` suffix.
      uint64_t value;
      if (len == 0 || rest.substr(0, len).getAsInteger(10, value) ||
          value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return std::nullopt;
      rest = rest.drop_front(len);
      consume("L");
      dims.push_back(static_cast<int64_t>(value));
      if (!consume(",")) {
        if (!consume(")"))
          return std::nullopt;
        break;
      }
    }
    return dims;
  }

private:
  StringRef rest;
};
} // namespace

static llvm::Error makeError(StringRef name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 name + ": " + message);
}

/// Maps a descriptor to a dtype or explains why it is not supported.
static llvm::Expected<DType> parseDescr(StringRef descr, StringRef name) {
  if (descr.size() < 2)
    return makeError(name, "unsupported dtype '" + descr + "'");
  char order = descr.front();
  StringRef kind = descr.drop_front();
  if (order == '>' && kind != "i1" && kind != "u1" && kind != "b1")
    return makeError(name, "big-endian data ('" + descr +
                               "') is not supported; save it little-endian");
  std::optional<DType> dtype;
  if (order == '<' || order == '=' || order == '|')
    dtype = llvm::StringSwitch<std::optional<DType>>(kind)
                .Case("f2", DType::F16)
                .Case("f4", DType::F32)
                .Case("f8", DType::F64)
                .Case("i4", DType::I32)
                .Case("i8", DType::I64)
                .Default(std::nullopt);
  if (!dtype)
    return makeError(name, "unsupported dtype '" + descr +
                               "' (supported: <f2, <f4, <f8, <i4, <i8)");
  return *dtype;
}

llvm::Expected<Array> mlir::moe::npy::parse(StringRef contents,
                                            StringRef name) {
  if (contents.size() < kMagicSize + 2 ||
      !contents.starts_with(StringRef(kMagic, kMagicSize)))
    return makeError(name, "not a .npy file (bad magic)");
  // Twine prints unsigned char as a character: keep these as `unsigned`.
  unsigned major = static_cast<uint8_t>(contents[kMagicSize]);
  unsigned minor = static_cast<uint8_t>(contents[kMagicSize + 1]);
  size_t lenSize;
  if (major == 1)
    lenSize = 2;
  else if (major == 2 || major == 3)
    lenSize = 4;
  else
    return makeError(name, "unsupported .npy version " + llvm::Twine(major) +
                               "." + llvm::Twine(minor));
  size_t prefix = kMagicSize + 2 + lenSize;
  if (contents.size() < prefix)
    return makeError(name, "truncated header");
  const char *lenPtr = contents.data() + kMagicSize + 2;
  uint64_t headerLen = lenSize == 2 ? llvm::support::endian::read16le(lenPtr)
                                    : llvm::support::endian::read32le(lenPtr);
  if (contents.size() - prefix < headerLen)
    return makeError(name, "truncated header: expected " +
                               llvm::Twine(headerLen) +
                               " header bytes, found " +
                               llvm::Twine(contents.size() - prefix));
  StringRef header = contents.substr(prefix, headerLen);

  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;
  HeaderParser p(header);
  auto malformed = [&](const llvm::Twine &what) {
    return makeError(name,
                     "malformed header (" + what + "): " + header.trim().str());
  };
  if (!p.consume("{"))
    return malformed("expected '{'");
  while (!p.consume("}")) {
    std::optional<std::string> key = p.parseString();
    if (!key)
      return malformed("expected a quoted key");
    if (!p.consume(":"))
      return malformed("expected ':' after '" + *key + "'");
    if (*key == "descr") {
      descr = p.parseString();
      if (!descr)
        return malformed("'descr' is not a string; structured dtypes are not "
                         "supported");
    } else if (*key == "fortran_order") {
      fortranOrder = p.parseBool();
      if (!fortranOrder)
        return malformed("'fortran_order' is not True or False");
    } else if (*key == "shape") {
      shape = p.parseShape();
      if (!shape)
        return malformed("'shape' is not a tuple of non-negative integers");
    } else {
      return malformed("unknown key '" + *key + "'");
    }
    if (!p.consume(",")) {
      if (!p.consume("}"))
        return malformed("expected ',' or '}'");
      break;
    }
  }
  if (!p.atEnd())
    return malformed("unexpected text after '}'");
  if (!descr || !fortranOrder || !shape)
    return malformed("missing 'descr', 'fortran_order' or 'shape'");
  if (*fortranOrder)
    return makeError(name, "Fortran-ordered arrays are not supported; save a "
                           "C-ordered array (numpy.ascontiguousarray)");
  llvm::Expected<DType> dtype = parseDescr(*descr, name);
  if (!dtype)
    return dtype.takeError();

  Array array;
  array.shape = std::move(*shape);
  array.dtype = *dtype;
  // Size in bytes, with overflow checks on the product of the dimensions.
  uint64_t size = getElementSize(array.dtype);
  for (int64_t d : array.shape) {
    if (d != 0 && size > std::numeric_limits<uint64_t>::max() / d)
      return makeError(name,
                       "shape " + formatShape(array.shape) + " is too large");
    size *= d;
  }
  StringRef data = contents.drop_front(prefix + headerLen);
  if (data.size() < size)
    return makeError(name, "truncated data: shape " + formatShape(array.shape) +
                               " of " + getDTypeName(array.dtype) + " needs " +
                               llvm::Twine(size) + " bytes, found " +
                               llvm::Twine(data.size()));
  if (data.size() > size)
    return makeError(name, "unexpected " + llvm::Twine(data.size() - size) +
                               " bytes after the data of shape " +
                               formatShape(array.shape));
  array.bytes.assign(data.begin(), data.end());
  return array;
}

llvm::Expected<Array> mlir::moe::npy::readFile(StringRef path) {
  if (llvm::sys::fs::is_directory(path))
    return makeError(path, "is a directory, not a .npy file");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path, "cannot open: " + buffer.getError().message());
  return parse((*buffer)->getBuffer(), path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

std::string mlir::moe::npy::serialize(const Array &array) {
  std::string dict;
  llvm::raw_string_ostream os(dict);
  os << "{'descr': '" << getDescr(array.dtype)
     << "', 'fortran_order': False, 'shape': (";
  for (int64_t d : array.shape)
    os << d << (array.shape.size() == 1 ? "," : ", ");
  if (array.shape.size() > 1)
    dict.resize(dict.size() - 2);
  os << "), }";

  // Pad with spaces and a newline so that the data starts on a multiple of
  // 64 bytes, as numpy does.
  uint8_t major = 1;
  size_t prefix = kMagicSize + 2 + 2;
  if (dict.size() + 1 + 64 > 65535) {
    major = 2;
    prefix = kMagicSize + 2 + 4;
  }
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  char len[4];
  if (major == 1) {
    llvm::support::endian::write16le(len, static_cast<uint16_t>(dict.size()));
    out.append(len, 2);
  } else {
    llvm::support::endian::write32le(len, static_cast<uint32_t>(dict.size()));
    out.append(len, 4);
  }
  out += dict;
  out.append(array.bytes.begin(), array.bytes.end());
  return out;
}

llvm::Error mlir::moe::npy::writeFile(StringRef path, const Array &array) {
  if (static_cast<int64_t>(array.bytes.size()) !=
      array.numElements() * static_cast<int64_t>(getElementSize(array.dtype)))
    return makeError(path, "array data does not match its shape " +
                               formatShape(array.shape));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError(path, "cannot write: " + ec.message());
  os << serialize(array);
  os.close();
  if (os.has_error()) {
    ec = os.error();
    os.clear_error();
    return makeError(path, "cannot write: " + ec.message());
  }
  return llvm::Error::success();
}
