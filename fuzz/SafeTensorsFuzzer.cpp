//===- SafeTensorsFuzzer.cpp - Fuzz the checkpoint reader -----------------===//
//
// Part of the moe-mlir project.
//
// The bytes are a safetensors file as `--resume` and `--init-from` read it
// (parseSafeTensors). Rejections are fine; a crash, a hang, a sanitizer
// report, or an accepted header whose tensors break its own rules is a bug.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace moe_driver;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafeTensorsHeader header;
  if (!parseSafeTensors(data, size, "fuzz.safetensors", header).empty())
    return 0;
  // What the reader promises of an accepted file: spans (file offsets)
  // inside the data, each of the size its shape and dtype give.
  for (const TensorEntry &tensor : header.tensors) {
    if (tensor.begin < header.dataStart || tensor.begin > tensor.end ||
        tensor.end > size)
      std::abort();
    uint64_t bytes = dtypeSize(tensor.dtype);
    for (uint64_t dim : tensor.shape)
      bytes *= dim; // cannot overflow: the reader checked it
    if (bytes != tensor.end - tensor.begin)
      std::abort();
  }
  return 0;
}
