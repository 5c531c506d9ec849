//===- KernelsAhead.h - Generated kernels serialized ahead ------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The kernel generators' gpu.modules are complete after the first part of
// moe-lower-to-nvvm, yet the pipeline lowers and serializes them with the
// outlined kernels, in seconds of passes of which many run on one thread
// of this machine's two. Here they move to a module of their own and go
// through the pipeline's two later parts on a thread of their own while the
// main module's host code is lowered; in the main module a placeholder
// gpu.binary of the same name stands in for each (a launch's verifier and
// lowering read only a binary's name), and takes the real one after the
// main module's passes, before the translation to LLVM IR. The passes lower
// each gpu.module on its own (none changes a module by what is outside it,
// or a kernel by its launches; -moe-dedupe-gpu-modules only erases a module
// equal to another), so the executable is the same byte for byte; `Mode::Check`
// shows it for a model: the main module keeps and lowers its gpu.modules too,
// and each must be equivalent to its copy's lowering (the same ops, attributes,
// types and locations).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_KERNELSAHEAD_H
#define MOE_TOOLS_MOE_COMPILE_KERNELSAHEAD_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/FunctionExtras.h"

#include <memory>
#include <thread>

namespace mlir {
class OpPassManager;
class PassManager;
} // namespace mlir

namespace mlir::moe {

/// Adds passes to a pass manager.
using PipelinePart = llvm::unique_function<void(OpPassManager &) const>;

/// What the thread did.
struct KernelsAheadResult {
  /// gpu.modules moved (or, checking, copied) when the thread started.
  unsigned modules = 0;
  /// gpu.binary ops that the main module took.
  unsigned used = 0;
  /// The thread's time, start to end.
  double seconds = 0;
  /// Whether the main module kept its gpu.modules to compare.
  bool checked = false;
};

/// Copies of a module's gpu.modules lowered and serialized on a thread.
class KernelsAhead {
public:
  enum class Mode {
    /// `module`'s gpu.modules become placeholders.
    Move,
    /// `module` keeps its gpu.modules, which finish() compares.
    Check,
  };

  /// Starts the thread on copies of `module`'s gpu.modules, which `lowering`
  /// then `serialization` turn into gpu.binary ops. The passes' dialects are
  /// loaded here, before the thread starts, so that neither pass manager
  /// loads one while the other runs. `verifyEach`: as the main pipeline's.
  KernelsAhead(ModuleOp module, Mode mode, PipelinePart lowering,
               PipelinePart serialization, bool verifyEach);
  /// Waits for the thread if finish() did not.
  ~KernelsAhead();
  KernelsAhead(const KernelsAhead &) = delete;
  KernelsAhead &operator=(const KernelsAhead &) = delete;

  /// Waits for the thread, then gives each placeholder of `module` (or,
  /// checking, each gpu.module equivalent to its lowered copy) the copy's
  /// gpu.binary. Fails with an error where a pass failed on the copies or,
  /// checking, where a gpu.module differs from its copy.
  FailureOr<KernelsAheadResult> finish(ModuleOp module);

private:
  /// The thread's work.
  void run();

  std::unique_ptr<PassManager> lowering;
  std::unique_ptr<PassManager> serialization;
  /// The copies: gpu.modules, then gpu.binary ops.
  OwningOpRef<ModuleOp> copies;
  /// The copies as lowered, before their serialization (checking only).
  OwningOpRef<ModuleOp> lowered;
  KernelsAheadResult result;
  /// Whether a pass failed on the copies.
  bool failedThere = false;
  std::thread thread;
};

} // namespace mlir::moe

#endif // MOE_TOOLS_MOE_COMPILE_KERNELSAHEAD_H
