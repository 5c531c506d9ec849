//===- RoutingGrad.cpp - fp64 references of the MoE FFN backward ----------===//
//
// Part of the moe-mlir project.
//
// moe-reference subcommands for the gradients of the MoE FFN primitives
// (ALGORITHMS.md sections 4.1, 6 and 7.1), each with the plainest fp64
// loops: route_grad (the router gradient through the top-k weights; the
// selection is recomputed from x, W_r and the bias), dispatch_grad,
// combine_grad, expert_ffn_grad (rows dispatched by the given indices),
// glu_ffn_grad and moe_ffn_grad (the routed FFN composed: every parameter's
// gradient through route, experts and combine). Every subcommand takes
// `--fd-check`: fp64 central finite differences of L = <dy, f(inputs)>
// along seeded random directions of each differentiable input, compared
// with the analytic gradient; the router's check fails rather than cross a
// top-k flip.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "moe/Support/Npy.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>

using namespace llvm;
namespace npy = mlir::moe::npy;
using namespace moe_reference;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::SubCommand
    routeGradCmd("route_grad",
                 "gradient of moe.route through its weights (section 4.1): "
                 "route_grad X W_ROUTER BIAS DWEIGHTS -o DX --dw-router=DWR "
                 "--top-k=K [--scaling=S] [--indices=IDX]");
static cl::SubCommand
    dispatchGradCmd("dispatch_grad",
                    "adjoint of moe.dispatch: dispatch_grad DPERMUTED "
                    "INDICES -o DX --num-experts=E");
static cl::SubCommand
    combineGradCmd("combine_grad",
                   "gradient of moe.combine (expert outputs in dispatch "
                   "order): combine_grad OUT INDICES WEIGHTS DY -o DOUT "
                   "--d-weights=DW --num-experts=E");
static cl::SubCommand expertFFNGradCmd(
    "expert_ffn_grad",
    "gradient of moe.expert_ffn on the rows that moe.dispatch makes of X by "
    "INDICES: expert_ffn_grad X INDICES W_GATE W_UP W_DOWN DYP -o DXP "
    "--dw-gate=F --dw-up=F --dw-down=F [--activation=...]");
static cl::SubCommand
    gluFFNGradCmd("glu_ffn_grad",
                  "gradient of moe.glu_ffn: glu_ffn_grad X W_GATE W_UP "
                  "W_DOWN DY -o DX --dw-gate=F --dw-up=F --dw-down=F "
                  "[--activation=...]");

static cl::SubCommand moeFFNGradCmd(
    "moe_ffn_grad",
    "gradient of the routed MoE FFN sum_i w_i Expert_i(x) (route, dispatch, "
    "experts, combine composed): moe_ffn_grad X W_ROUTER BIAS W_GATE W_UP "
    "W_DOWN DY -o DX --dw-router=F --dw-gate=F --dw-up=F --dw-down=F "
    "--top-k=K [--scaling=S] [--activation=...]");

static cl::SubCommandGroup gradCmds({&routeGradCmd, &dispatchGradCmd,
                                     &combineGradCmd, &expertFFNGradCmd,
                                     &gluFFNGradCmd, &moeFFNGradCmd});
static cl::SubCommandGroup routerCmds({&routeGradCmd, &moeFFNGradCmd});
static cl::SubCommandGroup expertCmds({&dispatchGradCmd, &combineGradCmd,
                                       &expertFFNGradCmd});
static cl::SubCommandGroup ffnGradCmds({&expertFFNGradCmd, &gluFFNGradCmd,
                                        &moeFFNGradCmd});

static cl::list<std::string> inputs(cl::Positional, cl::OneOrMore,
                                    cl::desc("<input.npy>..."),
                                    cl::sub(gradCmds),
                                    cl::cat(referenceCategory));
static cl::opt<std::string> output("o", cl::Required,
                                   cl::desc("first gradient (.npy, f64)"),
                                   cl::sub(gradCmds),
                                   cl::cat(referenceCategory));
static cl::opt<bool>
    fdCheck("fd-check",
            cl::desc("check every gradient against fp64 central differences "
                     "along random directions; exit 1 above --fd-tol"),
            cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<double> fdTolerance("fd-tol", cl::init(1e-6),
                                   cl::desc("largest accepted relative error "
                                            "of the finite differences"),
                                   cl::sub(gradCmds),
                                   cl::cat(referenceCategory));
static cl::opt<int64_t> routeTopK("top-k", cl::init(0),
                                  cl::desc("experts per token (required)"),
                                  cl::sub(routerCmds),
                                  cl::cat(referenceCategory));
static cl::opt<double> routeScaling("scaling", cl::init(1.0),
                                    cl::desc("routed scaling factor"),
                                    cl::sub(routerCmds),
                                    cl::cat(referenceCategory));
static cl::opt<std::string> dwRouterPath("dw-router", cl::Required,
                                         cl::desc("router weight gradient"),
                                         cl::sub(routerCmds),
                                         cl::cat(referenceCategory));
static cl::opt<std::string> indicesPath("indices",
                                        cl::desc("write the selection (i64)"),
                                        cl::sub(routeGradCmd),
                                        cl::cat(referenceCategory));
static cl::opt<int64_t> numExperts("num-experts", cl::init(0),
                                   cl::desc("number of experts (required)"),
                                   cl::sub(expertCmds),
                                   cl::cat(referenceCategory));
static cl::opt<std::string> dWeightsPath("d-weights", cl::Required,
                                         cl::desc("weights gradient"),
                                         cl::sub(combineGradCmd),
                                         cl::cat(referenceCategory));
static cl::opt<std::string> dwGatePath("dw-gate", cl::Required,
                                       cl::desc("w_gate gradient"),
                                       cl::sub(ffnGradCmds),
                                       cl::cat(referenceCategory));
static cl::opt<std::string> dwUpPath("dw-up", cl::Required,
                                     cl::desc("w_up gradient"),
                                     cl::sub(ffnGradCmds),
                                     cl::cat(referenceCategory));
static cl::opt<std::string> dwDownPath("dw-down", cl::Required,
                                       cl::desc("w_down gradient"),
                                       cl::sub(ffnGradCmds),
                                       cl::cat(referenceCategory));
static cl::opt<std::string> activation("activation", cl::init("swiglu"),
                                       cl::desc("swiglu or situ_glu"),
                                       cl::sub(ffnGradCmds),
                                       cl::cat(referenceCategory));
static cl::opt<double> gateBetaOpt("gate-beta", cl::init(4.0),
                                   cl::desc("SiTU gate beta"),
                                   cl::sub(ffnGradCmds),
                                   cl::cat(referenceCategory));
static cl::opt<double> upBetaOpt("up-beta", cl::init(0.0),
                                 cl::desc("SiTU up-projection cap (0: none)"),
                                 cl::sub(ffnGradCmds),
                                 cl::cat(referenceCategory));

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static void expectInputCount(size_t n) {
  if (inputs.size() != n)
    exitOnErr(makeError("expected " + Twine(n) + " input files, found " +
                        Twine(inputs.size())));
}

static void store(StringRef path, const Tensor &t) { storeAs(path, t, "f64"); }

static Tensor zerosLike(const Tensor &t) {
  return Tensor{t.shape, std::vector<double>(t.data.size(), 0.0)};
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

static double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

/// Indices `[N, k]` (any N when `tokens` is -1) read as integers and
/// checked against `experts`.
static std::vector<int64_t> loadIndices(StringRef path, int64_t tokens,
                                        int64_t &k, int64_t experts) {
  std::vector<int64_t> shape;
  std::vector<int64_t> indices = loadIntegers(path, shape);
  if (shape.size() != 2 || (tokens >= 0 && shape[0] != tokens))
    exitOnErr(makeError(path + ": expected indices of shape [" + Twine(tokens) +
                        ", k]"));
  k = shape[1];
  for (int64_t j : indices)
    if (j < 0 || j >= experts)
      exitOnErr(makeError(path + ": index " + Twine(j) + " outside [0, " +
                          Twine(experts) + ")"));
  return indices;
}

/// The stable order of moe.dispatch: slot ids `n * k + i` sorted by expert,
/// ties by slot id. `row[slot]` is the inverse.
static std::vector<int64_t> dispatchOrder(const std::vector<int64_t> &indices,
                                          int64_t experts,
                                          std::vector<int64_t> &row) {
  std::vector<int64_t> order;
  for (int64_t e = 0; e < experts; ++e)
    for (size_t slot = 0; slot < indices.size(); ++slot)
      if (indices[slot] == e)
        order.push_back(slot);
  row.assign(indices.size(), 0);
  for (size_t m = 0; m < order.size(); ++m)
    row[order[m]] = m;
  return order;
}

/// A loss `L(tensors) = <dy, f(tensors)>` and its analytic gradients.
using LossFn = std::function<double(const std::vector<Tensor> &)>;

/// Central differences of `loss` along 4 seeded random directions per
/// checked tensor, against `<grad, v>`. Prints and returns the worst
/// relative error `|fd - an| / max(|fd|, |an|)`; where both are below the
/// rounding noise of the differences, the error is 0 if they agree within
/// it and 1 otherwise.
static double finiteDifferences(std::vector<Tensor> point,
                                ArrayRef<int> checked,
                                ArrayRef<const Tensor *> grads,
                                ArrayRef<StringRef> names, const LossFn &loss) {
  std::mt19937_64 rng(20261201);
  double worst = 0;
  for (size_t c = 0; c < checked.size(); ++c) {
    Tensor &t = point[checked[c]];
    double magnitude = 1.0;
    for (double v : t.data)
      magnitude = std::max(magnitude, std::fabs(v));
    double h = 1e-6 * magnitude;
    double tensorWorst = 0;
    for (int dir = 0; dir < 4; ++dir) {
      std::vector<double> v(t.data.size());
      for (double &e : v)
        e = 2.0 * ((rng() >> 11) * 0x1.0p-53) - 1.0;
      double analytic = dot(grads[c]->data, v);
      std::vector<double> saved = t.data;
      for (size_t i = 0; i < v.size(); ++i)
        t.data[i] = saved[i] + h * v[i];
      double plus = loss(point);
      for (size_t i = 0; i < v.size(); ++i)
        t.data[i] = saved[i] - h * v[i];
      double minus = loss(point);
      t.data = saved;
      double fd = (plus - minus) / (2 * h);
      // Rounding of L alone moves fd by about eps |L| / h: a derivative
      // below that (a zero gradient, as with k = 1) is not resolved.
      double noise = 64 * 0x1.0p-52 * std::max(std::fabs(plus), 1.0) / h;
      double scale = std::max(std::fabs(fd), std::fabs(analytic));
      double error = scale > noise ? std::fabs(fd - analytic) / scale
                                   : std::fabs(fd - analytic) > noise;
      tensorWorst = std::max(tensorWorst, error);
    }
    outs() << "fd " << names[c] << ": max relative error "
           << format("%.3g", tensorWorst) << "\n";
    worst = std::max(worst, tensorWorst);
  }
  return worst;
}

static int finishFD(double worst) {
  if (worst > fdTolerance) {
    errs() << "moe-reference: finite differences disagree: "
           << format("%.3g", worst) << " > --fd-tol=" << fdTolerance.getValue()
           << "\n";
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// route_grad
//===----------------------------------------------------------------------===//

namespace {
/// ROUTE_REF of one batch: scores, selection and weights.
struct Selection {
  std::vector<double> scores;   // [N, E]
  std::vector<int64_t> indices; // [N, k]
  std::vector<double> weights;  // [N, k]
  double margin = INFINITY;     // smallest gap between ranks k-1 and k
};
} // namespace

static Selection select(const Tensor &x, const Tensor &w,
                        const std::vector<double> &bias, int64_t k,
                        double scaling) {
  int64_t tokens = x.dim(0), d = x.dim(1), experts = w.dim(0);
  Selection s;
  s.scores.resize(tokens * experts);
  s.indices.resize(tokens * k);
  s.weights.resize(tokens * k);
  std::vector<int64_t> order(experts);
  for (int64_t n = 0; n < tokens; ++n) {
    double *row = &s.scores[n * experts];
    for (int64_t j = 0; j < experts; ++j) {
      double logit = 0;
      for (int64_t c = 0; c < d; ++c)
        logit += x.data[n * d + c] * w.data[j * d + c];
      row[j] = sigmoid(logit);
    }
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return row[a] + bias[a] > row[b] + bias[b];
    });
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
      sum += row[order[i]];
    for (int64_t i = 0; i < k; ++i) {
      s.indices[n * k + i] = order[i];
      s.weights[n * k + i] = row[order[i]] / (sum + 1e-20) * scaling;
    }
    if (k < experts)
      s.margin = std::min(s.margin, row[order[k - 1]] + bias[order[k - 1]] -
                                        row[order[k]] - bias[order[k]]);
  }
  return s;
}

/// Adds the gradient of `<dw, weights>` (weights of `sel`, from x and w)
/// to `dx` and `dwr`.
static void routeBackward(const Tensor &x, const Tensor &w,
                          const Selection &sel, const std::vector<double> &dw,
                          int64_t k, double scaling, Tensor &dx, Tensor &dwr) {
  int64_t tokens = x.dim(0), d = x.dim(1), experts = w.dim(0);
  // The Jacobian of w_i = scaling s_i / (S + 1e-20): scaling (delta_ij S' -
  // s_i) / S'^2, with S' - s_i summed over the others (no cancellation).
  for (int64_t n = 0; n < tokens; ++n) {
    const int64_t *sel_n = &sel.indices[n * k];
    const double *s = &sel.scores[n * experts];
    double total = 1e-20;
    for (int64_t i = 0; i < k; ++i)
      total += s[sel_n[i]];
    for (int64_t j = 0; j < k; ++j) {
      double ds = 0;
      for (int64_t i = 0; i < k; ++i) {
        double numerator = -s[sel_n[i]];
        if (i == j) {
          numerator = 1e-20;
          for (int64_t l = 0; l < k; ++l)
            if (l != i)
              numerator += s[sel_n[l]];
        }
        ds += dw[n * k + i] * scaling * numerator / (total * total);
      }
      int64_t e = sel_n[j];
      double g = ds * s[e] * (1 - s[e]);
      for (int64_t c = 0; c < d; ++c) {
        dx.data[n * d + c] += g * w.data[e * d + c];
        dwr.data[e * d + c] += g * x.data[n * d + c];
      }
    }
  }
}

static int runRouteGrad() {
  expectInputCount(4);
  Tensor x = load(inputs[0]), w = load(inputs[1]), bias = load(inputs[2]),
         dw = load(inputs[3]);
  expectShape(x, "input", {-1, -1});
  int64_t tokens = x.dim(0), d = x.dim(1);
  expectShape(w, "w_router", {-1, d});
  int64_t experts = w.dim(0);
  expectShape(bias, "bias", {experts});
  int64_t k = routeTopK;
  if (k < 1 || k > experts)
    exitOnErr(makeError("--top-k must be in [1, " + Twine(experts) + "]"));
  expectShape(dw, "weights_grad", {tokens, k});
  double scaling = routeScaling;

  Selection sel = select(x, w, bias.data, k, scaling);
  Tensor dx = zerosLike(x), dwr = zerosLike(w);
  routeBackward(x, w, sel, dw.data, k, scaling, dx, dwr);
  store(output, dx);
  store(dwRouterPath, dwr);
  if (!indicesPath.empty())
    exitOnErr(npy::writeFile(indicesPath,
                             npy::Array::fromI64({tokens, k}, sel.indices)));
  outs() << "top-k margin " << format("%.3g", sel.margin) << "\n";
  if (!fdCheck)
    return 0;
  bool flipped = false;
  LossFn loss = [&](const std::vector<Tensor> &p) {
    Selection s = select(p[0], p[1], bias.data, k, scaling);
    if (s.indices != sel.indices)
      flipped = true;
    return dot(dw.data, s.weights);
  };
  double worst = finiteDifferences({x, w}, {0, 1}, {&dx, &dwr},
                                   {"input", "w_router"}, loss);
  if (flipped)
    exitOnErr(makeError("a finite-difference step changed the top-k "
                        "selection (margin " +
                        std::to_string(sel.margin) +
                        "); choose inputs with a larger margin"));
  return finishFD(worst);
}

//===----------------------------------------------------------------------===//
// dispatch_grad and combine_grad
//===----------------------------------------------------------------------===//

static int64_t requireExperts() {
  if (numExperts < 1)
    exitOnErr(makeError("--num-experts must be positive"));
  return numExperts;
}

static int runDispatchGrad() {
  expectInputCount(2);
  Tensor dperm = load(inputs[0]);
  expectShape(dperm, "permuted_grad", {-1, -1});
  int64_t d = dperm.dim(1), experts = requireExperts(), k = 0;
  std::vector<int64_t> indices = loadIndices(inputs[1], -1, k, experts);
  int64_t tokens =
      static_cast<int64_t>(indices.size()) / std::max<int64_t>(k, 1);
  expectShape(dperm, "permuted_grad", {tokens * k, d});
  std::vector<int64_t> row;
  dispatchOrder(indices, experts, row);
  Tensor dx{{tokens, d}, std::vector<double>(tokens * d, 0.0)};
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t c = 0; c < d; ++c)
        dx.data[n * d + c] += dperm.data[row[n * k + i] * d + c];
  store(output, dx);
  if (!fdCheck)
    return 0;
  // L(x) = <dperm, dispatch(x)>.
  std::vector<int64_t> order = dispatchOrder(indices, experts, row);
  LossFn loss = [&](const std::vector<Tensor> &p) {
    double sum = 0;
    for (size_t m = 0; m < order.size(); ++m)
      for (int64_t c = 0; c < d; ++c)
        sum += dperm.data[m * d + c] * p[0].data[(order[m] / k) * d + c];
    return sum;
  };
  Tensor x{{tokens, d}, std::vector<double>(tokens * d)};
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = std::sin(0.37 * i);
  return finishFD(finiteDifferences({x}, {0}, {&dx}, {"input"}, loss));
}

static int runCombineGrad() {
  expectInputCount(4);
  Tensor out = load(inputs[0]), weights = load(inputs[2]), dy = load(inputs[3]);
  expectShape(weights, "weights", {-1, -1});
  int64_t tokens = weights.dim(0), k = weights.dim(1);
  expectShape(out, "expert_output", {tokens * k, -1});
  int64_t d = out.dim(1), experts = requireExperts(), indexK = 0;
  expectShape(dy, "result_grad", {tokens, d});
  std::vector<int64_t> indices =
      loadIndices(inputs[1], tokens, indexK, experts);
  if (indexK != k)
    exitOnErr(makeError("indices and weights disagree on k"));
  std::vector<int64_t> row;
  dispatchOrder(indices, experts, row);
  Tensor dout = zerosLike(out), dw = zerosLike(weights);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < k; ++i) {
      int64_t m = row[n * k + i];
      for (int64_t c = 0; c < d; ++c) {
        dout.data[m * d + c] = weights.data[n * k + i] * dy.data[n * d + c];
        dw.data[n * k + i] += out.data[m * d + c] * dy.data[n * d + c];
      }
    }
  store(output, dout);
  store(dWeightsPath, dw);
  if (!fdCheck)
    return 0;
  LossFn loss = [&](const std::vector<Tensor> &p) {
    double sum = 0;
    for (int64_t n = 0; n < tokens; ++n)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t c = 0; c < d; ++c)
          sum += dy.data[n * d + c] * p[1].data[n * k + i] *
                 p[0].data[row[n * k + i] * d + c];
    return sum;
  };
  return finishFD(finiteDifferences({out, weights}, {0, 1}, {&dout, &dw},
                                    {"expert_output", "weights"}, loss));
}

//===----------------------------------------------------------------------===//
// expert_ffn_grad and glu_ffn_grad
//===----------------------------------------------------------------------===//

namespace {
/// The gated activation h(a, u) and its partial derivatives (section 6).
struct Activation {
  bool situ = false;
  double gateBeta = 4.0, upBeta = 0.0;

  double gate(double a) const {
    return situ ? gateBeta * std::tanh(a / gateBeta) * sigmoid(a)
                : a * sigmoid(a);
  }
  double gateGrad(double a) const {
    double s = sigmoid(a);
    if (!situ)
      return s + a * s * (1 - s);
    double t = std::tanh(a / gateBeta);
    return (1 - t * t) * s + gateBeta * t * s * (1 - s);
  }
  double up(double u) const {
    return situ && upBeta > 0 ? upBeta * std::tanh(u / upBeta) : u;
  }
  double upGrad(double u) const {
    if (!(situ && upBeta > 0))
      return 1.0;
    double t = std::tanh(u / upBeta);
    return 1 - t * t;
  }
};
} // namespace

static Activation parseActivation() {
  if (activation != "swiglu" && activation != "situ_glu")
    exitOnErr(makeError("--activation must be swiglu or situ_glu"));
  Activation act;
  act.situ = activation == "situ_glu";
  act.gateBeta = gateBetaOpt;
  act.upBeta = upBetaOpt;
  return act;
}

/// One row `y = h(x Wg, x Wu) Wd` of width d with `Wg, Wu: [d, F]` and
/// `Wd: [F, d]` at the given offsets; adds `<dy, y>` to `loss` and, with
/// gradients, accumulates dx, dWg, dWu, dWd.
static double ffnRow(const Activation &act, const double *x, const double *wg,
                     const double *wu, const double *wd, const double *dy,
                     int64_t d, int64_t width, double *dx, double *dwg,
                     double *dwu, double *dwd) {
  double loss = 0;
  for (int64_t f = 0; f < width; ++f) {
    double a = 0, u = 0, dh = 0;
    for (int64_t c = 0; c < d; ++c) {
      a += x[c] * wg[c * width + f];
      u += x[c] * wu[c * width + f];
      dh += dy[c] * wd[f * d + c];
    }
    double h = act.gate(a) * act.up(u);
    loss += h * dh;
    if (!dx)
      continue;
    double da = dh * act.gateGrad(a) * act.up(u);
    double du = dh * act.gate(a) * act.upGrad(u);
    for (int64_t c = 0; c < d; ++c) {
      dx[c] += da * wg[c * width + f] + du * wu[c * width + f];
      dwg[c * width + f] += x[c] * da;
      dwu[c * width + f] += x[c] * du;
      dwd[f * d + c] += h * dy[c];
    }
  }
  return loss;
}

/// Runs the FFN backward over `rows` rows of x (each with its expert in
/// `expertOf`, or 0 for the dense FFN), writes the gradients and checks
/// them when asked.
static int ffnGrad(const Tensor &x, const std::vector<int64_t> &expertOf,
                   const Tensor &wg, const Tensor &wu, const Tensor &wd,
                   const Tensor &dy) {
  Activation act = parseActivation();
  int64_t d = x.dim(-1), rows = expertOf.size();
  int64_t width = wg.dim(-1);
  int64_t gateSize = d * width, downSize = width * d;
  auto run = [&](const std::vector<Tensor> &p, Tensor *dx, Tensor *dwg,
                 Tensor *dwu, Tensor *dwd) {
    double loss = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t e = expertOf[r];
      loss += ffnRow(act, &p[0].data[r * d], &p[1].data[e * gateSize],
                     &p[2].data[e * gateSize], &p[3].data[e * downSize],
                     &dy.data[r * d], d, width, dx ? &dx->data[r * d] : nullptr,
                     dx ? &dwg->data[e * gateSize] : nullptr,
                     dx ? &dwu->data[e * gateSize] : nullptr,
                     dx ? &dwd->data[e * downSize] : nullptr);
    }
    return loss;
  };
  Tensor dx = zerosLike(x), dwg = zerosLike(wg), dwu = zerosLike(wu),
         dwd = zerosLike(wd);
  std::vector<Tensor> point = {x, wg, wu, wd};
  run(point, &dx, &dwg, &dwu, &dwd);
  store(output, dx);
  store(dwGatePath, dwg);
  store(dwUpPath, dwu);
  store(dwDownPath, dwd);
  if (!fdCheck)
    return 0;
  LossFn loss = [&](const std::vector<Tensor> &p) {
    return run(p, nullptr, nullptr, nullptr, nullptr);
  };
  return finishFD(
      finiteDifferences(point, {0, 1, 2, 3}, {&dx, &dwg, &dwu, &dwd},
                        {"input", "w_gate", "w_up", "w_down"}, loss));
}

static int runExpertFFNGrad() {
  expectInputCount(6);
  Tensor tokensX = load(inputs[0]), wg = load(inputs[2]), wu = load(inputs[3]),
         wd = load(inputs[4]), dyp = load(inputs[5]);
  expectShape(tokensX, "input", {-1, -1});
  int64_t tokens = tokensX.dim(0), d = tokensX.dim(1);
  int64_t experts = requireExperts(), k = 0;
  expectShape(wg, "w_gate", {experts, d, -1});
  int64_t width = wg.dim(2);
  expectShape(wu, "w_up", {experts, d, width});
  expectShape(wd, "w_down", {experts, width, d});
  std::vector<int64_t> indices = loadIndices(inputs[1], tokens, k, experts);
  expectShape(dyp, "result_grad", {tokens * k, d});
  std::vector<int64_t> row;
  std::vector<int64_t> order = dispatchOrder(indices, experts, row);
  // The permuted rows and their experts, as moe.dispatch orders them.
  Tensor xp{{tokens * k, d}, std::vector<double>(tokens * k * d)};
  std::vector<int64_t> expertOf(tokens * k);
  for (size_t m = 0; m < order.size(); ++m) {
    expertOf[m] = indices[order[m]];
    for (int64_t c = 0; c < d; ++c)
      xp.data[m * d + c] = tokensX.data[(order[m] / k) * d + c];
  }
  return ffnGrad(xp, expertOf, wg, wu, wd, dyp);
}

static int runGLUFFNGrad() {
  expectInputCount(5);
  Tensor x = load(inputs[0]), wg = load(inputs[1]), wu = load(inputs[2]),
         wd = load(inputs[3]), dy = load(inputs[4]);
  if (x.rank() < 1)
    exitOnErr(makeError("input: expected rank >= 1"));
  int64_t d = x.dim(-1);
  expectShape(wg, "w_gate", {d, -1});
  int64_t width = wg.dim(1);
  expectShape(wu, "w_up", {d, width});
  expectShape(wd, "w_down", {width, d});
  expectShape(dy, "result_grad", x.shape);
  int64_t rows = d ? x.data.size() / d : 0;
  return ffnGrad(x, std::vector<int64_t>(rows, 0), wg, wu, wd, dy);
}

//===----------------------------------------------------------------------===//
// moe_ffn_grad: the routed half of the MoE FFN, composed
//===----------------------------------------------------------------------===//

static int runMoEFFNGrad() {
  expectInputCount(7);
  Tensor x = load(inputs[0]), wr = load(inputs[1]), bias = load(inputs[2]),
         wg = load(inputs[3]), wu = load(inputs[4]), wd = load(inputs[5]),
         dy = load(inputs[6]);
  expectShape(x, "input", {-1, -1});
  int64_t tokens = x.dim(0), d = x.dim(1);
  expectShape(wr, "w_router", {-1, d});
  int64_t experts = wr.dim(0);
  expectShape(bias, "bias", {experts});
  expectShape(wg, "w_gate", {experts, d, -1});
  int64_t width = wg.dim(2);
  expectShape(wu, "w_up", {experts, d, width});
  expectShape(wd, "w_down", {experts, width, d});
  expectShape(dy, "result_grad", {tokens, d});
  int64_t k = routeTopK;
  if (k < 1 || k > experts)
    exitOnErr(makeError("--top-k must be in [1, " + Twine(experts) + "]"));
  double scaling = routeScaling;
  Activation act = parseActivation();
  int64_t gateSize = d * width;

  // L = <dy, sum_i w_i Expert_{j_i}(x)>; with grads, the experts' backward
  // with dy scaled by w_i, dw_i = <Expert_{j_i}(x), dy> and the router's.
  auto run = [&](const std::vector<Tensor> &p, Selection &sel,
                 std::vector<Tensor> *grads) {
    sel = select(p[0], p[1], bias.data, k, scaling);
    std::vector<double> dw(tokens * k, 0.0), scaled(d);
    double loss = 0;
    for (int64_t n = 0; n < tokens; ++n)
      for (int64_t i = 0; i < k; ++i) {
        int64_t e = sel.indices[n * k + i];
        double weight = sel.weights[n * k + i];
        const double *row = &p[0].data[n * d];
        double inner =
            ffnRow(act, row, &p[2].data[e * gateSize], &p[3].data[e * gateSize],
                   &p[4].data[e * gateSize], &dy.data[n * d], d, width, nullptr,
                   nullptr, nullptr, nullptr);
        loss += weight * inner;
        if (!grads)
          continue;
        dw[n * k + i] = inner;
        for (int64_t c = 0; c < d; ++c)
          scaled[c] = weight * dy.data[n * d + c];
        std::vector<Tensor> &g = *grads;
        ffnRow(act, row, &p[2].data[e * gateSize], &p[3].data[e * gateSize],
               &p[4].data[e * gateSize], scaled.data(), d, width,
               &g[0].data[n * d], &g[2].data[e * gateSize],
               &g[3].data[e * gateSize], &g[4].data[e * gateSize]);
      }
    if (grads)
      routeBackward(p[0], p[1], sel, dw, k, scaling, (*grads)[0], (*grads)[1]);
    return loss;
  };
  std::vector<Tensor> point = {x, wr, wg, wu, wd};
  std::vector<Tensor> grads = {zerosLike(x), zerosLike(wr), zerosLike(wg),
                               zerosLike(wu), zerosLike(wd)};
  Selection base;
  run(point, base, &grads);
  store(output, grads[0]);
  store(dwRouterPath, grads[1]);
  store(dwGatePath, grads[2]);
  store(dwUpPath, grads[3]);
  store(dwDownPath, grads[4]);
  outs() << "top-k margin " << format("%.3g", base.margin) << "\n";
  if (!fdCheck)
    return 0;
  bool flipped = false;
  LossFn loss = [&](const std::vector<Tensor> &p) {
    Selection sel;
    double value = run(p, sel, nullptr);
    if (sel.indices != base.indices)
      flipped = true;
    return value;
  };
  double worst = finiteDifferences(
      point, {0, 1, 2, 3, 4},
      {&grads[0], &grads[1], &grads[2], &grads[3], &grads[4]},
      {"input", "w_router", "w_gate", "w_up", "w_down"}, loss);
  if (flipped)
    exitOnErr(makeError("a finite-difference step changed the top-k "
                        "selection (margin " +
                        std::to_string(base.margin) +
                        "); choose inputs with a larger margin"));
  return finishFD(worst);
}

static RegisterReference registerRouteGrad(routeGradCmd, runRouteGrad);
static RegisterReference registerDispatchGrad(dispatchGradCmd, runDispatchGrad);
static RegisterReference registerCombineGrad(combineGradCmd, runCombineGrad);
static RegisterReference registerExpertFFNGrad(expertFFNGradCmd,
                                               runExpertFFNGrad);
static RegisterReference registerGLUFFNGrad(gluFFNGradCmd, runGLUFFNGrad);
static RegisterReference registerMoEFFNGrad(moeFFNGradCmd, runMoEFFNGrad);
