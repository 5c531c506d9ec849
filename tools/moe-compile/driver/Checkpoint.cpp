//===- Checkpoint.cpp - Training checkpoints of the executables -----------===//
//
// Part of the moe-mlir project.
//
// Saving and loading the checkpoints of Checkpoint.h. A test hook pauses a
// save at one of its stages so that a test can kill the process there:
// MOE_TEST_SAVE_PAUSE=<step>:<stage>:<marker file> creates the marker file
// when the save of <step> reaches <stage> and then sleeps until killed. The
// stages: 0 temporary directory created, 1 model.safetensors written,
// 2 optimizer.safetensors written, 3 state.json written, 4 directory
// fsync'ed, 5 renamed to step-<n>, 6 latest.tmp written, 7 latest replaced,
// 8 an old checkpoint renamed away by pruning, before its deletion.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "ParamFiles.h"
#include "SafeTensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace moe_driver;
using Json = nlohmann::json;

namespace {
constexpr const char *kFormat = "moe-mlir-checkpoint";
constexpr int kVersion = 1;
constexpr size_t kMaxStateBytes = 16 << 20;

uint64_t fnv1a(const unsigned char *data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 0x100000001b3ull;
  return hash;
}

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08ld", static_cast<long>(step));
  return name;
}

/// The step of a directory called step-<digits>, or -1.
int64_t parseStepName(const std::string &name) {
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t step = 0;
  if (!parseInteger(name.substr(5), step, 0) ||
      name.find_first_not_of("0123456789", 5) != std::string::npos)
    return -1;
  return step;
}

bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

void syncPath(const std::string &path, bool directory) {
  int fd =
      open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0 || fsync(fd) != 0)
    fail("cannot sync '" + path + "': " + std::strerror(errno));
  close(fd);
}

/// Writes `text` to `path` and fsyncs it.
void writeSynced(const std::string &path, const std::string &text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    fail("cannot write '" + path + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      fail("cannot write '" + path + "': " + std::strerror(errno));
    done += static_cast<size_t>(wrote);
  }
  if (fsync(fd) != 0 || close(fd) != 0)
    fail("cannot write '" + path + "': " + std::strerror(errno));
}

int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  return std::remove(path);
}

/// Deletes the tree at `path` (nothing if it does not exist).
void removeTree(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return;
  if (nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fail("cannot remove '" + path + "': " + std::strerror(errno));
}

/// The test hook (see the file comment).
void pausePoint(int64_t step, int stage) {
  const char *hook = std::getenv("MOE_TEST_SAVE_PAUSE");
  if (!hook)
    return;
  long hookStep = -1;
  int hookStage = -1, consumed = 0;
  if (std::sscanf(hook, "%ld:%d:%n", &hookStep, &hookStage, &consumed) != 2 ||
      hookStep != step || hookStage != stage)
    return;
  writeSynced(hook + consumed, "paused\n");
  for (;;)
    sleep(1);
}

std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &saveDir) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR *dir = opendir(saveDir.c_str());
  if (!dir)
    return found;
  while (struct dirent *entry = readdir(dir)) {
    int64_t step = parseStepName(entry->d_name);
    if (step >= 0 && isDirectory(saveDir + "/" + entry->d_name))
      found.emplace_back(step, entry->d_name);
  }
  closedir(dir);
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace

void moe_driver::removeInterruptedSaves(const std::string &saveDir) {
  DIR *dir = opendir(saveDir.c_str());
  if (!dir)
    return;
  std::vector<std::string> stale;
  while (struct dirent *entry = readdir(dir))
    if (std::strncmp(entry->d_name, ".tmp-", 5) == 0)
      stale.push_back(saveDir + "/" + entry->d_name);
  closedir(dir);
  for (const std::string &path : stale)
    removeTree(path);
}

namespace {

/// The name in `saveDir`/latest, or "".
std::string readLatest(const std::string &saveDir) {
  std::vector<unsigned char> bytes;
  if (!readWholeFile(saveDir + "/latest", bytes).empty())
    return "";
  std::string name(bytes.begin(), bytes.end());
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r'))
    name.pop_back();
  return name;
}

std::vector<TensorToWrite> tensorsOf(const Manifest &manifest,
                                     const float *values,
                                     const std::string &suffix) {
  std::vector<TensorToWrite> tensors;
  for (const Param &param : manifest.params) {
    TensorToWrite tensor;
    tensor.name = param.name + suffix;
    tensor.dtype = DType::F32;
    for (int64_t dim : param.shape)
      tensor.shape.push_back(static_cast<uint64_t>(dim));
    tensor.data = values + param.offset;
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/// Size and hash of the file just written, for state.json.
Json fileRecord(const std::string &path) {
  std::vector<unsigned char> bytes;
  std::string error = readWholeFile(path, bytes);
  if (!error.empty())
    fail(error);
  return Json{{"bytes", bytes.size()},
              {"fnv1a64", hexValue(fnv1a(bytes.data(), bytes.size()))}};
}
} // namespace

uint64_t moe_driver::modelHash() {
  // The manifest without its `data_parallel` and `expert_parallel` lines: a
  // checkpoint holds no rank, so one written at any degrees resumes at any
  // other.
  std::string manifest;
  for (const char *line = moe_model_manifest; *line;) {
    const char *end = std::strchr(line, '\n');
    size_t length =
        end ? static_cast<size_t>(end - line + 1) : std::strlen(line);
    if (std::strncmp(line, "data_parallel ", 14) != 0 &&
        std::strncmp(line, "expert_parallel ", 16) != 0)
      manifest.append(line, length);
    line += length;
  }
  return fnv1a(reinterpret_cast<const unsigned char *>(manifest.data()),
               manifest.size());
}

std::string moe_driver::hexValue(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

bool moe_driver::parseHexValue(const Json &value, uint64_t &out) {
  if (!value.is_string())
    return false;
  const std::string &text = value.get_ref<const std::string &>();
  if (text.size() != 18 || text.compare(0, 2, "0x") != 0 ||
      text.find_first_not_of("0123456789abcdef", 2) != std::string::npos)
    return false;
  out = std::strtoull(text.c_str() + 2, nullptr, 16);
  return true;
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

std::string moe_driver::saveCheckpoint(const std::string &saveDir, int64_t step,
                                       int64_t keep, const Manifest &manifest,
                                       bool hfNames, int64_t shardBytes,
                                       const float *params, const float *m,
                                       const float *v, const Json &state) {
  makeDirectory(saveDir);
  std::string name = stepName(step);
  std::string temp = saveDir + "/.tmp-" + name;
  std::string final = saveDir + "/" + name;
  makeDirectory(temp);
  pausePoint(step, 0);

  auto write = [&](const std::string &file,
                   const std::vector<TensorToWrite> &tensors) {
    std::string error = writeSafeTensors(temp + "/" + file, tensors,
                                         {{"format", "pt"},
                                          {"moe.model", manifest.name},
                                          {"moe.step", std::to_string(step)}},
                                         /*sync=*/true);
    if (!error.empty())
      fail(error);
  };
  // model.safetensors, or its shards and index.
  std::vector<std::string> modelFiles;
  {
    std::vector<std::vector<float>> storage;
    std::vector<TensorToWrite> tensors =
        tensorsToWrite(paramTensors(manifest, hfNames), params, storage);
    auto bytesOf = [](const TensorToWrite &tensor) {
      uint64_t count = 4;
      for (uint64_t dim : tensor.shape)
        count *= dim;
      return count;
    };
    uint64_t total = 0;
    for (const TensorToWrite &tensor : tensors)
      total += bytesOf(tensor);
    if (shardBytes <= 0 || total <= uint64_t(shardBytes)) {
      write("model.safetensors", tensors);
      modelFiles.push_back("model.safetensors");
    } else {
      // Greedy, in order: a shard ends before the tensor that would take
      // it past shardBytes.
      std::vector<std::vector<TensorToWrite>> shards(1);
      uint64_t filled = 0;
      for (TensorToWrite &tensor : tensors) {
        uint64_t size = bytesOf(tensor);
        if (!shards.back().empty() && filled + size > uint64_t(shardBytes)) {
          shards.emplace_back();
          filled = 0;
        }
        shards.back().push_back(std::move(tensor));
        filled += size;
      }
      Json weightMap = Json::object();
      for (size_t i = 0; i < shards.size(); ++i) {
        std::string file = shardFileName(i, shards.size());
        write(file, shards[i]);
        modelFiles.push_back(file);
        for (const TensorToWrite &tensor : shards[i])
          weightMap[tensor.name] = file;
      }
      Json index = {{"metadata", {{"total_size", total}}},
                    {"weight_map", weightMap}};
      writeSynced(temp + "/model.safetensors.index.json",
                  index.dump(2, ' ', false, Json::error_handler_t::replace) +
                      "\n");
      modelFiles.push_back("model.safetensors.index.json");
    }
  }
  pausePoint(step, 1);
  std::vector<TensorToWrite> moments = tensorsOf(manifest, m, ".exp_avg");
  for (TensorToWrite &tensor : tensorsOf(manifest, v, ".exp_avg_sq"))
    moments.push_back(std::move(tensor));
  write("optimizer.safetensors", moments);
  pausePoint(step, 2);

  Json files = Json::object();
  for (const std::string &file : modelFiles)
    files[file] = fileRecord(temp + "/" + file);
  files["optimizer.safetensors"] = fileRecord(temp + "/optimizer.safetensors");
  Json document = {{"format", kFormat},
                   {"version", kVersion},
                   {"step", step},
                   {"model", manifest.name},
                   {"model_hash", hexValue(modelHash())},
                   {"param_names", hfNames ? "hf" : "moe"},
                   {"files", files},
                   {"run", state}};
  writeSynced(temp + "/state.json",
              document.dump(2, ' ', false, Json::error_handler_t::replace) +
                  "\n");
  pausePoint(step, 3);
  syncPath(temp, /*directory=*/true);
  pausePoint(step, 4);

  // A checkpoint of this step may exist (a resumed run saving the step it
  // resumed from): move it away first, a directory rename cannot replace a
  // non-empty one.
  if (isDirectory(final)) {
    std::string old = saveDir + "/.tmp-old-" + name;
    if (std::rename(final.c_str(), old.c_str()) != 0)
      fail("cannot rename '" + final + "': " + std::strerror(errno));
  }
  if (std::rename(temp.c_str(), final.c_str()) != 0)
    fail("cannot rename '" + temp + "' to '" + final +
         "': " + std::strerror(errno));
  syncPath(saveDir, /*directory=*/true);
  pausePoint(step, 5);

  std::string latestTemp = saveDir + "/.tmp-latest";
  writeSynced(latestTemp, name + "\n");
  pausePoint(step, 6);
  if (std::rename(latestTemp.c_str(), (saveDir + "/latest").c_str()) != 0)
    fail("cannot replace '" + saveDir + "/latest': " + std::strerror(errno));
  syncPath(saveDir, /*directory=*/true);
  pausePoint(step, 7);

  // Keep the `keep` newest; a directory is renamed away before it is
  // deleted, so that a half-deleted one never looks complete.
  if (keep > 0) {
    auto found = listCheckpoints(saveDir);
    for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i) {
      if (found[i].second == name)
        continue;
      std::string doomed = saveDir + "/.tmp-delete-" + found[i].second;
      if (std::rename((saveDir + "/" + found[i].second).c_str(),
                      doomed.c_str()) != 0)
        fail("cannot rename '" + saveDir + "/" + found[i].second +
             "': " + std::strerror(errno));
      pausePoint(step, 8);
      removeTree(doomed);
    }
  }
  removeInterruptedSaves(saveDir);
  return final;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

std::string moe_driver::findCheckpoint(const std::string &what,
                                       const std::string &saveDir) {
  if (what == "latest") {
    if (saveDir.empty())
      fail("--resume=latest needs --save-dir (the directory whose latest "
           "checkpoint to resume)");
    std::string name = readLatest(saveDir);
    if (name.empty())
      fail("no checkpoint to resume: '" + saveDir +
           "/latest' does not exist (no save has completed yet)");
    if (parseStepName(name) < 0)
      fail("'" + saveDir + "/latest' names '" + name +
           "', not a checkpoint directory step-<n>");
    return saveDir + "/" + name;
  }
  if (!isDirectory(what))
    fail("--resume: '" + what + "' is not a directory");
  struct stat info;
  if (stat((what + "/state.json").c_str(), &info) == 0)
    return what;
  std::string name = readLatest(what);
  if (name.empty() || parseStepName(name) < 0)
    fail("--resume: '" + what +
         "' is neither a checkpoint (no state.json) nor a save directory "
         "(no latest)");
  return what + "/" + name;
}

namespace {
/// Reads a safetensors file of the checkpoint and copies each manifest
/// parameter's tensor `<name><suffix>` into `into` (one per suffix).
void checkRecord(const std::string &path, const Json &record,
                 std::vector<unsigned char> &bytes) {
  std::string error = readWholeFile(path, bytes);
  if (!error.empty())
    fail("checkpoint file: " + error);
  uint64_t size = 0, hash = 0;
  if (!record.is_object() || !record.contains("bytes") ||
      !record["bytes"].is_number_unsigned() ||
      !parseHexValue(record.value("fnv1a64", Json()), hash))
    fail("checkpoint file '" + path +
         "': state.json records no size and hash for it");
  size = record["bytes"].get<uint64_t>();
  if (size != bytes.size() || hash != fnv1a(bytes.data(), bytes.size()))
    fail("checkpoint file '" + path +
         "' is damaged: its size or hash differs from what state.json "
         "records (" +
         std::to_string(bytes.size()) + " bytes, recorded " +
         std::to_string(size) + ")");
}

void readRecorded(const std::string &path, const Json &record,
                  std::vector<unsigned char> &bytes,
                  SafeTensorsHeader &header) {
  checkRecord(path, record, bytes);
  std::string error =
      parseSafeTensors(bytes.data(), bytes.size(), path, header);
  if (!error.empty())
    fail(error);
}

void loadTensors(const std::string &path, const Json &record,
                 const Manifest &manifest,
                 const std::vector<std::pair<std::string, float *>> &targets) {
  std::vector<unsigned char> bytes;
  SafeTensorsHeader header;
  readRecorded(path, record, bytes, header);
  size_t expected = 0;
  for (const auto &target : targets)
    for (const Param &param : manifest.params) {
      std::string name = param.name + target.first;
      const TensorEntry *tensor = header.find(name);
      if (!tensor)
        fail("safetensors file '" + path + "': tensor '" + name +
             "' is missing");
      std::vector<uint64_t> shape(param.shape.begin(), param.shape.end());
      if (tensor->dtype != DType::F32 || tensor->shape != shape ||
          tensor->end - tensor->begin != uint64_t(param.size) * 4)
        fail("safetensors file '" + path + "': tensor '" + name + "' is " +
             dtypeName(tensor->dtype) +
             " of another shape than the model's F32 parameter");
      std::memcpy(target.second + param.offset, bytes.data() + tensor->begin,
                  tensor->end - tensor->begin);
      ++expected;
    }
  if (header.tensors.size() != expected)
    fail("safetensors file '" + path + "' holds " +
         std::to_string(header.tensors.size()) + " tensors, the model " +
         std::to_string(expected));
}
/// model.safetensors of a --hf-names checkpoint: every tensor of
/// paramTensors(manifest, true), F32, and no other.
void loadHFTensors(const std::string &path, const Json &record,
                   const Manifest &manifest, float *params) {
  std::vector<unsigned char> bytes;
  SafeTensorsHeader header;
  readRecorded(path, record, bytes, header);
  std::vector<ParamTensor> tensors = paramTensors(manifest, /*hfNames=*/true);
  for (const ParamTensor &tensor : tensors) {
    const TensorEntry *entry = header.find(tensor.name);
    if (!entry)
      fail("safetensors file '" + path + "': tensor '" + tensor.name +
           "' is missing");
    copyParamTensor(path, *entry, bytes.data(), tensor, /*convert=*/false,
                    /*reshape=*/false, params);
  }
  if (header.tensors.size() != tensors.size())
    fail("safetensors file '" + path + "' holds " +
         std::to_string(header.tensors.size()) + " tensors, the model " +
         std::to_string(tensors.size()));
}
} // namespace

Json moe_driver::loadCheckpoint(const std::string &dir,
                                const Manifest &manifest, float *params,
                                float *m, float *v) {
  std::string statePath = dir + "/state.json";
  std::vector<unsigned char> bytes;
  std::string error = readWholeFile(statePath, bytes);
  if (!error.empty())
    fail("checkpoint '" + dir + "': " + error);
  if (bytes.size() > kMaxStateBytes)
    fail("checkpoint '" + dir + "': state.json is larger than " +
         std::to_string(kMaxStateBytes) + " bytes");
  Json state = Json::parse(bytes.begin(), bytes.end(), nullptr,
                           /*allow_exceptions=*/false);
  auto bad = [&](const std::string &what) {
    fail("checkpoint '" + dir + "': state.json " + what);
  };
  if (!state.is_object())
    bad("is not a JSON object");
  if (state.value("format", Json()) != kFormat ||
      state.value("version", Json()) != kVersion)
    bad(std::string("is not a version ") + std::to_string(kVersion) + " " +
        kFormat + " file");
  uint64_t hash = 0;
  if (!parseHexValue(state.value("model_hash", Json()), hash))
    bad("has no model_hash");
  if (hash != modelHash())
    fail("checkpoint '" + dir + "' belongs to another model (" +
         state.value("model", Json())
             .dump(-1, ' ', true, Json::error_handler_t::replace) +
         ", hash " + hexValue(hash) + "; this executable trains '" +
         manifest.name + "', hash " + hexValue(modelHash()) + ")");
  if (!state.contains("step") || !state["step"].is_number_unsigned())
    bad("has no step");
  if (!state.contains("run") || !state["run"].is_object())
    bad("has no run state");
  Json files = state.value("files", Json());
  if (!files.is_object())
    bad("has no files");
  Json names = state.value("param_names", Json("moe"));
  if (names != "moe" && names != "hf")
    bad("has param_names " +
        names.dump(-1, ' ', true, Json::error_handler_t::replace) +
        ", neither \"moe\" nor \"hf\"");
  if (files.contains("model.safetensors.index.json")) {
    // A sharded model: every file state.json records is checked against
    // its size and hash, then the index and shards are read.
    for (auto it = files.begin(); it != files.end(); ++it) {
      if (it.key() == "optimizer.safetensors")
        continue;
      if (it.key().empty() || it.key().find('/') != std::string::npos)
        bad("records the file '" + it.key() + "'");
      std::vector<unsigned char> contents;
      checkRecord(dir + "/" + it.key(), it.value(), contents);
    }
    loadParamFiles(dir, manifest, names == "hf", /*checkpoint=*/true, params);
  } else if (names == "hf")
    loadHFTensors(dir + "/model.safetensors",
                  files.value("model.safetensors", Json()), manifest, params);
  else
    loadTensors(dir + "/model.safetensors",
                files.value("model.safetensors", Json()), manifest,
                {{"", params}});
  loadTensors(dir + "/optimizer.safetensors",
              files.value("optimizer.safetensors", Json()), manifest,
              {{".exp_avg", m}, {".exp_avg_sq", v}});
  Json run = state["run"];
  run["step"] = state["step"];
  return run;
}
