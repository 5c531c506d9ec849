//===- moe-npy.cpp - Make, compare and inspect .npy files for tests -------===//
//
// Part of the moe-mlir project.
//
// The lit tests' .npy helper: `random` writes seeded, deterministic inputs;
// `compare` checks a result against a reference with a relative or absolute
// tolerance, or for exact equality;
// `print` and `stats` show an array (stats counts non-finite values, for
// tests that expect them). Links only the project's .npy support library.
//
//===----------------------------------------------------------------------===//

#include "moe/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace llvm;
namespace npy = mlir::moe::npy;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::SubCommand
    randomCmd("random",
              "write a seeded uniform random array: random OUT.npy "
              "--shape=2,3,4 [--seed=N] [--low=-1 --high=1] [--dtype=f32]");
static cl::SubCommand
    compareCmd("compare",
               "compare A (result) with B (reference): compare A.npy B.npy "
               "[--rtol=1e-5]; the error is max|a-b| / max|b|");
static cl::SubCommand printCmd("print",
                               "print the shape, dtype and first values: "
                               "print A.npy [--count=8]");
static cl::SubCommand statsCmd("stats", "print shape, dtype, min, max and "
                                        "non-finite counts: stats A.npy");
static cl::SubCommand
    tokensCmd("tokens", "write seeded random token ids as raw little-endian "
                        "uint32 (the input of moe-compile's executables): "
                        "tokens OUT.bin --count=N --vocab=V [--seed=N]");

static cl::list<std::string> paths(cl::Positional, cl::desc("<file.npy>..."),
                                   cl::sub(randomCmd), cl::sub(compareCmd),
                                   cl::sub(printCmd), cl::sub(statsCmd),
                                   cl::sub(tokensCmd));

static cl::opt<std::string>
    shapeOpt("shape",
             cl::desc("comma-separated dimensions; empty for a scalar"),
             cl::value_desc("d0,d1,..."), cl::sub(randomCmd));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("seed of std::mt19937_64"),
                              cl::sub(randomCmd), cl::sub(tokensCmd));
static cl::opt<uint64_t> tokenCount("count", cl::desc("number of tokens"),
                                    cl::sub(tokensCmd));
static cl::opt<uint64_t> vocab("vocab",
                               cl::desc("ids are drawn from [0, vocab)"),
                               cl::sub(tokensCmd));
static cl::opt<double> low("low", cl::init(-1.0),
                           cl::desc("lower bound (inclusive)"),
                           cl::sub(randomCmd));
static cl::opt<double> high("high", cl::init(1.0),
                            cl::desc("upper bound (exclusive for floats, "
                                     "inclusive for integers)"),
                            cl::sub(randomCmd));
static cl::opt<std::string> dtypeOpt("dtype", cl::init("f32"),
                                     cl::desc("f32, f64, f16, i32 or i64"),
                                     cl::sub(randomCmd));
static cl::opt<double>
    rtol("rtol", cl::init(1e-5),
         cl::desc("largest accepted max|a-b| / max|b| (max|a-b| when b is "
                  "all zeros)"),
         cl::sub(compareCmd));
static cl::opt<double>
    absTol("atol", cl::init(-1.0),
           cl::desc("instead of --rtol, the largest accepted max|a-b|"),
           cl::sub(compareCmd));
static cl::opt<bool>
    exact("exact",
          cl::desc("require equal dtype kinds and equal values (integers "
                   "compared as int64, floats as doubles)"),
          cl::sub(compareCmd));
static cl::opt<unsigned> printCount("count", cl::init(8),
                                    cl::desc("number of values to print"),
                                    cl::sub(printCmd));

static constexpr const char *kOverview =
    R"(moe-npy: make, compare and inspect .npy files in tests

  moe-npy random OUT.npy --shape=2,3,4 [--seed=N] [--low=-1 --high=1]
                         [--dtype=f32|f64|f16|i32|i64]
  moe-npy compare A.npy B.npy [--rtol=1e-5 | --atol=X | --exact]
  moe-npy print A.npy [--count=8]
  moe-npy stats A.npy
  moe-npy tokens OUT.bin --count=N --vocab=V [--seed=N]

random: floats are low + (high - low) * u with u = (x >> 11) * 2^-53 for
  successive draws x of std::mt19937_64(seed), so files are identical on every
  platform; integers are low + x mod (high - low + 1).
compare: B is the reference. It prints "max relative error E" where
  E = max|a - b| / max|b| over all elements (max|a - b| if b is all zeros), and
  exits 1 if E > rtol, if the shapes differ, or if either file holds a NaN or
  an infinity. With --atol=X the bound is max|a - b| <= X instead. With
  --exact both must be integer arrays or both float arrays, and every element
  must be equal; it prints how many differ and the first that does.
)";

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static ExitOnError exitOnErr;

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static void expectPaths(size_t n, StringRef usage) {
  if (paths.size() != n)
    exitOnErr(makeError("expected " + Twine(n) + " file" + (n == 1 ? "" : "s") +
                        " (" + usage + "), found " + Twine(paths.size())));
}

/// Formats a double compactly (%g with 6 significant digits).
static std::string fmt(double v) {
  std::string s;
  raw_string_ostream os(s);
  os << format("%g", v);
  return s;
}

/// Formats a double with enough digits to tell f32 neighbours apart.
static std::string fmtExact(double v) {
  std::string s;
  raw_string_ostream os(s);
  os << format("%.9g", v);
  return s;
}

/// The multi-index of flat element `i` of `shape`.
static std::vector<int64_t> unflatten(int64_t i, ArrayRef<int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return index;
}

namespace {
struct Stats {
  int64_t nan = 0, posInf = 0, negInf = 0, finite = 0;
  double min = INFINITY, max = -INFINITY;
  int64_t nonFinite() const { return nan + posInf + negInf; }
};
} // namespace

static Stats computeStats(ArrayRef<double> values) {
  Stats s;
  for (double v : values) {
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? s.posInf : s.negInf);
    } else {
      ++s.finite;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
    }
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Subcommands
//===----------------------------------------------------------------------===//

static int runRandom() {
  expectPaths(1, "random OUT.npy --shape=...");
  if (shapeOpt.getNumOccurrences() == 0)
    exitOnErr(makeError("random: missing --shape=d0,d1,..."));
  std::vector<int64_t> shape;
  SmallVector<StringRef> parts;
  StringRef(shapeOpt).split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    int64_t d;
    if (part.trim().getAsInteger(10, d) || d < 0)
      exitOnErr(makeError("random: bad --shape '" + shapeOpt +
                          "': dimensions are non-negative integers"));
    shape.push_back(d);
  }
  std::optional<npy::DType> dtype = npy::parseDTypeName(dtypeOpt);
  if (!dtype)
    exitOnErr(makeError("random: unknown --dtype '" + dtypeOpt +
                        "' (expected f32, f64, f16, i32 or i64)"));
  if (!(low <= high))
    exitOnErr(makeError("random: --low (" + fmt(low) +
                        ") must not exceed --high (" + fmt(high) + ")"));

  std::mt19937_64 gen(seed);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  npy::Array array;
  if (npy::isFloat(*dtype)) {
    std::vector<double> values(n);
    for (double &v : values)
      v = low + (high - low) * (static_cast<double>(gen() >> 11) * 0x1.0p-53);
    array = npy::Array::fromF64(shape, values).convertTo(*dtype);
  } else {
    if (low != std::floor(low) || high != std::floor(high))
      exitOnErr(makeError("random: --low and --high must be integers for " +
                          dtypeOpt));
    auto lo = static_cast<int64_t>(low), hi = static_cast<int64_t>(high);
    uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    std::vector<int64_t> values(n);
    for (int64_t &v : values)
      v = lo + static_cast<int64_t>(range ? gen() % range : gen());
    array = npy::Array::fromI64(shape, values).convertTo(*dtype);
  }
  exitOnErr(npy::writeFile(paths[0], array));
  return 0;
}

/// `compare --exact`: same kind of dtype, every element equal.
static int compareExact(const npy::Array &a, const npy::Array &b) {
  if (npy::isFloat(a.dtype) != npy::isFloat(b.dtype)) {
    errs() << "moe-npy: --exact compares integers with integers and floats "
              "with floats, got "
           << npy::getDTypeName(a.dtype) << " and "
           << npy::getDTypeName(b.dtype) << "\n";
    return 1;
  }
  int64_t n = a.numElements(), differing = 0, first = -1;
  std::string firstText;
  if (npy::isFloat(a.dtype)) {
    std::vector<double> av = a.toF64(), bv = b.toF64();
    for (int64_t i = 0; i < n; ++i)
      if (!(av[i] == bv[i]) && ++differing == 1) {
        first = i;
        firstText = fmtExact(av[i]) + " vs " + fmtExact(bv[i]);
      }
  } else {
    std::vector<int64_t> av = a.toI64(), bv = b.toI64();
    for (int64_t i = 0; i < n; ++i)
      if (av[i] != bv[i] && ++differing == 1) {
        first = i;
        firstText = std::to_string(av[i]) + " vs " + std::to_string(bv[i]);
      }
  }
  outs() << differing << " of " << n << " elements differ";
  if (differing)
    outs() << " (first at " << npy::formatShape(unflatten(first, a.shape))
           << ": " << firstText << ")";
  outs() << "\n";
  return differing ? 1 : 0;
}

static int runCompare() {
  expectPaths(2, "compare A.npy B.npy");
  npy::Array a = exitOnErr(npy::readFile(paths[0]));
  npy::Array b = exitOnErr(npy::readFile(paths[1]));
  if (a.shape != b.shape) {
    errs() << "moe-npy: shapes differ: " << paths[0] << " is "
           << npy::formatShape(a.shape) << ", " << paths[1] << " is "
           << npy::formatShape(b.shape) << "\n";
    return 1;
  }
  if (exact)
    return compareExact(a, b);
  std::vector<double> av = a.toF64(), bv = b.toF64();
  Stats as = computeStats(av), bs = computeStats(bv);
  bool failed = false;
  for (auto [path, s] : {std::pair(paths[0], as), std::pair(paths[1], bs)}) {
    if (s.nonFinite()) {
      errs() << "moe-npy: " << path << " has " << s.nonFinite()
             << " non-finite values (nan " << s.nan << ", +inf " << s.posInf
             << ", -inf " << s.negInf << ")\n";
      failed = true;
    }
  }
  if (failed)
    return 1;

  double maxDiff = 0, maxRef = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    double diff = std::fabs(av[i] - bv[i]);
    if (diff > maxDiff) {
      maxDiff = diff;
      worst = i;
    }
    maxRef = std::max(maxRef, std::fabs(bv[i]));
  }
  double error = maxRef > 0 ? maxDiff / maxRef : maxDiff;
  outs() << "max relative error " << fmt(error) << " (max |a-b| "
         << fmt(maxDiff);
  if (maxDiff > 0)
    outs() << " at " << npy::formatShape(unflatten(worst, a.shape)) << ": "
           << fmtExact(av[worst]) << " vs " << fmtExact(bv[worst]);
  outs() << ", max |b| " << fmt(maxRef) << ", " << av.size() << " elements)\n";
  if (absTol >= 0) {
    if (maxDiff > absTol) {
      errs() << "moe-npy: max |a-b| " << fmt(maxDiff)
             << " exceeds --atol=" << fmt(absTol) << "\n";
      return 1;
    }
    return 0;
  }
  if (error > rtol) {
    errs() << "moe-npy: max relative error " << fmt(error)
           << " exceeds --rtol=" << fmt(rtol) << "\n";
    return 1;
  }
  return 0;
}

static int runPrint() {
  expectPaths(1, "print A.npy");
  npy::Array a = exitOnErr(npy::readFile(paths[0]));
  outs() << "shape " << npy::formatShape(a.shape) << " dtype "
         << npy::getDTypeName(a.dtype) << "\n";
  int64_t n = std::min<int64_t>(a.numElements(), printCount);
  outs() << "values [";
  if (npy::isFloat(a.dtype)) {
    std::vector<double> v = a.toF64();
    for (int64_t i = 0; i < n; ++i)
      outs() << (i ? ", " : "") << fmt(v[i]);
  } else {
    std::vector<int64_t> v = a.toI64();
    for (int64_t i = 0; i < n; ++i)
      outs() << (i ? ", " : "") << v[i];
  }
  if (n < a.numElements())
    outs() << ", ... (" << a.numElements() - n << " more)";
  outs() << "]\n";
  return 0;
}

static int runStats() {
  expectPaths(1, "stats A.npy");
  npy::Array a = exitOnErr(npy::readFile(paths[0]));
  Stats s = computeStats(a.toF64());
  outs() << "shape: " << npy::formatShape(a.shape) << "\n"
         << "dtype: " << npy::getDTypeName(a.dtype) << "\n"
         << "count: " << a.numElements() << "\n";
  if (s.finite) {
    outs() << "min: " << fmt(s.min) << "\n"
           << "max: " << fmt(s.max) << "\n";
  } else {
    outs() << "min: none\nmax: none\n";
  }
  outs() << "non-finite: " << s.nonFinite() << " (nan " << s.nan << ", +inf "
         << s.posInf << ", -inf " << s.negInf << ")\n";
  return 0;
}

/// Raw uint32 token ids `x mod vocab` for successive draws x of
/// std::mt19937_64(seed), little-endian.
static int runTokens() {
  expectPaths(1, "tokens OUT.bin --count=N --vocab=V");
  if (vocab == 0 || vocab > (uint64_t(1) << 32))
    exitOnErr(makeError("tokens: --vocab must be in [1, 2^32]"));
  std::mt19937_64 gen(seed);
  std::string bytes;
  for (uint64_t i = 0; i < tokenCount; ++i) {
    auto id = static_cast<uint32_t>(gen() % vocab);
    for (int b = 0; b < 4; ++b)
      bytes.push_back(static_cast<char>((id >> (8 * b)) & 0xff));
  }
  std::error_code ec;
  raw_fd_ostream out(paths[0], ec, sys::fs::OF_None);
  if (ec)
    exitOnErr(
        makeError("tokens: cannot write " + paths[0] + ": " + ec.message()));
  out << bytes;
  return 0;
}

int main(int argc, char **argv) {
  exitOnErr.setBanner("moe-npy: error: ");
  cl::ParseCommandLineOptions(argc, argv, kOverview);
  if (randomCmd)
    return runRandom();
  if (tokensCmd)
    return runTokens();
  if (compareCmd)
    return runCompare();
  if (printCmd)
    return runPrint();
  if (statsCmd)
    return runStats();
  errs() << "moe-npy: error: expected a subcommand: random, compare, print "
            "or stats (see --help)\n";
  return 1;
}
