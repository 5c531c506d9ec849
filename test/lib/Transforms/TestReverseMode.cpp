//===- TestReverseMode.cpp - Drive the reverse mode on plain functions ----===//
//
// Part of the moe-mlir project.
//
// Implements -test-moe-reverse-mode: every func.func marked
// `test.reverse_mode` gets a sibling @<name>_grad that returns the
// function's result and the gradient of the sum of its elements with
// respect to each float tensor argument, built by buildReverseMode. Lit
// tests run both with moe-run and compare the gradient with central
// differences of the function.
//
//===----------------------------------------------------------------------===//

#include "test/lib/TestPasses.h"

#include "moe/Dialect/MoE/Transforms/ReverseMode.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::moe::test {
#define GEN_PASS_DEF_TESTMOEREVERSEMODE
#include "test/lib/Passes.h.inc"
} // namespace mlir::moe::test

using namespace mlir;
using namespace mlir::moe;

namespace {
struct TestMoEReverseModePass
    : public moe::test::impl::TestMoEReverseModeBase<TestMoEReverseModePass> {
  void runOnOperation() override;
};
} // namespace

/// Builds @<func>_grad next to `func`.
static LogicalResult buildGradient(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitError("test.reverse_mode needs a function with one block");
  if (func.getNumResults() != 1 ||
      !isa<RankedTensorType>(func.getResultTypes().front()) ||
      !isa<FloatType>(cast<RankedTensorType>(func.getResultTypes().front())
                          .getElementType()))
    return func.emitError(
        "test.reverse_mode needs exactly one float tensor result");

  OpBuilder builder(func);
  builder.setInsertionPointAfter(func);
  auto grad = cast<func::FuncOp>(builder.clone(*func));
  grad.setSymName((func.getSymName() + "_grad").str());
  grad->removeAttr("test.reverse_mode");
  Block &block = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Value result = ret.getOperand(0);

  builder.setInsertionPoint(ret);
  ImplicitLocOpBuilder b(ret.getLoc(), builder);
  TensorBuilder tb(b);
  ReverseModeRequest request;
  request.seeds.push_back(
      {result, tb.filled(tb.sizesOf(result),
                         tensorTypeOf(result).getElementType(), 1.0)});
  for (BlockArgument arg : block.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && isa<FloatType>(type.getElementType()))
      request.wrt.push_back(arg);
  }
  FailureOr<SmallVector<Value>> adjoints =
      buildReverseMode(builder, block, request);
  if (failed(adjoints))
    return failure();

  SmallVector<Value> results = {result};
  for (auto [arg, adjoint] : llvm::zip(request.wrt, *adjoints))
    results.push_back(adjoint
                          ? adjoint
                          : tb.filled(tb.sizesOf(arg),
                                      tensorTypeOf(arg).getElementType(), 0.0));
  func::ReturnOp::create(b, results);
  ret.erase();
  grad.setType(FunctionType::get(func.getContext(), grad.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  return success();
}

void TestMoEReverseModePass::runOnOperation() {
  SmallVector<func::FuncOp> funcs;
  for (auto func : getOperation().getOps<func::FuncOp>())
    if (func->hasAttr("test.reverse_mode"))
      funcs.push_back(func);
  for (func::FuncOp func : funcs)
    if (failed(buildGradient(func)))
      return signalPassFailure();
}
