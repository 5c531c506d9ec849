//===- SafeTensors.cpp - Reading and writing .safetensors files -----------===//
//
// Part of the moe-mlir project.
//
// The checked reader and the writer of SafeTensors.h. JSON goes through
// nlohmann/json (Debian's nlohmann-json3-dev), built with JSON_NOEXCEPTION:
// the reader only calls what cannot throw (a SAX pass that reports syntax
// errors and repeated keys, then a non-throwing parse, then type checks
// before every access).
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the safetensors data are little-endian");

using namespace moe_driver;
using Json = nlohmann::json;

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};
const DTypeInfo kDTypes[] = {
    {DType::Bool, "BOOL", 1},      {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},          {DType::F8E4M3, "F8_E4M3", 1},
    {DType::F8E5M2, "F8_E5M2", 1}, {DType::U16, "U16", 2},
    {DType::I16, "I16", 2},        {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},      {DType::U32, "U32", 4},
    {DType::I32, "I32", 4},        {DType::F32, "F32", 4},
    {DType::U64, "U64", 8},        {DType::I64, "I64", 8},
    {DType::F64, "F64", 8}};
} // namespace

const char *moe_driver::dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

size_t moe_driver::dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
  return 0;
}

bool moe_driver::parseDType(const std::string &name, DType &dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name) {
      dtype = info.dtype;
      return true;
    }
  return false;
}

const TensorEntry *SafeTensorsHeader::find(const std::string &name) const {
  for (const TensorEntry &tensor : tensors)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

const std::string *
SafeTensorsHeader::findMetadata(const std::string &key) const {
  for (const auto &entry : metadata)
    if (entry.first == key)
      return &entry.second;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

namespace {
/// The SAX pass over the header: records the first syntax error, a
/// repeated key in an object, or nesting deeper than kMaxDepth.
class HeaderChecker : public nlohmann::json_sax<Json> {
public:
  static constexpr size_t kMaxDepth = 8;
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return enter();
  }
  bool key(string_t &key) override {
    if (keys.empty() || keys.back().insert(key).second)
      return true;
    error = "the header repeats the key '" + key + "'";
    return false;
  }
  bool end_object() override {
    if (!keys.empty())
      keys.pop_back();
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    keys.emplace_back(); // arrays have no keys; keeps the stack aligned
    return enter();
  }
  bool end_array() override {
    if (!keys.empty())
      keys.pop_back();
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    error = std::string("the header is not valid JSON: ") + ex.what();
    return false;
  }

private:
  bool enter() {
    if (++depth <= kMaxDepth)
      return true;
    error =
        "the header nests deeper than " + std::to_string(kMaxDepth) + " levels";
    return false;
  }
  size_t depth = 0;
  std::vector<std::set<std::string>> keys;
};

std::string shapeText(const std::vector<uint64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Reads a JSON integer >= 0 that fits in 64 bits.
bool unsignedValue(const Json &value, uint64_t &out) {
  if (!value.is_number_unsigned())
    return false;
  out = value.get<uint64_t>();
  return true;
}

/// Checks one tensor entry of the header and fills `tensor` (spans still
/// relative to the data).
std::string parseEntry(const std::string &name, const Json &value,
                       TensorEntry &tensor) {
  if (name.empty())
    return "a tensor has an empty name";
  std::string where = "tensor '" + name + "': ";
  if (!value.is_object())
    return where + "its entry is not a JSON object";
  for (auto it = value.begin(); it != value.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" &&
        it.key() != "data_offsets")
      return where + "unknown key '" + it.key() +
             "' (expected dtype, shape and data_offsets)";
  tensor.name = name;

  auto dtype = value.find("dtype");
  if (dtype == value.end())
    return where + "no dtype";
  if (!dtype->is_string() ||
      !parseDType(dtype->get_ref<const std::string &>(), tensor.dtype))
    return where + "unknown dtype " + dtype->dump(-1, ' ', true) +
           " (expected BOOL, U8, I8, F8_E4M3, F8_E5M2, U16, I16, F16, BF16, "
           "U32, I32, F32, U64, I64 or F64)";

  auto shape = value.find("shape");
  if (shape == value.end())
    return where + "no shape";
  if (!shape->is_array())
    return where + "shape is not an array";
  for (const Json &dim : *shape) {
    uint64_t size = 0;
    if (!unsignedValue(dim, size))
      return where + "shape " + shape->dump(-1, ' ', true) +
             " holds something other than an integer >= 0 below 2^64";
    tensor.shape.push_back(size);
  }

  auto offsets = value.find("data_offsets");
  if (offsets == value.end())
    return where + "no data_offsets";
  if (!offsets->is_array() || offsets->size() != 2 ||
      !unsignedValue((*offsets)[0], tensor.begin) ||
      !unsignedValue((*offsets)[1], tensor.end))
    return where + "data_offsets " + offsets->dump(-1, ' ', true) +
           " is not two integers >= 0 below 2^64";
  if (tensor.begin > tensor.end)
    return where + "data_offsets [" + std::to_string(tensor.begin) + ", " +
           std::to_string(tensor.end) + "] end before they begin";

  // Bytes = product(shape) * size, without overflow.
  uint64_t bytes = dtypeSize(tensor.dtype);
  for (uint64_t dim : tensor.shape)
    if (__builtin_mul_overflow(bytes, dim, &bytes))
      return where + "shape " + shapeText(tensor.shape) + " of " +
             dtypeName(tensor.dtype) + " needs more than 2^64 bytes";
  if (bytes != tensor.end - tensor.begin)
    return where + "shape " + shapeText(tensor.shape) + " of " +
           dtypeName(tensor.dtype) + " needs " + std::to_string(bytes) +
           " bytes, but data_offsets [" + std::to_string(tensor.begin) + ", " +
           std::to_string(tensor.end) + "] span " +
           std::to_string(tensor.end - tensor.begin);
  return "";
}

std::string parseHeader(const unsigned char *data, size_t size,
                        SafeTensorsHeader &header) {
  if (size < 8)
    return "the file is " + std::to_string(size) +
           " bytes, too short for the 8-byte header length";
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = length << 8 | data[i];
  if (length < 2)
    return "header length " + std::to_string(length) +
           " is too small for a JSON object";
  if (length > kMaxSafeTensorsHeader)
    return "header length " + std::to_string(length) +
           " exceeds the limit of " + std::to_string(kMaxSafeTensorsHeader) +
           " bytes";
  if (length > size - 8)
    return "header length " + std::to_string(length) +
           " runs past the end of the file (" + std::to_string(size) +
           " bytes)";
  const char *begin = reinterpret_cast<const char *>(data + 8);
  const char *end = begin + length;
  if (*begin != '{')
    return "the header does not start with '{'";
  // Only spaces may follow the closing brace (the writer's padding).
  const char *last = end;
  while (last > begin && last[-1] == ' ')
    --last;
  if (last[-1] != '}')
    return "the header does not end with '}' (only spaces may pad it)";

  HeaderChecker checker;
  if (!Json::sax_parse(begin, last, &checker) || !checker.error.empty())
    return checker.error.empty() ? "the header is not valid JSON"
                                 : checker.error;
  Json json = Json::parse(begin, last, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object())
    return "the header is not a JSON object";

  header.dataStart = 8 + length;
  uint64_t dataSize = size - header.dataStart;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        return "__metadata__ is not a JSON object";
      for (auto entry = it->begin(); entry != it->end(); ++entry) {
        if (!entry->is_string())
          return "__metadata__ maps '" + entry.key() +
                 "' to something other than a string";
        header.metadata.emplace_back(entry.key(),
                                     entry->get_ref<const std::string &>());
      }
      continue;
    }
    TensorEntry tensor;
    std::string error = parseEntry(it.key(), *it, tensor);
    if (!error.empty())
      return error;
    if (tensor.end > dataSize)
      return "tensor '" + tensor.name + "': data_offsets [" +
             std::to_string(tensor.begin) + ", " + std::to_string(tensor.end) +
             "] run past the end of the data (" + std::to_string(dataSize) +
             " bytes after the header)";
    header.tensors.push_back(std::move(tensor));
  }

  // The spans, in order, must tile [0, dataSize): no overlap, no gap.
  std::vector<const TensorEntry *> order;
  for (const TensorEntry &tensor : header.tensors)
    order.push_back(&tensor);
  std::stable_sort(order.begin(), order.end(),
                   [](const TensorEntry *a, const TensorEntry *b) {
                     return a->begin != b->begin ? a->begin < b->begin
                                                 : a->end < b->end;
                   });
  uint64_t covered = 0;
  const TensorEntry *previous = nullptr;
  auto span = [](const TensorEntry *t) {
    return "[" + std::to_string(t->begin) + ", " + std::to_string(t->end) + ")";
  };
  for (const TensorEntry *tensor : order) {
    if (tensor->begin < covered)
      return "tensor '" + tensor->name + "': bytes " + span(tensor) +
             " overlap tensor '" + previous->name + "' (bytes " +
             span(previous) + ")";
    if (tensor->begin > covered)
      return "bytes [" + std::to_string(covered) + ", " +
             std::to_string(tensor->begin) +
             ") of the data belong to no tensor (before tensor '" +
             tensor->name + "')";
    covered = tensor->end;
    previous = tensor;
  }
  if (covered != dataSize)
    return "bytes [" + std::to_string(covered) + ", " +
           std::to_string(dataSize) +
           ") at the end of the data belong to no tensor";
  // Absolute spans for the caller.
  for (TensorEntry &tensor : header.tensors) {
    tensor.begin += header.dataStart;
    tensor.end += header.dataStart;
  }
  return "";
}
} // namespace

std::string moe_driver::parseSafeTensors(const unsigned char *data, size_t size,
                                         const std::string &fileName,
                                         SafeTensorsHeader &header) {
  header = SafeTensorsHeader();
  std::string error = parseHeader(data, size, header);
  if (error.empty())
    return "";
  header = SafeTensorsHeader();
  return "safetensors file '" + fileName + "': " + error;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

std::string moe_driver::writeSafeTensors(
    const std::string &path, const std::vector<TensorToWrite> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata,
    bool sync) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto &entry : metadata)
      meta[entry.first] = entry.second;
    header["__metadata__"] = std::move(meta);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const TensorToWrite &tensor : tensors) {
    uint64_t bytes = dtypeSize(tensor.dtype);
    for (uint64_t dim : tensor.shape)
      bytes *= dim;
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = dtypeName(tensor.dtype);
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = {offset, offset + bytes};
    header[tensor.name] = std::move(entry);
    sizes.push_back(bytes);
    offset += bytes;
  }
  // Names that are not UTF-8 are replaced rather than thrown on.
  std::string text =
      header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));

  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return "cannot write '" + path + "': " + std::strerror(errno);
  bool ok = std::fwrite(length, 1, 8, file) == 8 &&
            std::fwrite(text.data(), 1, text.size(), file) == text.size();
  for (size_t i = 0; ok && i < tensors.size(); ++i)
    ok = sizes[i] == 0 ||
         std::fwrite(tensors[i].data, 1, sizes[i], file) == sizes[i];
  ok = ok && std::fflush(file) == 0;
  if (ok && sync)
    ok = fsync(fileno(file)) == 0;
  int savedErrno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok)
    return "cannot write '" + path + "': " + std::strerror(savedErrno);
  return "";
}

std::string moe_driver::readWholeFile(const std::string &path,
                                      std::vector<unsigned char> &bytes) {
  bytes.clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "cannot open '" + path + "': " + std::strerror(errno);
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return "'" + path + "' is not a regular file";
  }
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      std::string why = got < 0 ? std::strerror(errno) : "it shrank";
      close(fd);
      return "cannot read '" + path + "': " + why;
    }
    done += static_cast<size_t>(got);
  }
  close(fd);
  return "";
}
