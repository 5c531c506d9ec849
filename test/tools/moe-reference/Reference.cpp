//===- Reference.cpp - shared pieces of moe-reference ---------------------===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "moe/Support/Npy.h"

using namespace llvm;
namespace npy = mlir::moe::npy;

namespace moe_reference {

ExitOnError exitOnErr;
cl::OptionCategory referenceCategory("moe-reference options");

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

Tensor load(StringRef path) {
  npy::Array array = exitOnErr(npy::readFile(path));
  return Tensor{array.shape, array.toF64()};
}

std::vector<int64_t> loadIntegers(StringRef path, std::vector<int64_t> &shape) {
  npy::Array array = exitOnErr(npy::readFile(path));
  if (npy::isFloat(array.dtype))
    exitOnErr(makeError(path + ": expected an integer array, found " +
                        npy::getDTypeName(array.dtype)));
  shape = array.shape;
  return array.toI64();
}

void storeAs(StringRef path, const Tensor &tensor, StringRef dtypeName) {
  std::optional<npy::DType> dtype = npy::parseDTypeName(dtypeName);
  if (!dtype || !npy::isFloat(*dtype))
    exitOnErr(makeError("--dtype must be f32 or f64, not '" + dtypeName + "'"));
  npy::Array array = npy::Array::fromF64(tensor.shape, tensor.data);
  exitOnErr(npy::writeFile(path, array.convertTo(*dtype)));
}

void expectShape(const Tensor &tensor, StringRef name,
                 ArrayRef<int64_t> expected) {
  bool ok = tensor.rank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i)
    ok = expected[i] < 0 || expected[i] == tensor.shape[i];
  if (!ok)
    exitOnErr(makeError(name + ": expected shape " +
                        npy::formatShape(expected) + ", found " +
                        npy::formatShape(tensor.shape)));
}

std::vector<ReferenceCommand> &referenceCommands() {
  static std::vector<ReferenceCommand> commands;
  return commands;
}

} // namespace moe_reference
