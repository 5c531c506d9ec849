//===- ParallelCodegen.h - Host code compiled in parts ---------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// LLVM optimises and compiles one module on one thread. A model's host
// module is a few large functions (the training step, the forward, the
// gradient kinds) and many small ones, and those two phases were three
// quarters of a CPU compile. Here the module is cut at function boundaries
// into parts of about equal size, each part is optimised and compiled on its
// own thread in its own LLVMContext, and the parts' objects are linked into
// one relocatable object. (llvm::SplitModule, without locals kept, assigns
// functions by a hash of their names, not by their size.)
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_PARALLELCODEGEN_H
#define MOE_TOOLS_MOE_COMPILE_PARALLELCODEGEN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::moe {

/// Makes a TargetMachine for one part (a TargetMachine serves one thread).
using TargetMachineFactory =
    std::function<std::unique_ptr<llvm::TargetMachine>()>;

/// Links relocatable objects into one (`cxx -r`): returns the result's
/// bytes.
using RelocatableLinker =
    std::function<llvm::Expected<llvm::SmallVector<char, 0>>(
        llvm::ArrayRef<llvm::SmallVector<char, 0>> objects)>;

/// Optimises `module` at `optLevel` and compiles it into an object, in up to
/// `parts` parts on as many threads. With one part (or a module with one
/// function definition) the module is optimised and compiled whole.
/// Otherwise its symbols of local linkage become hidden global ones (so that
/// one part may call another's), each function definition goes to the part
/// with the fewest instructions so far (largest first), the global
/// variables to the first part, and `link` joins the parts' objects.
/// A function marked optnone goes to a part of its own, whose IR and code
/// generation run at -O0 (the optimised code generator's register
/// allocator would still take its time over it), whatever `parts` is.
llvm::Expected<llvm::SmallVector<char, 0>>
compileInParts(std::unique_ptr<llvm::Module> module, unsigned parts,
               unsigned optLevel, const TargetMachineFactory &makeMachine,
               const RelocatableLinker &link);

} // namespace mlir::moe

#endif // MOE_TOOLS_MOE_COMPILE_PARALLELCODEGEN_H
