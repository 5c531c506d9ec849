//===- MoEAttrs.cpp - moe attribute verifiers -----------------------------===//
//
// Part of the moe-mlir project.
//
// The generated attribute classes and the rules each attribute's parameters
// must follow.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::moe;

#include "dialects/MoE/MoEEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/MoE/MoEAttrs.cpp.inc"

void MoEDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/MoE/MoEAttrs.cpp.inc"
      >();
}

static bool isPositiveFinite(double value) {
  return std::isfinite(value) && value > 0.0;
}

/// The value of an optional double parameter.
static std::optional<double> toDouble(const std::optional<APFloat> &value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}

LogicalResult
DecayGateAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      GateKind kind, std::optional<APFloat> gMinAttr) {
  std::optional<double> gMin = toDouble(gMinAttr);
  if (kind == GateKind::Softplus) {
    if (gMin)
      return emitError() << "the softplus gate is unbounded and takes no g_min";
    return success();
  }
  if (!gMin)
    return emitError() << "the bounded gate requires g_min";
  if (!std::isfinite(*gMin) || *gMin >= 0.0)
    return emitError() << "expects g_min to be finite and negative, got "
                       << *gMin;
  return success();
}

LogicalResult
QuantileBalanceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            QuantileMethod method,
                            std::optional<int64_t> bins) {
  if (method == QuantileMethod::Exact) {
    if (bins)
      return emitError() << "the exact quantile takes no bin count";
    return success();
  }
  if (!bins)
    return emitError() << "the histogram quantile requires a bin count";
  if (*bins < 2)
    return emitError() << "expects at least 2 histogram bins, got " << *bins;
  return success();
}

LogicalResult
SignBiasBalanceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            APFloat rateAttr) {
  double rate = rateAttr.convertToDouble();
  if (!isPositiveFinite(rate))
    return emitError() << "expects the sign-bias rate to be finite and "
                          "positive, got "
                       << rate;
  return success();
}

LogicalResult RoutingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t numExperts, int64_t topK,
                                  APFloat scalingAttr, Attribute balance) {
  double scaling = scalingAttr.convertToDouble();
  if (numExperts < 1)
    return emitError() << "expects at least one expert, got " << numExperts;
  if (topK < 1 || topK > numExperts)
    return emitError() << "expects 1 <= top_k (" << topK << ") <= experts ("
                       << numExperts << ")";
  if (!isPositiveFinite(scaling))
    return emitError() << "expects the routed scaling factor to be finite and "
                          "positive, got "
                       << scaling;
  if (!isa<QuantileBalanceAttr, SignBiasBalanceAttr>(balance))
    return emitError() << "expects balance to be #moe.quantile_balance or "
                          "#moe.sign_bias, got "
                       << balance;
  if (isa<QuantileBalanceAttr>(balance) && topK == numExperts)
    return emitError() << "quantile balancing needs top_k (" << topK
                       << ") < experts (" << numExperts
                       << "): its cut is the (k+1)-th largest score";
  return success();
}

LogicalResult
ActivationAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       Activation kind, std::optional<APFloat> gateBetaAttr,
                       std::optional<APFloat> upBetaAttr) {
  std::optional<double> gateBeta = toDouble(gateBetaAttr),
                        upBeta = toDouble(upBetaAttr);
  if (kind == Activation::SwiGLU) {
    if (gateBeta || upBeta)
      return emitError() << "swiglu takes no gate_beta or up_beta";
    return success();
  }
  if (!gateBeta)
    return emitError() << "situ_glu requires gate_beta";
  if (!isPositiveFinite(*gateBeta))
    return emitError() << "expects gate_beta to be finite and positive, got "
                       << *gateBeta;
  if (upBeta && !isPositiveFinite(*upBeta))
    return emitError() << "expects up_beta to be finite and positive, got "
                       << *upBeta;
  return success();
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, std::optional<APFloat> stdAttr,
                               std::optional<APFloat> lowAttr,
                               std::optional<APFloat> highAttr) {
  std::optional<double> std = toDouble(stdAttr), low = toDouble(lowAttr),
                        high = toDouble(highAttr);
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    if (std || low || high)
      return emitError() << "init '" << stringifyInitKind(kind)
                         << "' takes no parameters";
    return success();
  case InitKind::Normal:
    if (low || high)
      return emitError() << "init 'normal' takes only std";
    if (!std)
      return emitError() << "init 'normal' requires std";
    if (!isPositiveFinite(*std))
      return emitError() << "expects std to be finite and positive, got "
                         << *std;
    return success();
  case InitKind::LogUniform:
  case InitKind::InverseSoftplusDt:
    if (std)
      return emitError() << "init '" << stringifyInitKind(kind)
                         << "' takes low and high, not std";
    if (!low || !high)
      return emitError() << "init '" << stringifyInitKind(kind)
                         << "' requires low and high";
    if (!(isPositiveFinite(*low) && std::isfinite(*high) && *low < *high))
      return emitError() << "expects 0 < low < high, got low = " << *low
                         << " and high = " << *high;
    return success();
  }
  llvm_unreachable("unknown init kind");
}
