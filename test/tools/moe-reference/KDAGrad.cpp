//===- KDAGrad.cpp - fp64 reference of the KDA backward
//---------------------===//
//
// Part of the moe-mlir project.
//
// `moe-reference kda-grad`: the exact backward of the per-token KDA
// recurrence (ALGORITHMS.md section 1.3 BWD) on the operands of `moe.kda`
// as they are (q and k are used as given, the log decay is given, not a
// gate's input), in fp64. With --check-fd it also differentiates the section
// 1.3 FWD by central finite differences, element by element, and compares:
// it prints the worst relative error of each gradient (max|a-b| / max|b|,
// as `moe-npy compare` measures) and fails above --fd-tolerance.
//
// The loss whose gradients are computed is
//   sum(dO * o) + sum(dS_T * S_T),
// so dO and dS_T are the adjoints of the output and of the final state.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace llvm;
using namespace moe_reference;

static cl::SubCommand
    kdaGradCmd("kda-grad",
               "KDA backward by the per-token recurrence of section 1.3: "
               "kda-grad Q K V G BETA DO [--initial-state=S0] "
               "[--final-state-adjoint=DS] -o DIR; writes DIR/{dq,dk,dv,dg,"
               "dbeta,ds0}.npy [--check-fd]");

static cl::list<std::string> gradInputs(cl::Positional, cl::OneOrMore,
                                        cl::desc("Q K V G BETA DO (.npy)"),
                                        cl::sub(kdaGradCmd),
                                        cl::cat(referenceCategory));
static cl::opt<std::string>
    gradOutputDir("o", cl::desc("output directory (must exist)"),
                  cl::value_desc("dir"), cl::sub(kdaGradCmd),
                  cl::cat(referenceCategory));
static cl::opt<std::string>
    gradDType("dtype", cl::init("f32"),
              cl::desc("element type of the outputs: f32 or f64"),
              cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<double> gradScale("scale", cl::init(0.0),
                                 cl::desc("query scale (default K^-1/2)"),
                                 cl::sub(kdaGradCmd),
                                 cl::cat(referenceCategory));
static cl::opt<std::string> gradInitialState(
    "initial-state", cl::desc("optional initial state (default 0)"),
    cl::value_desc("path"), cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<std::string> gradFinalStateAdjoint(
    "final-state-adjoint",
    cl::desc("optional adjoint of the final state (default 0)"),
    cl::value_desc("path"), cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<std::string> gradStateLayout(
    "state-layout", cl::init("key_major"),
    cl::desc("layout of the states: key_major [B,H,K,V] or value_major "
             "[B,H,V,K]"),
    cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<bool>
    checkFD("check-fd",
            cl::desc("also check the gradients against central finite "
                     "differences of the section 1.3 forward"),
            cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<double> fdStep("fd-step", cl::init(1e-6),
                              cl::desc("finite-difference step"),
                              cl::sub(kdaGradCmd), cl::cat(referenceCategory));
static cl::opt<double>
    fdTolerance("fd-tolerance", cl::init(1e-6),
                cl::desc("largest accepted relative error of --check-fd"),
                cl::sub(kdaGradCmd), cl::cat(referenceCategory));

namespace {
/// The operands of one moe.kda_grad, states key-major.
struct Problem {
  int64_t batch = 0, length = 0, heads = 0, keyDim = 0, valueDim = 0;
  double scale = 0;
  // q, k, g: [B,T,H,K]; v, dO: [B,T,H,V]; beta: [B,T,H]; states [B,H,K,V].
  Tensor q, k, v, g, beta, s0, dO, dST;

  int64_t tok(int64_t b, int64_t t, int64_t h) const {
    return (b * length + t) * heads + h;
  }
  int64_t head(int64_t b, int64_t h) const { return b * heads + h; }
};

/// The gradients, shaped like their operands.
struct Gradients {
  Tensor dq, dk, dv, dg, dbeta, ds0;
};
} // namespace

/// Swaps the last two dimensions of a rank-4 tensor.
static Tensor swapLast(const Tensor &x) {
  Tensor y{{x.dim(0), x.dim(1), x.dim(3), x.dim(2)},
           std::vector<double>(x.data.size())};
  int64_t rows = x.dim(2), cols = x.dim(3);
  for (int64_t o = 0; o < x.dim(0) * x.dim(1); ++o)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        y.data[(o * cols + j) * rows + i] = x.data[(o * rows + i) * cols + j];
  return y;
}

static Tensor zerosLike(const Tensor &x) {
  return Tensor{x.shape, std::vector<double>(x.data.size(), 0.0)};
}

/// Section 1.3 FWD of every (batch, head); returns the loss
/// sum(dO * o) + sum(dS_T * S_T).
static double forwardLoss(const Problem &p) {
  int64_t K = p.keyDim, V = p.valueDim;
  std::vector<double> S(K * V), u(V);
  double loss = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      std::copy_n(&p.s0.data[p.head(b, h) * K * V], K * V, S.begin());
      for (int64_t t = 0; t < p.length; ++t) {
        const double *q = &p.q.data[p.tok(b, t, h) * K];
        const double *k = &p.k.data[p.tok(b, t, h) * K];
        const double *g = &p.g.data[p.tok(b, t, h) * K];
        const double *v = &p.v.data[p.tok(b, t, h) * V];
        const double *dO = &p.dO.data[p.tok(b, t, h) * V];
        double beta = p.beta.data[p.tok(b, t, h)];
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            S[i * V + j] *= std::exp(g[i]);
        for (int64_t j = 0; j < V; ++j) {
          double predicted = 0;
          for (int64_t i = 0; i < K; ++i)
            predicted += S[i * V + j] * k[i];
          u[j] = beta * (v[j] - predicted);
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            S[i * V + j] += k[i] * u[j];
        for (int64_t j = 0; j < V; ++j) {
          double o = 0;
          for (int64_t i = 0; i < K; ++i)
            o += S[i * V + j] * p.scale * q[i];
          loss += dO[j] * o;
        }
      }
      const double *dST = &p.dST.data[p.head(b, h) * K * V];
      for (int64_t i = 0; i < K * V; ++i)
        loss += dST[i] * S[i];
    }
  return loss;
}

/// Section 1.3 BWD: a forward sweep that stores S~_t, u_t and S_t, then the
/// reverse sweep.
static Gradients backward(const Problem &p) {
  int64_t K = p.keyDim, V = p.valueDim, T = p.length;
  Gradients r{zerosLike(p.q), zerosLike(p.k),    zerosLike(p.v),
              zerosLike(p.g), zerosLike(p.beta), zerosLike(p.s0)};
  std::vector<double> decayed(T * K * V), updated(T * K * V), us(T * V);
  std::vector<double> dS(K * V), dSd(K * V), du(V);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      // Forward, storing every state.
      std::vector<double> S(&p.s0.data[p.head(b, h) * K * V],
                            &p.s0.data[(p.head(b, h) + 1) * K * V]);
      for (int64_t t = 0; t < T; ++t) {
        const double *k = &p.k.data[p.tok(b, t, h) * K];
        const double *g = &p.g.data[p.tok(b, t, h) * K];
        const double *v = &p.v.data[p.tok(b, t, h) * V];
        double beta = p.beta.data[p.tok(b, t, h)];
        double *Sd = &decayed[t * K * V];
        double *u = &us[t * V];
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            Sd[i * V + j] = std::exp(g[i]) * S[i * V + j];
        for (int64_t j = 0; j < V; ++j) {
          double predicted = 0;
          for (int64_t i = 0; i < K; ++i)
            predicted += Sd[i * V + j] * k[i];
          u[j] = beta * (v[j] - predicted);
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            S[i * V + j] = Sd[i * V + j] + k[i] * u[j];
        std::copy(S.begin(), S.end(), &updated[t * K * V]);
      }

      // Reverse.
      std::copy_n(&p.dST.data[p.head(b, h) * K * V], K * V, dS.begin());
      for (int64_t t = T - 1; t >= 0; --t) {
        const double *q = &p.q.data[p.tok(b, t, h) * K];
        const double *k = &p.k.data[p.tok(b, t, h) * K];
        const double *g = &p.g.data[p.tok(b, t, h) * K];
        const double *v = &p.v.data[p.tok(b, t, h) * V];
        const double *dO = &p.dO.data[p.tok(b, t, h) * V];
        double beta = p.beta.data[p.tok(b, t, h)];
        const double *Sd = &decayed[t * K * V];
        const double *St = &updated[t * K * V];
        const double *u = &us[t * V];
        double *dq = &r.dq.data[p.tok(b, t, h) * K];
        double *dk = &r.dk.data[p.tok(b, t, h) * K];
        double *dg = &r.dg.data[p.tok(b, t, h) * K];
        double *dv = &r.dv.data[p.tok(b, t, h) * V];
        double &dbeta = r.dbeta.data[p.tok(b, t, h)];

        // dS += outer(s q_t, dO_t); dq_t = s S_t dO_t.
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) {
            dS[i * V + j] += p.scale * q[i] * dO[j];
            acc += St[i * V + j] * dO[j];
          }
          dq[i] = p.scale * acc;
        }
        // dk_t = dS u_t; du = dS^T k_t.
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j)
            acc += dS[i * V + j] * u[j];
          dk[i] = acc;
        }
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < K; ++i)
            acc += dS[i * V + j] * k[i];
          du[j] = acc;
        }
        // dv_t = beta du; dbeta_t = du . (v_t - S~^T k_t).
        dbeta = 0;
        for (int64_t j = 0; j < V; ++j) {
          dv[j] = beta * du[j];
          double predicted = 0;
          for (int64_t i = 0; i < K; ++i)
            predicted += Sd[i * V + j] * k[i];
          dbeta += du[j] * (v[j] - predicted);
        }
        // dS~ = dS - beta outer(k, du); dk_t -= beta S~ du.
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) {
            dSd[i * V + j] = dS[i * V + j] - beta * k[i] * du[j];
            acc += Sd[i * V + j] * du[j];
          }
          dk[i] -= beta * acc;
        }
        // dg_t = rowsum(dS~ o S~); dS = exp(g_t) dS~.
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) {
            acc += dSd[i * V + j] * Sd[i * V + j];
            dS[i * V + j] = std::exp(g[i]) * dSd[i * V + j];
          }
          dg[i] = acc;
        }
      }
      std::copy(dS.begin(), dS.end(), &r.ds0.data[p.head(b, h) * K * V]);
    }
  return r;
}

/// max|a - b| / max|b| (0 when both are zero).
static double relativeError(const Tensor &a, const Tensor &b) {
  double diff = 0, size = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    diff = std::max(diff, std::abs(a.data[i] - b.data[i]));
    size = std::max(size, std::abs(b.data[i]));
  }
  if (size == 0)
    return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return diff / size;
}

/// Central differences of the loss with respect to every element of `x`.
static Tensor finiteDifferences(Problem &p, Tensor &x) {
  Tensor d = zerosLike(x);
  for (size_t i = 0; i < x.data.size(); ++i) {
    double saved = x.data[i];
    double step = fdStep * std::max(1.0, std::abs(saved));
    x.data[i] = saved + step;
    double plus = forwardLoss(p);
    x.data[i] = saved - step;
    double minus = forwardLoss(p);
    x.data[i] = saved;
    d.data[i] = (plus - minus) / (2 * step);
  }
  return d;
}

static Problem loadProblem() {
  if (gradInputs.size() != 6)
    exitOnErr(makeError("kda-grad expects 6 inputs (Q K V G BETA DO), got " +
                        Twine(gradInputs.size())));
  bool valueMajor = gradStateLayout == "value_major";
  if (!valueMajor && gradStateLayout != "key_major")
    exitOnErr(makeError("--state-layout must be key_major or value_major, "
                        "not '" +
                        gradStateLayout + "'"));
  Problem p;
  p.q = load(gradInputs[0]);
  expectShape(p.q, "q", {-1, -1, -1, -1});
  p.batch = p.q.dim(0);
  p.length = p.q.dim(1);
  p.heads = p.q.dim(2);
  p.keyDim = p.q.dim(3);
  p.k = load(gradInputs[1]);
  expectShape(p.k, "k", p.q.shape);
  p.v = load(gradInputs[2]);
  expectShape(p.v, "v", {p.batch, p.length, p.heads, -1});
  p.valueDim = p.v.dim(3);
  p.g = load(gradInputs[3]);
  expectShape(p.g, "g", p.q.shape);
  p.beta = load(gradInputs[4]);
  expectShape(p.beta, "beta", {p.batch, p.length, p.heads});
  p.dO = load(gradInputs[5]);
  expectShape(p.dO, "dO", p.v.shape);
  p.scale =
      gradScale > 0 ? double(gradScale) : 1.0 / std::sqrt(double(p.keyDim));

  std::vector<int64_t> keyMajor = {p.batch, p.heads, p.keyDim, p.valueDim};
  std::vector<int64_t> given = keyMajor;
  if (valueMajor)
    std::swap(given[2], given[3]);
  auto loadState = [&](const std::string &path, StringRef name) {
    if (path.empty())
      return Tensor{keyMajor, std::vector<double>(p.batch * p.heads * p.keyDim *
                                                  p.valueDim)};
    Tensor s = load(path);
    expectShape(s, name, given);
    return valueMajor ? swapLast(s) : s;
  };
  p.s0 = loadState(gradInitialState, "initial state");
  p.dST = loadState(gradFinalStateAdjoint, "final-state adjoint");
  return p;
}

static int runKDAGrad() {
  if (gradOutputDir.empty() && !checkFD)
    exitOnErr(makeError("kda-grad needs -o DIR or --check-fd"));
  Problem p = loadProblem();
  Gradients grads = backward(p);

  int status = 0;
  if (checkFD) {
    struct Entry {
      const char *name;
      Tensor *operand;
      const Tensor *analytic;
    } entries[] = {
        {"dq", &p.q, &grads.dq},          {"dk", &p.k, &grads.dk},
        {"dv", &p.v, &grads.dv},          {"dg", &p.g, &grads.dg},
        {"dbeta", &p.beta, &grads.dbeta}, {"ds0", &p.s0, &grads.ds0}};
    double worst = 0;
    for (Entry &e : entries) {
      Tensor fd = finiteDifferences(p, *e.operand);
      double error = relativeError(*e.analytic, fd);
      outs() << "finite differences: " << e.name << " relative error "
             << format("%.3e", error) << "\n";
      if (std::isnan(error) || error > worst)
        worst = std::isnan(worst) ? worst : error;
    }
    outs() << "finite differences: worst relative error "
           << format("%.3e", worst) << "\n";
    if (!(worst <= fdTolerance)) {
      errs() << "moe-reference: finite-difference error "
             << format("%.3e", worst) << " exceeds --fd-tolerance="
             << format("%.3e", double(fdTolerance)) << "\n";
      status = 1;
    }
  }

  if (!gradOutputDir.empty()) {
    bool valueMajor = gradStateLayout == "value_major";
    auto path = [&](const char *name) {
      return std::string(gradOutputDir) + "/" + name + ".npy";
    };
    storeAs(path("dq"), grads.dq, gradDType);
    storeAs(path("dk"), grads.dk, gradDType);
    storeAs(path("dv"), grads.dv, gradDType);
    storeAs(path("dg"), grads.dg, gradDType);
    storeAs(path("dbeta"), grads.dbeta, gradDType);
    storeAs(path("ds0"), valueMajor ? swapLast(grads.ds0) : grads.ds0,
            gradDType);
  }
  return status;
}

static RegisterReference registerKDAGrad(kdaGradCmd, runKDAGrad);
