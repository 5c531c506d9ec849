//===- CpuRuntime.h - Run-time support of the CPU back end ------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Functions that code lowered by moe-lower-to-cpu calls: linked into the
// executables moe-compile builds (libMoECpuRuntime.a) and loaded by
// moe-run's JIT (libmoe_cpu_runtime.so). Every argument is an integer (an
// `index` of the IR), so that the IR declares them as plain functions.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CPURUNTIME_CPURUNTIME_H
#define MOE_CPURUNTIME_CPURUNTIME_H

#include <cstdint>

extern "C" {

/// C[o0, o1, m, n] += sum_{ko, k} A[o0, o1, m, ko, k] * B[o0, o1, ko, k, n]
/// in fp32. Each operand is given by the aligned pointer of its buffer (as
/// an integer), its element offset and its element strides; a stride of 0
/// broadcasts.
void moe_cpu_contract_f32(intptr_t aBase, int64_t aOffset, intptr_t bBase,
                          int64_t bOffset, intptr_t cBase, int64_t cOffset,
                          int64_t m, int64_t n, int64_t k, int64_t kOuter,
                          int64_t outer0, int64_t outer1, int64_t aStrideM,
                          int64_t aStrideK, int64_t aStrideKOuter,
                          int64_t aStride0, int64_t aStride1, int64_t bStrideK,
                          int64_t bStrideN, int64_t bStrideKOuter,
                          int64_t bStride0, int64_t bStride1, int64_t cStrideM,
                          int64_t cStrideN, int64_t cStride0, int64_t cStride1);

/// Start and end of one call of the instrumented region `id` (an op kind,
/// -moe-profile-ops): `name` points to its NUL-terminated name, which the
/// first call records. The table of regions is printed to stderr at exit.
void moe_prof_begin(int64_t id, const char *name);
void moe_prof_end(int64_t id);

/// Exits with status 1 after `error: <what> is <actual>, but <against> is
/// <expected>` on stderr when the two sizes differ (-moe-insert-shape-checks).
void moe_check_dim(int64_t actual, int64_t expected, const char *what,
                   const char *against);

} // extern "C"

#endif // MOE_CPURUNTIME_CPURUNTIME_H
