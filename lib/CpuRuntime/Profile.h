//===- Profile.h - Internal interface of the timer runtime ------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_CPURUNTIME_PROFILE_H
#define MOE_CPURUNTIME_PROFILE_H

namespace moe::cpu {

/// True if contractions are to be counted and timed (MOE_CPU_PROFILE set).
bool contractionProfiling();
/// Seconds on a monotonic clock.
double now();
/// Adds one contraction call to the table printed at exit.
void recordContraction(double macs, double seconds);

} // namespace moe::cpu

#endif // MOE_CPURUNTIME_PROFILE_H
