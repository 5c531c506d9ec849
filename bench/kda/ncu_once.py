#!/usr/bin/env python3
# bench/kda/ncu_once.py - one call of our @kda_forward at B=1, H=16, K=V=128,
# for a profiler to attach to, e.g. on the GPU machine after run.sh built the
# libraries:
#   ncu --launch-count 2 --section SpeedOfLight --section Occupancy \
#       --section WarpStateStats python3 bench/kda/ncu_once.py --T 16384
# (Not named profile.py: that would shadow the standard library module
# that torch imports when bench.py runs from this folder.)
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import H, K, V, OurKernel  # noqa: E402

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
p = argparse.ArgumentParser(description="one call of our KDA kernels")
p.add_argument("--T", type=int, default=16384)
p.add_argument("--lib", default=os.path.join(out, "libkda_forward.so"))
p.add_argument("--adapter", default=os.path.join(out, "libmoert_mlir.so"))
args = p.parse_args()
rng = np.random.default_rng(0)
f32 = np.float32
T = args.T
inputs = (rng.standard_normal((1, T, H, K), dtype=f32),
          rng.standard_normal((1, T, H, K), dtype=f32),
          rng.standard_normal((1, T, H, V), dtype=f32),
          rng.uniform(-3, 3, (1, T, H, K)).astype(f32),
          rng.uniform(0.05, 0.95, (1, T, H)).astype(f32),
          rng.uniform(0, 1, (H,)).astype(f32),
          rng.standard_normal((H, K), dtype=f32))
OurKernel(args.lib, args.adapter)([torch.from_numpy(x).cuda() for x in inputs])
torch.cuda.synchronize()
