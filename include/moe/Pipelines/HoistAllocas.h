//===- HoistAllocas.h - Fixed-size stack slots at function entry -*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The translation of a gpu.launch_func to LLVM IR gives each launch an
// alloca for its argument array where the launch stands. A launch inside a
// host loop (one per token of a sequential scan) thus grows the stack on
// every iteration, since LLVM frees allocas only on return: kimi-tiny's
// CUDA training step at B = 16, T = 2048 overflowed the 8 MiB stack. Both
// moe-compile and moe-run's JIT apply this to the translated module.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_PIPELINES_HOISTALLOCAS_H
#define MOE_PIPELINES_HOISTALLOCAS_H

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::moe {

/// Moves every alloca of a constant element count outside a function's
/// entry block to the start of the entry block: one slot per alloca, reused
/// by every iteration of the loop around it (a launch fills its argument
/// slot right before the call). Returns how many moved.
unsigned hoistConstantAllocasToEntry(llvm::Module &module);

} // namespace mlir::moe

#endif // MOE_PIPELINES_HOISTALLOCAS_H
