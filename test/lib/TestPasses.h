//===- TestPasses.h - moe-mlir test-only passes -----------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Declares the test-only passes of test/lib and their registration; tools
// call registerTestPasses() once.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TEST_LIB_TESTPASSES_H
#define MOE_TEST_LIB_TESTPASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::moe::test {

#define GEN_PASS_DECL
#include "test/lib/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "test/lib/Passes.h.inc"

/// Registers every test-only pass with the global pass registry.
inline void registerTestPasses() { registerMoETestPasses(); }

} // namespace mlir::moe::test

#endif // MOE_TEST_LIB_TESTPASSES_H
