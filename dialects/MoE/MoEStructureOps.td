//===- MoEStructureOps.td - model, param and return ops --------*- tablegen -*-===//
//
// Part of the moe-mlir project.
//
// The ops that give a model description its shape: the model itself, its
// parameters and its terminator.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_MOESTRUCTUREOPS_TD
#define MOE_DIALECT_MOE_MOESTRUCTUREOPS_TD

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

def MoE_ModelOp : MoE_Op<"model", [
    Symbol, IsolatedFromAbove, SingleBlock]> {
  let summary = "A language model: token ids and labels in, mean loss out";
  let description = [{
    A `moe.model` holds the forward computation of one language model. Its
    body has one block whose two arguments are the token ids and the labels,
    both `[batch, sequence]` integer tensors; it ends in `moe.return` with the
    mean cross-entropy loss as a `tensor<f32>`. Parameters are declared inside
    the body with `moe.param`, so a model file is self-contained: compilers
    and tools read the shapes, the initialisers and the names from it.

    `vocab_size` and `hidden_size` state the model's vocabulary and width; the
    verifier checks them against every embedding table and `lm_head`, and
    checks that parameter names are unique.

    Example:

    ```mlir
    moe.model @tiny(vocab_size = 256, hidden_size = 64) {
    ^bb0(%tokens: tensor<?x?xi32>, %labels: tensor<?x?xi32>):
      %table = moe.param "embed" init <normal, std = 0.02> : tensor<256x64xf32>
      %h = moe.embedding %tokens, %table
          : tensor<?x?xi32>, tensor<256x64xf32> -> tensor<?x?x64xf32>
      ...
      moe.return %loss : tensor<f32>
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    MoE_PositiveI64Attr:$vocab_size,
    MoE_PositiveI64Attr:$hidden_size
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `(` `vocab_size` `=` $vocab_size `,` `hidden_size` `=` $hidden_size `)`
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getTokens() { return getBody().front().getArgument(0); }
    ::mlir::Value getLabels() { return getBody().front().getArgument(1); }
  }];
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

def MoE_ReturnOp : MoE_Op<"return", [Pure, Terminator, HasParent<"ModelOp">]> {
  let summary = "Ends a model body with its loss";
  let description = [{
    Terminates the body of `moe.model`. Its one operand is the model's mean
    cross-entropy loss, a `tensor<f32>`.

    Example:

    ```mlir
    moe.return %loss : tensor<f32>
    ```
  }];
  let arguments = (ins MoE_ScalarF32Tensor:$loss);
  let assemblyFormat = "$loss attr-dict `:` type($loss)";
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

def MoE_ParamOp : MoE_Op<"param"> {
  let summary = "Declares a named, trainable parameter tensor";
  let description = [{
    Declares one parameter of the model: its name (the checkpoint key), its
    static shape and element type, and how it is initialised. The result is
    the parameter's current value.

    * `no_weight_decay` excludes it from AdamW's decoupled weight decay
      (norm weights, `A_log`, `dt_bias`, AttnRes queries).
    * `buffer` marks state that the optimizer does not manage but the
      training step overwrites, such as a router's selection bias.

    The op has no declared side effects on purpose: a parameter that no op
    uses is still part of the model and must not be removed.

    Example:

    ```mlir
    %w = moe.param "layers.0.mixer.w_q" init <normal, std = 0.02>
        : tensor<256x256xf32>
    %b = moe.param "layers.0.ffn.router_bias" init <zeros> buffer
        : tensor<16xf32>
    ```
  }];
  let arguments = (ins
    StrAttr:$param_name,
    MoE_InitAttr:$init,
    UnitAttr:$no_weight_decay,
    UnitAttr:$buffer
  );
  let results = (outs MoE_FloatTensor:$result);
  let assemblyFormat = [{
    $param_name `init` $init
    (`no_weight_decay` $no_weight_decay^)? (`buffer` $buffer^)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of scalar values the parameter holds.
    int64_t getNumElements() { return getType().getNumElements(); }
  }];
}

#endif // MOE_DIALECT_MOE_MOESTRUCTUREOPS_TD
