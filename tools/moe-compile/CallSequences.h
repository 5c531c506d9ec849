//===- CallSequences.h - Host call sequences left unoptimised --*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// A model's training step and forward are, on the host, long sequences of
// calls (the layer kinds on the CPU, kernel launches on the GPU) with the
// descriptors, allocations and checks between them: kimi-linear-48b's CPU
// training step is 148,559 LLVM instructions with no floating-point
// arithmetic outside a few copy loops. LLVM's -O2 takes time superlinear in
// a function's size and gains nothing on such code, so these functions are
// compiled without optimisation; their loops first move to functions of
// their own, which are optimised.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_CALLSEQUENCES_H
#define MOE_TOOLS_MOE_COMPILE_CALLSEQUENCES_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::moe {

/// What leaveCallSequencesUnoptimised did.
struct CallSequenceCounts {
  /// Functions marked optnone.
  unsigned unoptimised = 0;
  /// Loops moved out of them into functions of their own.
  unsigned loopsExtracted = 0;
};

/// Marks every function of `module` above `limit` LLVM instructions optnone
/// (and noinline, which optnone requires). With `extractLoops`, each
/// outermost loop of such a function first becomes a function of its own
/// (LLVM's CodeExtractor), and a function that still has floating-point
/// arithmetic outside its loops is left to the optimiser. A limit of 0
/// marks nothing.
CallSequenceCounts leaveCallSequencesUnoptimised(llvm::Module &module,
                                                 unsigned limit,
                                                 bool extractLoops);

} // namespace mlir::moe

#endif // MOE_TOOLS_MOE_COMPILE_CALLSEQUENCES_H
