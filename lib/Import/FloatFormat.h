//===- FloatFormat.h - Shortest decimal form of a double --------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The importer prints numbers from a config (in messages and in the model
// text) in the shortest decimal form that reads back as the same double.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_IMPORT_FLOATFORMAT_H
#define MOE_LIB_IMPORT_FLOATFORMAT_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mlir::moe {

/// The shortest "%.Ng" form of `x` that parses back to `x` exactly
/// ("0.02", "1e-05", "2.446", "inf").
inline std::string formatShortest(double x) {
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, x);
    if (std::strtod(buffer, nullptr) == x)
      break;
  }
  return buffer;
}

} // namespace mlir::moe

#endif // MOE_LIB_IMPORT_FLOATFORMAT_H
