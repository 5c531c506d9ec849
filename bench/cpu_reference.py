#!/usr/bin/env python3
# bench/cpu_reference.py - inputs and CPU back-end results for the GPU
# benchmarks' "against the CPU back end" checks. Runs on the build machine
# (MLIR is there, not on the GPU machine), with no third-party Python
# module: writes seeded random .npy inputs whose values are exact in bf16
# (so that the CPU and GPU runs see the same numbers whatever the
# argument's type), runs `moe-run --target=cpu` on them and leaves inputs
# and results under OUT/CASE/ (in0.npy ... and result0.npy ...), which the
# GPU machine's bench.py reads.
#
# Usage: cpu_reference.py --moe-run PATH --kernel K.mlir --entry NAME
#          --out DIR/CASE --seed S --input SHAPE:LOW:HIGH ...
# SHAPE is comma-separated ("300,256"); each --input is one argument.

import argparse
import os
import random
import struct
import subprocess
import sys


def bf16_exact(value):
    """value rounded to the nearest bf16 (ties to even), as a float."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{n}, " for n in shape) if len(shape) != 1 else f"{shape[0]},")
    # Magic, version 1.0, header padded so that the data starts at a
    # multiple of 64 bytes, ending in a newline.
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}f", *values))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--moe-run", required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("--entry", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--input", action="append", default=[],
                   help="SHAPE:LOW:HIGH, one per argument")
    args = p.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    inputs = []
    for i, spec in enumerate(args.input):
        shape_text, low, high = spec.split(":")
        shape = [int(n) for n in shape_text.split(",")]
        count = 1
        for n in shape:
            count *= n
        low, high = float(low), float(high)
        values = [bf16_exact(low + (high - low) * rng.random()) for _ in range(count)]
        path = os.path.join(args.out, f"in{i}.npy")
        write_npy(path, shape, values)
        inputs += ["-i", path]
    cmd = [args.moe_run, args.kernel, f"--entry={args.entry}", "--target=cpu",
           *inputs, "-o", args.out]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"cpu_reference: {' '.join(cmd)} failed: {result.stderr.strip()}")
    print(f"wrote {args.out} ({len(args.input)} inputs, CPU results)")


if __name__ == "__main__":
    main()
