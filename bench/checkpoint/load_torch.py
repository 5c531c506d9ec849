"""Loads a moe-mlir checkpoint with PyTorch on the GPU (issue #15 part 2).

usage: load_torch.py OUT_DIR RESULTS_DIR

OUT_DIR is bench/checkpoint/out from prepare.sh: save/latest names the
checkpoint, params/<name>.npy hold the run's final parameters. Every tensor
of model.safetensors is loaded onto cuda:0 by safetensors.torch when the
safetensors package is there, else by a reader written with torch alone
(the format is an 8-byte header length, a JSON header and the data); each
must be float32 with the shape and the exact values of the .npy file. The
optimizer's exp_avg / exp_avg_sq must cover the same names (exp_avg_sq >=
0). Prints a table and writes RESULTS_DIR/load-torch.json.
"""

import json
import os
import struct
import sys

import numpy as np
import torch


def load_with_torch_only(path, device):
    """The safetensors format read by hand into torch tensors."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    base = 8 + length
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
              "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        buffer = bytearray(data[base + begin : base + end])
        tensor = torch.frombuffer(buffer, dtype=dtypes[entry["dtype"]]) if buffer else \
            torch.empty(0, dtype=dtypes[entry["dtype"]])
        tensors[name] = tensor.reshape(entry["shape"]).to(device)
    return tensors


def main():
    out, results = sys.argv[1], sys.argv[2]
    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    with open(os.path.join(out, "save", "latest")) as f:
        checkpoint = os.path.join(out, "save", f.read().strip())
    try:
        from safetensors.torch import load_file

        def load(path):
            return load_file(path, device=device)

        loader = "safetensors.torch.load_file"
    except ImportError:
        load = lambda path: load_with_torch_only(path, device)
        loader = "torch only (no safetensors package)"

    model = load(os.path.join(checkpoint, "model.safetensors"))
    optimizer = load(os.path.join(checkpoint, "optimizer.safetensors"))
    rows, ok = [], True
    for name in sorted(model):
        tensor = model[name]
        reference = torch.from_numpy(
            np.load(os.path.join(out, "params", name.replace("/", "_") + ".npy"))).to(device)
        same = (tensor.dtype == torch.float32 and tuple(tensor.shape) == tuple(reference.shape)
                and bool(torch.equal(tensor, reference)))
        moments = (name + ".exp_avg" in optimizer and name + ".exp_avg_sq" in optimizer
                   and optimizer[name + ".exp_avg"].shape == tensor.shape
                   and bool((optimizer[name + ".exp_avg_sq"] >= 0).all()))
        ok = ok and same and moments
        rows.append({"name": name, "shape": list(tensor.shape), "device": str(tensor.device),
                     "equal_to_npy": same, "moments": moments,
                     "norm": float(tensor.double().norm())})
    ok = ok and len(optimizer) == 2 * len(model)
    print(f"torch {torch.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name(0)})" if device != "cpu" else "")
          + f", loader {loader}")
    print(f"checkpoint {checkpoint}: {len(model)} tensors, {len(optimizer)} moments")
    for row in rows:
        print(f"  {row['name']:32} {str(row['shape']):12} {row['device']:7} "
              f"equal to .npy: {row['equal_to_npy']}  moments: {row['moments']}  "
              f"norm {row['norm']:.6g}")
    print("PASS" if ok else "FAIL")
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "load-torch.json"), "w") as f:
        json.dump({"torch": torch.__version__, "device": device, "loader": loader,
                   "checkpoint": checkpoint, "tensors": rows, "pass": ok}, f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
