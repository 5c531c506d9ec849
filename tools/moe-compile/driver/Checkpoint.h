//===- Checkpoint.h - Training checkpoints of the executables ---*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// A checkpoint is a directory SAVE-DIR/step-<8 digits> holding
//   model.safetensors      every parameter of the manifest (router biases
//                          included) under its moe.param name (or, with
//                          --hf-names, its Hugging Face name), fp32;
//   optimizer.safetensors  the AdamW moments, "<name>.exp_avg" and
//                          "<name>.exp_avg_sq", fp32;
//   state.json             the step, the model's name and hash, the run's
//                          settings and schedule, the data position and
//                          random state, counters, and the size and FNV-1a
//                          hash of both safetensors files.
// SAVE-DIR/latest names the newest checkpoint (one line). Saving is atomic:
// the files go into SAVE-DIR/.tmp-step-<n>, are fsync'ed with their
// directory, the directory is renamed to step-<n> (and SAVE-DIR fsync'ed),
// then `latest` is replaced by a rename. A checkpoint directory therefore
// exists complete or not at all; pruning (--keep) renames a directory away
// before deleting it, for the same reason.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_CHECKPOINT_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_CHECKPOINT_H

#include "Driver.h"

#include <nlohmann/json.hpp>

#include <string>

namespace moe_driver {

/// FNV-1a hash of the manifest text: the model's names, shapes, offsets
/// and initialisers. A checkpoint only loads into the model it came from.
uint64_t modelHash();

/// A 64-bit value as JSON text ("0x..."), exact in every JSON reader.
std::string hexValue(uint64_t value);
/// Parses hexValue's text; false if it is not one.
bool parseHexValue(const nlohmann::json &value, uint64_t &out);

/// Saves the checkpoint of `step` under `saveDir` (created if missing),
/// atomically, points `latest` at it and keeps the `keep` newest (0: all).
/// `state` is the run's part of state.json. With `hfNames`, the tensors of
/// model.safetensors have the Hugging Face names (ParamFiles.h) and
/// state.json says so ("param_names": "hf"). With `shardBytes` > 0 and more
/// tensor data than that, model.safetensors is shards of at most
/// `shardBytes` each (a larger tensor alone) and
/// model.safetensors.index.json. Returns the checkpoint's directory; exits
/// with an error when the file system fails.
std::string saveCheckpoint(const std::string &saveDir, int64_t step,
                           int64_t keep, const Manifest &manifest, bool hfNames,
                           int64_t shardBytes, const float *params,
                           const float *m, const float *v,
                           const nlohmann::json &state);

/// Removes what interrupted saves left in `saveDir` (its .tmp-* entries:
/// unfinished checkpoints, half-pruned ones, a latest not yet renamed).
/// A run calls it at start-up (a run resumed at its last step saves
/// nothing), and each save once it is complete.
void removeInterruptedSaves(const std::string &saveDir);

/// The checkpoint directory that --resume=`what` names: `latest` (the one
/// that `saveDir`/latest names), a checkpoint directory, or a save
/// directory (its latest). Exits with an error when there is none.
std::string findCheckpoint(const std::string &what, const std::string &saveDir);

/// Loads the checkpoint `dir` into `params`, `m` and `v` (manifest.scalars
/// each) after checking everything: state.json, the model hash, both
/// files' sizes and hashes, and every tensor's presence, dtype and shape.
/// Returns the run's part of state.json; exits with an error otherwise.
nlohmann::json loadCheckpoint(const std::string &dir, const Manifest &manifest,
                              float *params, float *m, float *v);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_CHECKPOINT_H
