//===- moe-token-file.cpp - Write and check llm.c token files -------------===//
//
// Part of the moe-mlir project.
//
// A test helper around the driver's token-file reader
// (tools/moe-compile/driver/TokenFile.h):
//
//   moe-token-file from-bytes IN OUT VERSION
//       writes the bytes of IN as the tokens of an llm.c token file
//       (version 1: uint16, 2: uint32), so that a test can train on the
//       same text as bytes and as tokens.
//   moe-token-file raw OUT MAGIC VERSION COUNT WIDTH [TOKEN...]
//       writes a crafted file: the 256-int32 header with MAGIC, VERSION and
//       COUNT, then each TOKEN in WIDTH bytes (2 or 4), whatever they say.
//   moe-token-file check FILE VOCAB
//       reads FILE with the checked reader and prints `N tokens` or
//       `error: <message>` (exit status 1).
//
//===----------------------------------------------------------------------===//

#include "tools/moe-compile/driver/SafeTensors.h"
#include "tools/moe-compile/driver/TokenFile.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace moe_driver;

namespace {
int usage() {
  std::fprintf(stderr, "usage: moe-token-file from-bytes IN OUT VERSION | "
                       "raw OUT MAGIC VERSION COUNT WIDTH [TOKEN...] | "
                       "check FILE VOCAB\n");
  return 2;
}

void put(std::vector<unsigned char> &out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<unsigned char>(value >> (8 * i)));
}

int write(const std::string &path, const std::vector<unsigned char> &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file ||
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() ||
      std::fclose(file) != 0) {
    std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
    return 1;
  }
  return 0;
}

std::vector<unsigned char> header(int64_t magic, int64_t version,
                                  int64_t count) {
  std::vector<unsigned char> out;
  put(out, static_cast<uint32_t>(magic), 4);
  put(out, static_cast<uint32_t>(version), 4);
  put(out, static_cast<uint32_t>(count), 4);
  out.resize(kTokenFileHeaderBytes, 0);
  return out;
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string command = argv[1];
  if (command == "from-bytes" && argc == 5) {
    std::vector<unsigned char> bytes;
    std::string error = readWholeFile(argv[2], bytes);
    if (!error.empty()) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    int version = std::atoi(argv[4]);
    std::vector<unsigned char> out =
        header(kTokenFileMagic, version, static_cast<int64_t>(bytes.size()));
    for (unsigned char byte : bytes)
      put(out, byte, version == 1 ? 2 : 4);
    return write(argv[3], out);
  }
  if (command == "raw" && argc >= 7) {
    std::vector<unsigned char> out = header(std::strtoll(argv[3], nullptr, 10),
                                            std::strtoll(argv[4], nullptr, 10),
                                            std::strtoll(argv[5], nullptr, 10));
    int width = std::atoi(argv[6]);
    for (int i = 7; i < argc; ++i)
      put(out, std::strtoull(argv[i], nullptr, 10), width);
    return write(argv[2], out);
  }
  if (command == "check" && argc == 4) {
    std::vector<unsigned char> bytes;
    std::vector<uint32_t> tokens;
    std::string error = readWholeFile(argv[2], bytes);
    if (error.empty())
      error = parseTokenFile(bytes.data(), bytes.size(), argv[2],
                             std::strtoull(argv[3], nullptr, 10), tokens);
    if (!error.empty()) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    std::printf("%zu tokens\n", tokens.size());
    return 0;
  }
  return usage();
}
