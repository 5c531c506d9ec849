//===- KimiConfig.cpp - Read a Kimi-Linear config.json --------------------===//
//
// Part of the moe-mlir project.
//
// Parses a Hugging Face Kimi-Linear config.json with llvm::json and checks
// every key the model needs, reporting each problem with its key path. The
// `moe_mlir` key carries what Kimi-Linear's format cannot say (the bounded
// decay gate, quantile balancing, Attention Residuals, SiTU-GLU, the MLA
// output gate); docs/ConfigImport.md describes it.
//
//===----------------------------------------------------------------------===//

#include "moe/Import/KimiConfig.h"

#include "FloatFormat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::moe;
namespace json = llvm::json;

/// Limits that keep every shape product and the parameter count far from
/// int64_t overflow, whatever the input.
static constexpr int64_t kMaxDim = int64_t(1) << 18;
static constexpr int64_t kMaxLayers = 1024;
static constexpr int64_t kMaxExperts = 4096;
static constexpr double kMaxParameters = 1e13;
/// JSON nesting deeper than this is refused before parsing (the parser
/// recurses once per level).
static constexpr unsigned kMaxNesting = 64;

void ConfigDiagnostic::print(llvm::raw_ostream &os, StringRef fileName) const {
  os << fileName;
  if (line != 0)
    os << ':' << line << ':' << column;
  else if (!keyPath.empty())
    os << ": " << keyPath;
  os << (isError() ? ": error: " : ": warning: ") << message << "\n";
}

int64_t KimiConfig::numMLALayers() const {
  return llvm::count(fullAttention, true);
}

std::string mlir::moe::modelNameFromFileName(StringRef fileName) {
  StringRef stem = llvm::sys::path::stem(fileName);
  std::string name;
  for (char c : stem)
    name.push_back(llvm::isAlnum(c) || c == '_' ? c : '_');
  if (name.empty() || llvm::isDigit(name.front()))
    name.insert(name.begin(), '_');
  return name;
}

namespace {

/// Collects diagnostics; `failed` once any error was reported.
struct Reporter {
  SmallVectorImpl<ConfigDiagnostic> &diagnostics;
  bool failed = false;

  void error(StringRef path, const Twine &message) {
    diagnostics.push_back(
        {ConfigDiagnostic::Severity::Error, path.str(), message.str()});
    failed = true;
  }
};

/// Reads the keys of one JSON object and remembers which were read, so that
/// the others can be reported as unknown.
class ObjectReader {
public:
  ObjectReader(const json::Object &object, std::string path, Reporter &reporter)
      : object(object), path(std::move(path)), reporter(reporter) {}

  /// The path of `key` inside this object.
  std::string keyPath(StringRef key) const {
    return path.empty() ? key.str() : path + "." + key.str();
  }
  void error(StringRef key, const Twine &message) {
    reporter.error(keyPath(key), message);
  }

  /// The value of `key`, or nullptr when it is absent or null (both mean
  /// "not given" in a Hugging Face config).
  const json::Value *get(StringRef key) {
    used.insert(key);
    const json::Value *value = object.get(key);
    if (!value || value->kind() == json::Value::Null)
      return nullptr;
    return value;
  }
  /// The value of `key` as get() gives it; an error when it is not given
  /// and `required`.
  const json::Value *lookup(StringRef key, bool required) {
    const json::Value *value = get(key);
    if (!value && required)
      error(key, "missing required key");
    return value;
  }

  /// Whether `key` is given (present and not null); marks it as known.
  bool has(StringRef key) {
    used.insert(key);
    const json::Value *value = object.get(key);
    return value && value->kind() != json::Value::Null;
  }
  /// Whether `key` is present with the value null; marks it as known.
  bool isNull(StringRef key) {
    used.insert(key);
    const json::Value *value = object.get(key);
    return value && value->kind() == json::Value::Null;
  }
  /// Marks `key` as known without reading it.
  void ignore(StringRef key) { used.insert(key); }

  /// An integer in [lo, hi]; `fallback` when absent and not `required`.
  std::optional<int64_t> getInt(StringRef key, int64_t lo, int64_t hi,
                                bool required,
                                std::optional<int64_t> fallback = {}) {
    const json::Value *value = lookup(key, required);
    if (!value)
      return fallback;
    return checkInt(*value, keyPath(key), lo, hi);
  }

  /// A finite number accepted by `valid` (described by `expected`).
  std::optional<double> getNumber(StringRef key, bool required,
                                  std::optional<double> fallback,
                                  function_ref<bool(double)> valid,
                                  StringRef expected) {
    const json::Value *value = lookup(key, required);
    if (!value)
      return fallback;
    std::optional<double> number = value->getAsNumber();
    if (!number) {
      error(key, "expected a number, got " + describe(*value));
      return std::nullopt;
    }
    if (!std::isfinite(*number) || !valid(*number)) {
      error(key, "expected " + expected + ", got " + formatNumber(*number));
      return std::nullopt;
    }
    return number;
  }

  std::optional<bool> getBool(StringRef key, bool required,
                              std::optional<bool> fallback = {}) {
    const json::Value *value = lookup(key, required);
    if (!value)
      return fallback;
    if (std::optional<bool> b = value->getAsBoolean())
      return b;
    error(key, "expected true or false, got " + describe(*value));
    return std::nullopt;
  }

  std::optional<std::string> getString(StringRef key, bool required) {
    const json::Value *value = lookup(key, required);
    if (!value)
      return std::nullopt;
    if (std::optional<StringRef> s = value->getAsString())
      return s->str();
    error(key, "expected a string, got " + describe(*value));
    return std::nullopt;
  }

  /// One of `choices`; an error that lists them otherwise.
  std::optional<std::string> getChoice(StringRef key, bool required,
                                       ArrayRef<StringRef> choices,
                                       StringRef unsupportedNote = "") {
    std::optional<std::string> s = getString(key, required);
    if (!s || llvm::is_contained(choices, *s))
      return s;
    std::string list;
    for (StringRef choice : choices)
      list += (list.empty() ? "\"" : ", \"") + choice.str() + "\"";
    error(key, "unsupported value \"" + *s + "\"" +
                   (unsupportedNote.empty() ? "" : ": " + unsupportedNote) +
                   " (expected " + list + ")");
    return std::nullopt;
  }

  /// An integer that, when given, must equal `expected`; `why` says what
  /// another value would need.
  void requireInt(StringRef key, int64_t expected, StringRef why) {
    const json::Value *value = get(key);
    if (!value)
      return;
    std::optional<int64_t> n = value->getAsInteger();
    if (n && *n == expected)
      return;
    error(key, "unsupported value " + describe(*value) + ": " + why +
                   " (expected " + Twine(expected) + ")");
  }

  /// A nested object, or nullptr (with an error if it is not an object).
  const json::Object *getObject(StringRef key) {
    const json::Value *value = get(key);
    if (!value)
      return nullptr;
    if (const json::Object *o = value->getAsObject())
      return o;
    error(key, "expected an object, got " + describe(*value));
    return nullptr;
  }

  /// Appends the paths of the keys nobody read to `unknown`.
  void collectUnknown(SmallVectorImpl<std::string> &unknown) const {
    for (const auto &entry : object)
      if (!used.contains(entry.first.str()))
        unknown.push_back(keyPath(entry.first.str()));
  }

  /// Checks that `value` is an integer in [lo, hi].
  std::optional<int64_t> checkInt(const json::Value &value, StringRef where,
                                  int64_t lo, int64_t hi) {
    std::optional<int64_t> n = value.getAsInteger();
    if (!n) {
      reporter.error(where, "expected an integer, got " + describe(value));
      return std::nullopt;
    }
    if (*n < lo || *n > hi) {
      reporter.error(where, "expected an integer in [" + Twine(lo) + ", " +
                                Twine(hi) + "], got " + Twine(*n));
      return std::nullopt;
    }
    return n;
  }

  /// A short description of a JSON value for messages.
  static std::string describe(const json::Value &value) {
    switch (value.kind()) {
    case json::Value::Null:
      return "null";
    case json::Value::Boolean:
      return *value.getAsBoolean() ? "true" : "false";
    case json::Value::Number:
      if (std::optional<int64_t> n = value.getAsInteger())
        return std::to_string(*n);
      return formatNumber(*value.getAsNumber());
    case json::Value::String: {
      StringRef s = *value.getAsString();
      if (s.size() > 40)
        return "a string";
      return "\"" + s.str() + "\"";
    }
    case json::Value::Array:
      return "an array";
    case json::Value::Object:
      return "an object";
    }
    return "a value";
  }

  static std::string formatNumber(double x) { return formatShortest(x); }

private:
  const json::Object &object;
  std::string path;
  Reporter &reporter;
  llvm::StringSet<> used;
};

} // namespace

/// Where the nesting of `json` first exceeds kMaxNesting (brackets outside
/// strings), as a byte offset.
static std::optional<size_t> findTooDeepNesting(StringRef json) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0, e = json.size(); i < e; ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

/// The 1-based line and column of byte `offset` of `text`.
static std::pair<unsigned, unsigned> lineAndColumn(StringRef text,
                                                   size_t offset) {
  StringRef before = text.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t lineStart = before.rfind('\n');
  unsigned column =
      offset - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
  return {line, column};
}

/// Parses `text` as JSON; a syntax error becomes a located diagnostic.
static std::optional<json::Value> parseJSON(StringRef text,
                                            Reporter &reporter) {
  auto syntaxError = [&](unsigned line, unsigned column, const Twine &msg) {
    ConfigDiagnostic d;
    d.message = msg.str();
    d.line = line;
    d.column = column;
    reporter.diagnostics.push_back(std::move(d));
    reporter.failed = true;
  };
  if (std::optional<size_t> offset = findTooDeepNesting(text)) {
    auto [line, column] = lineAndColumn(text, *offset);
    syntaxError(line, column,
                "JSON nested deeper than " + Twine(kMaxNesting) + " levels");
    return std::nullopt;
  }
  llvm::Expected<json::Value> value = json::parse(text);
  if (value)
    return std::move(*value);
  // ParseError logs "[LINE:COL, byte=N]: MESSAGE"; take it apart.
  std::string logged = llvm::toString(value.takeError());
  StringRef rest(logged);
  unsigned line = 0, column = 0;
  if (rest.consume_front("[") && !rest.consumeInteger(10, line) &&
      rest.consume_front(":") && !rest.consumeInteger(10, column)) {
    size_t colon = rest.find("]: ");
    if (colon != StringRef::npos)
      rest = rest.drop_front(colon + 3);
  } else {
    rest = logged;
  }
  std::string message = rest.str();
  if (!message.empty())
    message[0] = llvm::toLower(message[0]);
  syntaxError(std::max(line, 1u), std::max(column, 1u),
              "malformed JSON: " + message);
  return std::nullopt;
}

/// Reads `linear_attn_config`'s layer lists into `config.fullAttention`.
static void readLayerKinds(ObjectReader &linear, int64_t numLayers,
                           KimiConfig &config, Reporter &reporter) {
  // 0: unassigned, 1: KDA, 2: MLA; with the list index that assigned it.
  SmallVector<std::pair<int, std::string>> kind(numLayers);
  auto readList = [&](StringRef key, int which) {
    const json::Value *value = linear.get(key);
    if (!value)
      return false;
    const json::Array *array = value->getAsArray();
    if (!array) {
      linear.error(key, "expected an array of 1-based layer numbers, got " +
                            ObjectReader::describe(*value));
      return true;
    }
    for (auto [i, element] : llvm::enumerate(*array)) {
      std::string where = linear.keyPath(key) + "[" + std::to_string(i) + "]";
      std::optional<int64_t> layer =
          linear.checkInt(element, where, 1, numLayers);
      if (!layer)
        continue;
      auto &slot = kind[*layer - 1];
      if (slot.first != 0) {
        reporter.error(where, "layer " + Twine(*layer) + " is also listed at " +
                                  slot.second);
        continue;
      }
      slot = {which, where};
    }
    return true;
  };
  if (!readList("kda_layers", 1))
    linear.error("kda_layers", "missing required key");
  bool hasFullList = readList("full_attn_layers", 2);
  config.fullAttention.assign(numLayers, false);
  for (int64_t layer = 0; layer < numLayers; ++layer) {
    if (kind[layer].first == 0 && hasFullList) {
      reporter.error("linear_attn_config",
                     "layer " + Twine(layer + 1) +
                         " is in neither kda_layers nor full_attn_layers");
      continue;
    }
    // Without full_attn_layers, every layer not in kda_layers is MLA.
    config.fullAttention[layer] = kind[layer].first != 1;
  }
}

/// Reads the `moe_mlir` key: what Kimi-Linear's format cannot express.
static void readProjectKey(ObjectReader &extra, KimiConfig &config) {
  if (std::optional<std::string> name = extra.getString("model_name", false)) {
    bool valid =
        !name->empty() && (llvm::isAlpha((*name)[0]) || (*name)[0] == '_');
    for (char c : *name)
      valid &= llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
    if (valid)
      config.modelName = *name;
    else
      extra.error("model_name",
                  "expected a symbol name ([A-Za-z_][A-Za-z0-9_$.]*), got \"" +
                      *name + "\"");
  }

  std::optional<std::string> gate =
      extra.getChoice("kda_gate", false, {"softplus", "bounded"});
  config.kdaBoundedGate = gate && *gate == "bounded";
  if (extra.has("kda_g_min") && !config.kdaBoundedGate)
    extra.error("kda_g_min", "only the bounded gate (\"kda_gate\": "
                             "\"bounded\") takes a lower bound");
  else if (std::optional<double> gMin = extra.getNumber(
               "kda_g_min", false, -5.0, [](double x) { return x < 0; },
               "a finite negative number"))
    config.kdaGMin = *gMin;

  config.mlaOutputGate =
      extra.getBool("mla_output_gate", false, false).value_or(false);

  std::optional<std::string> balance =
      extra.getChoice("balance", false, {"sign_bias", "quantile"});
  bool quantile = balance && *balance == "quantile";
  if (extra.has("balance_rate") && quantile)
    extra.error("balance_rate", "only \"balance\": \"sign_bias\" takes a rate");
  else if (std::optional<double> rate = extra.getNumber(
               "balance_rate", false, 1e-3, [](double x) { return x > 0; },
               "a finite positive number"))
    config.balanceRate = *rate;
  if (extra.has("balance_method") && !quantile)
    extra.error("balance_method",
                "only \"balance\": \"quantile\" takes a method");
  std::optional<std::string> method =
      extra.getChoice("balance_method", false, {"exact", "histogram"});
  bool histogram = method && *method == "histogram";
  config.balance = !quantile   ? KimiBalance::SignBias
                   : histogram ? KimiBalance::QuantileHistogram
                               : KimiBalance::QuantileExact;
  if (extra.has("balance_bins") && !histogram)
    extra.error("balance_bins",
                "only \"balance_method\": \"histogram\" takes bins");
  else if (std::optional<int64_t> bins =
               extra.getInt("balance_bins", 2, 1 << 16, false, 512))
    config.balanceBins = *bins;

  if (std::optional<int64_t> block =
          extra.getInt("attn_res_block_size", 1, 2 * kMaxLayers, false, 0))
    config.attnResBlockSize = *block;

  std::optional<std::string> activation =
      extra.getChoice("ffn_activation", false, {"swiglu", "situ_glu"});
  config.situGLU = activation && *activation == "situ_glu";
  for (StringRef key : {"situ_gate_beta", "situ_up_beta"})
    if (extra.has(key) && !config.situGLU)
      extra.error(key, "only \"ffn_activation\": \"situ_glu\" takes it");
  auto positive = [](double x) { return x > 0; };
  if (config.situGLU) {
    if (std::optional<double> beta = extra.getNumber(
            "situ_gate_beta", false, 4.0, positive, "a finite positive number"))
      config.situGateBeta = *beta;
    // An explicit null removes the cap of the up projection.
    if (extra.isNull("situ_up_beta"))
      config.situUpBeta = std::nullopt;
    else
      config.situUpBeta = extra.getNumber("situ_up_beta", false, 25.0, positive,
                                          "a finite positive number");
  } else {
    extra.ignore("situ_gate_beta");
    extra.ignore("situ_up_beta");
  }
}

FailureOr<KimiConfig>
mlir::moe::parseKimiConfig(StringRef json,
                           SmallVectorImpl<ConfigDiagnostic> &diagnostics,
                           StringRef defaultModelName) {
  Reporter reporter{diagnostics};
  std::optional<json::Value> root = parseJSON(json, reporter);
  if (!root)
    return failure();
  const json::Object *rootObject = root->getAsObject();
  if (!rootObject) {
    reporter.error("", "expected a JSON object at the top level, got " +
                           ObjectReader::describe(*root));
    return failure();
  }

  KimiConfig config;
  config.modelName = defaultModelName.str();
  ObjectReader top(*rootObject, "", reporter);
  SmallVector<std::string> unknown;

  // Identification: must be Kimi-Linear when given.
  top.getChoice("model_type", false, {"kimi_linear"});
  for (StringRef key :
       {"architectures", "auto_map", "bos_token_id", "eos_token_id",
        "pad_token_id", "transformers_version", "use_cache", "model_max_length",
        "max_position_embeddings", "head_dim", "num_key_value_heads",
        "rope_theta", "rope_scaling"})
    top.ignore(key);

  std::optional<int64_t> vocab = top.getInt("vocab_size", 1, kMaxDim, true);
  std::optional<int64_t> hidden = top.getInt("hidden_size", 1, kMaxDim, true);
  std::optional<int64_t> layers =
      top.getInt("num_hidden_layers", 1, kMaxLayers, true);
  config.vocabSize = vocab.value_or(0);
  config.hiddenSize = hidden.value_or(0);

  // Element type: "dtype" (newer transformers) or "torch_dtype".
  StringRef dtypeKey = top.has("dtype") ? "dtype" : "torch_dtype";
  top.ignore(dtypeKey == "dtype" ? "torch_dtype" : "dtype");
  if (std::optional<std::string> dtype =
          top.getChoice(dtypeKey, false, {"float32", "bfloat16", "float16"})) {
    config.elementType = *dtype == "float32"    ? "f32"
                         : *dtype == "bfloat16" ? "bf16"
                                                : "f16";
  }
  if (std::optional<double> std = top.getNumber(
          "initializer_range", false, 0.02, [](double x) { return x > 0; },
          "a finite positive number"))
    config.initStd = *std;
  if (std::optional<double> eps = top.getNumber(
          "rms_norm_eps", false, 1e-5, [](double x) { return x > 0; },
          "a finite positive number"))
    config.rmsNormEps = *eps;
  config.tieWordEmbeddings =
      top.getBool("tie_word_embeddings", false, false).value_or(false);
  top.getChoice("hidden_act", false, {"silu"},
                "the FFNs are SwiGLU, or SiTU-GLU through "
                "moe_mlir.ffn_activation");

  // Layer kinds. Without linear_attn_config every layer is MLA.
  if (layers) {
    config.fullAttention.assign(*layers, true);
    if (const json::Object *linear = top.getObject("linear_attn_config")) {
      ObjectReader reader(*linear, "linear_attn_config", reporter);
      readLayerKinds(reader, *layers, config, reporter);
      bool required = llvm::is_contained(config.fullAttention, false);
      config.kdaNumHeads =
          reader.getInt("num_heads", 1, kMaxDim, required).value_or(0);
      config.kdaHeadDim =
          reader.getInt("head_dim", 1, kMaxDim, required).value_or(0);
      config.kdaConvSize =
          reader.getInt("short_conv_kernel_size", 1, 64, required).value_or(0);
      reader.collectUnknown(unknown);
    }
  }

  // MLA keys, required only when some layer is MLA.
  bool anyMLA = layers && config.numMLALayers() > 0;
  config.mlaNumHeads =
      top.getInt("num_attention_heads", 1, kMaxDim, anyMLA).value_or(0);
  if (const json::Value *q = top.get("q_lora_rank"))
    config.qLoraRank = top.checkInt(*q, "q_lora_rank", 1, kMaxDim).value_or(0);
  config.kvLoraRank =
      top.getInt("kv_lora_rank", 1, kMaxDim, anyMLA).value_or(0);
  config.qkNopeHeadDim =
      top.getInt("qk_nope_head_dim", 1, kMaxDim, anyMLA).value_or(0);
  config.qkRopeHeadDim =
      top.getInt("qk_rope_head_dim", 0, kMaxDim, anyMLA).value_or(0);
  config.vHeadDim = top.getInt("v_head_dim", 1, kMaxDim, anyMLA).value_or(0);
  if (std::optional<bool> nope = top.getBool("mla_use_nope", anyMLA);
      nope && !*nope && anyMLA)
    top.error("mla_use_nope",
              "unsupported value false: the MLA layers are NoPE only (no "
              "rotary embedding)");

  // FFN keys.
  std::optional<int64_t> denseLayers = top.getInt(
      "first_k_dense_replace", 0, layers.value_or(kMaxLayers), false, 0);
  config.firstKDense = denseLayers.value_or(0);
  bool anyDense = config.firstKDense > 0;
  bool anyMoE = layers && *layers > config.firstKDense;
  config.intermediateSize =
      top.getInt("intermediate_size", 1, kMaxDim, anyDense).value_or(0);
  std::optional<int64_t> experts =
      top.getInt("num_experts", 1, kMaxExperts, anyMoE);
  config.numExperts = experts.value_or(0);
  config.topK = top.getInt("num_experts_per_token", 1,
                           experts.value_or(kMaxExperts), anyMoE)
                    .value_or(0);
  config.moeIntermediateSize =
      top.getInt("moe_intermediate_size", 1, kMaxDim, anyMoE).value_or(0);
  config.numSharedExperts =
      top.getInt("num_shared_experts", 0, 64, false, 0).value_or(0);
  if (std::optional<double> rsf = top.getNumber(
          "routed_scaling_factor", false, 1.0, [](double x) { return x > 0; },
          "a finite positive number"))
    config.routedScalingFactor = *rsf;
  top.getChoice("moe_router_activation_func", false, {"sigmoid"},
                "the router's scores are sigmoids");
  if (std::optional<bool> renorm = top.getBool("moe_renormalize", false);
      renorm && !*renorm)
    top.error("moe_renormalize", "unsupported value false: the router "
                                 "always renormalises the top-k weights");
  top.requireInt("moe_layer_freq", 1,
                 "every layer after first_k_dense_replace is a MoE layer");
  top.requireInt("num_nextn_predict_layers", 0,
                 "multi-token prediction layers are not supported");
  // Group-limited routing with one group is plain top-k.
  top.getBool("use_grouped_topk", false);
  top.requireInt("num_expert_group", 1,
                 "group-limited routing is not "
                 "supported");
  top.requireInt("topk_group", 1, "group-limited routing is not supported");

  if (const json::Object *extra = top.getObject("moe_mlir")) {
    ObjectReader reader(*extra, "moe_mlir", reporter);
    readProjectKey(reader, config);
    reader.collectUnknown(unknown);
  }
  top.collectUnknown(unknown);

  // Rules that tie several keys together.
  if (config.balance != KimiBalance::SignBias && anyMoE &&
      config.topK >= config.numExperts && config.numExperts > 0)
    reporter.error("num_experts_per_token",
                   "quantile balancing needs fewer experts per token (" +
                       Twine(config.topK) + ") than experts (" +
                       Twine(config.numExperts) + ")");
  if (config.attnResBlockSize > 0 && layers &&
      config.attnResBlockSize > 2 * *layers)
    reporter.error("moe_mlir.attn_res_block_size",
                   "expected at most " + Twine(2 * *layers) +
                       " sub-layers (two per decoder layer), got " +
                       Twine(config.attnResBlockSize));

  if (!unknown.empty()) {
    llvm::sort(unknown);
    std::string list;
    for (const std::string &key : unknown)
      list += (list.empty() ? "" : ", ") + key;
    diagnostics.push_back({ConfigDiagnostic::Severity::Warning, "",
                           "ignoring unknown keys: " + list});
  }
  if (reporter.failed)
    return failure();

  // A rough parameter count, so that no later product can overflow.
  double d = config.hiddenSize;
  double perLayer = 4 * d;
  perLayer += double(config.kdaNumHeads) * config.kdaHeadDim *
              (5 * d + 2 * config.kdaHeadDim + 4 * config.kdaConvSize);
  perLayer += double(config.mlaNumHeads) *
                  (config.qkNopeHeadDim + config.qkRopeHeadDim + 2 * d +
                   config.vHeadDim) *
                  (d + config.qLoraRank + config.kvLoraRank) +
              d * (config.qLoraRank + config.kvLoraRank);
  perLayer += 3 * d *
              (double(config.numExperts + config.numSharedExperts) *
                   config.moeIntermediateSize +
               config.intermediateSize + config.numExperts);
  double total = 2 * config.vocabSize * d + config.numLayers() * perLayer;
  if (total > kMaxParameters) {
    reporter.error("", "the model would have about " +
                           llvm::formatv("{0:e2}", total) +
                           " parameters; more than 1e13 is refused");
    return failure();
  }
  return config;
}
