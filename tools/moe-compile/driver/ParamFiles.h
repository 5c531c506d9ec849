//===- ParamFiles.h - Parameters in safetensors files by name ----*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The tensors that hold a model's parameters in a model.safetensors file,
// under the `moe.param` names or, with --hf-names, under the Hugging Face
// (Kimi-Linear) names that moe-compile wrote into the manifest: a per-expert
// parameter [E, ...] is E tensors (the "{e}" of its name replaced by the
// expert index), a transposed one holds the transpose of its last two
// dimensions (torch.nn.Linear's [out, in]); a parameter without a Hugging
// Face name keeps its moe.param name. And --init-from: parameters read from
// DIR/model.safetensors or from the shards that DIR/model.safetensors.
// index.json lists, each checked (JSON, shards, names, dtypes, shapes).
// Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_PARAMFILES_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_PARAMFILES_H

#include "Driver.h"
#include "SafeTensors.h"

#include <string>
#include <vector>

namespace moe_driver {

/// One tensor of a parameter file.
struct ParamTensor {
  /// The key in the file.
  std::string name;
  /// The shape in the file.
  std::vector<uint64_t> shape;
  /// The parameter it holds (part of).
  const Param *param = nullptr;
  /// The index along dimension 0 of a per-expert tensor, else -1.
  int64_t expert = -1;
  /// The file holds the transpose of the last two dimensions.
  bool transposed = false;
  /// The parameter has no Hugging Face name (kept under its moe.param
  /// name in a --hf-names file).
  bool unmapped = false;
};

/// The tensors of `manifest`'s parameters in manifest order, under the
/// moe.param names or (`hfNames`) the Hugging Face names.
std::vector<ParamTensor> paramTensors(const Manifest &manifest, bool hfNames);

/// Whether some parameter of `manifest` has a Hugging Face name.
bool hasHFNames(const Manifest &manifest);

/// The tensors to write for the packed parameters `values`; `storage`
/// holds the transposed copies and must outlive the result.
std::vector<TensorToWrite>
tensorsToWrite(const std::vector<ParamTensor> &tensors, const float *values,
               std::vector<std::vector<float>> &storage);

/// Copies the tensor `entry` of the checked file `path` (whose bytes are
/// `bytes`) into `tensor`'s place of the packed parameters `values`,
/// converting BF16 and F16 when `convert` (else only F32 is accepted) and
/// undoing a transpose. Fails, naming the file and the tensor, when the
/// dtype or the shape differs; with `reshape`, a tensor that is not
/// transposed nor per-expert may also have its elements in the same order
/// under another shape: the same after dropping the dimensions of size 1,
/// or flattened to one dimension (a Kimi-Linear checkpoint's A_log is
/// [1, 1, H, 1], its dt_bias [H * K], its convolutions [C, 1, W]).
void copyParamTensor(const std::string &path, const TensorEntry &entry,
                     const unsigned char *bytes, const ParamTensor &tensor,
                     bool convert, bool reshape, float *values);

/// --init-from=`dir`: fills `values` from `dir`/model.safetensors or the
/// shards of `dir`/model.safetensors.index.json, under the moe.param names
/// or (`hfNames`) the Hugging Face names. Every tensor of the model must be
/// there (with --hf-names a parameter without a Hugging Face name may be
/// absent and keeps what `values` holds), none other, with its exact shape
/// (with --hf-names, or one of copyParamTensor's `reshape`), as F32, BF16
/// or F16. Prints what it read; exits with an error naming the
/// file and the tensor otherwise.
void initParamsFrom(const std::string &dir, const Manifest &manifest,
                    bool hfNames, float *values);

/// What initParamsFrom does, quietly with `checkpoint` (a sharded
/// checkpoint of --resume): then F32 only, exact shapes and every tensor.
void loadParamFiles(const std::string &dir, const Manifest &manifest,
                    bool hfNames, bool checkpoint, float *values);

/// The file of shard `index` (from 0) of `count`:
/// model-<index + 1>-of-<count>.safetensors, 5 digits each, as
/// transformers names them.
std::string shardFileName(size_t index, size_t count);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_PARAMFILES_H
