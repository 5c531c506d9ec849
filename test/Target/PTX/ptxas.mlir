// Every kernel example goes through moe-lower-to-nvvm with format=bin, so
// ptxas from the CUDA toolkit assembles its PTX for sm_90 (the pass fails if
// ptxas rejects it) and the cubin ELF is embedded.
// REQUIRES: ptxas
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/kda.mlir --moe-lower-to-nvvm="format=bin" 2>/dev/null | FileCheck %s --check-prefix=KDA
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/mla.mlir --moe-lower-to-nvvm="format=bin" 2>/dev/null | FileCheck %s --check-prefix=MLA
// RUN: env CUDA_HOME=/usr/local/cuda moe-opt %moe_src_root/examples/kernels/moe_ffn.mlir --moe-lower-to-nvvm="format=bin" 2>/dev/null | FileCheck %s --check-prefix=MOE

// KDA: gpu.binary @moe_kda_kernels  [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx81">, properties = {ISAToBinaryTimeInMs = {{[0-9]+}} : i64, LLVMIRToISATimeInMs = {{[0-9]+}} : i64}, bin = "\7FELF
// KDA-NOT: gpu.binary
// MLA: gpu.binary @moe_attention_kernels {{.*}} bin = "\7FELF
// MOE: gpu.binary @__moe_kind_{{[a-z_]+}}_l{{[0-9]+}}_{{[0-9]+}} {{.*}} bin = "\7FELF
