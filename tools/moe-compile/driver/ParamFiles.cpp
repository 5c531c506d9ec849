//===- ParamFiles.cpp - Parameters in safetensors files by name ----------===//
//
// Part of the moe-mlir project.
//
// See ParamFiles.h. The index of a sharded checkpoint is Hugging Face's
// model.safetensors.index.json: {"metadata": {...}, "weight_map": {"<tensor
// name>": "<shard file>", ...}}. It is checked as strictly as the shards:
// valid JSON without repeated keys, a weight_map of strings that name files
// in the index's directory, every shard readable and a valid safetensors
// file holding exactly the tensors the index maps to it.
//
//===----------------------------------------------------------------------===//

#include "ParamFiles.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>

using namespace moe_driver;
using Json = nlohmann::json;

namespace {

std::string shapeText(const std::vector<uint64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The elements of one slice (a whole parameter, or one expert's).
uint64_t sliceElements(const ParamTensor &tensor) {
  uint64_t count = 1;
  for (uint64_t dim : tensor.shape)
    count *= dim;
  return count;
}

/// [batch, rows, cols] of a transposed slice of `shape` (the parameter's
/// layout): rows and cols are its last two dimensions.
void transposeDims(const std::vector<uint64_t> &shape, uint64_t &batch,
                   uint64_t &rows, uint64_t &cols) {
  size_t rank = shape.size();
  rows = shape[rank - 2];
  cols = shape[rank - 1];
  batch = 1;
  for (size_t i = 0; i + 2 < rank; ++i)
    batch *= shape[i];
}

float halfToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // A subnormal half: normalise it.
    exponent = 113;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Element `i` of little-endian data of `dtype` (F32, BF16 or F16).
float loadElement(const unsigned char *data, DType dtype, uint64_t i) {
  if (dtype == DType::F32) {
    float value;
    std::memcpy(&value, data + 4 * i, 4);
    return value;
  }
  uint16_t half = static_cast<uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
  if (dtype == DType::F16)
    return halfToFloat(half);
  uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Whether `shape` holds the elements of `expected` in the same order:
/// the same shape without its dimensions of size 1, or flattened.
bool sameOrder(const std::vector<uint64_t> &shape,
               const std::vector<uint64_t> &expected) {
  auto squeeze = [](const std::vector<uint64_t> &dims) {
    std::vector<uint64_t> kept;
    for (uint64_t dim : dims)
      if (dim != 1)
        kept.push_back(dim);
    return kept;
  };
  auto elements = [](const std::vector<uint64_t> &dims) {
    uint64_t count = 1;
    for (uint64_t dim : dims)
      count *= dim;
    return count;
  };
  if (squeeze(shape) == squeeze(expected))
    return true;
  return shape.size() == 1 && shape[0] == elements(expected);
}

bool isFile(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// Reads and checks the safetensors file `path`.
void readChecked(const std::string &path, std::vector<unsigned char> &bytes,
                 SafeTensorsHeader &header) {
  std::string error = readWholeFile(path, bytes);
  if (error.empty())
    error = parseSafeTensors(bytes.data(), bytes.size(), path, header);
  if (!error.empty())
    fail(error);
}

} // namespace

std::vector<ParamTensor> moe_driver::paramTensors(const Manifest &manifest,
                                                  bool hfNames) {
  std::vector<ParamTensor> tensors;
  for (const Param &param : manifest.params) {
    ParamTensor tensor;
    tensor.param = &param;
    for (int64_t dim : param.shape)
      tensor.shape.push_back(static_cast<uint64_t>(dim));
    if (!hfNames || param.hfName.empty()) {
      tensor.name = param.name;
      tensor.unmapped = hfNames;
      tensors.push_back(std::move(tensor));
      continue;
    }
    tensor.transposed = param.hfTransposed;
    if (param.hfPerExpert)
      tensor.shape.erase(tensor.shape.begin());
    if (tensor.transposed)
      std::swap(tensor.shape[tensor.shape.size() - 2], tensor.shape.back());
    if (!param.hfPerExpert) {
      tensor.name = param.hfName;
      tensors.push_back(std::move(tensor));
      continue;
    }
    size_t at = param.hfName.find("{e}");
    for (int64_t e = 0; e < param.shape[0]; ++e) {
      ParamTensor slice = tensor;
      slice.expert = e;
      slice.name = at == std::string::npos
                       ? param.hfName + "." + std::to_string(e)
                       : param.hfName.substr(0, at) + std::to_string(e) +
                             param.hfName.substr(at + 3);
      tensors.push_back(std::move(slice));
    }
  }
  return tensors;
}

bool moe_driver::hasHFNames(const Manifest &manifest) {
  for (const Param &param : manifest.params)
    if (!param.hfName.empty())
      return true;
  return false;
}

std::vector<TensorToWrite>
moe_driver::tensorsToWrite(const std::vector<ParamTensor> &tensors,
                           const float *values,
                           std::vector<std::vector<float>> &storage) {
  std::vector<TensorToWrite> result;
  for (const ParamTensor &tensor : tensors) {
    uint64_t count = sliceElements(tensor);
    const float *source = values + tensor.param->offset +
                          (tensor.expert < 0 ? 0 : tensor.expert * count);
    TensorToWrite out;
    out.name = tensor.name;
    out.dtype = DType::F32;
    out.shape = tensor.shape;
    out.data = source;
    if (tensor.transposed) {
      // The file's [batch, cols, rows] from the parameter's [batch, rows,
      // cols]; tensor.shape is already the file's.
      uint64_t batch, cols, rows;
      transposeDims(tensor.shape, batch, cols, rows);
      storage.emplace_back(count);
      float *copy = storage.back().data();
      for (uint64_t k = 0; k < batch; ++k)
        for (uint64_t i = 0; i < rows; ++i)
          for (uint64_t j = 0; j < cols; ++j)
            copy[(k * cols + j) * rows + i] = source[(k * rows + i) * cols + j];
      out.data = copy;
    }
    result.push_back(std::move(out));
  }
  return result;
}

void moe_driver::copyParamTensor(const std::string &path,
                                 const TensorEntry &entry,
                                 const unsigned char *bytes,
                                 const ParamTensor &tensor, bool convert,
                                 bool reshape, float *values) {
  std::string what = "safetensors file '" + path + "': tensor '" + entry.name +
                     "' (parameter '" + tensor.param->name + "'";
  if (tensor.expert >= 0)
    what += ", expert " + std::to_string(tensor.expert);
  what += ")";
  bool known =
      entry.dtype == DType::F32 ||
      (convert && (entry.dtype == DType::BF16 || entry.dtype == DType::F16));
  if (!known)
    fail(what + " is " + dtypeName(entry.dtype) + "; the parameters are read " +
         (convert ? "from F32, BF16 or F16" : "from F32 only"));
  if (entry.shape != tensor.shape &&
      !(reshape && !tensor.transposed && tensor.expert < 0 &&
        sameOrder(entry.shape, tensor.shape)))
    fail(what + " has shape " + shapeText(entry.shape) +
         ", the model expects " + shapeText(tensor.shape) +
         (tensor.transposed ? " (the transpose of the parameter's last two "
                              "dimensions)"
                            : ""));
  uint64_t count = sliceElements(tensor);
  float *target = values + tensor.param->offset +
                  (tensor.expert < 0 ? 0 : tensor.expert * count);
  const unsigned char *data = bytes + entry.begin;
  if (entry.dtype == DType::F32 && !tensor.transposed) {
    std::memcpy(target, data, count * 4);
    return;
  }
  if (!tensor.transposed) {
    for (uint64_t i = 0; i < count; ++i)
      target[i] = loadElement(data, entry.dtype, i);
    return;
  }
  uint64_t batch, cols, rows;
  transposeDims(tensor.shape, batch, cols, rows);
  for (uint64_t k = 0; k < batch; ++k)
    for (uint64_t j = 0; j < cols; ++j)
      for (uint64_t i = 0; i < rows; ++i)
        target[(k * rows + i) * cols + j] =
            loadElement(data, entry.dtype, (k * cols + j) * rows + i);
}

//===----------------------------------------------------------------------===//
// --init-from
//===----------------------------------------------------------------------===//

namespace {
/// Parses the index `path`; fills `weightMap` (tensor -> shard file).
void parseIndex(const std::string &path,
                std::map<std::string, std::string> &weightMap) {
  std::vector<unsigned char> bytes;
  std::string error = readWholeFile(path, bytes);
  if (!error.empty())
    fail("index " + error);
  auto bad = [&](const std::string &what) {
    fail("safetensors index '" + path + "': " + what);
  };
  // Repeated keys: JSON readers keep one of them silently; a tensor mapped
  // twice is an error here.
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  Json::parser_callback_t callback = [&](int, Json::parse_event_t event,
                                         Json &parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!keys.empty())
        keys.pop_back();
    } else if (event == Json::parse_event_t::key && !keys.empty() &&
               parsed.is_string()) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!keys.back().insert(key).second && repeated.empty())
        repeated = key;
    }
    return true;
  };
  Json index = Json::parse(bytes.begin(), bytes.end(), callback,
                           /*allow_exceptions=*/false);
  if (index.is_discarded())
    bad("is not valid JSON");
  if (!repeated.empty())
    bad("the key '" + repeated +
        "' appears twice in one object (a tensor mapped twice?)");
  if (!index.is_object())
    bad("is not a JSON object");
  for (auto it = index.begin(); it != index.end(); ++it)
    if (it.key() != "metadata" && it.key() != "weight_map")
      bad("has the unknown key '" + it.key() +
          "' (expected weight_map and metadata)");
  if (index.contains("metadata") && !index["metadata"].is_object())
    bad("'metadata' is not an object");
  if (!index.contains("weight_map") || !index["weight_map"].is_object())
    bad("has no 'weight_map' object (tensor name -> shard file)");
  const Json &map = index["weight_map"];
  if (map.empty())
    bad("'weight_map' is empty");
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->is_string())
      bad("weight_map maps tensor '" + it.key() + "' to " + it->dump() +
          ", not to a file name");
    const std::string &file = it->get_ref<const std::string &>();
    if (file.empty() || file == "." || file == ".." ||
        file.find('/') != std::string::npos ||
        file.find('\0') != std::string::npos)
      bad("weight_map maps tensor '" + it.key() + "' to '" + file +
          "', not to a file in the index's directory");
    weightMap[it.key()] = file;
  }
}
} // namespace

void moe_driver::loadParamFiles(const std::string &dir,
                                const Manifest &manifest, bool hfNames,
                                bool checkpoint, float *values) {
  const char *what = checkpoint ? "checkpoint" : "--init-from";
  std::vector<ParamTensor> tensors = paramTensors(manifest, hfNames);
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < tensors.size(); ++i)
    byName[tensors[i].name] = i;
  // For the hint of an unknown tensor: the names of the other convention.
  std::map<std::string, std::string> otherNames;
  for (const ParamTensor &tensor : paramTensors(manifest, !hfNames))
    otherNames[tensor.name] = tensor.param->name;
  auto unknown = [&](const std::string &where, const std::string &name) {
    std::string hint;
    auto other = otherNames.find(name);
    if (other != otherNames.end())
      hint = std::string(" (it is the ") +
             (hfNames ? "moe.param" : "Hugging Face") + " name of '" +
             other->second +
             "'; read those with --init-names=" + (hfNames ? "moe" : "hf") +
             ")";
    fail(where + ": tensor '" + name + "' is no parameter of the model '" +
         manifest.name + "'" +
         (hfNames ? " under its Hugging Face names" : "") + hint);
  };

  std::string single = dir + "/model.safetensors";
  std::string indexPath = dir + "/model.safetensors.index.json";
  bool sharded = isFile(indexPath);
  if (!sharded && !isFile(single))
    fail(std::string(what) + ": '" + dir +
         "' holds neither model.safetensors nor model.safetensors.index.json");

  // The shards and the tensors each must hold.
  std::map<std::string, std::set<std::string>> shards;
  std::string source = sharded ? indexPath : single;
  if (sharded) {
    std::map<std::string, std::string> weightMap;
    parseIndex(indexPath, weightMap);
    for (const auto &entry : weightMap) {
      if (!byName.count(entry.first))
        unknown("safetensors index '" + indexPath + "'", entry.first);
      shards[entry.second].insert(entry.first);
    }
  }

  std::vector<char> found(tensors.size(), 0);
  auto readFile = [&](const std::string &path,
                      const std::set<std::string> *expected) {
    std::vector<unsigned char> bytes;
    SafeTensorsHeader header;
    readChecked(path, bytes, header);
    for (const TensorEntry &entry : header.tensors) {
      if (expected && !expected->count(entry.name))
        fail("safetensors file '" + path + "' holds tensor '" + entry.name +
             "', which index '" + indexPath + "' does not map to it" +
             (byName.count(entry.name) ? " (a tensor in two shards?)" : ""));
      auto it = byName.find(entry.name);
      if (it == byName.end())
        unknown("safetensors file '" + path + "'", entry.name);
      copyParamTensor(path, entry, bytes.data(), tensors[it->second],
                      /*convert=*/!checkpoint,
                      /*reshape=*/hfNames && !checkpoint, values);
      found[it->second] = 1;
    }
    if (expected)
      for (const std::string &name : *expected)
        if (!header.find(name))
          fail("safetensors index '" + indexPath + "' maps tensor '" + name +
               "' to '" + path + "', which does not hold it");
  };
  if (sharded) {
    for (const auto &shard : shards) {
      std::string path = dir + "/" + shard.first;
      if (!isFile(path))
        fail("safetensors index '" + indexPath + "' maps tensor '" +
             *shard.second.begin() + "' to '" + shard.first +
             "', which is not a file in '" + dir + "'");
      readFile(path, &shard.second);
    }
  } else {
    readFile(single, nullptr);
  }

  size_t read = 0, kept = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (found[i]) {
      ++read;
      continue;
    }
    if (tensors[i].unmapped && !checkpoint) {
      ++kept;
      std::printf("init-from: parameter '%s' has no Hugging Face name and is "
                  "not in %s; it keeps its initialisation\n",
                  tensors[i].param->name.c_str(), source.c_str());
      continue;
    }
    fail(std::string(what) + ": tensor '" + tensors[i].name + "' (parameter '" +
         tensors[i].param->name + "') is missing from '" + source + "'");
  }
  if (checkpoint)
    return;
  std::string shardText = sharded
                              ? " (" + std::to_string(shards.size()) +
                                    " shard" + (shards.size() == 1 ? ")" : "s)")
                              : "";
  std::printf("init-from: %zu tensors from %s%s%s", read, source.c_str(),
              hfNames ? " by Hugging Face names" : "", shardText.c_str());
  if (kept)
    std::printf(", %zu parameters kept their initialisation", kept);
  std::printf("\n");
}

void moe_driver::initParamsFrom(const std::string &dir,
                                const Manifest &manifest, bool hfNames,
                                float *values) {
  loadParamFiles(dir, manifest, hfNames, /*checkpoint=*/false, values);
}

std::string moe_driver::shardFileName(size_t index, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors",
                index + 1, count);
  return name;
}
