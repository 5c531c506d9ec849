#!/usr/bin/env bash
# gpu-test.sh - the GPU test suite, in two halves (docs/GPUTests.md).
#
#   scripts/gpu-test.sh prepare [--only REGEX]
#       where MLIR 22 and the build are (not the GPU machine): compiles every
#       case's kernels with moe-lower-to-nvvm and the kimi-tiny executables
#       with moe-compile --target=cuda, writes seeded inputs, the CPU back
#       end's results and the fp64 references, and a manifest, into
#       build-gpu-test/ (git-ignored, a few tens of MiB), and the same
#       packed as build-gpu-test.tar.xz (about half the size: carry that
#       one where what travels is limited).
#   scripts/gpu-test.sh run [--only REGEX] [--dry-run] [--deadline S]
#       on the GPU machine, with build-gpu-test/ (or the .tar.xz, unpacked
#       first when the folder is missing) carried along (no MLIR
#       needed: python3 with NumPy and PyTorch, g++, the CUDA toolkit and
#       driver): links the kernels against moert's adapter, runs every case
#       with a time limit each, prints one line per case and last
#       `N passed, M failed`; exit status 1 if any case failed. With OUT set,
#       writes OUT/gpu-test.json and the failed cases' outputs and logs.
#       --dry-run needs no GPU: it takes the CPU results as the GPU's.
#   scripts/gpu-test.sh list
#       checks the case table (files, entries, shapes) and lists the cases;
#       needs neither the build nor a GPU.
#
# Environment: MOE_BUILD_DIR (default build/), MOE_GPU_TEST_DIR (default
# build-gpu-test/), CUDA_HOME (default /usr/local/cuda).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
suite=$root/test/Integration/GPU
dir=${MOE_GPU_TEST_DIR:-$root/build-gpu-test}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

usage() {
  sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

(($# > 0)) || usage
command=$1
shift
case $command in
  prepare)
    python3 "$suite/prepare.py" --out "$dir" \
      --build "${MOE_BUILD_DIR:-$root/build}" "$@"
    echo "packing $dir.tar.xz"
    tar -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | xz -T2 -6 > "$dir.tar.xz.part"
    mv "$dir.tar.xz.part" "$dir.tar.xz"
    du -h "$dir.tar.xz" ;;
  run)
    if [[ ! -d $dir && -f $dir.tar.xz ]]; then
      echo "unpacking $dir.tar.xz"
      # Python's lzma: the GPU machine need not have xz.
      python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" \
        "$dir.tar.xz" "$(dirname "$dir")"
    fi
    exec python3 "$suite/run.py" --suite "$dir" "$@" ;;
  list)
    exec python3 "$suite/prepare.py" --list "$@" ;;
  *)
    usage ;;
esac
