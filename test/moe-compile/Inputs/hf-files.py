#!/usr/bin/env python3
"""Helpers of train-hf-names.mlir, independent of the driver: numpy and the
safetensors package read the files; BF16 is written by hand.

  hf-files.py layout MOE.safetensors HF.safetensors
      checks that the --hf-names file holds the moe-named one's tensors
      under the Kimi-Linear names (the table below), per-expert tensors
      split and torch.nn.Linear weights transposed; prints `layout ok N`.
  hf-files.py shard SRC.safetensors DIR N [LEAVE-OUT...]
      writes SRC's tensors (but those named LEAVE-OUT) as N shards
      DIR/model-0000i-of-0000N.safetensors (round robin in name order) and
      DIR/model.safetensors.index.json.
  hf-files.py convert SRC.safetensors DST.safetensors F16|BF16
      writes SRC's tensors in that dtype (BF16: the upper 16 bits).
  hf-files.py rounded SRC.safetensors NPYDIR F16|BF16
      checks that each NPYDIR/<name>.npy equals SRC's tensor <name> rounded
      as `convert` rounds it, bit for bit; prints `rounded ok N`.
  hf-files.py reshape SRC.safetensors DST.safetensors NAME=D1xD2... ...
      writes SRC's tensors, each NAME reshaped to [D1, D2, ...].
  hf-files.py edit-index DIR drop NAME | set NAME FILE
      changes the weight_map of DIR/model.safetensors.index.json.
"""

import json
import os
import struct
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

# moe.param name -> (Hugging Face name, transposed, per expert)
TABLE = {
    "embed.weight": ("model.embed_tokens.weight", False, False),
    "final_norm.weight": ("model.norm.weight", False, False),
    "layers.0.ffn_norm.weight":
        ("model.layers.0.post_attention_layernorm.weight", False, False),
    "layers.0.ffn.w_router":
        ("model.layers.0.block_sparse_moe.gate.weight", False, False),
    "layers.0.ffn.router_bias":
        ("model.layers.0.block_sparse_moe.gate.e_score_correction_bias",
         False, False),
    "layers.0.ffn.w_gate":
        ("model.layers.0.block_sparse_moe.experts.{e}.w1.weight", True, True),
    "layers.0.ffn.w_up":
        ("model.layers.0.block_sparse_moe.experts.{e}.w3.weight", True, True),
    "layers.0.ffn.w_down":
        ("model.layers.0.block_sparse_moe.experts.{e}.w2.weight", True, True),
}


def layout(moe_path, hf_path):
    moe, hf = load_file(moe_path), load_file(hf_path)
    seen = set()
    for name, value in moe.items():
        target, transposed, per_expert = TABLE.get(name, (name, False, False))
        slices = ([(target.replace("{e}", str(e)), value[e])
                   for e in range(value.shape[0])]
                  if per_expert else [(target, value)])
        for key, expected in slices:
            if transposed:
                expected = np.swapaxes(expected, -1, -2)
            got = hf[key]
            assert got.dtype == np.float32, (key, got.dtype)
            assert got.shape == expected.shape, (key, got.shape,
                                                 expected.shape)
            assert got.tobytes() == np.ascontiguousarray(expected).tobytes(), key
            seen.add(key)
    assert seen == set(hf), sorted(set(hf) - seen)
    print("layout ok", len(seen))


def shard(src, directory, count, leave_out):
    tensors = load_file(src)
    names = sorted(set(tensors) - set(leave_out))
    os.makedirs(directory, exist_ok=True)
    weight_map = {}
    total = 0
    for i in range(count):
        file = "model-%05d-of-%05d.safetensors" % (i + 1, count)
        part = {n: tensors[n] for n in names[i::count]}
        save_file(part, os.path.join(directory, file), {"format": "pt"})
        for n, value in part.items():
            weight_map[n] = file
            total += value.nbytes
    with open(os.path.join(directory, "model.safetensors.index.json"),
              "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": weight_map}, f, indent=2)


def rounded_bits(value, dtype):
    value = np.ascontiguousarray(value, dtype=np.float32)
    if dtype == "F16":
        return value.astype(np.float16)
    return (value.view(np.uint32) >> 16).astype(np.uint16)


def widened(value, dtype):
    bits = rounded_bits(value, dtype)
    if dtype == "F16":
        return bits.astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def convert(src, dst, dtype):
    tensors = load_file(src)
    header, data = {}, b""
    for name in sorted(tensors):
        raw = rounded_bits(tensors[name], dtype).tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def rounded(src, npy_dir, dtype):
    tensors = load_file(src)
    for name, value in tensors.items():
        got = np.load(os.path.join(npy_dir, name + ".npy"))
        expected = widened(value, dtype)
        assert got.dtype == np.float32 and got.shape == expected.shape, name
        assert got.tobytes() == expected.tobytes(), name
    print("rounded ok", len(tensors))


def reshape(src, dst, changes):
    tensors = load_file(src)
    for change in changes:
        name, dims = change.split("=")
        tensors[name] = tensors[name].reshape(
            [int(d) for d in dims.split("x")])
    save_file(tensors, dst, {"format": "pt"})


def edit_index(directory, op, args):
    path = os.path.join(directory, "model.safetensors.index.json")
    with open(path) as f:
        index = json.load(f)
    if op == "drop":
        del index["weight_map"][args[0]]
    else:
        index["weight_map"][args[0]] = args[1]
    with open(path, "w") as f:
        json.dump(index, f, indent=2)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "layout":
        layout(*args)
    elif command == "shard":
        shard(args[0], args[1], int(args[2]), args[3:])
    elif command == "convert":
        convert(*args)
    elif command == "rounded":
        rounded(*args)
    elif command == "reshape":
        reshape(args[0], args[1], args[2:])
    elif command == "edit-index":
        edit_index(args[0], args[1], args[2:])
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
