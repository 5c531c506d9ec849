//===- Reference.h - shared pieces of moe-reference -------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What the files of moe-reference share: the fp64 tensor, .npy input and
// output, shape checks, and the registry through which a file adds its own
// subcommands (the gradient references live in files of their own).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TEST_TOOLS_MOE_REFERENCE_REFERENCE_H
#define MOE_TEST_TOOLS_MOE_REFERENCE_REFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace moe_reference {

/// An fp64 tensor with its shape, C order.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t dim(int64_t i) const { return shape[i < 0 ? shape.size() + i : i]; }
  int64_t rank() const { return shape.size(); }
};

/// Exits with "moe-reference: <message>" on an error.
extern llvm::ExitOnError exitOnErr;
/// The category of every moe-reference option (others are hidden).
extern llvm::cl::OptionCategory referenceCategory;

llvm::Error makeError(const llvm::Twine &message);

/// Reads a .npy file of any numeric type as fp64.
Tensor load(llvm::StringRef path);
/// Reads a .npy file of integers; sets `shape`.
std::vector<int64_t> loadIntegers(llvm::StringRef path,
                                  std::vector<int64_t> &shape);
/// Writes `tensor` as `dtype` ("f32" or "f64").
void storeAs(llvm::StringRef path, const Tensor &tensor, llvm::StringRef dtype);
/// Fails unless `tensor` has `expected` (-1 matches any size).
void expectShape(const Tensor &tensor, llvm::StringRef name,
                 llvm::ArrayRef<int64_t> expected);

/// A subcommand defined outside moe-reference.cpp, and what runs it (its
/// result is the exit status).
struct ReferenceCommand {
  llvm::cl::SubCommand *subcommand;
  int (*run)();
};
std::vector<ReferenceCommand> &referenceCommands();

/// Registers a subcommand at static initialisation:
/// `static RegisterReference reg(myCmd, runMine);`
struct RegisterReference {
  RegisterReference(llvm::cl::SubCommand &subcommand, int (*run)()) {
    referenceCommands().push_back({&subcommand, run});
  }
};

} // namespace moe_reference

#endif // MOE_TEST_TOOLS_MOE_REFERENCE_REFERENCE_H
