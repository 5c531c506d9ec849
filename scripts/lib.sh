# shellcheck shell=bash
# lib.sh - shared install, configure and build steps of the moe-mlir scripts.
#
# Sourced by scripts/demo.sh, scripts/test.sh and .ci/run; not run on its own.
# It defines functions only and sets these variables:
#
#   MOE_ROOT       the repository root
#   MOE_BUILD_DIR  the CMake build directory (env, default: $MOE_ROOT/build)
#   MOE_JOBS       parallel build jobs (env, default: 2)
#
# Requires bash. Everything it needs comes from Debian 12 (bookworm) packages.

MOE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOE_BUILD_DIR="${MOE_BUILD_DIR:-$MOE_ROOT/build}"
# A relative MOE_BUILD_DIR is relative to the caller's working directory.
[[ "$MOE_BUILD_DIR" == /* ]] || MOE_BUILD_DIR="$PWD/$MOE_BUILD_DIR"
MOE_JOBS="${MOE_JOBS:-2}"
MOE_LLVM_DIR=/usr/lib/llvm-22

# The Debian packages the project builds, tests and formats with. MLIR/LLVM 22
# come from Debian's own archive (bookworm-security); no extra repository.
# `fortunes` provides the English text that the executables embed as their
# training corpus (/usr/share/games/fortunes); `nlohmann-json3-dev` the JSON
# library of the executables' driver (checkpoints, safetensors headers);
# `libgloo-dev` the CPU collectives of distributed programs (lib/DistRuntime).
MOE_PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22
  libfmt-dev ninja-build cmake g++ python3 python3-numpy xxd clang-format-22
  fortunes libopenblas-dev nlohmann-json3-dev libgloo-dev
)

# Targets every script builds. Tools made with add_mlir_tool are left out of
# ninja's default target unless LLVM_BUILD_TOOLS is on, so they are named.
MOE_BUILD_TARGETS=(all moe-opt moe-compile)

# Prints a progress line on stderr, so that stdout stays the scripts' result.
moe_log() {
  printf '==> %s\n' "$*" >&2
}

moe_die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# Prints the packages of MOE_PACKAGES that are not installed, one per line.
moe_missing_packages() {
  local pkg status
  for pkg in "${MOE_PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    [[ "$status" == installed ]] || printf '%s\n' "$pkg"
  done
}

# Installs the missing packages with apt-get. Does nothing, and does not touch
# the network, when everything is installed already.
moe_install_packages() {
  command -v dpkg-query >/dev/null 2>&1 ||
    moe_die "dpkg-query not found: these scripts expect Debian 12 (bookworm)"
  local missing
  mapfile -t missing < <(moe_missing_packages)
  if ((${#missing[@]} == 0)); then
    moe_log "packages: all ${#MOE_PACKAGES[@]} installed"
    return 0
  fi
  moe_log "packages: installing ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 ||
      moe_die "missing packages (${missing[*]}); run as root or install sudo"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q || moe_die "apt-get update failed"
  "${sudo[@]}" apt-get install -y -q "${missing[@]}" ||
    moe_die "apt-get install failed"
}

# Configures MOE_BUILD_DIR with CMake unless it is configured already (ninja
# re-runs CMake by itself when a CMakeLists.txt changes).
moe_configure() {
  if [[ -f "$MOE_BUILD_DIR/build.ninja" && -f "$MOE_BUILD_DIR/CMakeCache.txt" ]]; then
    moe_log "configure: $MOE_BUILD_DIR is configured"
    return 0
  fi
  moe_log "configure: $MOE_BUILD_DIR"
  cmake -G Ninja -S "$MOE_ROOT" -B "$MOE_BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$MOE_LLVM_DIR/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$MOE_LLVM_DIR/bin/lit" ||
    moe_die "cmake configure failed"
}

# Runs ninja on the given targets (MOE_BUILD_TARGETS when none is given).
# Returns ninja's status.
moe_ninja() {
  (($# > 0)) || set -- "${MOE_BUILD_TARGETS[@]}"
  moe_log "build: ninja -j$MOE_JOBS $*"
  ninja -C "$MOE_BUILD_DIR" -j "$MOE_JOBS" "$@"
}

# Prints "PASSED FAILED UNSUPPORTED" for lit's xunit file $1: lit writes a
# <failure> element for FAIL, XPASS, UNRESOLVED and TIMEOUT, and <skipped>
# for UNSUPPORTED.
moe_count_xunit() {
  python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None:
        skipped += 1
    else:
        passed += 1
print(passed, failed, skipped)
PY
}

# Prints the C and C++ files that clang-format checks, NUL-separated: the
# tracked ones, plus new ones not yet committed when run in a work tree.
moe_cxx_files() {
  git -C "$MOE_ROOT" ls-files -z --cached --others --exclude-standard -- \
    '*.c' '*.cpp' '*.h' | sed -z "s|^|$MOE_ROOT/|"
}

# Installs, configures and builds MOE_BUILD_TARGETS; exits on failure.
moe_setup() {
  moe_install_packages
  moe_configure
  moe_ninja || moe_die "build failed"
}
