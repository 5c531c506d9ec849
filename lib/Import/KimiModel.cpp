//===- KimiModel.cpp - Write a Kimi-Linear config as a moe.model ----------===//
//
// Part of the moe-mlir project.
//
// Writes a validated KimiConfig as the text of one `moe.model` (the layout
// of examples/models: named values, one parameter per line, wrapped at 100
// columns), parses and verifies that text, and heads it with a comment that
// states the source and the parameter counts.
//
//===----------------------------------------------------------------------===//

#include "moe/Import/KimiConfig.h"

#include "FloatFormat.h"

#include "moe/Analysis/ModelSummary.h"
#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::moe;

/// Lines longer than this are wrapped.
static constexpr size_t kLineWidth = 100;

/// `x` as an MLIR float literal: the shortest exact form, with a '.'.
static std::string floatLiteral(double x) {
  std::string s = formatShortest(x);
  if (s.find('.') != std::string::npos)
    return s;
  size_t e = s.find('e');
  if (e != std::string::npos)
    s.insert(e, ".0");
  else
    s += ".0";
  return s;
}

/// `n` with thousands separators: 49,122,681,728.
static std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0)
      out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

namespace {

/// Writes the model text of one config.
class ModelWriter {
public:
  ModelWriter(const KimiConfig &config, llvm::raw_ostream &os)
      : c(config), os(os), elt(config.elementType),
        act("tensor<?x?x" + std::to_string(config.hiddenSize) + "x" +
            config.elementType + ">"),
        normal("<normal, std = " + floatLiteral(config.initStd) + ">") {}

  void write();

private:
  std::string tensor(ArrayRef<int64_t> shape, StringRef type = "") const {
    std::string s = "tensor<";
    for (int64_t d : shape)
      s += std::to_string(d) + "x";
    return s + (type.empty() ? elt : type.str()) + ">";
  }
  std::string name(int64_t layer, StringRef kind, StringRef suffix) const {
    return "l" + std::to_string(layer) + "_" + kind.str() + "_" + suffix.str();
  }
  std::string key(int64_t layer, StringRef rest) const {
    return "layers." + std::to_string(layer) + "." + rest.str();
  }

  /// `%ssa = moe.param "key" init <...> [flags] : type`, wrapped before
  /// `init` when too long. Returns the type.
  std::string param(StringRef ssa, StringRef paramKey, StringRef init,
                    StringRef flags, const std::string &type) {
    std::string head =
        "  %" + ssa.str() + " = moe.param \"" + paramKey.str() + "\"";
    std::string tail = "init " + init.str() + flags.str() + " : " + type;
    if (head.size() + 1 + tail.size() <= kLineWidth)
      os << head << " " << tail << "\n";
    else
      os << head << "\n      " << tail << "\n";
    return type;
  }

  /// Writes `items` separated by ", " after `first`, wrapped greedily at
  /// kLineWidth with continuation lines starting with `indent`, then `last`.
  void wrapped(StringRef first, ArrayRef<std::string> items, StringRef last,
               StringRef indent) {
    std::string line = first.str();
    for (size_t i = 0; i < items.size(); ++i) {
      std::string piece = items[i] + (i + 1 < items.size() ? "," : last.str());
      bool fresh = line.size() == first.size() || line == indent;
      if (!fresh && line.size() + 1 + piece.size() > kLineWidth) {
        os << line << "\n";
        line = indent.str();
        fresh = true;
      }
      line += (fresh ? "" : " ") + piece;
    }
    os << line << "\n";
  }

  /// A section comment padded with dashes to column 80.
  void section(const Twine &title) {
    std::string line = "  // --- " + title.str() + " ";
    if (line.size() < 80)
      line.append(80 - line.size(), '-');
    os << "\n" << line << "\n";
  }

  std::string epsAttr(StringRef attrName) const {
    return attrName.str() + " = " + floatLiteral(c.rmsNormEps) + " : f64";
  }
  bool defaultEps() const { return c.rmsNormEps == 1e-5; }

  /// `%result = moe.rms_norm %input, %weight`, wrapped before the types
  /// when too long.
  void rmsNorm(const std::string &result, const std::string &input,
               const std::string &weight) {
    std::string head = "  %" + result + " = moe.rms_norm %" + input + ", %" +
                       weight +
                       (defaultEps() ? "" : " {" + epsAttr("epsilon") + "}");
    std::string types = ": " + act + ", " + tensor({c.hiddenSize});
    if (head.size() + 1 + types.size() <= kLineWidth)
      os << head << " " << types << "\n";
    else
      os << head << "\n      " << types << "\n";
  }

  /// Emits the input of sub-layer `s` (`kind` is "mixer" or "ffn") and
  /// returns the value the sub-layer reads: the residual stream or the
  /// AttnRes mix, normalised.
  std::string subLayerInput(int64_t layer, StringRef kind, int64_t s);
  /// Adds a sub-layer's output `y` to the residual stream or the partial
  /// block sum.
  void subLayerOutput(int64_t layer, StringRef kind, int64_t s,
                      const std::string &y);
  /// Starts a new AttnRes block before sub-layer `s` when one is complete.
  void closeBlock(int64_t s);
  /// `moe.attn_res` over the current sources, named `mix`, reading
  /// `prefix.query` and `prefix.key_norm`.
  void attnRes(const std::string &mix, const std::string &ssaPrefix,
               const std::string &keyPrefix, int64_t s);

  std::string kda(int64_t layer, const std::string &in);
  std::string mla(int64_t layer, const std::string &in);
  std::string denseFFN(int64_t layer, const std::string &in);
  std::string moeFFN(int64_t layer, const std::string &in);
  std::string activationAttr() const;
  std::string balanceAttr() const;

  const KimiConfig &c;
  llvm::raw_ostream &os;
  std::string elt, act, normal;
  /// Plain residuals: the current residual stream.
  std::string stream = "emb";
  /// AttnRes: completed blocks (the embedding first) and the partial sum of
  /// the current block ("" when empty).
  SmallVector<std::string> blocks;
  std::string partial;
};

} // namespace

void ModelWriter::closeBlock(int64_t s) {
  if (s == 0 || s % c.attnResBlockSize != 0 || partial.empty())
    return;
  os << "  // Sub-layers " << s - c.attnResBlockSize << "-" << s - 1
     << " form block " << blocks.size() << ": b" << blocks.size() << " = %"
     << partial << ".\n";
  blocks.push_back(partial);
  partial.clear();
}

void ModelWriter::attnRes(const std::string &mix, const std::string &ssaPrefix,
                          const std::string &keyPrefix, int64_t s) {
  std::string d = std::to_string(c.hiddenSize);
  std::string vec = tensor({c.hiddenSize});
  param(ssaPrefix + "_res_q", keyPrefix + ".query", "<zeros>",
        " no_weight_decay", vec);
  param(ssaPrefix + "_res_kn", keyPrefix + ".key_norm", "<ones>",
        " no_weight_decay", vec);
  SmallVector<std::string> sources(blocks.begin(), blocks.end());
  if (!partial.empty())
    sources.push_back(partial);
  std::string list;
  for (const std::string &source : sources)
    list += (list.empty() ? "%" : ", %") + source;
  os << "  %" << mix << " = moe.attn_res " << list << " query(%" << ssaPrefix
     << "_res_q) key_norm(%" << ssaPrefix << "_res_kn)\n";
  os << "      {block_size = " << c.attnResBlockSize
     << " : i64, sublayer = " << s << " : i64"
     << (defaultEps() ? "" : ", " + epsAttr("epsilon")) << "}\n";
  SmallVector<std::string> types(sources.size(), act);
  types.push_back(vec);
  types.push_back(vec);
  wrapped("      : (", types, ") -> " + act, "         ");
}

std::string ModelWriter::subLayerInput(int64_t layer, StringRef kind,
                                       int64_t s) {
  std::string source = stream;
  if (c.attnResBlockSize > 0) {
    closeBlock(s);
    source = name(layer, kind, "mix");
    attnRes(source, "l" + std::to_string(layer) + "_" + kind.str(),
            key(layer, kind.str() + "_res"), s);
  }
  std::string normW = name(layer, kind, "norm_w");
  std::string vec = tensor({c.hiddenSize});
  param(normW, key(layer, kind.str() + "_norm.weight"), "<ones>",
        " no_weight_decay", vec);
  std::string in = name(layer, kind, "in");
  rmsNorm(in, source, normW);
  return in;
}

void ModelWriter::subLayerOutput(int64_t layer, StringRef kind, int64_t s,
                                 const std::string &y) {
  if (c.attnResBlockSize > 0) {
    if (partial.empty()) {
      partial = y;
      return;
    }
    std::string sum = "p" + std::to_string(s);
    os << "  %" << sum << " = arith.addf %" << partial << ", %" << y << " : "
       << act << "\n";
    partial = sum;
    return;
  }
  std::string next =
      "l" + std::to_string(layer) + (kind == "mixer" ? "_h_mid" : "_h");
  os << "  %" << next << " = arith.addf %" << stream << ", %" << y << " : "
     << act << "\n";
  stream = next;
}

std::string ModelWriter::kda(int64_t layer, const std::string &in) {
  int64_t d = c.hiddenSize, h = c.kdaNumHeads, k = c.kdaHeadDim;
  int64_t hk = h * k;
  auto n = [&](StringRef suffix) { return name(layer, "mixer", suffix); };
  auto p = [&](StringRef suffix, StringRef paramName, StringRef init,
               StringRef flags, ArrayRef<int64_t> shape) {
    return param(n(suffix), key(layer, "mixer." + paramName.str()), init, flags,
                 tensor(shape));
  };
  SmallVector<std::string> types = {act};
  types.push_back(p("wq", "w_q", normal, "", {d, hk}));
  types.push_back(p("wk", "w_k", normal, "", {d, hk}));
  types.push_back(p("wv", "w_v", normal, "", {d, hk}));
  types.push_back(p("cq", "conv_q", normal, "", {hk, c.kdaConvSize}));
  types.push_back(p("ck", "conv_k", normal, "", {hk, c.kdaConvSize}));
  types.push_back(p("cv", "conv_v", normal, "", {hk, c.kdaConvSize}));
  // Both low-rank gates have rank head_dim, as in Kimi-Linear.
  types.push_back(p("wfd", "w_gate_down", normal, "", {d, k}));
  types.push_back(p("wfu", "w_gate_up", normal, "", {k, hk}));
  types.push_back(
      p("alog", "A_log",
        c.kdaBoundedGate ? "<zeros>" : "<log_uniform, low = 1.0, high = 16.0>",
        " no_weight_decay", {h}));
  types.push_back(p("dtb", "dt_bias",
                    "<inverse_softplus_dt, low = 0.001, high = 0.1>",
                    " no_weight_decay", {h, k}));
  types.push_back(p("wb", "w_beta", normal, "", {d, h}));
  types.push_back(p("wgd", "w_out_gate_down", normal, "", {d, k}));
  types.push_back(p("wgu", "w_out_gate_up", normal, "", {k, hk}));
  types.push_back(p("on", "out_norm", "<ones>", " no_weight_decay", {k}));
  types.push_back(p("wo", "w_out", normal, "", {hk, d}));
  std::string out = n("out");
  auto v = [&](StringRef suffix) { return "%" + n(suffix); };
  os << "  %" << out << " = moe.kda_layer %" << in << "\n";
  os << "      q(" << v("wq") << ") k(" << v("wk") << ") v(" << v("wv")
     << ")\n";
  os << "      conv(" << v("cq") << ", " << v("ck") << ", " << v("cv") << ")\n";
  os << "      gate(" << v("wfd") << ", " << v("wfu") << ", " << v("alog")
     << ", " << v("dtb") << ") beta(" << v("wb") << ")\n";
  os << "      out_gate(" << v("wgd") << ", " << v("wgu") << ") out_norm("
     << v("on") << ") out(" << v("wo") << ")\n";
  os << "      {num_heads = " << h << " : i64, head_dim = " << k
     << " : i64, value_dim = " << k << " : i64,\n";
  os << "       gate = #moe.decay_gate<";
  if (c.kdaBoundedGate)
    os << "bounded, g_min = " << floatLiteral(c.kdaGMin);
  else
    os << "softplus";
  os << ">" << (defaultEps() ? "" : ", " + epsAttr("norm_eps")) << "}\n";
  wrapped("      : (", types, ")", "         ");
  os << "      -> " << act << "\n";
  return out;
}

std::string ModelWriter::mla(int64_t layer, const std::string &in) {
  int64_t d = c.hiddenSize, h = c.mlaNumHeads;
  int64_t qk = c.qkNopeHeadDim + c.qkRopeHeadDim;
  auto n = [&](StringRef suffix) { return name(layer, "mixer", suffix); };
  auto p = [&](StringRef suffix, StringRef paramName, StringRef init,
               StringRef flags, ArrayRef<int64_t> shape) {
    return param(n(suffix), key(layer, "mixer." + paramName.str()), init, flags,
                 tensor(shape));
  };
  auto v = [&](StringRef suffix) { return "%" + n(suffix); };
  SmallVector<std::string> types = {act};
  std::string q;
  if (c.qLoraRank == 0) {
    types.push_back(p("wq", "w_q", normal, "", {d, h * qk}));
    q = "q(" + v("wq") + ")";
  } else {
    types.push_back(p("wqd", "w_q_down", normal, "", {d, c.qLoraRank}));
    types.push_back(
        p("qn", "q_norm", "<ones>", " no_weight_decay", {c.qLoraRank}));
    types.push_back(p("wqu", "w_q_up", normal, "", {c.qLoraRank, h * qk}));
    q = "q_lora(" + v("wqd") + ", " + v("qn") + ", " + v("wqu") + ")";
  }
  types.push_back(
      p("wkvd", "w_kv_down", normal, "", {d, c.kvLoraRank + c.qkRopeHeadDim}));
  types.push_back(
      p("kvn", "kv_norm", "<ones>", " no_weight_decay", {c.kvLoraRank}));
  types.push_back(p("wkvu", "w_kv_up", normal, "",
                    {c.kvLoraRank, h * (c.qkNopeHeadDim + c.vHeadDim)}));
  if (c.mlaOutputGate)
    types.push_back(p("wg", "w_gate", normal, "", {d, h * c.vHeadDim}));
  types.push_back(p("wo", "w_out", normal, "", {h * c.vHeadDim, d}));
  std::string out = n("out");
  os << "  %" << out << " = moe.mla_layer %" << in << " " << q << "\n";
  os << "      kv(" << v("wkvd") << ", " << v("kvn") << ", " << v("wkvu") << ")"
     << (c.mlaOutputGate ? " gate(" + v("wg") + ")" : "") << " out(" << v("wo")
     << ")\n";
  os << "      {num_heads = " << h
     << " : i64, nope_head_dim = " << c.qkNopeHeadDim << " : i64,\n";
  os << "       rope_head_dim = " << c.qkRopeHeadDim
     << " : i64, v_head_dim = " << c.vHeadDim << " : i64}\n";
  wrapped("      : (", types, ")", "         ");
  os << "      -> " << act << "\n";
  return out;
}

std::string ModelWriter::activationAttr() const {
  if (!c.situGLU)
    return "#moe.activation<swiglu>";
  std::string s =
      "#moe.activation<situ_glu, gate_beta = " + floatLiteral(c.situGateBeta);
  if (c.situUpBeta)
    s += ", up_beta = " + floatLiteral(*c.situUpBeta);
  return s + ">";
}

std::string ModelWriter::balanceAttr() const {
  switch (c.balance) {
  case KimiBalance::SignBias:
    return "#moe.sign_bias<rate = " + floatLiteral(c.balanceRate) + ">";
  case KimiBalance::QuantileExact:
    return "#moe.quantile_balance<exact>";
  case KimiBalance::QuantileHistogram:
    return "#moe.quantile_balance<histogram, bins = " +
           std::to_string(c.balanceBins) + ">";
  }
  return "";
}

std::string ModelWriter::denseFFN(int64_t layer, const std::string &in) {
  int64_t d = c.hiddenSize, f = c.intermediateSize;
  auto n = [&](StringRef suffix) { return name(layer, "ffn", suffix); };
  SmallVector<std::string> types = {act};
  types.push_back(
      param(n("wg"), key(layer, "ffn.w_gate"), normal, "", tensor({d, f})));
  types.push_back(
      param(n("wu"), key(layer, "ffn.w_up"), normal, "", tensor({d, f})));
  types.push_back(
      param(n("wd"), key(layer, "ffn.w_down"), normal, "", tensor({f, d})));
  std::string out = n("out");
  os << "  %" << out << " = moe.glu_ffn %" << in << ", %" << n("wg") << ", %"
     << n("wu") << ", %" << n("wd") << "\n";
  os << "      {activation = " << activationAttr() << "}\n";
  wrapped("      : ", types, "", "        ");
  return out;
}

std::string ModelWriter::moeFFN(int64_t layer, const std::string &in) {
  int64_t d = c.hiddenSize, e = c.numExperts, f = c.moeIntermediateSize;
  int64_t fs = f * c.numSharedExperts;
  auto n = [&](StringRef suffix) { return name(layer, "ffn", suffix); };
  auto p = [&](StringRef suffix, StringRef paramName, StringRef init,
               StringRef flags, const std::string &type) {
    return param(n(suffix), key(layer, "ffn." + paramName.str()), init, flags,
                 type);
  };
  auto v = [&](StringRef suffix) { return "%" + n(suffix); };
  SmallVector<std::string> types = {act};
  types.push_back(p("wr", "w_router", normal, "", tensor({e, d})));
  types.push_back(
      p("rb", "router_bias", "<zeros>", " buffer", tensor({e}, "f32")));
  types.push_back(p("wg", "w_gate", normal, "", tensor({e, d, f})));
  types.push_back(p("wu", "w_up", normal, "", tensor({e, d, f})));
  types.push_back(p("wd", "w_down", normal, "", tensor({e, f, d})));
  if (fs > 0) {
    types.push_back(p("sg", "w_shared_gate", normal, "", tensor({d, fs})));
    types.push_back(p("su", "w_shared_up", normal, "", tensor({d, fs})));
    types.push_back(p("sd", "w_shared_down", normal, "", tensor({fs, d})));
  }
  std::string out = n("out");
  os << "  %" << out << ", %" << n("load") << ", %" << n("next_bias")
     << " = moe.moe_ffn %" << in << "\n";
  os << "      router(" << v("wr") << ", " << v("rb") << ") experts(" << v("wg")
     << ", " << v("wu") << ", " << v("wd") << ")\n";
  if (fs > 0)
    os << "      shared(" << v("sg") << ", " << v("su") << ", " << v("sd")
       << ")\n";
  os << "      {routing = #moe.routing<experts = " << e
     << ", top_k = " << c.topK
     << ", scaling = " << floatLiteral(c.routedScalingFactor) << ",\n";
  os << "                               balance = " << balanceAttr() << ">,\n";
  os << "       activation = " << activationAttr() << "}\n";
  wrapped("      : (", types, ")", "         ");
  os << "      -> (" << act << ", " << tensor({e}, "i64") << ", "
     << tensor({e}, "f32") << ")\n";
  return out;
}

void ModelWriter::write() {
  int64_t v = c.vocabSize, d = c.hiddenSize;
  std::string table = tensor({v, d});
  os << "moe.model @" << c.modelName << "(vocab_size = " << v
     << ", hidden_size = " << d << ") {\n";
  os << "^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):\n";
  param("embed_w", "embed.weight", normal, "", table);
  os << "  %emb = moe.embedding %tokens, %embed_w\n";
  os << "      : tensor<?x?xi32>, " << table << " -> " << act << "\n";
  blocks = {"emb"};

  for (int64_t layer = 0; layer < c.numLayers(); ++layer) {
    bool full = c.fullAttention[layer];
    bool routed = c.isMoELayer(layer);
    std::string title = "layer " + std::to_string(layer) + ": " +
                        (full ? "MLA" : "KDA") + " mixer, " +
                        (routed ? "MoE" : "dense") + " FFN";
    if (c.attnResBlockSize > 0)
      title += " (sub-layers " + std::to_string(2 * layer) + ", " +
               std::to_string(2 * layer + 1) + ")";
    section(title);
    std::string in = subLayerInput(layer, "mixer", 2 * layer);
    subLayerOutput(layer, "mixer", 2 * layer,
                   full ? mla(layer, in) : kda(layer, in));
    in = subLayerInput(layer, "ffn", 2 * layer + 1);
    subLayerOutput(layer, "ffn", 2 * layer + 1,
                   routed ? moeFFN(layer, in) : denseFFN(layer, in));
  }

  int64_t s = 2 * c.numLayers();
  std::string vec = tensor({d});
  std::string normed = stream;
  if (c.attnResBlockSize > 0) {
    section("output: final mix (sub-layer " + std::to_string(s) +
            "), norm and loss head");
    closeBlock(s);
    normed = "final_mix";
    attnRes(normed, "final", "final_res", s);
  } else {
    section("output: final norm and loss head");
  }
  param("final_norm_w", "final_norm.weight", "<ones>", " no_weight_decay", vec);
  rmsNorm("out", normed, "final_norm_w");
  std::string head = "embed_w";
  if (!c.tieWordEmbeddings) {
    head = "lm_head_w";
    param(head, "lm_head.weight", normal, "", table);
  }
  os << "  %loss = moe.lm_head %out, %" << head << ", %labels\n";
  os << "      : (" << act << ", " << table
     << ", tensor<?x?xi32>) -> tensor<f32>\n";
  os << "  moe.return %loss : tensor<f32>\n";
  os << "}\n";
}

void mlir::moe::writeKimiModel(const KimiConfig &config, llvm::raw_ostream &os,
                               StringRef header) {
  os << header;
  ModelWriter(config, os).write();
}

/// Writes `text` as comment lines of at most 80 columns, the first starting
/// with `first` and the others with `rest`.
static void commentLines(llvm::raw_ostream &os, StringRef text,
                         StringRef first = "// * ", StringRef rest = "//   ") {
  SmallVector<StringRef> words;
  text.split(words, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  std::string line = first.str();
  bool empty = true;
  for (StringRef word : words) {
    if (!empty && line.size() + 1 + word.size() > 80) {
      os << line << "\n";
      line = rest.str();
      empty = true;
    }
    line += (empty ? "" : " ") + word.str();
    empty = false;
  }
  os << line << "\n";
}

/// The comment that heads a generated model file.
static std::string describeModel(const KimiConfig &c, StringRef sourceName,
                                 const ModelSummary &summary) {
  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t numMLA = c.numMLALayers();
  int64_t numKDA = c.numLayers() - numMLA;
  std::string s;
  llvm::raw_string_ostream line(s);
  auto flush = [&](StringRef first = "// * ", StringRef rest = "//   ") {
    commentLines(os, s, first, rest);
    s.clear();
  };
  line << c.modelName << ": generated by moe-import-config from " << sourceName
       << "; edit the config and regenerate rather than editing this file. "
       << withCommas(summary.totalParameters) << " parameters, "
       << withCommas(std::llround(summary.activeParameters))
       << " of them active per token.";
  flush("// ", "// ");
  os << "//\n";
  line << "Vocab " << c.vocabSize << ", hidden size " << c.hiddenSize << ", "
       << c.numLayers() << " decoder layers, " << c.elementType
       << " weights, RMSNorm epsilon " << formatShortest(c.rmsNormEps) << ".";
  flush();
  if (numMLA > 0 && numKDA > 0) {
    line << "Mixers: MLA at 1-based layers";
    int64_t listed = 0;
    for (int64_t layer = 0; layer < c.numLayers(); ++layer)
      if (c.fullAttention[layer])
        line << (listed++ ? ", " : " ") << layer + 1;
    line << ", KDA at the other " << numKDA << ".";
  } else {
    line << "Mixers: " << (numMLA > 0 ? "MLA" : "KDA") << " in every layer.";
  }
  flush();
  if (numKDA > 0) {
    line << "KDA: " << c.kdaNumHeads << " heads x K = V = " << c.kdaHeadDim
         << ", short convolutions of width " << c.kdaConvSize << ", the ";
    if (c.kdaBoundedGate)
      line << "bounded decay gate (g_min " << formatShortest(c.kdaGMin) << ")";
    else
      line << "softplus decay gate";
    line << ", low-rank (rank " << c.kdaHeadDim
         << ") decay and sigmoid output gates.";
    flush();
  }
  if (numMLA > 0) {
    line << "MLA (NoPE): " << c.mlaNumHeads << " heads, nope "
         << c.qkNopeHeadDim << " / rope " << c.qkRopeHeadDim << " / v "
         << c.vHeadDim << ", kv_lora " << c.kvLoraRank << ", ";
    if (c.qLoraRank)
      line << "q_lora " << c.qLoraRank;
    else
      line << "no q-LoRA";
    line << (c.mlaOutputGate ? ", sigmoid output gate." : ", no output gate.");
    flush();
  }
  StringRef activation = c.situGLU ? "SiTU-GLU" : "SwiGLU";
  auto layerRange = [&](int64_t first, int64_t last) {
    return first == last
               ? "layer " + std::to_string(first)
               : "layers " + std::to_string(first) + "-" + std::to_string(last);
  };
  if (c.firstKDense > 0) {
    line << "Dense FFN: " << layerRange(0, c.firstKDense - 1) << ", "
         << activation << " of width " << c.intermediateSize << ".";
    flush();
  }
  if (c.firstKDense < c.numLayers()) {
    line << "MoE FFN: " << layerRange(c.firstKDense, c.numLayers() - 1)
         << " route to " << c.topK << " of " << c.numExperts << " "
         << activation << " experts of width " << c.moeIntermediateSize
         << " (routed scaling " << formatShortest(c.routedScalingFactor)
         << "), with " << c.numSharedExperts << " shared expert"
         << (c.numSharedExperts == 1 ? "" : "s") << ", balanced by ";
    switch (c.balance) {
    case KimiBalance::SignBias:
      line << "sign-bias updates (rate " << formatShortest(c.balanceRate)
           << ").";
      break;
    case KimiBalance::QuantileExact:
      line << "exact quantile balancing.";
      break;
    case KimiBalance::QuantileHistogram:
      line << "histogram quantile balancing (" << c.balanceBins << " bins).";
      break;
    }
    flush();
  }
  if (c.attnResBlockSize > 0)
    line << "Residuals: Block Attention Residuals, " << c.attnResBlockSize
         << " sub-layers per block.";
  else
    line << "Residuals: pre-norm with plain residual adds.";
  flush();
  line << (c.tieWordEmbeddings ? "The lm_head is tied to the embedding"
                               : "Untied lm_head")
       << ", mean cross-entropy loss.";
  flush();
  os << "//\n// Parameter names are checkpoint keys "
        "(docs/ConfigImport.md).\n\n";
  return text;
}

FailureOr<ImportedModel>
mlir::moe::importKimiConfig(StringRef json, MLIRContext *context,
                            SmallVectorImpl<ConfigDiagnostic> &diagnostics,
                            StringRef sourceName, StringRef defaultModelName) {
  FailureOr<KimiConfig> config =
      parseKimiConfig(json, diagnostics, defaultModelName);
  if (failed(config))
    return failure();
  std::string body;
  {
    llvm::raw_string_ostream os(body);
    writeKimiModel(*config, os);
  }

  context->getOrLoadDialect<MoEDialect>();
  context->getOrLoadDialect<arith::ArithDialect>();
  // A model the verifier refuses is a bug of the importer or a combination
  // of values it does not check; either way a diagnostic, not a crash.
  std::string verifierMessages;
  ImportedModel result;
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        verifierMessages += (verifierMessages.empty() ? "" : "; ") + diag.str();
      return success();
    });
    result.module =
        parseSourceString<ModuleOp>(body, ParserConfig(context), sourceName);
  }
  if (!result.module) {
    diagnostics.push_back(
        {ConfigDiagnostic::Severity::Error, "",
         "the generated model does not verify: " + verifierMessages});
    return failure();
  }
  auto models = result.module->getOps<ModelOp>();
  if (models.empty()) {
    diagnostics.push_back({ConfigDiagnostic::Severity::Error, "",
                           "the generated text holds no moe.model"});
    return failure();
  }
  ModelSummary summary = summarizeModel(*models.begin());
  result.text = describeModel(*config, sourceName, summary) + body;
  return result;
}
