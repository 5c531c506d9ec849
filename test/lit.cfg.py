# -*- Python -*-
# lit configuration of the moe-mlir regression tests (check-moe).

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MOE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
# Lets DEFINE-d substitutions use other substitutions.
config.recursiveExpansionLimit = 10
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.moe_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%moe_src_root", config.moe_src_root))
config.substitutions.append(
    ("%mlir_runner_utils",
     os.path.join(config.llvm_lib_dir, "libmlir_runner_utils" + config.llvm_shlib_ext)))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils" + config.llvm_shlib_ext)))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# moe-compile's compile cache defaults to $XDG_CACHE_HOME/moe-mlir: the tests
# share one of their own in the build tree, emptied when lit starts, and
# never read or fill the user's. Tests of the cache pass --cache-dir.
_cache_home = os.path.join(config.moe_obj_root, "test", "xdg-cache")
shutil.rmtree(_cache_home, ignore_errors=True)
config.environment["XDG_CACHE_HOME"] = _cache_home
llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line are found on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.moe_tools_dir, config.llvm_tools_dir]
tools = ["moe-opt", "moe-compile", "moe-dist-check", "moe-driver-bigram", "moe-run", "moe-npy", "moe-reference", "moe-safetensors",
         "moe-token-file", "mlir-runner", "mlir-translate", "moe-import-config"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# PTX is assembled where the CUDA toolkit is installed.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.path.join(cuda_home, "bin", "ptxas")):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", os.path.join(cuda_home, "bin", "ptxas")))
    config.environment["CUDA_HOME"] = cuda_home

# The driver's stub library (libcuda.so of the toolkit), which executables
# built for cuda link against.
for _stubs in ("lib64/stubs", "lib/stubs"):
    _stub = os.path.join(cuda_home, _stubs, "libcuda.so")
    if os.path.exists(_stub):
        config.available_features.add("cuda-stub")
        config.substitutions.append(("%cuda_driver_stub", _stub))
        break

# `fake-cuda-driver`: test/tools/fake-cuda-driver's libcuda.so.1 (no kernels
# run), for the host side of cuda executables on machines without a GPU.
_fake_cuda = os.path.join(config.moe_obj_root, "lib", "fake-cuda")
if os.path.exists(os.path.join(_fake_cuda, "libcuda.so.1")):
    config.available_features.add("fake-cuda-driver")
    config.substitutions.append(("%fake_cuda_dir", _fake_cuda))

# `cuda-device`: a CUDA GPU is visible (nvidia-smi lists one). Tests that run
# on the GPU say `REQUIRES: cuda-device` and are UNSUPPORTED without it.
def _has_cuda_device():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                 text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return listing.returncode == 0 and "GPU " in listing.stdout

if _has_cuda_device():
    config.available_features.add("cuda-device")

# `python-safetensors`: python3 with numpy and the safetensors package, an
# independent reader of the .safetensors files the executables write.
def _has_python_safetensors():
    try:
        probe = subprocess.run(
            ["python3", "-c", "import numpy, safetensors.numpy"],
            capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0

if _has_python_safetensors():
    config.available_features.add("python-safetensors")
