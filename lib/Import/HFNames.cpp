//===- HFNames.cpp - Hugging Face names of a model's parameters -----------===//
//
// Part of the moe-mlir project.
//
// The table between this project's parameter names (the checkpoint keys
// `examples/models/*.mlir` use) and those of Hugging Face's Kimi-Linear
// modeling code: self_attn.{q,k,v}_proj, f_a/f_b (decay gate), g_a/g_b
// (output gate), b_proj, A_log, dt_bias, o_norm, o_proj for KDA;
// q_proj or q_a_proj/q_a_layernorm/q_b_proj, kv_a_proj_with_mqa,
// kv_a_layernorm, kv_b_proj, o_proj for MLA; mlp.{gate,up,down}_proj for the
// dense FFN; block_sparse_moe.gate (with e_score_correction_bias),
// experts.E.w1/w2/w3 and shared_experts for the MoE FFN.
//
//===----------------------------------------------------------------------===//

#include "moe/Import/HFNames.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::moe;

namespace {
/// One row of the per-layer table: our suffix, theirs, and the layout.
struct LayerName {
  const char *ours;
  const char *theirs;
  bool transposed;
};
} // namespace

// Mixer parameters: "layers.N.mixer.<ours>" <-> "model.layers.N.self_attn.
// <theirs>". KDA and MLA share q_proj and o_proj.
static constexpr LayerName kMixerNames[] = {
    {"w_q", "q_proj.weight", true},
    {"w_k", "k_proj.weight", true},
    {"w_v", "v_proj.weight", true},
    {"conv_q", "q_conv1d.weight", false},
    {"conv_k", "k_conv1d.weight", false},
    {"conv_v", "v_conv1d.weight", false},
    {"w_gate_down", "f_a_proj.weight", true},
    {"w_gate_up", "f_b_proj.weight", true},
    {"A_log", "A_log", false},
    {"dt_bias", "dt_bias", false},
    {"w_beta", "b_proj.weight", true},
    {"w_out_gate_down", "g_a_proj.weight", true},
    {"w_out_gate_up", "g_b_proj.weight", true},
    {"out_norm", "o_norm.weight", false},
    {"w_out", "o_proj.weight", true},
    {"w_q_down", "q_a_proj.weight", true},
    {"q_norm", "q_a_layernorm.weight", false},
    {"w_q_up", "q_b_proj.weight", true},
    {"w_kv_down", "kv_a_proj_with_mqa.weight", true},
    {"kv_norm", "kv_a_layernorm.weight", false},
    {"w_kv_up", "kv_b_proj.weight", true},
    // The gated MLA's output gate (not in Kimi-Linear; Kimi K3's name).
    {"w_gate", "g_proj.weight", true},
};

// Dense FFN parameters: "layers.N.ffn.<ours>" <-> "model.layers.N.mlp.
// <theirs>".
static constexpr LayerName kDenseNames[] = {
    {"w_gate", "gate_proj.weight", true},
    {"w_up", "up_proj.weight", true},
    {"w_down", "down_proj.weight", true},
};

// MoE FFN parameters: "layers.N.ffn.<ours>" <-> "model.layers.N.
// block_sparse_moe.<theirs>"; the routed experts are one tensor per expert.
static constexpr LayerName kMoENames[] = {
    {"w_router", "gate.weight", false},
    {"router_bias", "gate.e_score_correction_bias", false},
    {"w_gate", "experts.{e}.w1.weight", true},
    {"w_up", "experts.{e}.w3.weight", true},
    {"w_down", "experts.{e}.w2.weight", true},
    {"w_shared_gate", "shared_experts.gate_proj.weight", true},
    {"w_shared_up", "shared_experts.up_proj.weight", true},
    {"w_shared_down", "shared_experts.down_proj.weight", true},
};

/// Looks `suffix` up in `table`.
static const LayerName *findRow(ArrayRef<LayerName> table, StringRef suffix) {
  for (const LayerName &row : table)
    if (suffix == row.ours)
      return &row;
  return nullptr;
}

std::optional<HFParamName> mlir::moe::getHFParamName(StringRef paramName,
                                                     Operation *user) {
  HFParamName result;
  result.paramName = paramName.str();
  auto whole = [&](StringRef theirs) {
    result.hfName = theirs.str();
    return result;
  };
  if (paramName == "embed.weight")
    return whole("model.embed_tokens.weight");
  if (paramName == "final_norm.weight")
    return whole("model.norm.weight");
  if (paramName == "lm_head.weight")
    return whole("lm_head.weight");

  // layers.<N>.<part>.<suffix>
  StringRef rest = paramName;
  if (!rest.consume_front("layers."))
    return std::nullopt;
  auto [layer, tail] = rest.split('.');
  unsigned index;
  if (layer.getAsInteger(10, index))
    return std::nullopt;
  std::string prefix = "model.layers." + layer.str() + ".";
  if (tail == "mixer_norm.weight")
    return whole(prefix + "input_layernorm.weight");
  if (tail == "ffn_norm.weight")
    return whole(prefix + "post_attention_layernorm.weight");

  auto [part, suffix] = tail.split('.');
  const LayerName *row = nullptr;
  std::string module;
  if (part == "mixer") {
    row = findRow(kMixerNames, suffix);
    module = "self_attn.";
  } else if (part == "ffn" && isa_and_nonnull<MoEFFNOp>(user)) {
    row = findRow(kMoENames, suffix);
    module = "block_sparse_moe.";
  } else if (part == "ffn") {
    row = findRow(kDenseNames, suffix);
    module = "mlp.";
  }
  if (!row)
    return std::nullopt;
  result.hfName = prefix + module + row->theirs;
  result.transposed = row->transposed;
  result.perExpert = StringRef(row->theirs).contains("{e}");
  return result;
}

SmallVector<HFParamName> mlir::moe::getHFParamNames(ModelOp model) {
  SmallVector<HFParamName> names;
  model.getBody().walk([&](ParamOp param) {
    // The first user decides between a dense and a MoE FFN.
    Operation *user = param->use_empty() ? nullptr : *param->getUsers().begin();
    if (std::optional<HFParamName> name =
            getHFParamName(param.getParamName(), user))
      names.push_back(std::move(*name));
  });
  return names;
}

std::optional<HFNameMatch> mlir::moe::matchHFName(ArrayRef<HFParamName> names,
                                                  StringRef hfName) {
  // "....experts.<digits>.w1.weight" -> "....experts.{e}.w1.weight".
  std::string pattern = hfName.str();
  std::optional<int64_t> expert;
  size_t at = hfName.find(".experts.");
  if (at != StringRef::npos) {
    StringRef digits = hfName.drop_front(at + 9);
    digits = digits.take_while(llvm::isDigit);
    int64_t e;
    if (!digits.empty() && !digits.getAsInteger(10, e)) {
      expert = e;
      pattern = hfName.take_front(at + 9).str() + "{e}" +
                hfName.drop_front(at + 9 + digits.size()).str();
    }
  }
  for (const HFParamName &entry : names) {
    if (entry.hfName != pattern)
      continue;
    if (entry.perExpert != expert.has_value())
      return std::nullopt;
    return HFNameMatch{&entry, expert};
  }
  return std::nullopt;
}
