#!/usr/bin/env python3
# test/Integration/GPU/prepare.py - the half of the GPU suite that runs where
# MLIR 22 and the build are (scripts/gpu-test.sh prepare; the GPU machine has
# neither). For the cases of cases.py it writes, under OUT:
#
#   objects/LIB.o          each kernel library lowered by moe-lower-to-nvvm
#                          (host code + embedded sm_90 PTX), compiled by
#                          bench/lib.sh's moe_bench_compile, and its remarks;
#   kernels/LIB.mlir       the kernels derived from a repository file;
#   inputs/*.npy           seeded bf16-exact inputs (shared between cases);
#   cases/CASE/cpuI.npy    result I of the CPU back end (moe-run --target=cpu);
#   cases/CASE/refI.npy    its fp64 reference (moe-reference or the NumPy
#                          model, rounded to f32);
#   models/                the kimi-tiny executables of moe-compile
#                          --forward-only --target=cuda;
#   programs/              the runtime's GPU test programs and libfmt;
#   manifest.json          every case, its files, tolerances and why.
#
# It checks the CPU back end against each fp64 reference at the case's bar,
# that each library embeds the generated kernels it is meant to test, and
# that no routing case is near a top-k tie. A case that fails these checks,
# or whose kernel does not compile, stays in the manifest with the reason
# (run.py reports it as failed) and makes the exit status 1; a mistake in
# the table itself stops everything.
#
# Usage: prepare.py [--out DIR] [--only REGEX] [--list]

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cases as table  # noqa: E402  (test/Integration/GPU/cases.py)
import suite  # noqa: E402

MODEL_REFERENCE = os.path.join(ROOT, "test", "tools", "model-reference", "model_reference.py")
# Float inputs larger than this (as bf16) are not carried but regenerated.
STORE_LIMIT = 4 << 20


class PrepareError(Exception):
    pass


def model_layout(model):
    """[(initialiser, shape, size)] of a moe.model's parameters in packing
    order, read by test/tools/model-reference/model_reference.py."""
    sys.path.insert(0, os.path.dirname(MODEL_REFERENCE))
    import model_reference
    m = model_reference.Model(os.path.join(ROOT, model))
    offset = 0
    for p in m.params:
        if p.offset != offset:
            raise PrepareError(f"{model}: parameter {p.name} is not packed in order")
        offset += p.size
    return [(p.init, p.shape or (1,), p.size) for p in m.params]


def run(cmd, what, **kwargs):
    """Runs cmd; raises PrepareError with its output's tail on failure."""
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode:
        tail = (result.stderr.strip() or result.stdout.strip())[-2000:]
        raise PrepareError(f"{what}: `{' '.join(cmd)}` exited {result.returncode}:\n{tail}")
    return result


# ---------------------------------------------------------------------------
# Function signatures of the kernel files
# ---------------------------------------------------------------------------


def matching_paren(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise PrepareError("unbalanced parentheses")


def tensor_types(text):
    """[(dims, element type)] of the tensor types in text; a dim is None
    when dynamic."""
    types = []
    for body in re.findall(r"tensor<([^>]*)>", text):
        parts = body.split("x")
        types.append(([None if d == "?" else int(d) for d in parts[:-1]], parts[-1]))
    return types


def signature(text, entry, where):
    """(argument types, result types) of func.func @entry in text."""
    m = re.search(r"func\.func\s+@" + re.escape(entry) + r"\s*\(", text)
    if not m:
        raise PrepareError(f"{where}: no func.func @{entry}")
    close = matching_paren(text, m.end() - 1)
    args = tensor_types(text[m.end():close])
    rest = text[close + 1:]
    body = rest.index("{")
    results = tensor_types(rest[:body]) if "->" in rest[:body] else []
    return args, results


def kernel_text(lib, converted=None):
    """The text that is compiled for lib; None for a library made by moe-opt
    before prepare has converted it (converted: {library: its file})."""
    if lib.moe_opt:
        if not converted or lib.name not in converted:
            return None
        path = converted[lib.name]
    else:
        path = os.path.join(ROOT, lib.kernel)
    with open(path) as f:
        text = f.read()
    return lib.derive(text) if lib.derive else text


def validate(cases, converted=None):
    """Checks the table: unique names, libraries and entries that exist, one
    input per argument with the static sizes and kind of element type, a
    check per result (for libraries made by moe-opt only once converted).
    Returns {case name: (args, results)} for the kernel cases checked."""
    names, signatures = set(), {}
    for case in cases:
        if case.name in names:
            raise PrepareError(f"case {case.name} is listed twice")
        names.add(case.name)
        if case.kind != "kernel":
            continue
        lib = table.LIBRARY.get(case.library)
        if lib is None:
            raise PrepareError(f"{case.name}: no library {case.library}")
        where = f"{case.name}: {lib.kernel}"
        if not os.path.exists(os.path.join(ROOT, lib.kernel)):
            raise PrepareError(f"{where} does not exist")
        text = kernel_text(lib, converted)
        if text is None:
            continue
        args, results = signature(text, case.entry, where)
        if len(args) != len(case.inputs):
            raise PrepareError(f"{where}: @{case.entry} takes {len(args)} arguments, "
                               f"the case gives {len(case.inputs)}")
        for i, ((dims, elem), inp) in enumerate(zip(args, case.inputs)):
            if len(dims) != len(inp.shape) or any(
                    d is not None and d != n for d, n in zip(dims, inp.shape)):
                raise PrepareError(f"{where}: argument {i} ({inp.name}) is "
                                   f"{'x'.join('?' if d is None else str(d) for d in dims)}, "
                                   f"the case gives {list(inp.shape)}")
            if inp.is_integer() != (elem in suite.INT_TYPES):
                raise PrepareError(f"{where}: argument {i} ({inp.name}) is {elem}")
        checked = sorted(c.result for c in case.checks)
        if checked != list(range(len(results))):
            raise PrepareError(f"{where}: @{case.entry} has {len(results)} results, "
                               f"the case checks {checked}")
        signatures[case.name] = (args, results)
    return signatures


# ---------------------------------------------------------------------------
# Preparation
# ---------------------------------------------------------------------------


class Prepare:
    def __init__(self, out, build):
        self.out, self.build = out, build
        self.bin = os.path.join(build, "bin")
        self.scratch_root = tempfile.mkdtemp(prefix="moe-gpu-test-")
        self.inputs = {}      # input key -> relative path
        self.kernels = {}     # library -> the .mlir compiled (and run on the CPU)
        self.scratch_dir = None

    # The reference context of cases.py.
    def scratch(self, name):
        return os.path.join(self.scratch_dir, name)

    def moe_reference(self, sub, paths, options, out=None):
        out = out or self.scratch(f"ref_{sub}.npy")
        run([os.path.join(self.bin, "moe-reference"), sub, *paths, *options, "-o", out],
            f"moe-reference {sub}")
        return out

    def run_python(self, args, what):
        run([sys.executable, *args], what, cwd=ROOT)

    def path(self, rel):
        return os.path.join(self.out, rel)

    def compile_library(self, lib):
        """objects/LIB.o through moe_bench_compile; the gpu modules it embeds."""
        kernel = os.path.join(ROOT, lib.kernel)
        if lib.derive or lib.moe_opt:
            os.makedirs(self.path("kernels"), exist_ok=True)
            derived = self.path(f"kernels/{lib.name}.mlir")
            if lib.moe_opt:
                run([os.path.join(self.bin, "moe-opt"), kernel, *lib.moe_opt, "-o", derived],
                    f"moe-opt {' '.join(lib.moe_opt)} {lib.kernel}")
            else:
                with open(derived, "w") as f:
                    f.write(kernel_text(lib))
            kernel = derived
        work = os.path.join(self.scratch_root, "objects")
        os.makedirs(work, exist_ok=True)
        obj = os.path.join(work, f"{lib.name}.o")
        env = dict(os.environ, MOE_BUILD_DIR=self.build)
        run(["bash", "-c", 'set -euo pipefail; source "$1/bench/lib.sh"; '
             'moe_bench_compile "$2" "$3" "$4"',
             "_", ROOT, kernel, obj, lib.options], f"compiling {lib.name}", env=env)
        os.makedirs(self.path("objects"), exist_ok=True)
        shutil.copy(obj, self.path(f"objects/{lib.name}.o"))
        shutil.copy(os.path.join(work, f"{lib.name}.remarks.txt"),
                    self.path(f"objects/{lib.name}.remarks.txt"))
        symbols = run(["nm", obj], f"nm {lib.name}.o").stdout
        modules = sorted(set(re.findall(r"\b(\w+)_binary$", symbols, re.M)))
        missing = [m for m in lib.modules if m not in modules]
        if missing:
            raise PrepareError(f"{lib.name}: {lib.kernel} did not give the gpu modules "
                               f"{missing} (it has {modules}): see "
                               f"objects/{lib.name}.remarks.txt")
        with open(self.path(f"objects/{lib.name}.remarks.txt")) as f:
            remarks = sorted(set(re.findall(r"remark: (.*)", f.read())))
        self.kernels[lib.name] = kernel
        return {"object": f"objects/{lib.name}.o", "kernel": lib.kernel,
                "derived": f"kernels/{lib.name}.mlir" if lib.derive or lib.moe_opt else None,
                "options": lib.options, "modules": modules, "what": lib.what,
                "remarks": remarks}

    def make_input(self, inp):
        """(the file the CPU tools read, the argument's manifest entry) of an
        input, made once per distinct input. Float inputs are carried as bf16
        bit patterns (uint16: half the size, exact), or, above STORE_LIMIT
        bytes, regenerated by run.py from their seed and segments and checked
        against their digest; integers as int64."""
        key = inp.key()
        if key in self.inputs:
            return self.inputs[key]
        gen, stem = inp.gen, f"{inp.seed():08x}_{inp.name}"
        os.makedirs(self.path("inputs"), exist_ok=True)
        if isinstance(gen, (table.Uniform, table.ModelParams)):
            layout = model_layout(gen.model) if isinstance(gen, table.ModelParams) else None
            segments = gen.segments(inp.shape, layout)
            values = suite.uniform_segments(inp.seed(), segments).reshape(inp.shape)
            tool_file = os.path.join(self.scratch_root, "inputs", f"{stem}.npy")
            os.makedirs(os.path.dirname(tool_file), exist_ok=True)
            np.save(tool_file, values)
            if values.size * 2 <= STORE_LIMIT:
                rel = f"inputs/{stem}.npy"
                np.save(self.path(rel), suite.f32_to_bf16(values).reshape(inp.shape))
                entry = {"file": rel, "stored": "bf16"}
            else:
                entry = {"regenerate": {"seed": inp.seed(), "segments": segments},
                         "digest": suite.digest(values)}
        else:
            if isinstance(gen, table.Offsets):
                values = np.concatenate([[0], np.cumsum(gen.counts)])
            elif isinstance(gen, table.TopIndices):
                rng = np.random.default_rng(inp.seed())
                rows, k = inp.shape
                values = np.stack([rng.permutation(gen.experts)[:k] for _ in range(rows)])
            elif isinstance(gen, table.Permutation):
                rng = np.random.default_rng(inp.seed())
                values = rng.permutation(inp.shape[0])
            elif isinstance(gen, table.Integers):
                rng = np.random.default_rng(inp.seed())
                values = rng.integers(gen.low, gen.high, inp.shape)
                if gen.ignore_every:
                    values.reshape(-1)[::gen.ignore_every] = gen.ignore
            else:
                raise PrepareError(f"unknown input kind {gen!r}")
            values = values.astype(np.int64).reshape(inp.shape)
            rel = f"inputs/{stem}.npy"
            np.save(self.path(rel), values)
            tool_file = self.path(rel)
            entry = {"file": rel, "stored": "int64"}
        self.inputs[key] = (tool_file, entry)
        return self.inputs[key]

    def routing_margin(self, case, files):
        """The smallest gap between a token's k-th and (k+1)-th largest
        biased score s + bias (fp64), over the case's tokens."""
        k = case.margin[0]
        x, w, bias = (np.load(f).astype(np.float64) for f in files[:3])
        if x.shape[0] == 0 or w.shape[0] <= k:
            return float("inf")
        z = -np.sort(-(1 / (1 + np.exp(-(x @ w.T))) + bias), axis=1)
        return float(np.min(z[:, k - 1] - z[:, k]))

    def kernel_case(self, case, sig):
        args, results = sig
        self.scratch_dir = tempfile.mkdtemp(dir=self.scratch_root)
        made = [self.make_input(inp) for inp in case.inputs]
        files = [tool_file for tool_file, _ in made]
        cdir = f"cases/{suite.case_dir(case.name)}"
        os.makedirs(self.path(cdir), exist_ok=True)
        cmd = [os.path.join(self.bin, "moe-run"), self.kernels[case.library],
               f"--entry={case.entry}",
               "--target=cpu", "--opt-level=0"]
        for f in files:
            cmd += ["-i", f]
        run(cmd + ["-o", self.path(cdir)], f"{case.name}: the CPU back end")
        for i in range(len(results)):
            os.replace(self.path(f"{cdir}/result{i}.npy"), self.path(f"{cdir}/cpu{i}.npy"))
        refs = case.reference(self, files)
        checks, cpu_errors = [], []
        for c in case.checks:
            cpu_file = f"{cdir}/cpu{c.result}.npy"
            checks.append({"result": c.result, "name": c.name, "against": "cpu",
                           "file": cpu_file, "tol": c.tol.to_json()})
            if c.fp64:
                if c.result not in refs:
                    raise PrepareError(f"{case.name}: no fp64 reference for {c.name}")
                ref_file = f"{cdir}/ref{c.result}.npy"
                ref = np.load(refs[c.result])
                np.save(self.path(ref_file), ref.astype(np.float32) if ref.dtype.kind == "f"
                        else ref.astype(np.int64))
                tol = c.fp64_tol.to_json()
                error, ok, detail = suite.compare(np.load(self.path(cpu_file)),
                                                  np.load(self.path(ref_file)), tol)
                if not ok:
                    raise PrepareError(f"{case.name}: the CPU back end's {c.name} against "
                                       f"the fp64 reference: error {error:.3g} over the "
                                       f"bar {tol['bar']:g} {detail}")
                cpu_errors.append(f"{c.name} {error:.2e}" if tol["kind"] != "exact"
                                  else f"{c.name} exact")
                checks.append({"result": c.result, "name": c.name, "against": "fp64",
                               "file": ref_file, "tol": tol, "cpu_error": error})
        entry = {"name": case.name, "kind": "kernel", "library": case.library,
                 "entry": case.entry, "timeout": case.timeout, "note": case.note,
                 "args": [dict(entry, type=elem, shape=list(inp.shape), input=inp.key())
                          for (_, entry), inp, (_, elem) in zip(made, case.inputs, args)],
                 "results": [{"type": elem, "rank": len(dims)} for dims, elem in results],
                 "checks": checks}
        if case.margin is not None:
            margin = self.routing_margin(case, files)
            if margin < 1e-5:
                raise PrepareError(f"{case.name}: a token's top-k margin is {margin:.2e}; "
                                   "routing could differ between back ends: change the "
                                   "case's inputs")
            entry["routing_margin"] = margin if margin != float("inf") else None
        shutil.rmtree(self.scratch_dir)
        return entry, "CPU vs fp64: " + ", ".join(cpu_errors)

    def models(self, cases, failed):
        """The cuda executables and, per configuration, the CPU executable's
        loss and the fp64 NumPy model's on the same weights and batch."""
        model = os.path.join(ROOT, table.MODEL)
        compile_ = os.path.join(self.bin, "moe-compile")
        os.makedirs(self.path("models"), exist_ok=True)
        errors = {}
        for exe in sorted({c.executable for c in cases}):
            print(f"compiling {table.MODEL} -> models/{exe}", flush=True)
            try:
                run([compile_, model, "--forward-only", "--target=cuda",
                     *table.MODEL_EXECUTABLES[exe], "-o", self.path(f"models/{exe}")],
                    f"moe-compile {exe}")
                deps = run(["ldd", self.path(f"models/{exe}")], "ldd").stdout
                if re.search(r"mlir|LLVM|moert", deps):
                    raise PrepareError(f"models/{exe} depends on MLIR/LLVM/moert "
                                       f"libraries:\n{deps}")
            except PrepareError as e:
                errors[exe] = str(e)
        cpu = os.path.join(self.scratch_root, "model-cpu")
        print(f"compiling {table.MODEL} for the CPU", flush=True)
        try:
            run([compile_, model, "--forward-only", "-o", cpu], "moe-compile (cpu)")
            layout = run([sys.executable, MODEL_REFERENCE, "layout", model],
                         "model layout").stdout
            params = re.findall(r"^param (\d+) (\d+) \[[^\]]*\] (\S+)", layout, re.M)
        except PrepareError as e:
            errors.update({c.executable: f"the CPU half: {e}" for c in cases})
        losses, entries = {}, []
        for case in cases:
            if case.executable in errors:
                entries.append(failed(case, errors[case.executable]))
                continue
            config = (case.batch, case.seq_len, case.seed)
            try:
                if config not in losses:
                    losses[config] = self.model_losses(cpu, model, params, *config)
            except (PrepareError, OSError, ValueError) as e:
                entries.append(failed(case, e))
                continue
            cpu_loss, ref_loss, margin = losses[config]
            entries.append({"name": case.name, "kind": "model", "timeout": case.timeout,
                            "executable": f"models/{case.executable}",
                            "args": [f"--batch={case.batch}", f"--seq-len={case.seq_len}",
                                     f"--seed={case.seed}", *case.extra_args],
                            "graph": case.graph,
                            "cpu_loss": cpu_loss, "fp64_loss": ref_loss,
                            "routing_margin": margin, "tol": table.LOSS.to_json()})
            print(f"prepared {case.name}: cpu loss {cpu_loss:.7f}, fp64 {ref_loss:.7f}",
                  flush=True)
        return entries

    def trains(self, cases, failed):
        """The cuda training executable and, per case, the CPU training
        program's loss and gradient norm of each step (--metrics)."""
        model = os.path.join(ROOT, table.MODEL)
        compile_ = os.path.join(self.bin, "moe-compile")
        os.makedirs(self.path("models"), exist_ok=True)
        cpu = os.path.join(self.scratch_root, "train-cpu")
        try:
            print(f"compiling {table.MODEL} -> models/train-cuda", flush=True)
            run([compile_, model, "--target=cuda", "-o", self.path("models/train-cuda")],
                "moe-compile (cuda training program)")
            print(f"compiling {table.MODEL}'s training program for the CPU", flush=True)
            run([compile_, model, "-o", cpu], "moe-compile (cpu training program)")
        except PrepareError as e:
            return [failed(case, e) for case in cases]
        entries = []
        for case in cases:
            args = [f"--steps={case.steps}", f"--batch={case.batch}",
                    f"--seq-len={case.seq_len}", f"--seed={case.seed}"]
            metrics = os.path.join(self.scratch_root, "train-metrics.jsonl")
            try:
                run([cpu, *args, f"--metrics={metrics}"], "the CPU training program")
                with open(metrics) as f:
                    steps = [json.loads(line) for line in f if line.strip()]
            except (PrepareError, OSError, ValueError) as e:
                entries.append(failed(case, e))
                continue
            if len(steps) != case.steps:
                entries.append(failed(case, f"the CPU run wrote {len(steps)} steps"))
                continue
            entries.append({"name": case.name, "kind": "train", "timeout": case.timeout,
                            "executable": "models/train-cuda", "args": args,
                            "graph": case.graph,
                            "cpu_loss": [s["loss"] for s in steps],
                            "cpu_grad_norm": [s["grad_norm"] for s in steps],
                            "tol": table.TRAIN_LOSS.to_json(),
                            "step4_tol": table.TRAIN_LOSS_STEP4.to_json(),
                            "grad_norm_tol": table.TRAIN_GRAD_NORM.to_json(),
                            "step4_grad_norm_tol": table.TRAIN_GRAD_NORM_STEP4.to_json()})
            print(f"prepared {case.name}: cpu losses "
                  + ", ".join(f"{s['loss']:.6f}" for s in steps), flush=True)
        return entries

    def model_losses(self, cpu, model, params, batch, seq_len, seed):
        work = tempfile.mkdtemp(dir=self.scratch_root)
        loss_file = os.path.join(work, "loss.npy")
        run([cpu, f"--batch={batch}", f"--seq-len={seq_len}", f"--seed={seed}",
             f"--loss-npy={loss_file}", f"--dump-params={work}/params",
             f"--dump-batch={work}/batch"], "the CPU executable")
        cpu_loss = float(np.load(loss_file))
        packed = np.concatenate([np.load(f"{work}/params/{name}.npy").reshape(-1)
                                 for _, _, name in params]).astype(np.float32)
        offsets = [int(o) for o, _, _ in params]
        if offsets != sorted(offsets) or packed.size != int(params[-1][0]) + int(params[-1][1]):
            raise PrepareError("the dumped parameters do not fill the model's layout")
        np.save(f"{work}/packed.npy", packed)
        out = run([sys.executable, MODEL_REFERENCE, "loss", model, f"{work}/packed.npy",
                   f"{work}/batch/tokens.npy", f"{work}/batch/labels.npy"],
                  "the fp64 model reference").stdout
        found = re.search(r"^loss (\S+)", out, re.M)
        if not found:
            raise PrepareError(f"the fp64 model reference printed no loss:\n{out}")
        ref_loss = float(found.group(1))
        margins = [float(m) for m in re.findall(r"smallest top-k margin (\S+)", out)]
        error = abs(cpu_loss - ref_loss) / abs(ref_loss)
        if error > table.LOSS.rtol:
            raise PrepareError(f"model B={batch} T={seq_len} seed={seed}: the CPU "
                               f"executable's loss {cpu_loss} is {error:.2e} from the "
                               f"fp64 model's {ref_loss}")
        shutil.rmtree(work)
        return cpu_loss, ref_loss, min(margins) if margins else None

    def program(self, case):
        """A runtime test program, and the libraries it needs that a GPU
        machine may lack (libfmt)."""
        os.makedirs(self.path("programs/lib"), exist_ok=True)
        src = os.path.join(self.bin, case.program)
        if not os.path.exists(src):
            raise PrepareError(f"{src} is missing (the runtime is built where the CUDA "
                               "toolkit is found)")
        shutil.copy(src, self.path(f"programs/{case.program}"))
        deps = run(["ldd", src], "ldd").stdout
        for soname, path in re.findall(r"^\s*(libfmt\S*) => (\S+)", deps, re.M):
            shutil.copy(path, self.path(f"programs/lib/{soname}"))
        env = {}
        for variable, rel in case.files.items():
            path = os.path.join(os.path.dirname(self.bin), rel)
            if not os.path.exists(path):
                raise PrepareError(f"{path} is missing (built with {case.program})")
            shutil.copy(path, self.path(f"programs/{os.path.basename(rel)}"))
            env[variable] = f"programs/{os.path.basename(rel)}"
        return {"name": case.name, "kind": "program", "timeout": case.timeout,
                "program": f"programs/{case.program}", "expect": case.expect,
                "env": env}


def describe(case):
    """One line of --list: the case, what it runs and its bars."""
    if case.kind == "kernel":
        bars = []
        for c in case.checks:
            tol = c.tol.to_json()
            bars.append(f"{c.name} exact" if c.tol.exact
                        else f"{c.name} {tol['kind']} {tol['bar']:g}")
        shape = "x".join(map(str, case.inputs[0].shape))
        return f"{case.name}  [{case.library}: @{case.entry}, {shape}; {', '.join(bars)}]"
    if case.kind == "model":
        graph = ", CUDA graph replays bit-identical" if case.graph else ""
        return f"{case.name}  [loss rtol {table.LOSS.rtol:g}{graph}]"
    if case.kind == "train":
        graph = ", CUDA graph replays bit-identical to uncaptured steps" if case.graph else ""
        late = (f" ({table.TRAIN_LOSS_STEP4.rtol:g} from step 4)"
                if case.steps > 3 else "")
        late_norm = (f" ({table.TRAIN_GRAD_NORM_STEP4.rtol:g} from step 4)"
                     if case.steps > 3 else "")
        return (f"{case.name}  [{case.steps} steps: loss rtol {table.TRAIN_LOSS.rtol:g}{late}, "
                f"grad norm rtol {table.TRAIN_GRAD_NORM.rtol:g}{late_norm}{graph}]")
    return f"{case.name}  [{case.program}]"


def main():
    p = argparse.ArgumentParser(description="Prepare the GPU suite where MLIR is.")
    p.add_argument("--out", default=os.path.join(ROOT, "build-gpu-test"))
    p.add_argument("--build", default=os.environ.get("MOE_BUILD_DIR",
                                                     os.path.join(ROOT, "build")))
    p.add_argument("--only", help="prepare the cases whose name matches this regex")
    p.add_argument("--list", action="store_true",
                   help="check the case table and list the cases; builds nothing")
    args = p.parse_args()
    cases = table.all_cases()
    try:
        validate(cases)
        if args.only:
            cases = [c for c in cases if re.search(args.only, c.name)]
        if args.list:
            for case in cases:
                print(describe(case))
            kinds = {k: sum(c.kind == k for c in cases)
                     for k in ("kernel", "model", "train", "program")}
            print(f"{len(cases)} cases: {kinds['kernel']} kernel, {kinds['model']} model, "
                  f"{kinds['train']} train, {kinds['program']} program")
            return 0
        return prepare(args, cases)
    except PrepareError as e:
        print(f"prepare: error: {e}", file=sys.stderr)
        return 1


def prepare(args, cases):
    build = os.path.abspath(args.build)
    for tool in ("moe-opt", "moe-run", "moe-reference", "moe-compile"):
        if not os.access(os.path.join(build, "bin", tool), os.X_OK):
            raise PrepareError(f"{build}/bin/{tool} is missing: build the project first")
    if not cases:
        raise PrepareError("no case selected")
    signatures = validate(cases)
    out = os.path.abspath(args.out)
    if os.path.isdir(out) and os.listdir(out) and \
            not os.path.exists(os.path.join(out, suite.MANIFEST)):
        raise PrepareError(f"{out} holds files but no {suite.MANIFEST}: not a suite "
                           "folder, so it is left alone")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    prep = Prepare(out, build)
    start = time.time()
    entries, failures = [], []

    def failed(case, error):
        """The manifest entry of a case that could not be prepared: run.py
        reports it as failed."""
        failures.append(case.name)
        print(f"NOT PREPARED {case.name}: {error}", flush=True)
        return {"name": case.name, "kind": case.kind, "timeout": case.timeout,
                "error": f"not prepared: {error}"}

    try:
        libraries, broken = {}, {}
        for name in [lib.name for lib in table.LIBRARIES
                     if any(c.kind == "kernel" and c.library == lib.name for c in cases)]:
            print(f"compiling library {name}", flush=True)
            try:
                libraries[name] = prep.compile_library(table.LIBRARY[name])
            except PrepareError as e:
                broken[name] = str(e)
        signatures = validate(cases, prep.kernels)
        for case in cases:
            if case.kind == "program":
                try:
                    entries.append(prep.program(case))
                except PrepareError as e:
                    entries.append(failed(case, e))
        for case in cases:
            if case.kind != "kernel":
                continue
            if case.library in broken:
                entries.append(failed(case, f"library {case.library}: {broken[case.library]}"))
                continue
            try:
                entry, info = prep.kernel_case(case, signatures[case.name])
            except (PrepareError, OSError, ValueError) as e:
                entries.append(failed(case, e))
                continue
            entries.append(entry)
            print(f"prepared {case.name}: {info}", flush=True)
        models = [c for c in cases if c.kind == "model"]
        if models:
            entries += prep.models(models, failed)
        trains = [c for c in cases if c.kind == "train"]
        if trains:
            entries += prep.trains(trains, failed)
    finally:
        shutil.rmtree(prep.scratch_root, ignore_errors=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    manifest = {"version": suite.VERSION, "commit": commit,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="seconds"),
                "libraries": libraries, "cases": entries}
    with open(os.path.join(out, suite.MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    print(f"prepared {len(entries) - len(failures)} of {len(entries)} cases in {out} "
          f"({size / 2**20:.1f} MiB, {time.time() - start:.0f} s)")
    if failures:
        print(f"{len(failures)} cases could not be prepared (run.py reports them as "
              f"failed): {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
