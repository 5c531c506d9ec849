//===- TestDecayBounds.cpp - Report decay bounds as remarks ---------------===//
//
// Part of the moe-mlir project.
//
// Implements -test-moe-decay-bounds: runs the decay-bound analysis and turns
// its bounds and tile-safety verdicts into remarks that lit tests check.
//
//===----------------------------------------------------------------------===//

#include "test/lib/TestPasses.h"

#include "moe/Analysis/DecayBound.h"
#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mlir::moe::test {
#define GEN_PASS_DEF_TESTMOEDECAYBOUNDS
#include "test/lib/Passes.h.inc"
} // namespace mlir::moe::test

using namespace mlir;
using namespace mlir::moe;

static constexpr llvm::StringLiteral kProbeAttrName = "test.decay_probe";

namespace {
/// What to check for one value.
struct ProbeConfig {
  SmallVector<int64_t> tileLengths;
  SmallVector<TileReference> references;
  Type operandType;
};
} // namespace

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

/// `value` printed with printf's `format` at `precision`.
static std::string print(const char *format, int precision, double value) {
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer), format, precision, value);
  return buffer;
}

/// `value` in the shortest form that parses back to the same double: fixed
/// point for magnitudes in [1e-4, 1e16), scientific otherwise.
static std::string formatBound(double value) {
  if (value == 0.0)
    return "0";
  bool fixed = std::fabs(value) >= 1e-4 && std::fabs(value) < 1e16;
  for (int precision = fixed ? 0 : 1; precision <= 40; ++precision) {
    std::string text = print(fixed ? "%.*f" : "%.*g", precision, value);
    if (std::strtod(text.c_str(), nullptr) == value)
      return text;
  }
  return print("%.*g", 17, value);
}

/// `value` with at most two decimals and no trailing zeros; "inf"/"-inf".
static std::string formatQuantity(double value) {
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  std::string text = buffer;
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.')
    text.pop_back();
  return text == "-0" ? "0" : text;
}

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;

static LogicalResult checkTileLengths(ArrayRef<int64_t> tileLengths,
                                      EmitErrorFn emitError) {
  for (int64_t c : tileLengths)
    if (c < 1)
      return emitError() << "expects tile lengths >= 1, found " << c;
  return success();
}

static FailureOr<TileReference> parseReference(StringRef name,
                                               EmitErrorFn emitError) {
  if (std::optional<TileReference> ref = symbolizeTileReference(name))
    return *ref;
  return emitError() << "expects references pre, start or mid, found '" << name
                     << "'";
}

static LogicalResult checkOperandType(Type type, EmitErrorFn emitError) {
  if (!isa<FloatType>(type))
    return emitError() << "expects a float operand type, found " << type;
  return success();
}

/// The configuration given by the pass options.
static FailureOr<ProbeConfig> getOptionConfig(MLIRContext *context,
                                              ArrayRef<int64_t> tileLengths,
                                              ArrayRef<std::string> references,
                                              StringRef operandType,
                                              EmitErrorFn emitError) {
  ProbeConfig config;
  config.tileLengths.assign(tileLengths.begin(), tileLengths.end());
  if (config.tileLengths.empty())
    config.tileLengths.push_back(16);
  if (failed(checkTileLengths(config.tileLengths, emitError)))
    return failure();

  if (references.empty())
    config.references = {TileReference::Pre, TileReference::Start,
                         TileReference::Mid};
  for (const std::string &name : references) {
    FailureOr<TileReference> ref = parseReference(name, emitError);
    if (failed(ref))
      return failure();
    config.references.push_back(*ref);
  }

  Builder b(context);
  config.operandType = llvm::StringSwitch<Type>(operandType)
                           .Case("f16", b.getF16Type())
                           .Case("bf16", b.getBF16Type())
                           .Case("tf32", b.getTF32Type())
                           .Case("f32", b.getF32Type())
                           .Case("f64", b.getF64Type())
                           .Default(Type());
  if (!config.operandType)
    return emitError()
           << "expects operand-type f16, bf16, tf32, f32 or f64, found '"
           << operandType << "'";
  return config;
}

/// `defaults` overridden by the keys of a dictionary-valued probe attribute.
static FailureOr<ProbeConfig> getProbeConfig(Operation *op, Attribute probe,
                                             const ProbeConfig &defaults) {
  auto emitError = [op] { return op->emitError(); };
  if (isa<UnitAttr>(probe))
    return defaults;
  auto dict = dyn_cast<DictionaryAttr>(probe);
  if (!dict)
    return op->emitError() << "expects '" << kProbeAttrName
                           << "' to be a unit or dictionary attribute, found "
                           << probe;

  ProbeConfig config = defaults;
  for (NamedAttribute entry : dict) {
    StringRef key = entry.getName().strref();
    Attribute value = entry.getValue();
    if (key == "tile_lengths") {
      auto lengths = dyn_cast<DenseI64ArrayAttr>(value);
      if (!lengths)
        return op->emitError()
               << "expects '" << kProbeAttrName
               << "' tile_lengths to be an array<i64>, found " << value;
      config.tileLengths.assign(lengths.asArrayRef().begin(),
                                lengths.asArrayRef().end());
      if (failed(checkTileLengths(config.tileLengths, emitError)))
        return failure();
    } else if (key == "references") {
      auto names = dyn_cast<ArrayAttr>(value);
      if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
        return op->emitError()
               << "expects '" << kProbeAttrName
               << "' references to be an array of strings, found " << value;
      config.references.clear();
      for (StringAttr name : names.getAsRange<StringAttr>()) {
        FailureOr<TileReference> ref = parseReference(name, emitError);
        if (failed(ref))
          return failure();
        config.references.push_back(*ref);
      }
    } else if (key == "operand_type") {
      auto type = dyn_cast<TypeAttr>(value);
      if (!type)
        return op->emitError()
               << "expects '" << kProbeAttrName
               << "' operand_type to be a type, found " << value;
      if (failed(checkOperandType(type.getValue(), emitError)))
        return failure();
      config.operandType = type.getValue();
    } else {
      return op->emitError()
             << "expects '" << kProbeAttrName
             << "' keys tile_lengths, references or operand_type, found '"
             << key << "'";
    }
  }
  return config;
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

/// Emits one remark on `op` per tile length and reference for `value`.
static void report(Operation *op, StringRef prefix, Value value,
                   const ProbeConfig &config, const DecayBounds &bounds) {
  std::optional<double> bound = bounds.getLowerBound(value);
  std::string boundText = bound ? formatBound(*bound) : "none";
  for (int64_t c : config.tileLengths) {
    for (TileReference ref : config.references) {
      TileSafetyVerdict verdict =
          bounds.checkTile(value, c, ref, config.operandType);
      // Built as a string: a diagnostic would quote the type.
      std::string message;
      llvm::raw_string_ostream os(message);
      os << prefix << "decay bound " << boundText << "; c=" << c
         << " ref=" << stringifyTileReference(ref) << " " << config.operandType
         << ": ";
      if (!verdict.lowerBound) {
        os << "not proven (no lower bound, limit "
           << formatQuantity(verdict.limit) << ")";
      } else {
        os << (verdict.proven ? "proven" : "not proven") << " (exponent "
           << formatQuantity(verdict.exponent)
           << (verdict.proven ? " <= " : " > ") << "limit "
           << formatQuantity(verdict.limit) << ", margin "
           << formatQuantity(verdict.margin) << ")";
      }
      op->emitRemark(message);
    }
  }
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct TestMoEDecayBoundsPass
    : public moe::test::impl::TestMoEDecayBoundsBase<TestMoEDecayBoundsPass> {
  using TestMoEDecayBoundsBase::TestMoEDecayBoundsBase;
  void runOnOperation() override;
};
} // namespace

void TestMoEDecayBoundsPass::runOnOperation() {
  Operation *root = getOperation();
  FailureOr<ProbeConfig> defaults =
      getOptionConfig(&getContext(), tileLengths, references, operandType,
                      [root] { return root->emitError(); });
  if (failed(defaults))
    return signalPassFailure();

  DecayBounds bounds(root);
  bool probeFailed = false;
  root->walk([&](Operation *op) {
    if (auto kda = dyn_cast<KDAOp>(op))
      report(op, "", kda.getLogDecay(), *defaults, bounds);
    Attribute probe = op->getDiscardableAttr(kProbeAttrName);
    if (!probe)
      return;
    FailureOr<ProbeConfig> config = getProbeConfig(op, probe, *defaults);
    if (failed(config)) {
      probeFailed = true;
      return;
    }
    if (op->getNumResults() == 0) {
      op->emitError() << "expects '" << kProbeAttrName
                      << "' on an op with results";
      probeFailed = true;
      return;
    }
    for (OpResult result : op->getResults()) {
      std::string prefix;
      if (op->getNumResults() > 1)
        prefix = "result #" + std::to_string(result.getResultNumber()) + ": ";
      report(op, prefix, result, *config, bounds);
    }
  });
  if (probeFailed)
    return signalPassFailure();
  markAllAnalysesPreserved();
}
