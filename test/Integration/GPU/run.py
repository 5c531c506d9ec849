#!/usr/bin/env python3
# test/Integration/GPU/run.py - the half of the GPU suite that runs on the GPU
# machine (scripts/gpu-test.sh run), from the folder that prepare.py wrote
# (no MLIR needed: python3 with NumPy and PyTorch, which bench/common.py
# imports; g++, the CUDA toolkit's headers and driver stub; the driver).
#
# It builds moert's MLIR adapter and links each kernel object into a shared
# library (bench/lib.sh), then runs every case of the manifest:
#   * kernel cases in worker processes, one per library (it loads the
#     library once, which JIT-compiles its PTX), through bench/common.py's
#     ctypes loader; each result is compared with the CPU back end's and the
#     fp64 reference's at the case's bar. A worker that exceeds a case's time
#     limit is killed; one that crashes or meets a CUDA error (the adapter
#     then refuses every later call) ends; either way that case fails and a
#     new worker takes the remaining cases of the library;
#   * model cases: the kimi-tiny executables, whose loss is compared with the
#     CPU executable's and the fp64 model's;
#   * program cases: the runtime's GPU test programs.
# It prints one line per case and last `N passed, M failed`; the exit status
# is 1 if any case failed. A missing file, library or tool fails the cases
# that need it. With OUT set, OUT/gpu-test.json holds the results,
# OUT/failed/ the outputs and logs of the failed cases, OUT/logs/ the
# workers' stderr.
#
# Usage: run.py [--suite DIR] [--only REGEX] [--dry-run] [--deadline S]
#        run.py worker ...   (internal: one library's kernel cases)

import argparse
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import suite  # noqa: E402  (test/Integration/GPU/suite.py)

LOAD_TIMEOUT = 300  # loading a library JIT-compiles all its PTX


def tail(text, lines=15):
    return "\n".join(text.strip().splitlines()[-lines:])


# ---------------------------------------------------------------------------
# The worker: one library's kernel cases in this process
# ---------------------------------------------------------------------------

def emit(event):
    print(json.dumps(event), flush=True)


def worker(args):
    import numpy as np
    with open(os.path.join(args.suite, suite.MANIFEST)) as f:
        by_name = {c["name"]: c for c in json.load(f)["cases"]}
    cases = [by_name[n] for n in args.cases]
    emit({"event": "loading"})
    start = time.time()
    kernels = {}
    if not args.dry_run:
        try:
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            import common  # bench/common.py
            load = typed_kernel_class(common)
            kernels[cases[0]["entry"]] = load(args.lib, args.adapter, cases[0]["entry"])
            kernels[cases[0]["entry"]].check("loading the library")
        except Exception as e:  # reported as the reason every case fails
            emit({"event": "load_failed", "error": f"{type(e).__name__}: {e}"})
            return 2
    emit({"event": "loaded", "seconds": time.time() - start})
    for case in cases:
        emit({"event": "start", "case": case["name"]})
        start = time.time()
        result = {"event": "result", "case": case["name"]}
        fatal = False
        try:
            arrays = [load_arg(args.suite, a) for a in case["args"]]
            if args.dry_run:
                outputs = [np.load(os.path.join(args.suite, c["file"]))
                           for c in cpu_checks(case)]
            else:
                if case["entry"] not in kernels:
                    kernels[case["entry"]] = load(args.lib, args.adapter, case["entry"])
                fatal = True  # a failure from here on leaves the adapter unusable
                outputs = kernels[case["entry"]].run(arrays, case["results"])
                fatal = False
            result.update(check_outputs(args, case, outputs))
        except Exception as e:
            result.update(status="FAIL", error=f"{type(e).__name__}: {e}")
        result["seconds"] = time.time() - start
        emit(result)
        if fatal:
            return 3
    return 0


def cpu_checks(case):
    """The CPU check of each result, in result order."""
    return sorted((c for c in case["checks"] if c["against"] == "cpu"),
                  key=lambda c: c["result"])


def load_arg(suite_dir, arg):
    """An argument's array, in the function's element type: read from the
    suite's inputs/ (floats as bf16 bit patterns, integers as int64) or
    regenerated from its seed and checked against prepare's digest."""
    import numpy as np
    if "regenerate" in arg:
        spec = arg["regenerate"]
        values = suite.uniform_segments(spec["seed"], spec["segments"]).reshape(arg["shape"])
        if suite.digest(values) != arg["digest"]:
            raise ValueError(f"input {arg['input']} regenerated here differs from the one "
                             "prepare.py made (digest mismatch)")
        bits = suite.f32_to_bf16(values).reshape(values.shape)
    else:
        stored = np.load(os.path.join(suite_dir, arg["file"]))
        if list(stored.shape) != arg["shape"]:
            raise ValueError(f"{arg['file']} has shape {list(stored.shape)}, "
                             f"the manifest says {arg['shape']}")
        if arg["stored"] == "int64":
            return stored.astype({"i32": np.int32, "i64": np.int64, "index": np.int64}[arg["type"]])
        bits = stored.astype(np.uint16)
    if arg["type"] == "bf16":
        return bits
    values = suite.bf16_to_f32(bits).reshape(bits.shape)
    return values.astype({"f32": np.float32, "f16": np.float16}[arg["type"]])


def typed_kernel_class(common):
    """bench/common.py's CompiledKernel, with arguments and results of any
    element type (the suite's bf16, i64, ... besides f32)."""
    import numpy as np

    result_types = {"f32": (ctypes.c_float, np.float32), "bf16": (ctypes.c_uint16, np.uint16),
                    "f16": (ctypes.c_uint16, np.uint16), "i64": (ctypes.c_int64, np.int64),
                    "index": (ctypes.c_int64, np.int64), "i32": (ctypes.c_int32, np.int32)}

    class TypedKernel(common.CompiledKernel):
        def run(self, arrays, results):
            # One result: its descriptor; several: a structure of them.
            memrefs = [common.memref_type(r["rank"]) for r in results]
            if len(memrefs) == 1:
                out = memrefs[0]()
            else:
                class Results(ctypes.Structure):
                    _fields_ = [(f"r{i}", m) for i, m in enumerate(memrefs)]
                out = Results()

            def descriptors():
                if len(memrefs) == 1:
                    return [out]
                return [getattr(out, f"r{i}") for i in range(len(memrefs))]
            ptrs = []
            try:
                args = []
                for a in arrays:
                    a = np.ascontiguousarray(a)
                    ptr = self.adapter.moertMlirAllocShared(max(a.nbytes, 1))
                    self.check("moertMlirAllocShared")
                    if not ptr:
                        raise RuntimeError("moertMlirAllocShared returned null")
                    ctypes.memmove(ptr, a.ctypes.data, a.nbytes)
                    ptrs.append(ptr)
                    args.append(common.descriptor(a, ptr))
                self.fn(ctypes.byref(out), *[ctypes.byref(d) for d in args])
                self.check("call")
                values = []
                for d, r in zip(descriptors(), results):
                    ctype, dtype = result_types[r["type"]]
                    v = common.read_result(d, ctype, dtype)
                    if r["type"] == "bf16":
                        v = suite.bf16_to_f32(v).reshape(v.shape)
                    elif r["type"] == "f16":
                        v = v.view(np.float16).astype(np.float32)
                    values.append(v)
                self.free_results(*descriptors())
                return values
            finally:
                for ptr in ptrs:
                    self.adapter.moertMlirFree(ptr)

    return TypedKernel


def check_outputs(args, case, outputs):
    import numpy as np
    checks, ok = [], True
    for c in case["checks"]:
        ref = np.load(os.path.join(args.suite, c["file"]))
        error, passed, detail = suite.compare(outputs[c["result"]], ref, c["tol"])
        checks.append({"name": c["name"], "against": c["against"], "kind": c["tol"]["kind"],
                       "bar": c["tol"]["bar"], "error": error, "ok": passed, "detail": detail})
        ok = ok and passed
    if not ok and args.save:
        where = os.path.join(args.save, suite.case_dir(case["name"]))
        os.makedirs(where, exist_ok=True)
        for i, out in enumerate(outputs):
            np.save(os.path.join(where, f"gpu{i}.npy"), out)
    return {"status": "PASS" if ok else "FAIL", "checks": checks}


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------

class Runner:
    def __init__(self, args, manifest):
        self.args, self.manifest = args, manifest
        self.suite = args.suite
        self.results = []
        self.start = time.time()
        self.save = os.path.join(args.out, "failed") if args.out else \
            os.path.join(self.suite, "run", "failed")
        shutil.rmtree(self.save, ignore_errors=True)
        self.lib_dir = os.path.join(self.suite, "run", "lib")
        self.log_dir = os.path.join(self.suite, "run", "logs")
        shutil.rmtree(self.log_dir, ignore_errors=True)
        os.makedirs(self.log_dir)
        self.load_seconds = {}

    def left(self):
        return self.args.deadline - (time.time() - self.start)

    def report(self, case, status, text="", checks=None, seconds=0.0, error=None, **extra):
        row = {"name": case["name"], "kind": case["kind"], "status": status,
               "seconds": round(seconds, 3)}
        if checks is not None:
            row["checks"] = checks
        if error:
            row["error"] = error
        row.update(extra)
        self.results.append(row)
        dry = " (dry run)" if self.args.dry_run else ""
        print(f"{status}  {case['name']}  {text}  [{seconds:.2f} s]{dry}", flush=True)
        if status != "PASS" and error:
            for line in error.strip().splitlines():
                print(f"      {line}", flush=True)

    def out_of_time(self, case):
        if self.left() > 0:
            return False
        self.report(case, "FAIL", "not run",
                    error=f"the suite's time limit ({self.args.deadline:g} s) was reached")
        return True

    # Linking -------------------------------------------------------------

    def link(self, libraries):
        """{library: (shared library, None) or (None, why it is missing)}."""
        os.makedirs(self.lib_dir, exist_ok=True)
        env = dict(os.environ)
        linked = {}
        t0 = time.time()
        adapter = os.path.join(self.lib_dir, "libmoert_mlir.so")
        build = subprocess.run(
            ["bash", "-c", 'source "$1/bench/lib.sh" && moe_bench_build_adapter "$2"', "_",
             ROOT, self.lib_dir], capture_output=True, text=True, env=env)
        if build.returncode:
            why = f"building libmoert_mlir.so failed:\n{tail(build.stderr)}"
            return {name: (None, why) for name in libraries}, None
        for name in libraries:
            info = self.manifest["libraries"].get(name)
            if info is None:
                linked[name] = (None, f"library {name} is not in the manifest")
                continue
            obj = os.path.join(self.suite, info["object"])
            so = os.path.join(self.lib_dir, f"lib{name}.so")
            if not os.path.exists(obj):
                linked[name] = (None, f"{obj} is missing: run scripts/gpu-test.sh prepare")
                continue
            r = subprocess.run(
                ["bash", "-c", 'source "$1/bench/lib.sh" && moe_bench_link_object "$2" "$3"',
                 "_", ROOT, obj, so], capture_output=True, text=True, env=env)
            linked[name] = (so, None) if r.returncode == 0 else \
                (None, f"linking {info['object']} failed:\n{tail(r.stderr)}")
        print(f"linked {sum(1 for so, _ in linked.values() if so)} of {len(linked)} "
              f"kernel libraries against {adapter} in {time.time() - t0:.1f} s", flush=True)
        return linked, adapter

    # Kernel cases --------------------------------------------------------

    def kernel_line(self, checks):
        """'o: cpu 3.1e-03, fp64 3.2e-03 (rtol 2e-02); load: exact' for the
        checks of one case."""
        parts, names = [], []
        for c in checks:
            if c["name"] not in names:
                names.append(c["name"])
        for name in names:
            mine = [c for c in checks if c["name"] == name]
            if all(c["kind"] == "exact" for c in mine):
                bad = [f"{c['against']} {c['error']} differ" for c in mine if not c["ok"]]
                parts.append(f"{name}: " + (", ".join(bad) if bad else "exact"))
                continue
            errors = ", ".join(f"{c['against']} {c['error']:.1e}" for c in mine)
            if len({(c["kind"], c["bar"]) for c in mine}) == 1:
                parts.append(f"{name}: {errors} ({mine[0]['kind']} {mine[0]['bar']:.0e})")
            else:  # each against its own bar (a graph step: exact, then rtol)
                parts.append(f"{name}: " + ", ".join(
                    f"{c['against']} {c['error']:.1e} ({c['kind']} {c['bar']:.0e})"
                    for c in mine))
        return "; ".join(parts)

    def kernel_library(self, name, cases, so, adapter):
        self.current_lib = so
        pending = list(cases)
        log_path = os.path.join(self.log_dir, f"worker-{name}.log")
        while pending:
            if self.out_of_time(pending[0]):
                pending.pop(0)
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "worker", "--suite", self.suite,
                   "--lib", so or "", "--adapter", adapter or "", "--save", self.save]
            if self.args.dry_run:
                cmd.append("--dry-run")
            cmd += [c["name"] for c in pending]
            with open(log_path, "a") as log:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                                        start_new_session=True)
            events = queue.Queue()
            threading.Thread(target=lambda: [events.put(line) for line in proc.stdout]
                             + [events.put(None)], daemon=True).start()
            pending = self.drive_worker(proc, events, pending, log_path)

    def next_event(self, events, timeout):
        """The worker's next event, None at its end, "timeout" after timeout s."""
        deadline = time.time() + timeout
        while True:
            try:
                line = events.get(timeout=max(deadline - time.time(), 0.01))
            except queue.Empty:
                return "timeout"
            if line is None:
                return None
            try:
                return json.loads(line)
            except ValueError:
                continue  # not ours: a library printed to stdout

    def stop(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()

    def worker_end(self, proc, log_path):
        proc.wait()
        code = proc.returncode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        with open(log_path) as f:
            log = tail(f.read())
        return how + (f"; its log ({log_path}):\n{log}" if log else "")

    def drive_worker(self, proc, events, pending, log_path):
        """Reads one worker's events; returns the cases it left."""
        limit = min(LOAD_TIMEOUT * self.args.timeout_scale, max(self.left(), 1))
        started = time.time()
        event = self.next_event(events, limit)
        if isinstance(event, dict) and event.get("event") == "loading":
            event = self.next_event(events, limit - (time.time() - started))
        if not (isinstance(event, dict) and event.get("event") == "loaded"):
            if event == "timeout":
                self.stop(proc)
                why = (f"loading the library took over {limit:.0f} s" if self.left() > 0 else
                       f"the suite's time limit ({self.args.deadline:g} s) was reached")
            elif isinstance(event, dict) and event.get("event") == "load_failed":
                proc.wait()
                why = f"loading the library failed: {event['error']}"
            else:
                why = ("the worker ended while loading the library: "
                       + self.worker_end(proc, log_path))
            for case in pending:
                self.report(case, "FAIL", "not run", error=why)
            return []
        print(f"loaded {os.path.basename(self.current_lib)} in {event['seconds']:.1f} s",
              flush=True)
        name = os.path.basename(self.current_lib)
        self.load_seconds[name] = self.load_seconds.get(name, []) + [round(event["seconds"], 2)]
        for i, case in enumerate(pending):
            limit = min(case["timeout"] * self.args.timeout_scale, max(self.left(), 1))
            started = time.time()
            event = self.next_event(events, limit)
            if event is None and proc.wait() == 3 and i > 0:
                # It ended after a failed call (the adapter refuses every
                # later one): a new worker takes the remaining cases.
                return pending[i:]
            if isinstance(event, dict) and event.get("event") == "start":
                event = self.next_event(events, limit - (time.time() - started))
            if isinstance(event, dict) and event.get("event") == "result":
                self.kernel_result(case, event)
                continue
            if event == "timeout":
                self.stop(proc)
                why = (f"over the time limit ({limit:.0f} s)" if self.left() > 0 else
                       f"the suite's time limit ({self.args.deadline:g} s) was reached")
            else:
                why = f"the worker {self.worker_end(proc, log_path)}"
            self.report(case, "FAIL", "no result", seconds=time.time() - started, error=why)
            return pending[i + 1:]
        proc.wait()
        return []

    def kernel_result(self, case, event):
        checks = event.get("checks", [])
        if event["status"] == "PASS":
            return self.report(case, "PASS", self.kernel_line(checks), checks, event["seconds"])
        error = event.get("error") or "\n".join(
            f"{c['name']} against {c['against']}: error {c['error']:.3g} over the bar "
            f"{c['bar']:g} ({c['kind']}) {c['detail']}".strip()
            for c in checks if not c["ok"])
        self.report(case, "FAIL", self.kernel_line(checks) or "no result", checks,
                    event["seconds"], error)

    # Model and program cases ---------------------------------------------

    def model(self, case):
        exe = os.path.join(self.suite, case["executable"])
        t0 = time.time()
        tol = case["tol"]["bar"]
        if self.args.dry_run:
            gpu = case["cpu_loss"]
        else:
            if not os.access(exe, os.X_OK):
                return self.report(case, "FAIL", "not run",
                                   error=f"{exe} is missing: run scripts/gpu-test.sh prepare")
            limit = min(case["timeout"] * self.args.timeout_scale, max(self.left(), 1))
            try:
                r = subprocess.run([exe, *case["args"], "--verbose"], capture_output=True,
                                   text=True, timeout=limit)
            except subprocess.TimeoutExpired as e:
                return self.report(case, "FAIL", "no loss", seconds=time.time() - t0,
                                   error=f"over the time limit ({limit:.0f} s)\n"
                                   + tail(e.stderr.decode() if isinstance(e.stderr, bytes)
                                          else e.stderr or ""))
            m = re.search(r"^loss (\S+)$", r.stdout, re.M)
            if r.returncode or not m:
                self.save_log(case, r.stdout, r.stderr)
                return self.report(case, "FAIL", "no loss", seconds=time.time() - t0,
                                   error=f"exit status {r.returncode}:\n{tail(r.stderr)}")
            gpu = float(m.group(1))
        checks = []
        for against, ref in (("cpu", case["cpu_loss"]), ("fp64", case["fp64_loss"])):
            error = abs(gpu - ref) / abs(ref)
            checks.append({"name": "loss", "against": against, "kind": "rtol", "bar": tol,
                           "error": error, "ok": error <= tol, "detail": ""})
        if not self.args.dry_run:
            # The peak-memory report: the managed part holds at least the
            # fp32 parameters, and the compiled code used device buffers.
            params = re.search(r" (\d+) parameters$", r.stderr, re.M)
            peak = re.search(r"^peak GPU memory: \S+ GiB \(device buffers (\d+) bytes, "
                             r"managed parameters, batch and results (\d+) bytes\)$",
                             r.stderr, re.M)
            ok_peak = bool(params and peak and int(peak.group(1)) > 0 and
                           int(peak.group(2)) >= 4 * int(params.group(1)))
            checks.append({"name": "peak_memory", "against": "parameters", "kind": "exact",
                           "bar": 0, "error": 0.0 if ok_peak else 1.0, "ok": ok_peak,
                           "detail": peak.group(0) if peak else "no peak memory line"})
            if case.get("graph"):
                # The executable compared every replay's loss with the first
                # run's, bit for bit (it exits 1 otherwise): here, that the
                # forward was replayed as a graph rather than run uncaptured.
                replayed = re.search(r"^forward replayed as a CUDA graph of (\d+) nodes.*$",
                                     r.stderr, re.M)
                fallback = re.search(r"^warning: the forward pass is not replayed.*$",
                                     r.stderr, re.M)
                ok_graph = bool(replayed and int(replayed.group(1)) > 0 and not fallback)
                checks.append({"name": "cuda_graph", "against": "first run", "kind": "exact",
                               "bar": 0, "error": 0.0 if ok_graph else 1.0, "ok": ok_graph,
                               "detail": (fallback or replayed).group(0)
                               if (fallback or replayed) else "no CUDA graph line"})
        ok = all(c["ok"] for c in checks)
        text = f"loss {gpu:.6f} (cpu {case['cpu_loss']:.6f}): " + self.kernel_line(checks)
        self.report(case, "PASS" if ok else "FAIL", text, checks, time.time() - t0,
                    None if ok else f"the loss is off by more than {tol:g}", gpu_loss=gpu)

    def train(self, case):
        """The training program's first steps: each step's loss and gradient
        norm (its --metrics lines) against the CPU training program's."""
        exe = os.path.join(self.suite, case["executable"])
        t0 = time.time()
        if self.args.dry_run:
            steps = [{"loss": l, "grad_norm": g}
                     for l, g in zip(case["cpu_loss"], case["cpu_grad_norm"])]
        else:
            if not os.access(exe, os.X_OK):
                return self.report(case, "FAIL", "not run",
                                   error=f"{exe} is missing: run scripts/gpu-test.sh prepare")
            limit = min(case["timeout"] * self.args.timeout_scale, max(self.left(), 1))
            # A graph case runs twice: replayed, then uncaptured.
            runs = [["--cuda-graph"], ["--cuda-graph=off"]] if case.get("graph") else [[]]
            results = []
            for extra in runs:
                with tempfile.TemporaryDirectory() as scratch:
                    metrics = os.path.join(scratch, "metrics.jsonl")
                    try:
                        r = subprocess.run([exe, *case["args"], *extra, f"--metrics={metrics}"],
                                           capture_output=True, text=True, timeout=limit)
                    except subprocess.TimeoutExpired:
                        return self.report(case, "FAIL", "no steps", seconds=time.time() - t0,
                                           error=f"over the time limit ({limit:.0f} s)")
                    steps = []
                    if os.path.exists(metrics):
                        with open(metrics) as f:
                            steps = [json.loads(line) for line in f if line.strip()]
                if r.returncode or len(steps) != len(case["cpu_loss"]):
                    self.save_log(case, r.stdout, r.stderr)
                    return self.report(case, "FAIL", f"{len(steps)} steps",
                                       seconds=time.time() - t0,
                                       error=f"exit status {r.returncode}:\n{tail(r.stderr)}")
                results.append((steps, r))
            steps, r = results[0]
        checks = []
        if case.get("graph") and not self.args.dry_run:
            # Step 1 runs uncaptured; the later ones replay the graph, and
            # compute what the uncaptured executable does, bit for bit.
            replayed = f"cuda graph: {len(steps) - 1} of {len(steps)} steps replayed"
            plain = results[1][0]
            checks.append({"name": "graph.replayed", "against": "log", "kind": "exact",
                           "bar": 0, "error": 0 if replayed in r.stdout else 1,
                           "ok": replayed in r.stdout and "warning" not in r.stderr,
                           "detail": "" if replayed in r.stdout else tail(r.stderr)})
            for i, (a, b) in enumerate(zip(steps, plain)):
                for name in ("loss", "grad_norm"):
                    same = a[name] == b[name]
                    checks.append({"name": f"step{i + 1}.{name}", "against": "uncaptured",
                                   "kind": "exact", "bar": 0,
                                   "error": abs(a[name] - b[name]), "ok": same, "detail": ""})
        for i, step in enumerate(steps):
            loss_tol = case["tol"] if i < 3 else case.get("step4_tol", case["tol"])
            norm_tol = case["grad_norm_tol"] if i < 3 else \
                case.get("step4_grad_norm_tol", case["grad_norm_tol"])
            for name, key, tol in (("loss", "cpu_loss", loss_tol),
                                   ("grad_norm", "cpu_grad_norm", norm_tol)):
                ref = case[key][i]
                error = abs(step[name] - ref) / abs(ref)
                checks.append({"name": f"step{i + 1}.{name}", "against": "cpu",
                               "kind": "rtol", "bar": tol["bar"], "error": error,
                               "ok": error <= tol["bar"], "detail": ""})
        ok = all(c["ok"] for c in checks)
        text = "losses " + ", ".join(f"{s['loss']:.6f}" for s in steps) + \
            " (cpu " + ", ".join(f"{l:.6f}" for l in case["cpu_loss"]) + "): " + \
            self.kernel_line(checks)
        self.report(case, "PASS" if ok else "FAIL", text, checks, time.time() - t0,
                    None if ok else "a step's loss or gradient norm is off the CPU's")

    def program(self, case):
        prog = os.path.join(self.suite, case["program"])
        t0 = time.time()
        if not os.access(prog, os.X_OK):
            return self.report(case, "FAIL", "not run",
                               error=f"{prog} is missing: run scripts/gpu-test.sh prepare")
        if self.args.dry_run:
            return self.report(case, "PASS", "present")
        env = dict(os.environ)
        libs = os.path.join(self.suite, "programs", "lib")
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"]
                                         if env.get("LD_LIBRARY_PATH") else "")
        for variable, rel in case.get("env", {}).items():
            env[variable] = os.path.join(self.suite, rel)
        limit = min(case["timeout"] * self.args.timeout_scale, max(self.left(), 1))
        try:
            r = subprocess.run([prog], capture_output=True, text=True, timeout=limit, env=env)
        except subprocess.TimeoutExpired:
            return self.report(case, "FAIL", "no result", seconds=time.time() - t0,
                               error=f"over the time limit ({limit:.0f} s)")
        output = r.stdout + r.stderr
        m = re.search(case["expect"], output)
        problems = []
        if r.returncode:
            problems.append(f"exit status {r.returncode}")
        if "UNSUPPORTED" in output:
            problems.append("it found no GPU (UNSUPPORTED)")
        if not m:
            problems.append(f"no line matching '{case['expect']}'")
        if problems:
            self.save_log(case, r.stdout, r.stderr)
            return self.report(case, "FAIL", ", ".join(problems), seconds=time.time() - t0,
                               error=tail(output))
        self.report(case, "PASS", m.group(0), seconds=time.time() - t0)

    def save_log(self, case, stdout, stderr):
        where = os.path.join(self.save, suite.case_dir(case["name"]))
        os.makedirs(where, exist_ok=True)
        for name, text in (("stdout.txt", stdout), ("stderr.txt", stderr)):
            with open(os.path.join(where, name), "w") as f:
                f.write(text or "")

    # All -----------------------------------------------------------------

    def run(self, cases):
        for case in cases:
            if "error" in case:  # prepare.py could not make its files
                self.report(case, "FAIL", "not run", error=case["error"])
        cases = [c for c in cases if "error" not in c]
        for case in cases:
            if case["kind"] == "program" and not self.out_of_time(case):
                self.program(case)
        kernel = [c for c in cases if c["kind"] == "kernel"]
        names = sorted({c["library"] for c in kernel},
                       key=lambda n: [c["library"] for c in kernel].index(n))
        if names:
            linked, adapter = self.link(names)
            for name in names:
                group = [c for c in kernel if c["library"] == name]
                so, why = linked[name]
                if so is None:
                    for case in group:
                        self.report(case, "FAIL", "not run", error=why)
                    continue
                self.kernel_library(name, group, so, adapter)
        for case in cases:
            if case["kind"] == "model" and not self.out_of_time(case):
                self.model(case)
        for case in cases:
            if case["kind"] == "train" and not self.out_of_time(case):
                self.train(case)


def gpu_description():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or r.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-smi: {e}"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        p = argparse.ArgumentParser(prog="run.py worker")
        p.add_argument("--suite", required=True)
        p.add_argument("--lib", required=True)
        p.add_argument("--adapter", required=True)
        p.add_argument("--save")
        p.add_argument("--dry-run", action="store_true")
        p.add_argument("cases", nargs="+")
        return worker(p.parse_args(sys.argv[2:]))

    p = argparse.ArgumentParser(description="Run the GPU suite on the GPU machine.")
    p.add_argument("--suite", default=os.path.join(ROOT, "build-gpu-test"),
                   help="the folder prepare.py wrote")
    p.add_argument("--only", help="run the cases whose name matches this regex")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: link, then take the CPU back end's results and losses as "
                        "the GPU's, which checks the suite's files and comparisons")
    p.add_argument("--deadline", type=float, default=540,
                   help="seconds for the whole run; the cases left then fail")
    p.add_argument("--timeout-scale", type=float, default=1.0,
                   help="multiplies every case's time limit")
    p.add_argument("--out", default=os.environ.get("OUT"),
                   help="folder for gpu-test.json and the failed cases' files (default $OUT)")
    args = p.parse_args()
    args.suite = os.path.abspath(args.suite)
    manifest_path = os.path.join(args.suite, suite.MANIFEST)
    if not os.path.exists(manifest_path):
        print(f"FAIL  suite  not run  [0.00 s]\n      {manifest_path} is missing: run "
              "scripts/gpu-test.sh prepare where MLIR is and carry its folder")
        print("0 passed, 1 failed")
        return 1
    with open(manifest_path) as f:
        manifest = json.load(f)
    if manifest.get("version") != suite.VERSION:
        print(f"FAIL  suite  not run  [0.00 s]\n      {manifest_path} has version "
              f"{manifest.get('version')}, this run.py reads {suite.VERSION}: prepare again")
        print("0 passed, 1 failed")
        return 1
    cases = [c for c in manifest["cases"] if not args.only or re.search(args.only, c["name"])]
    print(f"GPU suite: {len(cases)} cases prepared at commit {manifest['commit']} "
          f"({manifest['created']}); GPU: {gpu_description()}", flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    runner = Runner(args, manifest)
    runner.run(cases)
    passed = sum(r["status"] == "PASS" for r in runner.results)
    failed = len(runner.results) - passed
    if len(runner.results) != len(cases):  # a case neither passed nor failed: a bug here
        failed += len(cases) - len(runner.results)
    if args.out:
        with open(os.path.join(args.out, "gpu-test.json"), "w") as f:
            json.dump({"commit": manifest["commit"], "gpu": gpu_description(),
                       "dry_run": args.dry_run, "seconds": round(time.time() - runner.start, 1),
                       "passed": passed, "failed": failed,
                       "library_load_seconds": runner.load_seconds,
                       "cases": runner.results}, f, indent=1)
        shutil.copytree(runner.log_dir, os.path.join(args.out, "logs"), dirs_exist_ok=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
