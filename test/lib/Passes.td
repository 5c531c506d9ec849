//===- Passes.td - moe-mlir test-only passes -------------------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// Declarations of the passes that lit tests use to drive analyses; they are
// not part of any pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TEST_LIB_PASSES_TD
#define MOE_TEST_LIB_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestMoEDecayBounds : Pass<"test-moe-decay-bounds"> {
  let summary = "Report decay bounds and tile-safety verdicts as remarks";
  let description = [{
    Runs the decay-bound analysis (`moe/Analysis/DecayBound.h`) once over the
    operation it is scheduled on and reports, as remarks:

    * for every `moe.kda`, the bound of its `log_decay` operand;
    * for every op carrying the discardable attribute `test.decay_probe`, the
      bound of each of its results (prefixed `result #i: ` when it has
      several).

    Each remark covers one tile length `c` and one reference row, for every
    combination of `tile-lengths` and `references`, against the limit of
    `operand-type`:

    ```
    decay bound -5; c=16 ref=mid f32: proven (exponent 40 <= limit 87.34, margin 47.34)
    decay bound -5; c=32 ref=pre f32: not proven (exponent 160 > limit 87.34, margin -72.66)
    decay bound none; c=16 ref=mid f32: not proven (no lower bound, limit 87.34)
    ```

    The bound is printed in its shortest round-trip form; exponent, limit and
    margin with at most two decimals. A dictionary-valued `test.decay_probe`
    overrides the options for that op with the keys `tile_lengths`
    (`array<i64>`), `references` (an array of strings) and `operand_type`
    (a float type), e.g.
    `{test.decay_probe = {tile_lengths = array<i64: 16, 32>, references = ["mid"], operand_type = bf16}}`.
    Invalid options or probe attributes are errors. The IR is not changed.
  }];
  let options = [
    ListOption<"tileLengths", "tile-lengths", "int64_t",
               "Tile lengths c to check, each >= 1 (default: 16)">,
    ListOption<"references", "references", "std::string",
               "Reference rows to check: pre, start, mid (default: all three)">,
    Option<"operandType", "operand-type", "std::string", /*default=*/"\"f32\"",
           "Element type of the GEMM operands: f16, bf16, tf32, f32 or f64">
  ];
}

def TestMoEAdjoints : Pass<"test-moe-adjoints", "::mlir::ModuleOp"> {
  let summary = "Build the adjoints of marked ops and return them";
  let description = [{
    Drives `DifferentiableOpInterface::buildAdjoints` from lit tests. In
    every `func.func` (one block, ending in `func.return`), each op that
    carries `test.adjoints`, an `array<i64>` with one entry per result, gets
    its adjoints built right after it: entry `k >= 0` makes argument `#k` of
    the function that result's adjoint, `-1` passes a null (zero) adjoint.
    Every non-null operand adjoint is appended, in operand order, to the
    values the function returns (its type is updated), so that the
    gradients can be printed, lowered and run. The pass checks the
    interface's contract: one adjoint per operand, each of its operand's
    type. A marked op without the interface, a malformed attribute, an
    argument whose type is not the result's, or a failing `buildAdjoints` is
    an error.
  }];
  let dependentDialects = ["::mlir::moe::MoEDialect"];
}

def TestMoEReverseMode
    : Pass<"test-moe-reverse-mode", "::mlir::ModuleOp"> {
  let summary = "Differentiate marked functions with the reverse mode of "
                "-moe-build-training-step";
  let description = [{
    For every `func.func @f` carrying the unit attribute `test.reverse_mode`,
    builds `@f_grad` with the arguments of `@f`, returning `@f`'s result and
    then, for each float tensor argument in order, the gradient of the sum
    of the result's elements with respect to it (zeros where none flows),
    through `buildReverseMode` (moe/Dialect/MoE/Transforms/ReverseMode.h).
    `@f` must have one block and one float tensor result. Errors of the
    reverse mode (ops it cannot differentiate) fail the pass.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect"
  ];
}

#endif // MOE_TEST_LIB_PASSES_TD
