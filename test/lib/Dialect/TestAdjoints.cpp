//===- TestAdjoints.cpp - Build and return the adjoints of marked ops -----===//
//
// Part of the moe-mlir project.
//
// Implements -test-moe-adjoints: calls DifferentiableOpInterface's
// buildAdjoints on the ops a lit test marks, with function arguments as the
// result adjoints, checks the interface's contract and returns the operand
// adjoints from the function, so that tests can print them or run them.
//
//===----------------------------------------------------------------------===//

#include "test/lib/TestPasses.h"

#include "moe/Dialect/MoE/IR/MoE.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::moe::test {
#define GEN_PASS_DEF_TESTMOEADJOINTS
#include "test/lib/Passes.h.inc"
} // namespace mlir::moe::test

using namespace mlir;
using namespace mlir::moe;

static constexpr llvm::StringLiteral kAdjointsAttrName = "test.adjoints";

/// Builds the adjoints of `op` (marked with `seeds`, one entry per result)
/// after it and appends the non-null ones to `returned`.
static LogicalResult differentiate(Operation *op, DenseI64ArrayAttr seeds,
                                   func::FuncOp func,
                                   SmallVectorImpl<Value> &returned) {
  auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
  if (!differentiable)
    return op->emitError("'") << kAdjointsAttrName << "' is on an op without "
                              << "DifferentiableOpInterface";
  if (seeds.size() != static_cast<int64_t>(op->getNumResults()))
    return op->emitError("'")
           << kAdjointsAttrName << "' needs one entry per result ("
           << op->getNumResults() << "), got " << seeds.size();

  SmallVector<Value> resultAdjoints;
  for (auto [index, seed] : llvm::enumerate(seeds.asArrayRef())) {
    if (seed == -1) {
      resultAdjoints.push_back(Value());
      continue;
    }
    if (seed < 0 || seed >= static_cast<int64_t>(func.getNumArguments()))
      return op->emitError("'")
             << kAdjointsAttrName << "' entry " << index << " (" << seed
             << ") is neither -1 nor an argument of @" << func.getSymName();
    Value argument = func.getArgument(seed);
    Type resultType = op->getResult(index).getType();
    if (argument.getType() != resultType)
      return op->emitError("argument #")
             << seed << " of type " << argument.getType()
             << " cannot be the adjoint of result #" << index << " of type "
             << resultType;
    resultAdjoints.push_back(argument);
  }

  OpBuilder builder(op->getContext());
  builder.setInsertionPointAfter(op);
  SmallVector<Value> operandAdjoints;
  if (failed(differentiable.buildAdjoints(builder, resultAdjoints,
                                          operandAdjoints)))
    return failure();
  if (operandAdjoints.size() != op->getNumOperands())
    return op->emitError("buildAdjoints gave ")
           << operandAdjoints.size() << " operand adjoints for "
           << op->getNumOperands() << " operands";
  for (auto [index, adjoint] : llvm::enumerate(operandAdjoints)) {
    if (!adjoint)
      continue;
    Type operandType = op->getOperand(index).getType();
    if (adjoint.getType() != operandType)
      return op->emitError("the adjoint of operand #")
             << index << " has type " << adjoint.getType() << ", expected "
             << operandType;
    returned.push_back(adjoint);
  }
  op->removeAttr(kAdjointsAttrName);
  return success();
}

namespace {
struct TestMoEAdjointsPass
    : public moe::test::impl::TestMoEAdjointsBase<TestMoEAdjointsPass> {
  void runOnOperation() override;
};
} // namespace

void TestMoEAdjointsPass::runOnOperation() {
  for (auto func : getOperation().getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    SmallVector<std::pair<Operation *, DenseI64ArrayAttr>> marked;
    func.walk([&](Operation *op) {
      if (Attribute attr = op->getAttr(kAdjointsAttrName)) {
        auto seeds = dyn_cast<DenseI64ArrayAttr>(attr);
        marked.push_back({op, seeds});
      }
    });
    if (marked.empty())
      continue;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("-test-moe-adjoints expects a function of one block");
      return signalPassFailure();
    }

    SmallVector<Value> returned;
    for (auto [op, seeds] : marked) {
      if (!seeds) {
        op->emitError("'") << kAdjointsAttrName << "' must be an array<i64>";
        return signalPassFailure();
      }
      if (failed(differentiate(op, seeds, func, returned)))
        return signalPassFailure();
    }

    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    ret->insertOperands(ret->getNumOperands(), returned);
    func.setFunctionType(FunctionType::get(
        &getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
  }
}
