//===- TokenFile.cpp - llm.c token files ----------------------------------===//
//
// Part of the moe-mlir project.
//
// The checked reader of TokenFile.h.
//
//===----------------------------------------------------------------------===//

#include "TokenFile.h"

using namespace moe_driver;

namespace {
uint32_t readU32(const unsigned char *data) {
  return uint32_t(data[0]) | uint32_t(data[1]) << 8 | uint32_t(data[2]) << 16 |
         uint32_t(data[3]) << 24;
}
} // namespace

bool moe_driver::hasTokenFileMagic(const unsigned char *data, size_t size) {
  return size >= 4 && readU32(data) == uint32_t(kTokenFileMagic);
}

std::string moe_driver::parseTokenFile(const unsigned char *data, size_t size,
                                       const std::string &fileName,
                                       uint64_t vocab,
                                       std::vector<uint32_t> &tokens) {
  std::string where = "token file '" + fileName + "': ";
  if (size < kTokenFileHeaderBytes)
    return where + "the file is " + std::to_string(size) +
           " bytes, shorter than the header of 256 int32 (1024 bytes)";
  int32_t magic = static_cast<int32_t>(readU32(data));
  int32_t version = static_cast<int32_t>(readU32(data + 4));
  int32_t count = static_cast<int32_t>(readU32(data + 8));
  if (magic != kTokenFileMagic)
    return where + "bad magic " + std::to_string(magic) + " (expected " +
           std::to_string(kTokenFileMagic) + ")";
  if (version != 1 && version != 2)
    return where + "unsupported version " + std::to_string(version) +
           " (1: uint16 tokens, 2: uint32 tokens)";
  if (count < 0)
    return where + "negative token count " + std::to_string(count);
  uint64_t width = version == 1 ? 2 : 4;
  uint64_t expected = uint64_t(count) * width;
  uint64_t held = size - kTokenFileHeaderBytes;
  if (held != expected)
    return where + "the header announces " + std::to_string(count) +
           " tokens of " + std::to_string(width) + " bytes (" +
           std::to_string(expected) + " bytes), but " + std::to_string(held) +
           " bytes follow it";
  const unsigned char *body = data + kTokenFileHeaderBytes;
  size_t first = tokens.size();
  tokens.resize(first + static_cast<size_t>(count));
  for (uint64_t i = 0; i < uint64_t(count); ++i) {
    uint32_t token =
        width == 2 ? uint32_t(body[2 * i]) | uint32_t(body[2 * i + 1]) << 8
                   : readU32(body + 4 * i);
    if (token >= vocab) {
      tokens.resize(first);
      return where + "token " + std::to_string(token) + " at position " +
             std::to_string(i) + " is out of range for vocab_size " +
             std::to_string(vocab);
    }
    tokens[first + i] = token;
  }
  return "";
}
