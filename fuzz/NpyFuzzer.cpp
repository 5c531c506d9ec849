//===- NpyFuzzer.cpp - Fuzz the .npy reader -------------------------------===//
//
// Part of the moe-mlir project.
//
// The bytes are a .npy file as moe-run and moe-npy read it (npy::parse).
// A rejected file is fine; a crash or a sanitizer report is a bug. A file
// that parses must convert, and read back the same after being written.
//
//===----------------------------------------------------------------------===//

#include "moe/Support/Npy.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace mlir::moe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef contents(reinterpret_cast<const char *>(data), size);
  llvm::Expected<npy::Array> array = npy::parse(contents, "fuzz.npy");
  if (!array) {
    llvm::consumeError(array.takeError());
    return 0;
  }
  (void)array->toF64();
  (void)array->toI64();
  std::string written = npy::serialize(*array);
  llvm::Expected<npy::Array> again = npy::parse(written, "fuzz-again.npy");
  if (!again) {
    llvm::consumeError(again.takeError());
    std::abort(); // what we write, we must read
  }
  if (again->shape != array->shape || again->dtype != array->dtype ||
      again->bytes != array->bytes)
    std::abort(); // and read it unchanged
  return 0;
}
