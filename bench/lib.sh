# bench/lib.sh - shared steps of the GPU benchmarks (sourced, not run).
#
# compile.sh scripts run where MLIR 22 is installed and call
# moe_bench_compile; run.sh scripts run on the GPU machine (no MLIR there)
# and call moe_bench_link before their bench.py.

moe_bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# moe_bench_compile KERNEL.mlir OUT.o [PIPELINE_OPTIONS]: lowers KERNEL with
# moe-lower-to-nvvm{PIPELINE_OPTIONS} (host code + embedded sm_90 PTX) and
# compiles the host code to OUT.o. The tiling remarks go to OUT.remarks.txt
# and are echoed.
moe_bench_compile() {
  local kernel=$1 object=$2 options=${3:-}
  local build=${MOE_BUILD_DIR:-$moe_bench_root/build}
  local llvm=/usr/lib/llvm-22/bin
  local stem=${object%.o}
  export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  local remarks="$stem.remarks.txt"
  "$build/bin/moe-opt" "$kernel" --moe-lower-to-nvvm="$options" \
    -o "$stem.llvm.mlir" 2> "$remarks"
  "$llvm/mlir-translate" --mlir-to-llvmir "$stem.llvm.mlir" -o "$stem.ll"
  "$llvm/llc" -O2 -filetype=obj -relocation-model=pic "$stem.ll" -o "$object"
  echo "wrote $object"
  grep -o 'tiled with.*\|kda tiled.*\|kda GPU kernels.*' "$remarks" || true
}

# moe_bench_build_adapter DIR: builds moert's MLIR adapter (DIR/libmoert_mlir.so)
# with this machine's compiler.
moe_bench_build_adapter() {
  local dir=$1
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  g++ -O2 -std=c++17 -shared -fPIC \
    "$moe_bench_root/runtime/lib/MlirGpuAdapter.cpp" \
    "$moe_bench_root/runtime/lib/MemRefCopy.cpp" \
    -I"$moe_bench_root/runtime/include" -I"$cuda/include" \
    -L"$cuda/lib64/stubs" -lcuda -o "$dir/libmoert_mlir.so"
}

# moe_bench_link_object OUT.o LIB.so: links OUT.o against the adapter that
# moe_bench_build_adapter built next to LIB.so.
moe_bench_link_object() {
  local object=$1 library=$2
  local dir
  dir=$(dirname "$library")
  g++ -shared -o "$library" "$object" -L"$dir" -lmoert_mlir -lm \
    -Wl,-rpath,"$dir"
}

# moe_bench_link OUT.o LIB.so: builds moert's MLIR adapter
# (libmoert_mlir.so, next to LIB.so) with this machine's compiler and links
# OUT.o against it into LIB.so.
moe_bench_link() {
  local object=$1 library=$2
  moe_bench_build_adapter "$(dirname "$library")"
  moe_bench_link_object "$object" "$library"
}
