//===- Pipelines.h - Named moe-mlir pass pipelines --------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The project's named pass pipelines (`moe-lower-to-cpu`, ...): C++ builders
// that tools such as moe-run call directly, and their registration for
// moe-opt (`moe-opt --moe-lower-to-cpu`).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_PIPELINES_PIPELINES_H
#define MOE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::moe {

/// Options of the `moe-lower-to-cpu` pipeline.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Mark every function `llvm.emit_c_interface` so that a "
                     "host program (moe-run) can call it with memref "
                     "descriptors through `_mlir_ciface_<name>`"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("Run fp32 contractions through the CPU runtime's "
                     "moe_cpu_contract_f32 (OpenBLAS) instead of loops "
                     "(-moe-contractions-to-blas); the program must then be "
                     "linked with, or the JIT load, the CPU runtime"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> profile{
      *this, "profile",
      llvm::cl::desc("Time every moe op with the CPU runtime's timer "
                     "(-moe-profile-ops after -moe-decompose); the program "
                     "prints the time per op kind when it exits"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> shapeChecks{
      *this, "shape-checks",
      llvm::cl::desc("Check at run time that the dynamic sizes each moe op "
                     "ties together agree (-moe-insert-shape-checks); the "
                     "program must then be linked with, or the JIT load, the "
                     "CPU runtime"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineKinds{
      *this, "outline-kinds",
      llvm::cl::desc("Outline every kind of moe op group into one private "
                     "function that each instance calls "
                     "(-moe-outline-kinds), so that it is lowered and "
                     "optimised once; the numbers are bit-identical"),
      llvm::cl::init(true)};
};

/// Options of the moe-lower-to-nvvm pipeline.
struct LowerToNVVMOptions : public PassPipelineOptions<LowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("Target GPU architecture"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX ISA version (+ptxNN)"),
      llvm::cl::init("+ptx81")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary format: isa (PTX, loaded through the "
                     "driver JIT), bin (cubin, needs ptxas) or fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<int> optLevel{
      *this, "opt-level",
      llvm::cl::desc("Kernel optimization level (0-3); 2 by default: on an "
                     "H100, kimi-tiny's step took 44.2 ms at -O2 against "
                     "45.3-45.5 ms at -O3 (the KDA gradient's tile programs "
                     "faster), and the compile took as long"),
      llvm::cl::init(2)};
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Mark every function `llvm.emit_c_interface`"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> kdaDiagonal{
      *this, "kda-diagonal",
      llvm::cl::desc("Diagonal tiles of the generated KDA kernels: auto "
                     "(dense where proven), dense or per-position"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> kdaValueTile{
      *this, "kda-value-tile",
      llvm::cl::desc("State columns per block of the KDA state kernel"),
      llvm::cl::init(16)};
  PassOptions::Option<int64_t> attentionQueryTile{
      *this, "attention-query-tile",
      llvm::cl::desc("Query rows per block of the generated attention "
                     "kernel (64, 128 or 256)"),
      llvm::cl::init(256)};
  PassOptions::Option<bool> attentionConvertOnce{
      *this, "attention-convert-once",
      llvm::cl::desc("Convert fp32 K and V to bf16 once in a prep kernel "
                     "before the generated attention kernel"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> expertReductionStep{
      *this, "expert-reduction-step",
      llvm::cl::desc("Reduction elements per pipeline stage of the generated "
                     "expert GEMMs (32 or 64)"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> expertStages{
      *this, "expert-stages",
      llvm::cl::desc("Shared-memory stages of the generated expert GEMMs "
                     "(3 to 6)"),
      llvm::cl::init(4)};
  PassOptions::Option<int64_t> expertBlockCols{
      *this, "expert-block-cols",
      llvm::cl::desc("Columns of a block tile of the generated expert GEMMs "
                     "(128 or 256)"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> expertGradBlocks{
      *this, "expert-grad-blocks",
      llvm::cl::desc("Parallel iterations (blocks) of the grouped expert "
                     "gradient: each expert's rows split until experts x "
                     "splits reaches this (-moe-lower-routing-grad's "
                     "expert-blocks)"),
      llvm::cl::init(264)};
  PassOptions::Option<std::string> matmulPrecision{
      *this, "matmul-precision",
      llvm::cl::desc("Precision policy of the generated GEMMs: bf16 (f32 "
                     "operands rounded to bf16, fp32 accumulation, results "
                     "in the op's type) or exact (only operands already "
                     "bf16 go to tensor cores; f32 ones stay fp32)"),
      llvm::cl::init("bf16")};
  PassOptions::Option<bool> outlineKinds{
      *this, "outline-kinds",
      llvm::cl::desc("Outline every kind of moe op group into one private "
                     "function that each instance calls, on its caller's "
                     "stream (-moe-outline-kinds)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> shareTileMemory{
      *this, "share-tile-memory",
      llvm::cl::desc("Tile buffers whose lifetimes do not overlap share "
                     "bytes (-moe-map-forall-to-gpu's share-tile-memory)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> sharedMemoryBytes{
      *this, "shared-memory-bytes",
      llvm::cl::desc("Most dynamic shared memory per block for a tile "
                     "program's tiles (-moe-map-forall-to-gpu's "
                     "shared-memory-bytes); the default is what one block "
                     "of an H100 or H200 may have (227 KiB), less 1 KiB for "
                     "the kernel's static shared memory"),
      llvm::cl::init(231424)};
  PassOptions::Option<int64_t> partialSharedMemoryBytes{
      *this, "partial-shared-memory-bytes",
      llvm::cl::desc("Shared memory per block for the most accessed tiles "
                     "of a tile program whose tiles do not all fit "
                     "(-moe-map-forall-to-gpu's partial-shared-memory-bytes; "
                     "0: all to global scratch)"),
      llvm::cl::init(200704)};
  PassOptions::Option<bool> shareSpilledTiles{
      *this, "share-spilled-tiles",
      llvm::cl::desc("Tile buffers of a program whose tiles do not all fit "
                     "in shared memory share bytes by lifetime "
                     "(-moe-map-forall-to-gpu's share-spilled-tiles)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> tileBlocksPerSM{
      *this, "tile-blocks-per-sm",
      llvm::cl::desc("Blocks of a tile program an SM must be able to hold "
                     "(-moe-map-forall-to-gpu's tile-blocks-per-sm; 0: no "
                     "limit on registers)"),
      llvm::cl::init(2)};
  PassOptions::Option<int64_t> tileElementsPerThread{
      *this, "tile-elements-per-thread",
      llvm::cl::desc("Iterations of a tile program's element-wise op a "
                     "thread issues together (-moe-map-forall-to-gpu's "
                     "tile-elements-per-thread)"),
      llvm::cl::init(8)};
  PassOptions::Option<bool> elideBarriers{
      *this, "elide-barriers",
      llvm::cl::desc("Erase tile-program barriers between independent ops "
                     "(-moe-map-forall-to-gpu's elide-barriers)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("Compute each element-wise op inside its only, "
                     "element-wise user (-moe-fuse-elementwise)"),
      llvm::cl::init(true)};
};

/// Adds the passes that lower moe-specific ops to upstream tensor-level IR
/// (func + linalg/tensor/scf/arith/math), in the order they must run. This is
/// the hook through which the moe dialect reaches every back end: models to
/// functions of their packed parameters (convert-moe-model-to-func), layer
/// decomposition, routing fusion, KDA tiling (before the decay gate is
/// lowered, since the decay-bound analysis reads it), attention tiling,
/// convert-moe-to-linalg and convert-elementwise-to-linalg. A moe op that no
/// pass lowers is rejected by bufferization with "op was not bufferized".
/// `kernelGenerators` adds a back end's kernel generators (the GPU's) right
/// after the decomposition, ahead of the routing fusion and the tilings.
/// `shapeChecks` adds -moe-insert-shape-checks once models are functions;
/// `outlineKinds` adds -moe-outline-kinds after the decomposition, so that
/// every later pass lowers each kind of op group once.
void addMoEToUpstreamPasses(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> kernelGenerators = nullptr,
    bool shapeChecks = false, bool outlineKinds = false);

/// One-shot bufferization with identity layouts at function boundaries and
/// buffer deallocation, shared by both back ends.
void addBufferizationPasses(OpPassManager &pm);

/// Tensor-level IR to LLVM for the host plus PTX (or cubin) kernels: every
/// `scf.forall` of the tiled IR becomes a GPU kernel whose blocks are the
/// forall's iterations; host buffers live in host-shared (managed) memory.
/// The host code calls the `mgpu*` ABI that moert's MLIR adapter provides.
void buildLowerToNVVMPipeline(OpPassManager &pm,
                              const LowerToNVVMOptions &options);

/// The three parts of buildLowerToNVVMPipeline, in its order, for a driver
/// that works between them (moe-compile serializes the generators' kernels
/// on a thread of its own while the host code is lowered):
///  1. moe ops -> upstream tensor IR, with the kernel generators' gpu.modules
///     (KDA, attention, routing, experts, GEMM) made, complete and final;
///  2. bufferization, GPU mapping, kernel outlining and the NVVM and LLVM
///     lowering of the host and of every gpu.module, each gpu.module lowered
///     on its own (no pass changes a module by what is outside it; the
///     dedupe only erases a module equal to another);
///  3. serialization of the gpu.modules left (a gpu.binary already there is
///     kept) and the host's conversion to the LLVM dialect.
void addNVVMKernelGenerationPasses(OpPassManager &pm,
                                   const LowerToNVVMOptions &options);
void addNVVMLoweringPasses(OpPassManager &pm,
                           const LowerToNVVMOptions &options);
void addNVVMSerializationPasses(OpPassManager &pm,
                                const LowerToNVVMOptions &options);

/// Builds `moe-lower-to-cpu`: from tensor-level IR (anchored on the builtin
/// module) to the LLVM dialect for the host, ready for mlir::ExecutionEngine
/// or `mlir-translate --mlir-to-llvmir`. In order:
///  1. addMoEToUpstreamPasses (moe ops -> upstream tensor IR);
///  2. `llvm-request-c-wrappers` on every function (emitCInterface);
///  3. one-shot bufferization across function boundaries, with identity
///     layouts on function arguments and results, then the ownership-based
///     buffer deallocation pipeline (returned buffers are owned by the caller,
///     which frees them with `free`), then (blas) fp32 contractions to calls
///     of the CPU runtime (-moe-contractions-to-blas);
///  4. linalg to loops, scf.forall to scf.for, vector to scf;
///  5. expand-strided-metadata, lower-affine, scf to cf;
///  6. conversion to LLVM: math (LLVM intrinsics, then libm calls for the
///     rest), vector, memref (malloc/free), arith, index, ub, cf, func, and
///     reconcile-unrealized-casts.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers every named pipeline of the project with the global registry.
void registerMoEPipelines();

} // namespace mlir::moe

#endif // MOE_PIPELINES_PIPELINES_H
