//===- moe-safetensors.cpp - Craft, write and check safetensors files -----===//
//
// Part of the moe-mlir project.
//
// A test helper around the driver's safetensors reader and writer
// (tools/moe-compile/driver/SafeTensors.h):
//
//   moe-safetensors check FILE
//       parses FILE with the checked reader and prints one line per tensor
//       (`NAME DTYPE [shape] bytes [begin, end)`) and per metadata entry;
//       on a violation, prints `error: <message>` and exits 1.
//   moe-safetensors compare A B
//       compares the tensors of two files by name: prints `NAME same` or
//       `NAME differs` (dtype, shape or bytes) for each tensor of A, and
//       `NAME missing` for one B lacks; exits 1 unless all are the same
//       and B has no others.
//   moe-safetensors sample FILE
//       writes a file with the writer: tensors of several dtypes and ranks
//       whose values a test can predict (element i of "a.f32" is i / 4,
//       of "b.i32" is 1000 - 3i, of "c.u8" is 7i mod 256), a scalar, an
//       empty tensor and two metadata entries.
//   moe-safetensors raw FILE HEADER DATA-BYTES [HEADER-LENGTH]
//       writes a crafted file: the 8-byte length (HEADER-LENGTH, default
//       the size of HEADER), the text HEADER, then DATA-BYTES bytes of
//       value i mod 251; so that tests can break each rule of the format.
//       `\xNN` in HEADER stands for the byte 0xNN.
//
//===----------------------------------------------------------------------===//

#include "tools/moe-compile/driver/SafeTensors.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace moe_driver;

namespace {
int usage() {
  std::fprintf(
      stderr, "usage: moe-safetensors check FILE | compare A B | sample FILE | "
              "raw FILE "
              "HEADER DATA-BYTES [HEADER-LENGTH]\n");
  return 2;
}

/// Reads and parses `path`; exits with the error.
SafeTensorsHeader load(const std::string &path,
                       std::vector<unsigned char> &bytes) {
  std::string error = readWholeFile(path, bytes);
  SafeTensorsHeader header;
  if (error.empty())
    error = parseSafeTensors(bytes.data(), bytes.size(), path, header);
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    std::exit(1);
  }
  return header;
}

int compare(const std::string &a, const std::string &b) {
  std::vector<unsigned char> bytesA, bytesB;
  SafeTensorsHeader headerA = load(a, bytesA), headerB = load(b, bytesB);
  bool same = headerA.tensors.size() == headerB.tensors.size();
  for (const TensorEntry &tensor : headerA.tensors) {
    const TensorEntry *other = headerB.find(tensor.name);
    const char *verdict = "same";
    if (!other)
      verdict = "missing";
    else if (other->dtype != tensor.dtype || other->shape != tensor.shape ||
             std::memcmp(bytesA.data() + tensor.begin,
                         bytesB.data() + other->begin,
                         tensor.end - tensor.begin) != 0)
      verdict = "differs";
    same = same && std::strcmp(verdict, "same") == 0;
    std::printf("%s %s\n", tensor.name.c_str(), verdict);
  }
  return same ? 0 : 1;
}

int check(const std::string &path) {
  std::vector<unsigned char> bytes;
  SafeTensorsHeader header = load(path, bytes);
  for (const auto &entry : header.metadata)
    std::printf("metadata %s = %s\n", entry.first.c_str(),
                entry.second.c_str());
  for (const TensorEntry &tensor : header.tensors) {
    std::printf("%s %s [", tensor.name.c_str(), dtypeName(tensor.dtype));
    for (size_t i = 0; i < tensor.shape.size(); ++i)
      std::printf("%s%llu", i ? ", " : "",
                  static_cast<unsigned long long>(tensor.shape[i]));
    std::printf("] bytes [%llu, %llu)\n",
                static_cast<unsigned long long>(tensor.begin),
                static_cast<unsigned long long>(tensor.end));
  }
  return 0;
}

int sample(const std::string &path) {
  std::vector<float> a(2 * 3 * 4);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i) / 4;
  std::vector<int32_t> b(5);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = 1000 - 3 * static_cast<int32_t>(i);
  std::vector<uint8_t> c(300);
  for (size_t i = 0; i < c.size(); ++i)
    c[i] = static_cast<uint8_t>(7 * i);
  double scalar = -2.5;
  std::vector<TensorToWrite> tensors = {
      {"a.f32", DType::F32, {2, 3, 4}, a.data()},
      {"b.i32", DType::I32, {5}, b.data()},
      {"c.u8", DType::U8, {300}, c.data()},
      {"d.scalar", DType::F64, {}, &scalar},
      {"e.empty", DType::F32, {0, 3}, nullptr}};
  std::string error = writeSafeTensors(
      path, tensors, {{"format", "pt"}, {"writer", "moe-mlir"}},
      /*sync=*/false);
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

/// HEADER with each `\xNN` replaced by the byte 0xNN.
std::string unescape(const std::string &text) {
  std::string bytes;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "\\x") == 0 && i + 3 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 3]))) {
      bytes += static_cast<char>(std::stoi(text.substr(i + 2, 2), nullptr, 16));
      i += 3;
      continue;
    }
    bytes += text[i];
  }
  return bytes;
}

int raw(const std::string &path, const std::string &escaped,
        const char *dataBytes, const char *headerLength) {
  std::string header = unescape(escaped);
  unsigned long long length = header.size();
  if (headerLength)
    length = std::strtoull(headerLength, nullptr, 10);
  size_t count = std::strtoull(dataBytes, nullptr, 10);
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
    return 1;
  }
  for (int i = 0; i < 8; ++i)
    std::fputc(static_cast<int>((length >> (8 * i)) & 0xff), file);
  std::fwrite(header.data(), 1, header.size(), file);
  for (size_t i = 0; i < count; ++i)
    std::fputc(static_cast<int>(i % 251), file);
  return std::fclose(file) == 0 ? 0 : 1;
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  std::string command = argv[1];
  if (command == "check" && argc == 3)
    return check(argv[2]);
  if (command == "compare" && argc == 4)
    return compare(argv[2], argv[3]);
  if (command == "sample" && argc == 3)
    return sample(argv[2]);
  if (command == "raw" && (argc == 5 || argc == 6))
    return raw(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : nullptr);
  return usage();
}
