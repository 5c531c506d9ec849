//===- HFNames.h - Hugging Face names of a model's parameters ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Maps the `moe.param` names of a Kimi-Linear-style model to the tensor names
// of a Hugging Face Kimi-Linear checkpoint (model.layers.N.self_attn.q_proj.
// weight, ...) and back, with what a loader must do to the data: transpose a
// torch.nn.Linear weight, split or stack the per-expert tensors.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_IMPORT_HFNAMES_H
#define MOE_IMPORT_HFNAMES_H

#include "moe/Dialect/MoE/IR/MoE.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::moe {

/// Where one `moe.param` lives in a Hugging Face Kimi-Linear checkpoint.
struct HFParamName {
  /// The `moe.param` name, e.g. "layers.1.ffn.w_gate".
  std::string paramName;
  /// The checkpoint key, e.g. "model.layers.1.block_sparse_moe.experts.{e}.
  /// w1.weight"; "{e}" stands for the expert index when perExpert.
  std::string hfName;
  /// The checkpoint holds the transpose of the parameter's last two
  /// dimensions (torch.nn.Linear stores [out, in]; moe.param [in, out]).
  bool transposed = false;
  /// The parameter stacks one checkpoint tensor per expert along dimension
  /// 0: expert e's slice is `hfName` with "{e}" replaced by e.
  bool perExpert = false;
  /// Otherwise the element order is the same; the shapes may differ by
  /// unit dimensions or a flattening (A_log is [1, 1, H, 1] there, dt_bias
  /// [H * K], the convolutions [C, 1, W]).
};

/// The checkpoint name of a parameter named `paramName` and used by `user`
/// (the layer op that reads it, which tells a dense FFN's "ffn.w_gate" from
/// a MoE FFN's), or std::nullopt when a Kimi-Linear checkpoint has no such
/// tensor (the AttnRes queries and key norms).
std::optional<HFParamName> getHFParamName(StringRef paramName, Operation *user);

/// The names of every parameter of `model` that a Kimi-Linear checkpoint
/// holds, in the model's parameter order.
SmallVector<HFParamName> getHFParamNames(ModelOp model);

/// A checkpoint key resolved against `names`: the entry and, for a
/// per-expert tensor, the expert index.
struct HFNameMatch {
  const HFParamName *entry = nullptr;
  std::optional<int64_t> expert;
};

/// Finds the entry of checkpoint key `hfName` (a concrete key such as
/// "model.layers.1.block_sparse_moe.experts.17.w1.weight") in `names`, or
/// std::nullopt when it names no parameter.
std::optional<HFNameMatch> matchHFName(ArrayRef<HFParamName> names,
                                       StringRef hfName);

} // namespace mlir::moe

#endif // MOE_IMPORT_HFNAMES_H
