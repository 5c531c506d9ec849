//===- TokenFileFuzzer.cpp - Fuzz the llm.c token-file reader -------------===//
//
// Part of the moe-mlir project.
//
// The bytes are a token file as `--data` reads it (parseTokenFile), with a
// vocabulary of 50257 (GPT-2's). Rejections are fine; a crash, a sanitizer
// report, or an accepted file with a token outside the vocabulary is a bug.
//
//===----------------------------------------------------------------------===//

#include "TokenFile.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace moe_driver;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  constexpr uint64_t kVocab = 50257;
  std::vector<uint32_t> tokens;
  if (!parseTokenFile(data, size, "fuzz.bin", kVocab, tokens).empty())
    return 0;
  for (uint32_t token : tokens)
    if (token >= kVocab)
      std::abort();
  return 0;
}
