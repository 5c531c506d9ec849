//===- BF16Conversion.cpp - f32 -> bf16 rounding on the GPU ---------------===//
//
// Part of the moe-mlir project.
//
// The conversion kernel of BF16Conversion.h: each thread rounds eight
// consecutive f32 elements (two 16-byte loads, one 16-byte store).
//
//===----------------------------------------------------------------------===//

#include "moe/GPU/BF16Conversion.h"
#include "moe/GPU/DeviceEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::moe;

gpu::GPUFuncOp BF16Converter::kernel(Location loc, TypeRange argTypes) {
  if (built)
    return built;
  built = createKernel(module, loc, uniqueName(stem), argTypes, kThreads);
  ImplicitLocOpBuilder b =
      ImplicitLocOpBuilder::atBlockBegin(loc, &built.getBody().front());
  DeviceEmitter e(b);
  // Arguments: src [n] f32, dst [n] bf16, n / 8.
  Value src = built.getArgument(0), dst = built.getArgument(1),
        count = built.getArgument(2);
  Value i = e.add(e.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), kThreads),
                  gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  e.ifThen(e.ult(i, count), [&] {
    Value at = e.mul(i, 8);
    Value v = vector::LoadOp::create(
        b, VectorType::get({8}, b.getF32Type()), src, ValueRange{at},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
    Value rounded =
        arith::TruncFOp::create(b, VectorType::get({8}, b.getBF16Type()), v);
    vector::StoreOp::create(b, rounded, dst, ValueRange{at},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  });
  gpu::ReturnOp::create(b);
  return built;
}

void BF16Converter::launch(ImplicitLocOpBuilder &b, Value src, Value dst,
                           Value elements) {
  DeviceEmitter e(b);
  auto srcType = cast<MemRefType>(src.getType());
  if (srcType.getRank() != 1) {
    ReassociationIndices all =
        llvm::to_vector(llvm::seq<int64_t>(0, srcType.getRank()));
    src = memref::CollapseShapeOp::create(b, src,
                                          ArrayRef<ReassociationIndices>{all});
  }
  auto dynamicType = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
  if (src.getType() != dynamicType)
    src = memref::CastOp::create(b, dynamicType, src);
  Value count = e.div(elements, 8);
  SmallVector<Value> args = {src, dst, count};
  gpu::GPUFuncOp convert = kernel(b.getLoc(), ValueRange(args).getTypes());
  Value one = e.idx(1);
  gpu::LaunchFuncOp::create(
      b, convert,
      gpu::KernelDim3{e.div(e.add(count, kThreads - 1), kThreads), one, one},
      gpu::KernelDim3{e.idx(kThreads), one, one}, Value(), args);
}

Value BF16Converter::staticAsBF16(ImplicitLocOpBuilder &b, Value tensor) {
  Value mem = readOnlyBuffer(b, tensor);
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType().isBF16())
    return mem;
  DeviceEmitter e(b);
  Value elements = e.idx(type.getNumElements());
  Value flat = allocateDeviceBuffers(b, {{elements, b.getBF16Type()}}).front();
  launch(b, mem, flat, elements);
  auto bf16Type = MemRefType::get(type.getShape(), b.getBF16Type());
  SmallVector<OpFoldResult> sizes, strides;
  int64_t stride = 1;
  for (int64_t dim : llvm::reverse(type.getShape())) {
    sizes.insert(sizes.begin(), b.getIndexAttr(dim));
    strides.insert(strides.begin(), b.getIndexAttr(stride));
    stride *= dim;
  }
  return memref::ReinterpretCastOp::create(
      b, bf16Type, flat, OpFoldResult(b.getIndexAttr(0)), sizes, strides);
}
